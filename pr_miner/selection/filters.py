"""The selection filters, as an ordered table; a rejected PR records the first one it failed.

``merged`` is decided by the source (a PR-shaped commit, or a merged PR) and
is the funnel's first step; the table below runs on every merged PR. Each
check returns the reason a PR fails it, or None. Optional filters (docs/CI
only, max files, required paths) switch themselves off when not configured.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pr_miner.config import MiningConfig
from pr_miner.selection.layout import UnchangedPrograms, layout_share
from pr_miner.selection.measure import Measure
from pr_miner.selection.reverts import RevertIndex
from pr_miner.types import PASSED, FileChange, FilterName, MergedPR, Verdict


@dataclass(frozen=True, slots=True)
class FilterInput:
    pr: MergedPR
    measure: Measure
    config: MiningConfig
    reverts: RevertIndex
    files: Sequence[FileChange] = ()
    # Reads module contents at both commits; None where the source cannot (no check then).
    unchanged_programs: UnchangedPrograms | None = None


Check = Callable[[FilterInput], "str | None"]


@dataclass(frozen=True, slots=True)
class Filter:
    name: FilterName
    label: Callable[[MiningConfig], str]
    check: Check
    enabled: Callable[[MiningConfig], bool] = lambda _config: True


def _size(facts: FilterInput) -> str | None:
    counted, threshold = facts.measure.counted_lines, facts.config.size_threshold
    if counted >= threshold:
        return None
    excluded = facts.measure.excluded_lines
    extra = f" ({excluded:,} more in excluded files)" if excluded else ""
    return f"{counted:,} changed lines < {threshold:,}{extra}"


def _adds_tests(facts: FilterInput) -> str | None:
    return None if facts.measure.test_lines_added > 0 else "adds no lines to a test file"


def _changes_code(facts: FilterInput) -> str | None:
    if facts.measure.code_lines > 0:
        return None
    return "changes no non-test code (the golden patch would be empty)"


def _not_reverted(facts: FilterInput) -> str | None:
    reverted = facts.reverts.reverts(facts.pr)
    if reverted:
        return f"is itself a revert (of {_describe(reverted[0].sha, reverted[0].subject)})"
    revert = facts.reverts.reverted_by(facts.pr)
    if revert is not None:
        return f"reverted by {_describe(revert.sha, revert.subject)}"
    return None


def _describe(sha: str | None, subject: str) -> str:
    return f"{sha[:12]} {subject!r}" if sha else repr(subject)


def _docs_ci_only(facts: FilterInput) -> str | None:
    if not facts.measure.docs_ci_only:
        return None
    return "changes only docs/CI files besides tests"


def _max_files(facts: FilterInput) -> str | None:
    limit = facts.config.max_files
    if limit is None or facts.measure.counted_files <= limit:
        return None
    return f"{facts.measure.counted_files:,} files > {limit:,}"


def _paths(facts: FilterInput) -> str | None:
    if facts.measure.required_files > 0:
        return None
    return f"touches none of {', '.join(facts.config.require_paths)}"


def _formatting_only(facts: FilterInput) -> str | None:
    if facts.unchanged_programs is None:
        return None
    threshold = facts.config.formatting_only_share
    found = layout_share(
        facts.files,
        facts.config,
        facts.unchanged_programs,
        facts.measure.code_lines,
        threshold,
    )
    if not found.code_lines or found.share < threshold:
        return None
    return (
        f"formatting only: {found.share:.0%} of its {found.code_lines:,} changed code lines are "
        f"in {found.layout_files} module(s) whose syntax tree did not change"
    )


FILTERS: tuple[Filter, ...] = (
    Filter(FilterName.size, lambda c: f"≥ {c.size_threshold:,} changed lines", _size),
    Filter(FilterName.adds_tests, lambda _c: "adds tests", _adds_tests),
    Filter(FilterName.changes_code, lambda _c: "changes non-test code", _changes_code),
    Filter(FilterName.not_reverted, lambda _c: "not reverted", _not_reverted),
    Filter(
        FilterName.docs_ci_only,
        lambda _c: "not docs/CI only",
        _docs_ci_only,
        lambda c: c.reject_docs_ci_only,
    ),
    Filter(
        FilterName.max_files,
        lambda c: f"≤ {c.max_files:,} files",
        _max_files,
        lambda c: c.max_files is not None,
    ),
    Filter(
        FilterName.paths,
        lambda _c: "touches required paths",
        _paths,
        lambda c: bool(c.require_paths),
    ),
    # Last: it reads module contents, so it runs only for PRs every other filter kept.
    Filter(
        FilterName.formatting_only,
        lambda _c: "not formatting only",
        _formatting_only,
        lambda c: c.reject_formatting_only,
    ),
)


def active_filters(config: MiningConfig) -> tuple[Filter, ...]:
    return tuple(f for f in FILTERS if f.enabled(config))


def evaluate(facts: FilterInput) -> Verdict:
    """The first filter the PR fails, with its reason, or ``PASSED``."""
    for selection in active_filters(facts.config):
        reason = selection.check(facts)
        if reason is not None:
            return Verdict(selection.name, reason)
    return PASSED

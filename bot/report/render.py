"""Render the probe-coverage report (Markdown) from the coverage table stored on a task.

Problems come first: each promise the PR's tests miss, with its quote, the
verdict, the surviving adversarial patch as a short diff in ``<details>``, and
whether a validated probe catches it. Then what is checked, then one summary
line. The body carries a hidden marker so the sticky comment can be found
again, never @-mentions anyone (quoted text is defused), and stays under
GitHub's comment limit by dropping problems from the end with a link to the
full report on the dashboard.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from task_registry.coverage import CoverageTable, PromiseCoverage
from task_registry.types import PromiseVerdict

REPORT_MARKER = "<!-- probewatch:report v1 -->"
GITHUB_BODY_LIMIT = 65_536
# Headroom under GitHub's limit: it counts characters after its own normalisation.
BODY_BUDGET = GITHUB_BODY_LIMIT - 1_536
DIFF_LINES = 40
TEMPLATES = Path(__file__).with_name("templates")
ZERO_WIDTH_SPACE = "&#8203;"
_BACKTICKS = re.compile(r"`+")


@dataclass(frozen=True)
class ReportInput:
    """What a PR's report is rendered from: its task's stored coverage table, where the task
    comes from, and the patch text of the adversarials the table names."""

    repo: str
    pull_number: int
    table: CoverageTable
    merge_commit: str | None = None
    task_id: int | None = None
    patches: Mapping[str, str] = field(default_factory=dict)  # adversarial id -> its patch

    def ignoring(self, ignored: Callable[[str], bool]) -> ReportInput:
        """The same report without evidence in the paths ``ignored`` matches."""
        return replace(self, table=self.table.without_survivors_in(ignored))


@dataclass(frozen=True)
class RenderedReport:
    body: str
    summary: str
    actionable: bool
    omitted: int = 0

    @property
    def body_hash(self) -> str:
        return body_hash(self.body)


def body_hash(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def full_report_url(public_url: str, repo: str, pull_number: int) -> str:
    return f"{public_url.rstrip('/')}/reports/{repo}/{pull_number}"


def summary_line(table: CoverageTable) -> str:
    """One line: how many promises the PR's tests miss, how many probes catch, and what
    could not run here."""
    waiting = sum(1 for w in table.waiting if w.needs_gpu)
    if not waiting:
        return _promises_line(table)
    return f"{_promises_line(table)[:-1]}; {waiting} test(s) wait for a GPU runner."


def _promises_line(table: CoverageTable) -> str:
    total, problems = len(table.promises), table.problems
    if not problems:
        checked = sum(1 for row in table.promises if row.verdict == PromiseVerdict.checked)
        if checked == total:
            return f"probewatch: the PR's tests check all {total} promise(s) probewatch found."
        # Not checked is not yet a gap: no surviving patch shows one, so nothing to act on.
        return (
            f"probewatch: the PR's tests check {checked} of {total} promise(s) probewatch "
            f"found; no surviving patch shows a gap in the other {total - checked}."
        )
    caught = sum(1 for row in problems if any(table.caught_by(s) for s in table.survivors_of(row)))
    return (
        f"probewatch: {len(problems)} of {total} promise(s) not checked by this PR's tests; "
        f"a validated probe catches {caught} of them."
    )


def render_report(report: ReportInput, *, full_url: str) -> RenderedReport:
    """The comment body; problems are dropped from the end until it fits GitHub's limit."""
    table = report.table
    problems, summary = table.problems, summary_line(table)
    for keep in range(len(problems), -1, -1):
        body = _render(report, problems[:keep], len(problems) - keep, summary, full_url)
        if len(body) <= BODY_BUDGET:
            return RenderedReport(body, summary, table.actionable, len(problems) - keep)
    cut = f"\n\n…cut to fit; see the [full report]({full_url}).\n"
    return RenderedReport(body[: BODY_BUDGET - len(cut)] + cut, summary, table.actionable, 0)


def render_full_report(report: ReportInput, *, full_url: str) -> str:
    """Every problem, whatever the length: the dashboard's version."""
    table = report.table
    return _render(report, table.problems, 0, summary_line(table), full_url)


def _render(
    report: ReportInput,
    problems: list[PromiseCoverage],
    omitted: int,
    summary: str,
    full_url: str,
) -> str:
    return (
        _environment()
        .get_template("report.md.j2")
        .render(
            marker=REPORT_MARKER,
            report=report,
            table=report.table,
            problems=problems,
            covered=report.table.covered,
            omitted=omitted,
            summary=summary,
            full_url=full_url,
        )
    )


@cache
def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=False,  # Markdown: the filters below do the escaping that matters here
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=StrictUndefined,
    )
    env.filters.update(
        prose=prose, quoteblock=quoteblock, cell=cell, fence=fence, short_diff=short_diff, code=code
    )
    return env


def prose(text: str) -> str:
    """Defuse text quoted from a PR: no @-mentions, no raw HTML, no closing of our markers."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("@", "@" + ZERO_WIDTH_SPACE)


def quoteblock(text: str) -> str:
    return "\n> ".join(line.rstrip() for line in text.strip().splitlines())


def cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def code(text: str) -> str:
    ticks = "`" * (max((len(m) for m in _BACKTICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fence(text: str, language: str = "") -> str:
    """A fenced block whose fence is longer than any backtick run inside it."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{language}\n{text.rstrip()}\n{ticks}"


def short_diff(patch: str, limit: int = DIFF_LINES) -> str:
    lines = patch.rstrip("\n").splitlines()
    if len(lines) <= limit:
        return "\n".join(lines)
    return "\n".join([*lines[:limit], f"… {len(lines) - limit} more lines"])

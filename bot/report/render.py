"""Render the maintainer report (Markdown) from the coverage table stored on a task.

Verdict first: a headline with the count of gaps, one context line (merge commit, where
validation ran, what the golden patch and the controls showed, what could not run), then
one entry per gap (a distinct surviving patch, never one per promise it breaks) with the
promise quoted once, the mutation's own hunk, the PR's tests that run its line and pass
anyway, the assertion that would catch it and whether a validated probe confirms the link.
Probe names and code never appear: probes are hidden. The comment shows the first
``max_entries`` gaps in the order :mod:`bot.report.ranking` gives them and counts the rest,
which the task page lists in full; the tables are folded, so the comment stays short; a
footer explains the wording once and names the config file and the commands. The body
carries a hidden marker so the sticky comment can be found again, never @-mentions anyone
(quoted text is defused), and stays under GitHub's comment limit (cut on a safe line, with
a link to the full report on the dashboard).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from bot.report.evidence import (
    Gap,
    RunContext,
    change_line,
    context_line,
    gaps,
    mutation_hunk,
    promise_list,
    promise_numbers,
    short_quote,
    tests_sentence,
    unjudged,
    verdict_word,
)
from bot.report.ranking import DEFAULT_MAX_ENTRIES, Votes, for_the_comment, rank
from task_registry.coverage import CoverageTable, PromiseCoverage
from task_registry.types import PromiseVerdict

REPORT_MARKER = "<!-- probewatch:report v1 -->"
# The patches the comment shows, in order: `/probewatch useful N` names the N-th.
ENTRIES_MARKER = "<!-- probewatch:entries {ids} -->"
_ENTRIES = re.compile(r"<!-- probewatch:entries ([\w ]*) -->")
GITHUB_BODY_LIMIT = 65_536
# Headroom under GitHub's limit: it counts characters after its own normalisation.
BODY_BUDGET = GITHUB_BODY_LIMIT - 1_536
DIFF_LINES = 40
CONFIG_FILE = ".github/probewatch.yml"
TEMPLATES = Path(__file__).with_name("templates")
ZERO_WIDTH_SPACE = "&#8203;"
_BACKTICKS = re.compile(r"`+")
_FENCE = re.compile(r"^(`{3,}|~{3,})")
TABLE_ROWS = 30  # promises listed in the comment; the full report lists all


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
    golden_patch: str = ""  # the PR's code change: hunks are read against its result
    context: RunContext = field(default_factory=RunContext)
    max_entries: int = DEFAULT_MAX_ENTRIES  # gaps the comment shows; the rest: the task page
    feedback: Mapping[str, Votes] = field(default_factory=dict)  # per operator, this repo

    def ignoring(self, ignored: Callable[[str], bool]) -> ReportInput:
        """The same report without evidence in the paths ``ignored`` matches."""
        return replace(self, table=self.table.without_survivors_in(ignored))

    def showing(self, max_entries: int) -> ReportInput:
        """The same report with at most ``max_entries`` gaps in the comment."""
        return replace(self, max_entries=max_entries)

    def ranked(self) -> list[Gap]:
        """Every gap, in the order a maintainer should read them."""
        return rank(gaps(self.table), self.feedback)


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


def summary_line(table: CoverageTable, said: str) -> str:
    """The verdict (``said``, the headline) in one line, with how many tests wait for a GPU
    runner when the verdict does not already say so."""
    gpu = sum(1 for w in table.waiting if w.needs_gpu)
    if gpu and " waits for " not in said:
        said = f"{said}; {gpu} test(s) wait for a GPU runner"
    return f"probewatch: {said}."


def headline(table: CoverageTable, pull_number: int | None = None) -> str:
    """The verdict without the name: what the check run's title and the comment lead with."""
    pr = f"#{pull_number}" if pull_number is not None else "this PR"
    found = gaps(table)
    if found:
        broken = {p.position for g in found for p in g.promises}
        confirmed = sum(1 for g in found if g.confirmed)
        noun = "gap" if len(found) == 1 else "gaps"
        text = (
            f"{len(found)} {noun} in what {pr} promises: its tests pass with "
            f"{'a patch that breaks' if len(found) == 1 else 'patches that break'} "
            f"{len(broken)} of its {len(table.promises)} promises"
        )
        return f"{text}; a hidden probe confirms {confirmed}" if confirmed else text
    judged = any(a.survives_original is not None for a in table.adversarials)
    gpu = sum(1 for w in table.waiting if w.needs_gpu)
    if not judged and table.waiting:
        why = (
            f"{gpu} of its tests need a GPU"
            if gpu
            else f"{len(table.waiting)} of its tests cannot run here"
        )
        return f"{pr} waits for a runner that can run its tests ({why})"
    total = len(table.promises)
    if not total:
        return f"no promise found in {pr}'s description to check"
    waiting = unjudged(table)
    if waiting:  # "no gap" holds only for what ran: say how much did not
        return (
            f"no gap found in {pr} by the tests that run here; {waiting} of "
            f"{len(table.adversarials)} patches wait for tests that cannot run here"
        )
    checked = sum(1 for row in table.promises if row.verdict == PromiseVerdict.checked)
    if checked == total:
        return f"{pr}'s tests check all {total} promises probewatch found"
    # Not checked is not yet a gap: no surviving patch shows one, so nothing to act on.
    return (
        f"no gap found in {pr}: its tests check {checked} of {total} promises, and no patch "
        f"that breaks the other {total - checked} passes them"
    )


def render_report(report: ReportInput, *, full_url: str) -> RenderedReport:
    """The comment body: the first ``max_entries`` ranked gaps (:mod:`bot.report.ranking`);
    the rest are named by count with a link to the task page. Cut to GitHub's limit."""
    table = report.table
    ranked = report.ranked()
    chosen = for_the_comment(ranked, report.feedback, report.max_entries)
    said = headline(table, report.pull_number)
    summary = summary_line(table, said)
    omitted = len(ranked) - len(chosen)
    body = _render(report, _entries(report, chosen), omitted, full_url, report_headline=said)
    if len(body) > BODY_BUDGET:
        body = fit_markdown(body, BODY_BUDGET, full_url)
    return RenderedReport(body, summary, table.actionable, omitted)


def render_full_report(report: ReportInput, *, full_url: str) -> str:
    """Every gap in full, whatever the length: the task page's version."""
    said = headline(report.table, report.pull_number)
    entries = _entries(report, report.ranked())
    return _render(report, entries, 0, full_url, full=True, report_headline=said)


def _entries(report: ReportInput, chosen: Sequence[Gap]) -> list[Entry]:
    return [_entry(report, gap, list(chosen[:i])) for i, gap in enumerate(chosen)]


def _render(
    report: ReportInput,
    shown: list[Entry],
    omitted: int,
    full_url: str,
    *,
    full: bool = False,
    report_headline: str = "",
) -> str:
    table = report.table
    listed = table.promises if full else table.promises[:TABLE_ROWS]
    numbers = promise_numbers(table)
    return (
        _environment()
        .get_template("report.md.j2")
        .render(
            marker=REPORT_MARKER,
            entries_marker=ENTRIES_MARKER.format(ids=" ".join(e.gap.patch.id for e in shown)),
            report=report,
            table=table,
            headline=report_headline,
            icon="⚠️" if shown else ("⏳" if _waits(table) or unjudged(table) else "✅"),
            context=context_line(report.context, len(table.waiting)),
            commit=(report.merge_commit or "")[:10],
            entries=shown,
            omitted=omitted,
            promises=listed,
            unlisted=len(table.promises) - len(listed),
            config_file=CONFIG_FILE,
            full_url=full_url,
            number_of=lambda p: numbers[p.position],
            tests_word=lambda p: table.reading(p, verdict_word),
            short_quote=short_quote,
            promise_list=lambda ps: promise_list(numbers, ps),
        )
    )


def entry_ids(body: str) -> list[str]:
    """The ids of the patches a stored comment shows, in its entries' order."""
    found = _ENTRIES.search(body)
    return found.group(1).split() if found else []


def _waits(table: CoverageTable) -> bool:
    return bool(table.waiting) and not any(
        a.survives_original is not None for a in table.adversarials
    )


@dataclass(frozen=True)
class Entry:
    """A gap as one entry reads: what it breaks, the hunk, who runs the line, what would
    catch it, and how sure the link is."""

    gap: Gap
    quoted: tuple[PromiseCoverage, ...]  # the lead promise, unless an earlier entry quoted it
    others: tuple[PromiseCoverage, ...]  # the other promises it breaks, by number
    hunk: str | None
    change: str  # the mutation in a few words
    suggestion: str  # the assertion that would catch it, or a pointer to an earlier entry
    tests: str
    link: str


def _entry(report: ReportInput, gap: Gap, before: list[Gap]) -> Entry:
    seen = {g.lead.position for g in before}
    suggestion = gap.suggestion()
    same = [i for i, g in enumerate(before, 1) if g.suggestion() == suggestion]
    if gap.confirmed:
        link = "Confirmed: a hidden probewatch test of this promise fails with this patch."
    elif gap.caught:
        link = (
            "A hidden probewatch test fails with this patch; its link to the promise is "
            "inferred from the code it changes."
        )
    elif gap.place:
        link = (
            f"Inferred: the patch is in `{gap.place}`, the code this promise is about; no "
            "validated probe tests it yet."
        )
    else:
        link = "Inferred from the code the patch changes: no validated probe tests it yet."
    patch = report.patches.get(gap.patch.id, "")
    hunk = mutation_hunk(report.golden_patch, patch, gap.patch.path) if patch else None
    return Entry(
        gap=gap,
        quoted=() if gap.lead.position in seen else (gap.lead,),
        others=tuple(p for p in gap.promises if p is not gap.lead),
        hunk=hunk,
        change=change_line(hunk, prose(gap.patch.description)),
        suggestion=f"the same kind of assertion as for {same[0]}" if same else suggestion,
        tests=tests_sentence(gap.patch),
        link=link,
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


def fit_markdown(text: str, limit: int, full_url: str) -> str:
    """``text`` cut to ``limit`` characters at a line boundary, with every code fence and
    ``<details>`` block it leaves open closed, and a link to the rest."""
    if len(text) <= limit:
        return text
    tail = f"\n\n…cut to fit; see the [full report]({full_url}).\n"
    kept: list[str] = []
    size = 0
    for line in text.splitlines(keepends=True):
        closing = _closers([*kept, line])
        if size + len(line) + len(closing) + len(tail) > limit:
            break
        kept.append(line)
        size += len(line)
    closing = _closers(kept)
    return "".join(kept).rstrip("\n") + closing + tail


def _closes(line: str, fence: str) -> bool:
    return len(line) >= len(fence) and set(line) == {fence[0]}


def _closers(lines: list[str]) -> str:
    """What must follow ``lines`` for every fence and details block they open to close."""
    fence: str | None = None
    details = 0
    for line in lines:
        stripped = line.strip()
        match = _FENCE.match(stripped)
        if fence is None and match:
            fence = match.group(1)
        elif fence is not None and _closes(stripped, fence):
            fence = None
        elif fence is None:
            details += stripped.count("<details") - stripped.count("</details>")
    closing = f"\n{fence}" if fence else ""
    return closing + "\n\n</details>" * max(details, 0)

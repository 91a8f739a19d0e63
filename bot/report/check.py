"""The report as a check run on the merge commit: a title that is the verdict, the summary
and context, the comment's body as text cut without breaking its Markdown, and one
annotation at each surviving patch's line.

GitHub takes at most 50 annotations per request and 65,535 characters of text; a cut
ends on a line boundary outside any code fence or ``<details>`` block, closes what is
still open, and says where the rest is.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from bot.report.evidence import Gap, gaps, promise_list, promise_numbers, short_quote
from bot.report.render import ReportInput, body_hash, fit_markdown, headline

CHECK_TEXT_LIMIT = 65_535
ANNOTATIONS_LIMIT = 50
TITLE_LIMIT = 120


@dataclass(frozen=True)
class Annotation:
    path: str
    start_line: int
    end_line: int
    message: str
    title: str
    annotation_level: str = "warning"


@dataclass(frozen=True)
class CheckOutput:
    title: str
    summary: str
    text: str
    annotations: list[Annotation] = field(default_factory=list)

    def as_github(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "summary": self.summary,
            "text": self.text,
            "annotations": [asdict(a) for a in self.annotations],
        }

    @property
    def hash(self) -> str:
        return body_hash(json.dumps(self.as_github(), sort_keys=True))


def check_output(
    report: ReportInput | None, *, body: str, summary: str, full_url: str
) -> CheckOutput:
    """The check run's output for a stored report (``report`` is None when its task is gone:
    the stored body and summary still say it, without annotations)."""
    title = summary.removeprefix("probewatch: ").rstrip(".")
    annotations: list[Annotation] = []
    if report is not None:
        title = headline(report.table, report.pull_number)
        annotations = [
            a for gap in gaps(report.table) if (a := annotation(report, gap)) is not None
        ]
    return CheckOutput(
        title=_cut_title(title),
        summary=summary,
        text=fit_markdown(body, CHECK_TEXT_LIMIT, full_url),
        annotations=annotations[:ANNOTATIONS_LIMIT],
    )


def annotation(report: ReportInput, gap: Gap) -> Annotation | None:
    """A warning at the patch's line: what breaks, which promise, what would catch it."""
    patch = gap.patch
    if not patch.path or not patch.line:
        return None
    lead, broken = gap.lead, promise_list(promise_numbers(report.table), gap.promises)
    message = (
        f"Changing this line ({patch.description}) breaks {broken} "
        "and all of the PR's tests still pass. "
        f'Promise: "{short_quote(lead.quote, 200)}". Would catch it: {gap.suggestion()}.'
    )
    return Annotation(
        path=patch.path,
        start_line=patch.line,
        end_line=patch.line,
        message=message,
        title=f"Gap: {lead.category} promise not checked by the PR's tests",
    )


def _cut_title(title: str) -> str:
    return title if len(title) <= TITLE_LIMIT else title[: TITLE_LIMIT - 1].rstrip() + "…"

"""What a mining run reports: the funnel, survivors and rejects with reasons, what was stored.

Pydantic models, because the report leaves the package (CLI output, ``--json``,
the scheduler's job log). The funnel counts PRs of this run's window, the way
the InfraDev study reports its 21,389 → 36 funnel: how many were left after
each filter, in order.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel, Field

from pr_miner.config import MiningConfig
from pr_miner.selection.filters import active_filters
from pr_miner.selection.judge import Judged
from pr_miner.types import FilterName


class FunnelStep(BaseModel):
    name: str
    label: str
    count: int


class CandidateSummary(BaseModel):
    ref: str
    kind: str
    number: int
    title: str
    merged_at: datetime
    merge_sha: str | None
    passed: bool
    failed_filter: str | None = None
    reason: str | None = None
    changed_lines: int
    files: int
    test_lines_added: int
    core_share: float
    rank_score: float
    hints: list[str] = Field(default_factory=list)
    follow_ups: int = 0
    description_source: str


class QuotaReport(BaseModel):
    remaining: int
    limit: int
    reset_at: datetime | None = None


class MiningReport(BaseModel):
    repo: str
    source: str
    since: datetime | None
    until: datetime | None
    funnel: list[FunnelStep]
    survivors: list[CandidateSummary]
    rejects: list[CandidateSummary]
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    auto_accepted: list[str] = Field(default_factory=list)
    cursor_before: str | None = None
    cursor_after: str | None = None
    not_modified: bool = False
    quota: QuotaReport | None = None
    notes: list[str] = Field(default_factory=list)


def summarise(judged: Judged) -> CandidateSummary:
    pr, counts, verdict = judged.pr, judged.measure, judged.verdict
    return CandidateSummary(
        ref=str(pr.ref),
        kind=pr.ref.kind.value,
        number=pr.ref.number,
        title=pr.title,
        merged_at=pr.merged_at,
        merge_sha=pr.merge_sha,
        passed=verdict.passed,
        failed_filter=verdict.failed_filter.value if verdict.failed_filter else None,
        reason=verdict.reason,
        changed_lines=counts.counted_lines,
        files=counts.changed_files,
        test_lines_added=counts.test_lines_added,
        core_share=judged.core_share,
        rank_score=judged.rank_score,
        hints=list(judged.hints),
        follow_ups=len(judged.follow_ups),
        description_source=pr.description_source.value,
    )


def funnel(
    config: MiningConfig, scanned: int, scanned_label: str, judged: Iterable[Judged]
) -> list[FunnelStep]:
    """Counts left after each step: scanned, merged, then every active filter in order."""
    verdicts = [item.verdict for item in judged]
    steps = [
        FunnelStep(name="scanned", label=scanned_label, count=scanned),
        FunnelStep(name=FilterName.merged.value, label="merged PRs", count=len(verdicts)),
    ]
    remaining = len(verdicts)
    for selection in active_filters(config):
        remaining -= sum(1 for verdict in verdicts if verdict.failed_filter is selection.name)
        steps.append(
            FunnelStep(name=selection.name.value, label=selection.label(config), count=remaining)
        )
    return steps

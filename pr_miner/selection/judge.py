"""Judge one merged PR: measure its files, run the filters, rank it, collect its follow-ups."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pr_miner.config import MiningConfig
from pr_miner.selection.filters import FilterInput, evaluate
from pr_miner.selection.layout import UnchangedPrograms
from pr_miner.selection.measure import Measure, measure
from pr_miner.selection.ranking import promise_hints, rank_score
from pr_miner.selection.reverts import RevertIndex
from pr_miner.types import FileChange, FollowUp, MergedPR, Verdict


@dataclass(frozen=True, slots=True)
class Judged:
    """Everything one candidate row holds, before it meets the registry."""

    pr: MergedPR
    files: tuple[FileChange, ...]
    measure: Measure
    verdict: Verdict
    core_share: float
    rank_score: float
    hints: tuple[str, ...]
    follow_ups: tuple[FollowUp, ...]


def judge(
    pr: MergedPR,
    files: Sequence[FileChange],
    config: MiningConfig,
    reverts: RevertIndex,
    unchanged_programs: UnchangedPrograms | None = None,
) -> Judged:
    """``unchanged_programs``: the source's reader of module contents (formatting-only check)."""
    counts = measure(files, config)
    facts = FilterInput(pr, counts, config, reverts, files, unchanged_programs)
    verdict = evaluate(facts)
    # Only survivors are ranked: curators never see rejects in rank order.
    hints = promise_hints(f"{pr.title}\n{pr.body}") if verdict.passed else ()
    return Judged(
        pr=pr,
        files=tuple(files),
        measure=counts,
        verdict=verdict,
        core_share=round(counts.core_share, 4),
        rank_score=rank_score(counts, hints) if verdict.passed else 0.0,
        hints=hints,
        follow_ups=reverts.follow_ups(pr),
    )

"""scoring's additions for stored scores: ``summarize_scores`` (what the leaderboard summarises,
read back from Score rows) agrees with ``summarize``, and ``cutoff_start`` draws the line."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from task_registry.scoring import (
    SubmissionState,
    TaskOutcome,
    after_cutoff,
    cutoff_start,
    score_task,
    summarize,
    summarize_scores,
)

T = frozenset
WHEN = datetime(2026, 3, 1, tzinfo=UTC)

OUTCOMES = [
    TaskOutcome("a", WHEN, T({"1", "2", "3"}), T({"1", "2", "3"}), T({"1", "2", "3"})),
    TaskOutcome("b", WHEN, T({"1", "2", "3", "4"}), T({"1", "2", "3"}), T({"1", "2", "4"})),
    TaskOutcome("c", WHEN, T({"1"}), T({"1"}), state=SubmissionState.empty),
    TaskOutcome("d", WHEN, T({"1"}), T({"1"}), T({"1"}), SubmissionState.fault),
    TaskOutcome("e", WHEN, T({"1", "2"}), T({"1"}), T({"2"})),
]


@pytest.mark.parametrize("subset", [OUTCOMES, OUTCOMES[:2], OUTCOMES[3:4], []])
def test_summarize_scores_of_stored_scores_equals_summarize_of_the_outcomes(
    subset: list[TaskOutcome],
) -> None:
    scores = [score_task(o) for o in subset if o.state is not SubmissionState.fault]
    faults = [o.instance_id for o in subset if o.state is SubmissionState.fault]
    assert summarize_scores(scores, fault_tasks=faults, resamples=300) == summarize(
        subset, resamples=300
    )


def test_summarize_scores_counts_the_set_and_count_disagreement_and_the_fault() -> None:
    scores = [score_task(o) for o in OUTCOMES if o.state is not SubmissionState.fault]
    summary = summarize_scores(scores, fault_tasks=["d"], resamples=300)
    assert (summary.tasks, summary.faults, summary.fault_tasks) == (4, 1, ("d",))
    assert (summary.resolved_count_n, summary.resolved_set_n) == (3, 1)
    # b passes 3 like the golden, not the same 3; e passes 1, not the golden's 1
    assert summary.disagreements == 2


@pytest.mark.parametrize(
    ("cutoff", "margin", "start"),
    [
        (date(2026, 2, 28), 0, datetime(2026, 3, 1, tzinfo=UTC)),
        (date(2026, 2, 28), 10, datetime(2026, 3, 11, tzinfo=UTC)),
        (date(2025, 12, 31), 0, datetime(2026, 1, 1, tzinfo=UTC)),
    ],
)
def test_cutoff_start_is_the_day_after_the_cutoff_and_margin_at_midnight_utc(
    cutoff: date, margin: int, start: datetime
) -> None:
    assert cutoff_start(cutoff, margin_days=margin) == start
    on_the_line = TaskOutcome("x", start, T(), T())
    just_before = TaskOutcome("y", start - timedelta(microseconds=1), T(), T())
    assert after_cutoff([on_the_line, just_before], cutoff, margin_days=margin) == [on_the_line]

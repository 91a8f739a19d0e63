from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from task_registry.scoring import (
    SubmissionState,
    TaskOutcome,
    Window,
    after_cutoff,
    bootstrap_interval,
    by_area,
    by_window,
    compare_paired,
    mcnemar_exact,
    overturned,
    score_task,
    standard_error,
    summarize,
)

T = frozenset


def outcome(
    name: str,
    collected: set[str],
    golden: set[str],
    candidate: set[str],
    *,
    state: SubmissionState = SubmissionState.graded,
    merged: datetime = datetime(2026, 3, 1, tzinfo=UTC),
    areas: tuple[str, ...] = (),
) -> TaskOutcome:
    return TaskOutcome(name, merged, T(collected), T(golden), T(candidate), state, areas)


@pytest.mark.parametrize(
    ("collected", "golden", "candidate", "state", "expected"),
    [
        # the set-vs-count example: same count, a different test
        (
            {"1", "2", "3", "4"},
            {"1", "2", "3"},
            {"1", "2", "4"},
            "graded",
            (4, 3, 3, 0.75, True, False),
        ),
        ({"1", "2", "3"}, {"1", "2", "3"}, {"1", "2", "3"}, "graded", (3, 3, 3, 1.0, True, True)),
        # golden fails a test on this hardware: the candidate need not pass it
        ({"1", "2", "3"}, {"1", "2"}, {"1", "2"}, "graded", (3, 2, 2, 2 / 3, True, True)),
        # a passed test the golden never collected does not count
        ({"1", "2"}, {"1", "2"}, {"1", "9"}, "graded", (2, 1, 2, 0.5, False, False)),
        ({"1", "2"}, {"1", "2"}, {"1", "2"}, "empty", (2, 0, 2, 0.0, False, False)),
        ({"1", "2"}, {"1", "2"}, {"1", "2"}, "unappliable", (2, 0, 2, 0.0, False, False)),
        ({"1", "2"}, {"1", "2"}, set(), "missing", (2, 0, 2, 0.0, False, False)),
    ],
)
def test_task_score_follows_the_design_rules(
    collected: set[str], golden: set[str], candidate: set[str], state: str, expected: tuple
) -> None:
    score = score_task(outcome("t", collected, golden, candidate, state=SubmissionState(state)))
    assert (
        score.n,
        score.a,
        score.g,
        score.passed_fraction,
        score.resolved_count,
        score.resolved_set,
    ) == expected


def test_passed_averages_per_task_not_per_test() -> None:
    """Task A 10/10, task B 50/100: 75%, not 60/110."""
    a = outcome(
        "a", {str(i) for i in range(10)}, {str(i) for i in range(10)}, {str(i) for i in range(10)}
    )
    b_tests = {f"b{i}" for i in range(100)}
    b = outcome("b", b_tests, b_tests, {f"b{i}" for i in range(50)})
    assert summarize([a, b]).passed.value == pytest.approx(75.0)


def test_faults_are_excluded_and_counted_zero_states_stay() -> None:
    summary = summarize(
        [
            outcome("ok", {"1"}, {"1"}, {"1"}),
            outcome("empty", {"1"}, {"1"}, set(), state=SubmissionState.empty),
            outcome("fault", {"1"}, {"1"}, set(), state=SubmissionState.fault),
        ]
    )
    assert (summary.tasks, summary.faults, summary.fault_tasks) == (2, 1, ("fault",))
    assert summary.resolved_count.value == pytest.approx(50.0)


def test_rules_disagree_is_counted() -> None:
    summary = summarize(
        [
            outcome("x", {"1", "2", "3", "4"}, {"1", "2", "3"}, {"1", "2", "4"}),
            outcome("y", {"1"}, {"1"}, {"1"}),
        ]
    )
    assert (summary.resolved_count_n, summary.resolved_set_n, summary.disagreements) == (2, 1, 1)


def test_cutoff_excludes_tasks_merged_before_it_and_the_margin() -> None:
    tasks = [
        outcome("before", {"1"}, {"1"}, {"1"}, merged=datetime(2026, 1, 31, 23, tzinfo=UTC)),
        outcome("day_after", {"1"}, {"1"}, {"1"}, merged=datetime(2026, 2, 1, 0, 30, tzinfo=UTC)),
        outcome("later", {"1"}, {"1"}, {"1"}, merged=datetime(2026, 3, 15, tzinfo=UTC)),
    ]
    assert [o.instance_id for o in after_cutoff(tasks, date(2026, 1, 31))] == ["day_after", "later"]
    assert [o.instance_id for o in after_cutoff(tasks, date(2026, 1, 31), margin_days=30)] == [
        "later"
    ]


def test_windows_group_by_merge_month_and_quarter() -> None:
    tasks = [
        outcome("jan", {"1"}, {"1"}, {"1"}, merged=datetime(2026, 1, 5, tzinfo=UTC)),
        outcome("feb", {"1"}, {"1"}, set(), merged=datetime(2026, 2, 5, tzinfo=UTC)),
        outcome("apr", {"1"}, {"1"}, {"1"}, merged=datetime(2026, 4, 5, tzinfo=UTC)),
    ]
    months = by_window(tasks, Window.month, resamples=50)
    assert [(label, s.tasks, s.resolved_count_n) for label, s in months] == [
        ("2026-01", 1, 1),
        ("2026-02", 1, 0),
        ("2026-04", 1, 1),
    ]
    quarters = by_window(tasks, Window.quarter, resamples=50)
    assert [(label, s.tasks) for label, s in quarters] == [("2026-Q1", 2), ("2026-Q2", 1)]


def test_areas_break_scores_down() -> None:
    tasks = [
        outcome("t1", {"1"}, {"1"}, {"1"}, areas=("training",)),
        outcome("t2", {"1"}, {"1"}, set(), areas=("inference", "rl")),
    ]
    assert [(a, s.resolved_count_n) for a, s in by_area(tasks, resamples=50)] == [
        ("inference", 0),
        ("rl", 0),
        ("training", 1),
    ]


def test_standard_error_is_binomial_for_rates() -> None:
    assert standard_error([1.0, 0.0, 1.0, 0.0]) == pytest.approx(0.25)
    assert standard_error([1.0]) == 0.0


def test_bootstrap_interval_brackets_the_mean_and_is_reproducible() -> None:
    values = [1.0] * 14 + [0.0] * 22
    low, high = bootstrap_interval(values, resamples=4000, seed=7)
    assert low < 14 / 36 < high
    assert low > 0.2 and high < 0.6
    assert (low, high) == bootstrap_interval(values, resamples=4000, seed=7)


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [(0, 0, 1.0), (5, 0, 0.0625), (0, 5, 0.0625), (10, 2, 0.0385742), (3, 3, 1.0)],
)
def test_mcnemar_exact_matches_the_binomial_tail(b: int, c: int, p: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(p, abs=1e-6)


def test_paired_comparison_counts_transitions() -> None:
    a = {"t1": True, "t2": True, "t3": False, "t4": False, "only_a": True}
    b = {"t1": True, "t2": False, "t3": True, "t4": False, "only_b": True}
    result = compare_paired(a, b)
    assert (result.fixed, result.broken, result.both, result.neither) == (1, 1, 1, 1)
    assert result.p_value == 1.0


def test_overturned_lists_tasks_the_probes_take_back() -> None:
    original = summarize([outcome("a", {"1"}, {"1"}, {"1"}), outcome("b", {"1"}, {"1"}, {"1"})])
    probed = summarize(
        [
            outcome("a", {"1", "p"}, {"1", "p"}, {"1", "p"}),
            outcome("b", {"1", "p"}, {"1", "p"}, {"1"}),
        ]
    )
    assert overturned(original, probed) == ["b"]

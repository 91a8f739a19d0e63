"""The leaderboard's intervals are Wilson score intervals over the tasks a rate counts: honest
for a handful of tasks (3 of 3 is not [100, 100]), and the same in every place that shows them."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine

from bot.evaluate.intervals import wilson_interval, z_score
from bot.evaluate.leaderboard import RateOut, build_leaderboard
from task_registry.db import session_scope
from tests.leaderboard_support import BOTH, NONE, day, scored


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        (3, 3, 0.4385, 1.0),
        (0, 3, 0.0, 0.5615),
        (1, 3, 0.0615, 0.7923),
        # Newcombe (1998), Statistics in Medicine 17:857, table I, method 3 (Wilson, no correction)
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_95_matches_published_values(
    successes: int, n: int, low: float, high: float
) -> None:
    assert wilson_interval(successes, n) == (
        pytest.approx(low, abs=5e-5),
        pytest.approx(high, abs=5e-5),
    )


def test_a_sure_end_stays_exactly_at_zero_or_one() -> None:
    assert wilson_interval(0, 7)[0] == 0.0
    assert wilson_interval(7, 7)[1] == 1.0


def test_a_wider_level_gives_a_wider_interval_and_no_task_gives_the_whole_range() -> None:
    low95, high95 = wilson_interval(2, 5)
    low99, high99 = wilson_interval(2, 5, level=0.99)
    assert low99 < low95 < 0.4 < high95 < high99
    assert z_score() == pytest.approx(1.959964, abs=1e-6)
    assert wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(("successes", "n"), [(4, 3), (-1, 3), (0, -1)])
def test_impossible_counts_are_refused(successes: int, n: int) -> None:
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(successes, n)


def test_a_rate_reads_value_and_interval_in_whole_percent() -> None:
    assert RateOut(value=66.7, se=27.2, low=20.8, high=93.9, n=3).label() == "67% [21–94]"
    assert RateOut(value=0.0, se=0.0, low=0.0, high=100.0, n=0).label() == "—"


def test_three_tasks_all_resolved_do_not_claim_certainty(sqlite_engine: Engine) -> None:
    with session_scope(sqlite_engine) as session:
        scored(session, "alpha", [(n, day(1), BOTH, BOTH) for n in (1, 2, 3)])
        scored(session, "beta", [(n, day(1), NONE, NONE) for n in (1, 2, 3)])
    with session_scope(sqlite_engine) as session:
        runs = {r.run: r for r in build_leaderboard(session=session).runs}

    assert runs["alpha"].with_probes.resolved_set.label() == "100% [44–100]"
    assert runs["beta"].with_probes.resolved_set.label() == "0% [0–56]"
    assert runs["beta"].with_probes.passed.label() == "0% [0–56]"
    assert runs["alpha"].windows[0].with_probes.resolved_set.n == 3

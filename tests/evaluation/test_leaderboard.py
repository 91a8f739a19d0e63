"""The leaderboard read from stored scores: both suites, both rules and where they disagree,
faults excluded and counted, the overturn, windows, areas, the cutoff, and paired runs."""

from __future__ import annotations

import math
from datetime import date

import pytest
from sqlalchemy.engine import Engine

from bot.evaluate.leaderboard import (
    UnknownRun,
    build_leaderboard,
    compare_runs,
    parse_run,
    run_name,
)
from task_registry.db import session_scope
from task_registry.scoring import Window
from task_registry.types import ScoreSuite
from tests.leaderboard_support import BOTH, DISAGREE, FAULT, NONE, day, scored


@pytest.mark.postgres
def test_a_run_shows_both_suites_both_rules_their_disagreement_faults_and_the_overturn(
    engine: Engine,
) -> None:
    with session_scope(engine) as session:
        scored(
            session,
            "agent",
            [
                (1, day(1), BOTH, BOTH),
                (2, day(1), BOTH, NONE),  # the probes overturn it
                (3, day(2), DISAGREE, DISAGREE),
                (4, day(2), FAULT, FAULT),
            ],
        )
    with session_scope(engine) as session:
        (run,) = build_leaderboard(session=session).runs
    assert (run.tasks, run.faults) == (3, 1)
    assert run.with_probes.fault_tasks == ["acme__lib-4"]
    assert (run.original.resolved_count_n, run.original.resolved_set_n) == (3, 2)
    assert (run.with_probes.resolved_count_n, run.with_probes.resolved_set_n) == (2, 1)
    assert run.with_probes.resolved_set_tasks == ["acme__lib-1"]
    assert run.with_probes.disagreements == 1
    assert run.with_probes.disagreement_tasks == ["acme__lib-3"]
    assert run.overturned == ["acme__lib-2"] == run.overturned_count_rule
    assert run.with_probes.passed.value == pytest.approx(100 * (1 + 0 + 0.75) / 3)
    assert run.with_probes.resolved_set.value == pytest.approx(100 / 3)
    assert run.with_probes.resolved_set.se == pytest.approx(100 * math.sqrt((1 / 3) * (2 / 3) / 3))
    resolved = run.with_probes.resolved_set
    assert (resolved.n, round(resolved.low, 1), round(resolved.high, 1)) == (3, 6.1, 79.2)  # Wilson


def test_windows_group_tasks_by_merge_month_or_quarter_in_time_order(
    sqlite_engine: Engine,
) -> None:
    with session_scope(sqlite_engine) as session:
        scored(
            session,
            "agent",
            [(1, day(1), BOTH, BOTH), (2, day(2), BOTH, NONE), (3, day(4), NONE, NONE)],
        )
    with session_scope(sqlite_engine) as session:
        months = build_leaderboard(session=session).runs[0].windows
        quarters = build_leaderboard(session=session, window=Window.quarter).runs[0].windows
    assert [(w.key, w.with_probes.tasks, w.with_probes.resolved_set_n) for w in months] == [
        ("2026-01", 1, 1),
        ("2026-02", 1, 0),
        ("2026-04", 1, 0),
    ]
    assert [(w.key, w.original.resolved_set_n, w.with_probes.tasks) for w in quarters] == [
        ("2026-Q1", 2, 2),
        ("2026-Q2", 0, 1),
    ]


@pytest.mark.parametrize(
    ("margin", "counted"), [(0, ["acme__lib-2", "acme__lib-3"]), (30, ["acme__lib-3"])]
)
def test_a_model_is_scored_only_on_tasks_merged_after_its_cutoff(
    sqlite_engine: Engine, margin: int, counted: list[str]
) -> None:
    with session_scope(sqlite_engine) as session:
        scored(
            session,
            "agent",
            [(1, day(1), BOTH, BOTH), (2, day(2, 10), BOTH, BOTH), (3, day(4), NONE, NONE)],
            cutoff=date(2026, 2, 1),
        )
    with session_scope(sqlite_engine) as session:
        (run,) = build_leaderboard(session=session, margin_days=margin).runs
    assert [t.instance_id for t in run.task_lines] == counted
    assert run.excluded_pre_cutoff == 3 - len(counted)
    assert run.knowledge_cutoff == date(2026, 2, 1)
    assert "2026-01" not in [w.key for w in run.windows]


def test_areas_group_tasks_and_rows_are_best_first(sqlite_engine: Engine) -> None:
    with session_scope(sqlite_engine) as session:
        scored(session, "weak", [(1, day(1), NONE, NONE)], areas=("rl",))
        scored(session, "strong", [(1, day(1), BOTH, BOTH)])
    with session_scope(sqlite_engine) as session:
        board = build_leaderboard(session=session)
    assert [r.run for r in board.runs] == ["strong", "weak"]
    assert [a.key for a in board.runs[0].areas] == ["rl"]


SIX = [(n, day(3), None, None) for n in range(1, 7)]


def test_two_runs_compare_pairwise_with_an_exact_mcnemar_test(sqlite_engine: Engine) -> None:
    with session_scope(sqlite_engine) as session:
        scored(session, "old", [(n, d, NONE, NONE) for n, d, _, _ in SIX])
        scored(
            session,
            "new",
            [(n, d, BOTH, BOTH if n < 6 else NONE) for n, d, _, _ in SIX],
            label="v2",
        )
    with session_scope(sqlite_engine) as session:
        forward = compare_runs(session=session, run_a="old", run_b="new@v2")
        backward = compare_runs(session=session, run_a="new@v2", run_b="old")
        original = compare_runs(
            session=session, run_a="old", run_b="new@v2", suite=ScoreSuite.original
        )
        with pytest.raises(UnknownRun, match="scored runs: new@v2, old"):
            compare_runs(session=session, run_a="old", run_b="new")
    assert (forward.fixed, forward.broken, forward.both, forward.neither) == (5, 0, 0, 1)
    assert forward.p_value == pytest.approx(2 / 2**5)
    assert (backward.fixed, backward.broken) == (0, 5)
    assert forward.fixed_tasks == [f"acme__lib-{n}" for n in range(1, 6)]
    assert original.fixed == 6


def test_run_names_carry_the_label_unless_it_is_the_default() -> None:
    assert run_name("agent", "default") == "agent"
    assert run_name("agent", "v2") == "agent@v2"
    assert parse_run("agent@v2") == ("agent", "v2")
    assert parse_run("agent") == ("agent", "default")

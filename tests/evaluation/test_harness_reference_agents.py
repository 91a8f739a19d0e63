"""The reference agents calibrate the harness, and a planted adversarial shows the overturn.

Everything runs for real: agents in fresh trees with no future, grading in separate work
trees through runners (pytest, the post-change tests, the probe), scores in the registry on
SQLite and PostgreSQL, the leaderboard read back from it.
"""

from __future__ import annotations

import sys
from datetime import date
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from bot.evaluate.harness import EvalEvent, EvalRequest, Stage
from bot.evaluate.leaderboard import build_leaderboard
from task_registry.db import session_scope
from task_registry.evaluation import register_agent, register_model
from task_registry.models import (
    AgentCreate,
    ModelCreate,
    Submission,
    TestResult,
    TestResultBase,
    ValidationRunCreate,
)
from task_registry.scoring import SubmissionState
from task_registry.tasks import get_task, list_validation_runs, record_validation_run
from task_registry.types import Control, ScoreSuite, SubmissionStatus
from task_registry.types import TestOutcome as Verdict
from tests.harness_support import (
    ADVERSARIAL_MEMO,
    ORIGINAL_TESTS,
    PROBE_TESTS,
    MemoRepo,
    make_harness,
    make_memo_repo,
    seed,
)


@pytest.fixture(scope="module")
def memo(tmp_path_factory: pytest.TempPathFactory) -> MemoRepo:
    return make_memo_repo(tmp_path_factory.mktemp("upstream"))


def task_id(session: Session, instance_id: str) -> int:
    task = get_task(session=session, instance_id=instance_id)
    assert task.id is not None
    return task.id


def register_adversary(engine: Engine, tmp_path: Path) -> None:
    """A command agent that writes the planted adversarial implementation (never caches)."""
    script = tmp_path / "adversary.py"
    script.write_text(
        "import pathlib, sys\n"
        f"pathlib.Path(sys.argv[1], 'cachelib', 'memo.py').write_text({ADVERSARIAL_MEMO!r})\n"
    )
    with session_scope(engine) as session:
        model = register_model(
            session=session,
            model_in=ModelCreate(name="model-x", knowledge_cutoff=date(2026, 1, 31)),
        )
        register_agent(
            session=session,
            agent_in=AgentCreate(
                name="adversary",
                command=f"{sys.executable} {script} {{workdir}}",
                model_id=model.id,
            ),
        )


@pytest.mark.postgres
def test_oracle_resolves_empty_and_hollow_do_not_and_probes_overturn_the_adversarial(
    engine: Engine, memo: MemoRepo, tmp_path: Path
) -> None:
    instance_id = seed(engine, memo)
    register_adversary(engine, tmp_path)
    harness = make_harness(engine, memo, tmp_path)
    reports = {
        name: harness.run(EvalRequest(agent=name)).result(instance_id)
        for name in ("oracle", "empty", "hollow", "adversary")
    }

    oracle = reports["oracle"]
    assert oracle.state is SubmissionState.graded
    for suite in ScoreSuite:
        assert oracle.resolved(suite, rule="set") and oracle.resolved(suite, rule="count")
    assert (oracle.scores[ScoreSuite.original].n, oracle.scores[ScoreSuite.with_probes].n) == (2, 4)
    assert reports["empty"].state is SubmissionState.empty
    for name in ("empty", "hollow"):
        for suite in ScoreSuite:
            assert not reports[name].resolved(suite, rule="set")
            assert not reports[name].resolved(suite, rule="count")
    adversary = reports["adversary"]
    assert adversary.resolved(ScoreSuite.original) and not adversary.resolved(
        ScoreSuite.with_probes
    )
    # both original tests and the reset probe pass; the cache-hit probe rejects it
    assert adversary.scores[ScoreSuite.with_probes].a == 3

    with session_scope(engine) as session:
        board = {run.run: run for run in build_leaderboard(session=session).runs}
        runs = list_validation_runs(session=session, task_id=task_id(session, instance_id))
        submission_runs = [r for r in runs if r.control == Control.submission]
        probe_flags = {
            r.test_id: r.is_probe
            for r in session.exec(
                select(TestResult).where(TestResult.run_id == submission_runs[0].id)
            )
        }
    assert (
        board["oracle"].with_probes.resolved_set_n == board["oracle"].original.resolved_count_n == 1
    )
    assert (
        board["empty"].with_probes.resolved_set_n == board["hollow"].original.resolved_count_n == 0
    )
    assert board["adversary"].original.resolved_set_n == 1
    assert board["adversary"].with_probes.resolved_set_n == 0
    assert board["adversary"].overturned == [instance_id]
    assert board["oracle"].overturned == []
    # one golden run, made by the first evaluation and reused by the others
    assert [r.control for r in runs].count(Control.golden) == 1
    assert len(submission_runs) == 3  # empty has nothing to run
    assert probe_flags == dict.fromkeys(ORIGINAL_TESTS, False) | dict.fromkeys(PROBE_TESTS, True)


def test_a_rerun_skips_graded_submissions_and_regrades_submitted_ones(
    sqlite_engine: Engine, memo: MemoRepo, tmp_path: Path
) -> None:
    instance_id = seed(sqlite_engine, memo)
    harness = make_harness(sqlite_engine, memo, tmp_path)
    harness.run(EvalRequest(agent="oracle"))
    events: list[EvalEvent] = []
    again = harness.run(EvalRequest(agent="oracle"), progress=events.append)
    assert again.skipped == (instance_id,)
    assert [e.stage for e in events] == [Stage.selected, Stage.skipped]
    assert again.result(instance_id).resolved(ScoreSuite.with_probes)

    with session_scope(sqlite_engine) as session:
        submission = session.exec(select(Submission)).one()
        submission.status = SubmissionStatus.submitted  # as if grading had been interrupted
        session.add(submission)
    events.clear()
    regraded = harness.run(EvalRequest(agent="oracle"), progress=events.append)
    assert Stage.agent not in [e.stage for e in events]  # the stored patch is graded again
    assert [e.stage for e in events][-2:] == [Stage.grading, Stage.graded]
    assert regraded.result(instance_id).resolved(ScoreSuite.with_probes)
    with session_scope(sqlite_engine) as session:
        assert session.exec(select(Submission)).one().status == SubmissionStatus.graded


def test_n_p_and_g_p_come_from_the_stored_golden_run_on_this_hardware(
    sqlite_engine: Engine, memo: MemoRepo, tmp_path: Path
) -> None:
    """A golden run stored by validation collected a GPU test that skipped here: it stays in
    N_p, and the golden did not pass it, so the oracle resolves with a_p = 2 of N_p = 3."""
    instance_id = seed(sqlite_engine, memo)
    skipped = "tests/test_memo.py::test_on_gpu"
    results = [
        *(TestResultBase(test_id=t, outcome=Verdict.passed) for t in ORIGINAL_TESTS),
        TestResultBase(test_id=skipped, outcome=Verdict.skipped),
        *(TestResultBase(test_id=t, outcome=Verdict.passed, is_probe=True) for t in PROBE_TESTS),
    ]
    with session_scope(sqlite_engine) as session:
        record_validation_run(
            session=session,
            run_in=ValidationRunCreate(
                task_id=task_id(session, instance_id), control=Control.golden, n_collected=5
            ),
            results=results,
        )
    result = make_harness(sqlite_engine, memo, tmp_path).run(EvalRequest(agent="oracle"))
    original = result.result(instance_id).scores[ScoreSuite.original]
    assert (original.n, original.a, original.g) == (3, 2, 2)
    assert original.resolved_set and original.resolved_count
    with session_scope(sqlite_engine) as session:
        runs = list_validation_runs(session=session, task_id=task_id(session, instance_id))
        controls = [r.control for r in runs]
    assert controls.count(Control.golden) == 1  # no second golden run

"""System faults are retried, then stored as faults: excluded from scores, counted, and run
again by the next evaluation (from the agent only when the agent's side failed)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from bot.evaluate.harness import EvalEvent, EvalRequest, Stage
from bot.evaluate.leaderboard import build_leaderboard
from task_registry.db import session_scope
from task_registry.evaluation import list_scores, register_agent
from task_registry.models import (
    AgentCreate,
    Submission,
    TestResultBase,
    ValidationRun,
    ValidationRunCreate,
)
from task_registry.scoring import SubmissionState
from task_registry.tasks import get_task, record_validation_run
from task_registry.types import Control, RunOutcome, ScoreSuite, SubmissionStatus
from task_registry.types import TestOutcome as Verdict
from tests.harness_support import (
    MEMO,
    ORIGINAL_TESTS,
    PROBE_TESTS,
    MemoRepo,
    make_harness,
    make_memo_repo,
    seed,
)

DISK_FULL = "echo 'OSError: [Errno 28] No space left on device' >&2; exit 1"


@pytest.fixture(scope="module")
def memo(tmp_path_factory: pytest.TempPathFactory) -> MemoRepo:
    return make_memo_repo(tmp_path_factory.mktemp("upstream"))


def register_command(engine: Engine, name: str, command: str) -> None:
    with session_scope(engine) as session:
        register_agent(session=session, agent_in=AgentCreate(name=name, command=command))


def store_golden(engine: Engine, instance_id: str) -> None:
    """A golden run as validation stores it, so grading needs no golden run of its own."""
    results = [
        *(TestResultBase(test_id=t, outcome=Verdict.passed) for t in ORIGINAL_TESTS),
        *(TestResultBase(test_id=t, outcome=Verdict.passed, is_probe=True) for t in PROBE_TESTS),
    ]
    with session_scope(engine) as session:
        task = get_task(session=session, instance_id=instance_id)
        assert task.id is not None
        run_in = ValidationRunCreate(task_id=task.id, control=Control.golden)
        record_validation_run(session=session, run_in=run_in, results=results)


def submission(session: Session) -> Submission:
    return session.exec(select(Submission)).one()


def test_an_agent_that_cannot_start_is_a_fault_excluded_counted_and_retried(
    sqlite_engine: Engine, memo: MemoRepo, tmp_path: Path
) -> None:
    instance_id = seed(sqlite_engine, memo)
    register_command(sqlite_engine, "agent", "/nonexistent/agent {workdir}")
    harness = make_harness(sqlite_engine, memo, tmp_path)
    report = harness.run(EvalRequest(agent="agent"))
    assert report.faults == (instance_id,)
    with session_scope(sqlite_engine) as session:
        row = submission(session)
        assert row.status == SubmissionStatus.fault
        assert [s.fault for s in list_scores(session=session, submission_id=row.id or 0)] == [
            True,
            True,
        ]
        run = build_leaderboard(session=session).runs[0]
    assert (run.tasks, run.faults, run.with_probes.fault_tasks) == (0, 1, [instance_id])

    script = tmp_path / "fixed.py"
    script.write_text(
        f"import pathlib, sys\npathlib.Path(sys.argv[1], 'cachelib', 'memo.py').write_text({MEMO!r})\n"
    )
    register_command(sqlite_engine, "agent", f"{sys.executable} {script} {{workdir}}")
    again = harness.run(EvalRequest(agent="agent"))
    assert again.faults == () and again.result(instance_id).resolved(ScoreSuite.with_probes)
    with session_scope(sqlite_engine) as session:
        run = build_leaderboard(session=session).runs[0]
    assert (run.tasks, run.faults, run.with_probes.resolved_set_n) == (1, 0, 1)


def test_a_grading_fault_is_retried_then_counted_and_the_next_run_only_regrades(
    sqlite_engine: Engine, memo: MemoRepo, tmp_path: Path
) -> None:
    instance_id = seed(sqlite_engine, memo)
    store_golden(sqlite_engine, instance_id)
    broken = make_harness(sqlite_engine, memo, tmp_path, setup_commands=(DISK_FULL,))
    report = broken.run(EvalRequest(agent="oracle"))
    assert report.result(instance_id).state is SubmissionState.fault
    with session_scope(sqlite_engine) as session:
        runs = [r for r in session.exec(select(ValidationRun)) if r.control == Control.submission]
        assert [(r.outcome, r.fault_kind, r.attempt) for r in runs] == [
            (RunOutcome.fault, "disk_full", 3)  # the first attempt and two retries
        ]
        assert submission(session).status == SubmissionStatus.fault

    events: list[EvalEvent] = []
    fixed = make_harness(sqlite_engine, memo, tmp_path)
    again = fixed.run(EvalRequest(agent="oracle"), progress=events.append)
    assert Stage.agent not in [e.stage for e in events]  # the stored patch is regraded
    assert again.result(instance_id).resolved(ScoreSuite.with_probes)


def test_a_task_whose_golden_run_cannot_complete_is_a_fault_not_a_zero(
    sqlite_engine: Engine, memo: MemoRepo, tmp_path: Path
) -> None:
    instance_id = seed(sqlite_engine, memo)
    with session_scope(sqlite_engine) as session:
        task = get_task(session=session, instance_id=instance_id)
        task.patch = memo.golden.replace("-", "+", 3)  # no longer applies to the base
        session.add(task)
    report = make_harness(sqlite_engine, memo, tmp_path).run(EvalRequest(agent="empty"))
    result = report.result(instance_id)
    assert result.state is SubmissionState.fault
    assert "golden run ended unappliable" in result.detail


def test_a_fault_the_candidates_code_causes_is_graded_as_its_failure_not_excluded(
    sqlite_engine: Engine, memo: MemoRepo, tmp_path: Path
) -> None:
    """A submission that makes every test it breaks print a GPU runner's signature would
    turn a zero into an excluded fault; the golden run passed those tests on this host."""
    instance_id = seed(sqlite_engine, memo)
    store_golden(sqlite_engine, instance_id)
    pretends = MEMO.replace(
        "    def get(self, key):\n",
        "    def get(self, key):\n        raise RuntimeError('CUDA is not available')\n",
    )
    assert pretends != MEMO
    script = tmp_path / "pretends.py"
    script.write_text(
        "import pathlib, sys\n"
        f"pathlib.Path(sys.argv[1], 'cachelib', 'memo.py').write_text({pretends!r})\n"
    )
    register_command(sqlite_engine, "pretender", f"{sys.executable} {script} {{workdir}}")
    report = make_harness(sqlite_engine, memo, tmp_path).run(EvalRequest(agent="pretender"))
    result = report.result(instance_id)
    assert report.faults == () and result.state is SubmissionState.graded, result.detail
    assert not result.resolved(ScoreSuite.original)
    with session_scope(sqlite_engine) as session:
        run = build_leaderboard(session=session).runs[0]
    assert (run.tasks, run.faults) == (1, 0)

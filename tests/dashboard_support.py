"""A registry holding one PR of each verdict, and the dashboard app that reads it.

acme/infra-lib PRs, newest merge first: #15 accepted and not validated yet, #14 whose report
job failed, #13 built with a test that waits for a GPU runner, #12 validated and clean, #11
validated with a gap (its report is actionable), with validation runs and test results."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session

from bot.context import AppContext
from bot.report.render import render_report
from bot.report.store import report_input
from bot.service.dashboard import make_dashboard_router
from bot.service.jobs.kinds import JobKind, PRPayload, job_create
from bot.service.leaderboard_page import make_leaderboard_router
from bot.settings import Settings
from task_registry.candidates import upsert_candidate
from task_registry.coverage import WaitingTest, stored_coverage
from task_registry.db import session_scope
from task_registry.jobs import enqueue_job
from task_registry.models import (
    CandidatePRCreate,
    RepoCreate,
    Task,
    TestResultBase,
    ValidationRunCreate,
)
from task_registry.reports import get_or_create_report, save_report
from task_registry.repos import get_or_create_repo
from task_registry.tasks import record_validation_run
from task_registry.types import (
    Control,
    Decision,
    JobStatus,
    ReportStatus,
    Suite,
    TaskStatus,
    TestOutcome,
)
from tests.factories import make_task

REPO = "acme/infra-lib"
GAPS, CLEAN, WAITING, FAILED, NOT_VALIDATED = 11, 12, 13, 14, 15
FAILURE = "acme__infra-lib-14 cannot be validated: the golden patch fails 2 of its tests"
GPU_TEST = "tests/gpu/test_sync_on_two_gpus.py"


def seed_dashboard(engine: Engine) -> None:
    with session_scope(engine) as session:
        gaps = make_task(session, GAPS, repo=REPO, status=TaskStatus.validated)
        _report(session, gaps)
        _runs(session, gaps)
        clean = make_task(session, CLEAN, repo=REPO, status=TaskStatus.validated)
        _report(session, clean, actionable=False)
        _waiting(session, make_task(session, WAITING, repo=REPO, status=TaskStatus.built))
        repo_id = _repo(session)
        for number in (FAILED, NOT_VALIDATED):
            _accepted(session, repo_id, number)
        _failed_job(session, FAILED)


def make_dashboard(engine: Engine) -> FastAPI:
    """The dashboard and the leaderboard pages over ``engine``, nothing else of the service."""
    app = FastAPI()
    app.state.context = AppContext(Settings(), _engine=engine)
    app.include_router(make_dashboard_router())
    app.include_router(make_leaderboard_router())
    return app


def dashboard_app(engine: Engine) -> TestClient:
    return TestClient(make_dashboard(engine))


def _report(session: Session, task: Task, *, actionable: bool = True) -> None:
    rendered = render_report(report_input(session, task), full_url="http://dashboard.test/r")
    report = get_or_create_report(session=session, repo=task.repo, pull_number=task.pull_number)
    summary = rendered.summary if actionable else "probewatch: the PR's tests check every promise."
    save_report(
        session=session,
        report=report,
        task_id=task.id,
        body=rendered.body,
        summary=summary,
        actionable=actionable,
        status=ReportStatus.dry_run,
    )


def _runs(session: Session, task: Task) -> None:
    """Golden on the PR's tests, golden x3 on the probe, then the snapshot on both."""
    assert task.id is not None
    runs = [
        (Control.golden, Suite.original, 0, [("tests/test_sync.py::test_a", False, True)] * 3),
        *(
            (Control.golden, Suite.probes, n, [("probes/test_p.py::test_p", True, True)])
            for n in (1, 2, 3)
        ),
        (
            Control.snapshot,
            Suite.all,
            1,
            [
                ("tests/test_sync.py::test_a", False, True),
                ("probes/test_p.py::test_p", True, False),
            ],
        ),
    ]
    for control, suite, attempt, results in runs:
        record_validation_run(
            session=session,
            run_in=ValidationRunCreate(
                task_id=task.id,
                control=control,
                suite=suite,
                attempt=attempt,
                n_collected=len(results),
                n_passed=sum(passed for _, _, passed in results),
            ),
            results=[
                TestResultBase(
                    test_id=test_id,
                    is_probe=probe,
                    outcome=TestOutcome.passed if passed else TestOutcome.failed,
                )
                for test_id, probe, passed in results
            ],
        )


def _waiting(session: Session, task: Task) -> None:
    table = stored_coverage(task)
    waiting = [WaitingTest(path=GPU_TEST, reason="needs 2 GPUs (marker `gpu`)")]
    task.coverage = table.model_copy(update={"waiting": waiting}).model_dump(mode="json")
    session.add(task)


def _repo(session: Session) -> int:
    repo = get_or_create_repo(session=session, repo_in=RepoCreate(full_name=REPO))
    assert repo.id is not None
    return repo.id


def _accepted(session: Session, repo_id: int, number: int) -> None:
    candidate = upsert_candidate(
        session=session,
        candidate_in=CandidatePRCreate(
            repo_id=repo_id,
            number=number,
            title=f"PR {number}: make the sync incremental",
            merged_at=datetime(2026, 3, number + 1, 9, 0, tzinfo=UTC),
        ),
    )
    candidate.decision = Decision.accepted
    session.add(candidate)


def _failed_job(session: Session, number: int) -> None:
    payload = PRPayload(repo=REPO, number=number)
    job, _ = enqueue_job(
        session=session, job_in=job_create(JobKind.build_report, payload, f"test-{number}")
    )
    job.status, job.error = JobStatus.failed, FAILURE
    session.add(job)

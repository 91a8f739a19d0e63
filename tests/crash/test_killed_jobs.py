"""Regression (kill -9 of ``serve`` while the report job validated a PR): the reclaimed job saw
"task exists" and moved on, the task stayed built with no validation run, the stored report
said the tests check 0 promises with no gap, and the killed run's pytest, its run folder and
its ``/tmp/pw-*`` folder were left behind.

Each test runs real ``probewatch`` processes on PostgreSQL: a ``serve`` worker on the demo
repository's PR #15 for the build, validate and report steps of the report job, and
``probewatch grade`` on a small published task for grading. It kills the process with SIGKILL
in the middle of the step, starts another, and checks that the work finished exactly once
with the right end state, and that nothing of the killed run is left: no process naming its
folders, no folder.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import func, select

from bot.report.render import REPORT_MARKER
from bot.service.jobs.kinds import JobKind, PRPayload, job_create
from task_registry.db import session_scope
from task_registry.jobs import enqueue_job
from task_registry.models import Job, PRReport, Score, Submission, Task, ValidationRun
from task_registry.swebench import instance_id_for
from task_registry.tasks import find_task
from task_registry.types import Control, JobStatus, ScoreSuite, SubmissionStatus, TaskStatus
from tests.crash.crash_support import (
    NUMBER,
    DemoService,
    LeftRun,
    ProbewatchHome,
    kill_hard,
    left_run,
    pytest_running,
    wait_until,
)
from tests.factories import make_task
from tests.github_emulator import GitHubEmulator
from tests.harness_support import make_memo_repo, seed

ON_POSTGRESQL = pytest.mark.parametrize("empty_db_url", ["postgresql"], indirect=True)
JOB_TIMEOUT_S = 240.0
INSTANCE = "acme__memo-7"


@pytest.fixture
def service(
    engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path
) -> Iterator[DemoService]:
    demo = DemoService(engine, github_emulator, tmp_path)
    yield demo
    demo.stop_all()


def task_of(service: DemoService) -> Task | None:
    with session_scope(service.engine) as session:
        return find_task(session=session, instance_id=instance_id_for(service.demo.name, NUMBER))


def done(service: DemoService, kind: JobKind) -> bool:
    return any(job.status == JobStatus.done for job in service.jobs(kind))


def finished_once(service: DemoService, kind: JobKind, attempts: int) -> Job:
    (job,) = service.jobs(kind)
    assert (job.status, job.attempts) == (JobStatus.done, attempts), job.error
    return job


def assert_validated_and_reported_once(service: DemoService) -> None:
    """The task validated with its runs, one report stored from it, one comment posted."""
    task = task_of(service)
    assert task is not None and task.status == TaskStatus.validated
    with session_scope(service.engine) as session:
        runs = session.exec(
            select(func.count()).select_from(ValidationRun).where(ValidationRun.task_id == task.id)
        ).one()
        (report,) = session.exec(select(PRReport).where(PRReport.pull_number == NUMBER)).all()
    assert runs > 0
    assert report.task_id == task.id
    assert "tests check 0 of" not in report.body
    comments = service.emulator.state.list_comments(service.demo.name, NUMBER)
    assert [c.body == report.body for c in comments if c.body.startswith(REPORT_MARKER)] == [True]
    finished_once(service, JobKind.post_report, 1)


def assert_nothing_left(left: LeftRun) -> None:
    assert left.live_processes() == []
    assert left.existing_folders() == []


@ON_POSTGRESQL
def test_a_worker_killed_while_it_validates_is_replaced_and_the_task_validated_once(
    service: DemoService,
) -> None:
    service.queue_merged_pr()
    first = service.start("first")
    wait_until(lambda: pytest_running(service.runs), JOB_TIMEOUT_S, "a validation's pytest")
    left = left_run(service.runs)
    kill_hard(first)

    killed = task_of(service)
    assert killed is not None and killed.status == TaskStatus.built
    assert left.pids and left.folders
    service.start("second")
    wait_until(lambda: done(service, JobKind.post_report), JOB_TIMEOUT_S, "the report posted")

    finished_once(service, JobKind.build_report, 2)
    assert_validated_and_reported_once(service)
    assert_nothing_left(left)


@ON_POSTGRESQL
def test_a_worker_killed_while_it_builds_is_replaced_and_the_task_built_once(
    service: DemoService,
) -> None:
    service.queue_merged_pr()
    first = service.start("first")

    def building() -> bool:
        return any(job.status == JobStatus.running for job in service.jobs(JobKind.build_report))

    wait_until(building, JOB_TIMEOUT_S, "the report job to start building")
    kill_hard(first)

    assert task_of(service) is None, "killed before the build was stored"
    service.start("second")
    wait_until(lambda: done(service, JobKind.post_report), JOB_TIMEOUT_S, "the report posted")

    finished_once(service, JobKind.build_report, 2)
    assert_validated_and_reported_once(service)
    assert_nothing_left(left_run(service.runs))


@ON_POSTGRESQL
def test_a_worker_killed_while_it_stores_the_report_is_replaced_and_reports_once(
    service: DemoService,
) -> None:
    with session_scope(service.engine) as session:
        make_task(session, NUMBER, repo=service.demo.name, status=TaskStatus.validated)
    payload = PRPayload(repo=service.demo.name, number=NUMBER, merge_sha=service.merge_sha)
    with session_scope(service.engine) as session:
        enqueue_job(session=session, job_in=job_create(JobKind.build_report, payload, "report"))
    # The repository's configuration is read between the validation and the stored report.
    service.emulator.state.delay_next(10.0, path_contains="/contents/", method="GET")
    first = service.start("first")

    def reading_config() -> bool:
        return service.emulator.count("GET", path_contains="/contents/") > 0

    wait_until(reading_config, JOB_TIMEOUT_S, "the report job to read the repository's config")
    kill_hard(first)

    assert service.jobs(JobKind.post_report) == []
    service.start("second")
    wait_until(lambda: done(service, JobKind.post_report), JOB_TIMEOUT_S, "the report posted")

    finished_once(service, JobKind.build_report, 2)
    with session_scope(service.engine) as session:
        (report,) = session.exec(select(PRReport).where(PRReport.pull_number == NUMBER)).all()
    comments = service.emulator.state.list_comments(service.demo.name, NUMBER)
    assert [c.body for c in comments] == [report.body]
    finished_once(service, JobKind.post_report, 1)


@ON_POSTGRESQL
def test_grading_killed_mid_run_is_redone_once_and_counted_once(
    engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path
) -> None:
    memo = make_memo_repo(tmp_path / "upstream")
    seed(engine, memo)
    home = ProbewatchHome(engine, github_emulator, tmp_path)
    home.watch.write_text(f'[[repo]]\nname = "acme/memo"\ngit = "{memo.mirror}"\n')
    predictions = tmp_path / "predictions.jsonl"
    row = {
        "instance_id": INSTANCE,
        "model_name_or_path": "golden-model",
        "model_patch": memo.golden,
    }
    predictions.write_text(json.dumps(row) + "\n", encoding="utf-8")
    grade = ("grade", "--predictions", str(predictions))
    try:
        first = home.start("first", *grade)
        # The golden baseline is stored first; the next pytest is the submission's grading run.
        wait_until(lambda: runs_of(engine, Control.golden) == 1, JOB_TIMEOUT_S, "the baseline")
        wait_until(lambda: pytest_running(home.runs), JOB_TIMEOUT_S, "the grading run's pytest")
        left = left_run(home.runs)
        kill_hard(first)
        assert scores(engine) == [] and left.folders

        second = home.start("second", *grade)
        assert second.wait(JOB_TIMEOUT_S) == 0, home.log("second")
    finally:
        home.stop_all()

    with session_scope(engine) as session:
        (submission,) = session.exec(select(Submission)).all()
    assert submission.status == SubmissionStatus.graded
    assert sorted((s.suite, s.resolved_set) for s in scores(engine)) == [
        (ScoreSuite.original, True),
        (ScoreSuite.with_probes, True),
    ]
    assert (runs_of(engine, Control.golden), runs_of(engine, Control.submission)) == (1, 1)
    assert_nothing_left(left)


def runs_of(engine: Engine, control: Control) -> int:
    with session_scope(engine) as session:
        query = select(func.count()).select_from(ValidationRun)
        return session.exec(query.where(ValidationRun.control == control)).one()


def scores(engine: Engine) -> list[Score]:
    with session_scope(engine) as session:
        return list(session.exec(select(Score)).all())

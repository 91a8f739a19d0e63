"""The worker: leases, retries, and a worker killed with SIGKILL mid-post whose job another worker
finishes, with the report comment posted exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from bot.report.render import REPORT_MARKER
from bot.service.jobs.handlers import (
    JobContext,
    JobRejected,
    Route,
    build_report,
    default_handlers,
    mine_pr,
    route,
)
from bot.service.jobs.kinds import (
    PAYLOADS,
    JobKind,
    PollPayload,
    PRPayload,
    RedeliverPayload,
    job_create,
)
from bot.service.jobs.worker import Worker
from probewatch.errors import ServiceError
from task_registry.db import session_scope
from task_registry.jobs import enqueue_job, get_job, list_jobs
from task_registry.models import JobCreate
from task_registry.reports import get_report
from task_registry.types import JobStatus
from tests.bot_support import NUMBER, REPO, SECRET, db_url, make_bot, merged_event
from tests.github_emulator import GitHubEmulator

ROOT = Path(__file__).parents[2]


def queue(engine: Engine, kind: str, **payload: Any) -> int:
    with session_scope(engine) as session:
        job, _ = enqueue_job(
            session=session, job_in=JobCreate(kind=kind, payload=payload, max_attempts=2)
        )
        return job.id or 0


def test_a_failing_handler_is_retried_then_marked_failed(
    sqlite_engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path
) -> None:
    bot = make_bot(sqlite_engine, github_emulator, tmp_path)
    calls: list[int] = []

    def flaky(ctx: JobContext, payload: RedeliverPayload) -> dict[str, Any]:
        calls.append(ctx.job_id)
        raise RuntimeError("upstream hiccup")

    worker = Worker(
        bot.context,
        handlers={"flaky": Route(RedeliverPayload, flaky)},
        github=bot.worker.github,
    )
    job_id = queue(sqlite_engine, "flaky")
    first = worker.run_once()
    assert first is not None and not first.ok
    with session_scope(sqlite_engine) as session:
        job = get_job(session=session, job_id=job_id)
        assert (job.status, job.attempts) == (JobStatus.queued, 1)
        assert "RuntimeError: upstream hiccup" in (job.error or "")
        job.run_after = job.created_at  # skip the backoff
        session.add(job)
    worker.run_once()
    with session_scope(sqlite_engine) as session:
        assert get_job(session=session, job_id=job_id).status == JobStatus.failed
    assert calls == [job_id, job_id]


def test_a_rejected_job_is_not_retried(
    sqlite_engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path
) -> None:
    bot = make_bot(sqlite_engine, github_emulator, tmp_path)
    job_id = queue(sqlite_engine, JobKind.mine_pr, repo="someone/unwatched", number=1)

    bot.worker.run_until_idle()

    with session_scope(sqlite_engine) as session:
        job = get_job(session=session, job_id=job_id)
        assert (job.status, job.attempts) == (JobStatus.failed, 1)
        assert "JobRejected: someone/unwatched is not in the watch file" in (job.error or "")
    assert issubclass(JobRejected, ServiceError)


def test_a_worker_only_claims_kinds_it_has_handlers_for(
    sqlite_engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path
) -> None:
    bot = make_bot(sqlite_engine, github_emulator, tmp_path)
    queue(sqlite_engine, "unknown_kind")
    worker = Worker(bot.context, handlers={}, github=bot.worker.github)

    assert worker.run_once() is None


def start_worker(
    engine: Engine, emulator: GitHubEmulator, tmp_path: Path, name: str
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PROBEWATCH_HOME": str(tmp_path),
        "PROBEWATCH_DATABASE_URL": db_url(engine),
        "PROBEWATCH_WATCH_FILE": str(tmp_path / "watch.toml"),
        "PROBEWATCH_GITHUB_API_URL": emulator.base_url,
        "PROBEWATCH_GITHUB_TOKEN": "t",
        "PROBEWATCH_WEBHOOK_SECRET": SECRET,
        "PROBEWATCH_WORKER_LEASE_S": "2",
        "PROBEWATCH_WORKER_POLL_S": "0.1",
        "PROBEWATCH_GITHUB_WRITE_SPACING_S": "0",
        "PROBEWATCH_GITHUB_RETRIES": "0",
    }
    log = (tmp_path / f"{name}.log").open("wb")
    command = [sys.executable, "-m", "bot.cli.main", "serve", "--no-web", "--no-scheduler"]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def wait_until(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_a_job_of_a_killed_worker_is_finished_once_by_another(
    engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path
) -> None:
    bot = make_bot(engine, github_emulator, tmp_path)
    bot.deliver("pull_request", merged_event(merge_sha=bot.merge_sha))
    builder = Worker(
        bot.context,
        handlers={
            JobKind.mine_pr: route(JobKind.mine_pr, mine_pr),
            JobKind.build_report: route(JobKind.build_report, build_report),
        },
        github=bot.worker.github,
    )
    builder.run_until_idle()
    with session_scope(engine) as session:
        (post,) = [j for j in list_jobs(session=session) if j.kind == JobKind.post_report]
    # The create-comment call hangs for a second: the first worker dies while it is in flight.
    github_emulator.state.delay_next(1.0, path_contains=f"/issues/{NUMBER}/comments", method="POST")

    def comments_listed() -> bool:
        return github_emulator.count("GET", path_contains=f"/issues/{NUMBER}/comments") > 0

    first = start_worker(engine, github_emulator, tmp_path, "first")
    try:
        wait_until(comments_listed, 30, "the first worker to look for its comment")
        time.sleep(0.3)
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    finally:
        first.kill()
    with session_scope(engine) as session:
        killed = get_job(session=session, job_id=post.id or 0)
        assert (killed.status, killed.attempts) == (JobStatus.running, 1)

    second = start_worker(engine, github_emulator, tmp_path, "second")
    try:

        def post_done() -> bool:
            with session_scope(engine) as session:
                return get_job(session=session, job_id=post.id or 0).status == JobStatus.done

        wait_until(post_done, 30, "the second worker to finish the job")
    finally:
        second.terminate()
        second.wait(10)

    comments = [c for c in bot.comments() if c.body.startswith(REPORT_MARKER)]
    assert len(comments) == 1
    with session_scope(engine) as session:
        assert get_job(session=session, job_id=post.id or 0).attempts == 2
        assert (
            get_report(session=session, repo=REPO, pull_number=NUMBER).comment_id == comments[0].id
        )


def test_a_payload_is_validated_once_and_a_bad_one_is_rejected_without_retry(
    sqlite_engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path
) -> None:
    bot = make_bot(sqlite_engine, github_emulator, tmp_path)
    seen: list[object] = []
    handlers = {JobKind.mine_pr: route(JobKind.mine_pr, lambda ctx, job: seen.append(job) or {})}
    worker = Worker(bot.context, handlers=handlers, github=bot.worker.github)
    good = queue(sqlite_engine, JobKind.mine_pr, repo=REPO, number=NUMBER)
    bad = queue(sqlite_engine, JobKind.mine_pr, repo=REPO, numbr=NUMBER)

    worker.run_until_idle()

    assert seen == [PRPayload(repo=REPO, number=NUMBER)]  # the handler gets the model
    with session_scope(sqlite_engine) as session:
        assert get_job(session=session, job_id=good).status == JobStatus.done
        job = get_job(session=session, job_id=bad)
        assert (job.status, job.attempts) == (JobStatus.failed, 1)
        assert "JobRejected: bad PRPayload" in (job.error or "")


def test_a_job_is_queued_only_with_its_kinds_payload() -> None:
    assert job_create(JobKind.poll_repo, PollPayload(repo=REPO), "k").payload == {"repo": REPO}
    with pytest.raises(TypeError, match="a post_report job takes a PRPayload, not PollPayload"):
        job_create(JobKind.post_report, PollPayload(repo=REPO), "k")
    assert set(PAYLOADS) == set(JobKind)
    assert set(default_handlers()) == set(JobKind)

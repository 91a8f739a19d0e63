"""Scheduled polling: the schedule persists in the registry, a restart neither loses nor doubles a
poll, repositories with the App installed are not polled, and a poll queues each newly merged PR
once."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy.engine import Engine

from bot.service.jobs.kinds import JobKind
from bot.service.jobs.scheduler import (
    enqueue_poll,
    make_scheduler,
    poll_job_id,
    stop_scheduler,
    sync_poll_jobs,
)
from bot.service.jobs.worker import Worker
from bot.watchfile import WatchedRepo
from task_registry.candidates import find_candidate
from task_registry.db import session_scope
from task_registry.jobs import list_jobs
from task_registry.reports import upsert_installation
from task_registry.repos import get_repo
from tests.bot_support import REPO, make_bot
from tests.github_emulator import GitHubEmulator, PullFile

WATCHED = [
    WatchedRepo(name=REPO, poll_interval_minutes=30),
    WatchedRepo(name="acme/other", poll_interval_minutes=60),
]


def poll_jobs(engine: Engine) -> list[str]:
    with session_scope(engine) as session:
        return [
            j.dedupe_key or "" for j in list_jobs(session=session) if j.kind == JobKind.poll_repo
        ]


def test_poll_jobs_survive_a_restart_with_their_next_run(engine: Engine) -> None:
    first = make_scheduler(engine)
    first.start(paused=True)
    assert sync_poll_jobs(first, WATCHED) == [poll_job_id(REPO), poll_job_id("acme/other")]
    next_run = first.get_job(poll_job_id(REPO)).next_run_time
    stop_scheduler(first)

    second = make_scheduler(engine)
    second.start(paused=True)
    sync_poll_jobs(second, WATCHED)
    jobs = {job.id: job for job in second.get_jobs()}
    stop_scheduler(second)

    assert sorted(jobs) == [poll_job_id(REPO), poll_job_id("acme/other")]
    assert jobs[poll_job_id(REPO)].next_run_time == next_run


def test_a_repo_dropped_from_the_watch_file_stops_being_polled(engine: Engine) -> None:
    scheduler = make_scheduler(engine)
    scheduler.start(paused=True)
    sync_poll_jobs(scheduler, WATCHED)
    sync_poll_jobs(scheduler, WATCHED[:1])
    assert [job.id for job in scheduler.get_jobs()] == [poll_job_id(REPO)]
    scheduler.shutdown(wait=False)


def test_a_poll_missed_while_down_runs_once_after_restart(engine: Engine) -> None:
    scheduler = make_scheduler(engine)
    scheduler.start(paused=True)
    sync_poll_jobs(scheduler, WATCHED[:1])
    overdue = datetime.now(UTC) - timedelta(hours=3)  # six runs missed
    scheduler.modify_job(poll_job_id(REPO), next_run_time=overdue)
    stop_scheduler(scheduler)

    restarted = make_scheduler(engine)
    restarted.start()
    try:
        deadline = time.monotonic() + 10
        while not poll_jobs(engine) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop_scheduler(restarted)
    assert len(poll_jobs(engine)) == 1


def test_two_polls_in_one_interval_queue_one_job(engine: Engine) -> None:
    make_scheduler(engine)
    assert enqueue_poll(REPO, 30) is True
    assert enqueue_poll(REPO, 30) is False
    assert len(poll_jobs(engine)) == 1


def test_a_repo_with_the_app_installed_is_not_polled(engine: Engine) -> None:
    make_scheduler(engine)
    with session_scope(engine) as session:
        upsert_installation(session=session, installation_id=1, account="acme", repositories=[REPO])
    assert enqueue_poll(REPO, 30) is False
    assert poll_jobs(engine) == []


def test_a_poll_mines_new_merges_and_queues_each_survivor_once(
    sqlite_engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path
) -> None:
    bot = make_bot(sqlite_engine, github_emulator, tmp_path)
    t0 = datetime.now(UTC) - timedelta(days=1)
    big = [
        PullFile("pkg/core.py", additions=60, deletions=5),
        PullFile("tests/test_core.py", status="added", additions=20),
    ]
    github_emulator.state.add_pull(REPO, 6, merged=True, merged_at=t0, updated_at=t0, files=big)
    github_emulator.state.add_pull(
        REPO, 8, merged=True, merged_at=t0, updated_at=t0, files=[PullFile("pkg/x.py")]
    )
    github_emulator.state.add_pull(REPO, 7, state="closed", closed_at=t0, updated_at=t0)
    handlers = {JobKind.poll_repo: bot.worker.handlers[JobKind.poll_repo]}
    poller = Worker(bot.context, handlers=handlers, github=bot.worker.github)
    make_scheduler(sqlite_engine)  # binds the engine the scheduled call uses

    enqueue_poll(REPO, 30)
    first = poller.run_until_idle()
    with session_scope(sqlite_engine) as session:
        for job in list_jobs(session=session):
            job.dedupe_key = None if job.kind == JobKind.poll_repo else job.dedupe_key
            session.add(job)
    enqueue_poll(REPO, 30)
    second = poller.run_until_idle()

    assert sorted(first[0].result["queued"]) == [5, 6]  # #8 is under the threshold
    assert second[0].result == {"merged": [], "queued": []}
    with session_scope(sqlite_engine) as session:
        mined = sorted(
            j.payload["number"] for j in list_jobs(session=session) if j.kind == JobKind.mine_pr
        )
        repo_id = get_repo(session=session, full_name=REPO).id or 0
        small = find_candidate(session=session, repo_id=repo_id, number=8)
    assert mined == [5, 6]
    assert small is not None
    assert small.filter_verdict == "rejected"


def test_a_poll_and_probewatch_mine_share_one_cursor(
    sqlite_engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path
) -> None:
    """Regression: the poller stored a bare ISO time in the github cursor the miner's
    GitHub source reads as JSON, so `probewatch mine --github` crashed after a poll."""
    from bot.pipeline import poll_merged
    from bot.repos import mining_config
    from pr_miner.mining import mine
    from pr_miner.sources.github_source import GitHubSource

    bot = make_bot(sqlite_engine, github_emulator, tmp_path)
    watched = bot.context.watch_file().get(REPO)
    client = bot.worker.github.for_repo(REPO)
    assert poll_merged(engine=sqlite_engine, client=client, watched=watched) == [5]
    again = mine(
        engine=sqlite_engine,
        repo=REPO,
        source=GitHubSource(client, REPO, watched.default_branch),
        config=mining_config(watched),
    )
    assert again.created == 0

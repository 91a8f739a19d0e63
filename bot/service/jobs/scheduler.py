"""Scheduled polling: one APScheduler job per watched repository without a webhook.

Upstream repositories we do not own cannot send us webhooks, so each watched
repository is polled on its ``poll_interval_minutes``. The schedule lives in
the registry database (APScheduler's SQLAlchemy job store), so a restart keeps
it; a run missed while the service was down fires once on start (coalesced),
and each run only queues a ``poll_repo`` job whose dedupe key is the interval
slot, so two schedulers, or a restart within a slot, never queue the same poll
twice. A repository where the GitHub App is installed gets webhooks and is not
polled.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy.engine import Engine

from bot.service.jobs.kinds import (
    JobKind,
    PollPayload,
    RedeliverPayload,
    job_create,
    poll_key,
    redeliver_key,
)
from bot.watchfile import WatchedRepo
from task_registry.db import session_scope
from task_registry.jobs import enqueue_job
from task_registry.reports import installation_for

log = logging.getLogger(__name__)
JOBSTORE_TABLE = "apscheduler_jobs"
POLL_JOB_PREFIX = "poll:"
REDELIVER_JOB_ID = "redeliver"
REDELIVER_MINUTES = 15
# APScheduler stores jobs as references to module functions; this is the engine they use.
_engines: dict[str, Engine] = {}


def poll_job_id(repo: str) -> str:
    return f"{POLL_JOB_PREFIX}{repo}"


def enqueue_poll(repo: str, interval_minutes: int, store: str = "default") -> bool:
    """The scheduled call: queue one poll of ``repo`` for the current interval slot."""
    slot = int(time.time() // (interval_minutes * 60))
    with session_scope(_engines[store]) as session:
        if installation_for(session=session, repo=repo) is not None:
            return False  # the App's webhook tells us about merges there
        job_in = job_create(JobKind.poll_repo, PollPayload(repo=repo), poll_key(repo, slot))
        return enqueue_job(session=session, job_in=job_in)[1]


def enqueue_redelivery(interval_minutes: int, store: str = "default") -> bool:
    """The scheduled call: queue one check of the App's delivery log for this slot."""
    slot = int(time.time() // (interval_minutes * 60))
    with session_scope(_engines[store]) as session:
        job_in = job_create(JobKind.redeliver, RedeliverPayload(), redeliver_key(slot))
        return enqueue_job(session=session, job_in=job_in)[1]


def schedule_redelivery(
    scheduler: BackgroundScheduler,
    interval_minutes: int = REDELIVER_MINUTES,
    store: str = "default",
) -> None:
    """Check the App's delivery log every ``interval_minutes`` (only with App credentials)."""
    kwargs = {"interval_minutes": interval_minutes, "store": store}
    existing = scheduler.get_job(REDELIVER_JOB_ID)
    if existing is not None and existing.kwargs == kwargs:
        return
    scheduler.add_job(
        enqueue_redelivery,
        "interval",
        minutes=interval_minutes,
        id=REDELIVER_JOB_ID,
        kwargs=kwargs,
        replace_existing=True,
    )


def make_scheduler(engine: Engine, store: str = "default") -> BackgroundScheduler:
    """A scheduler whose jobs persist in ``engine``'s database (started paused by the caller)."""
    _engines[store] = engine
    return BackgroundScheduler(
        jobstores={"default": SQLAlchemyJobStore(engine=engine, tablename=JOBSTORE_TABLE)},
        job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
        timezone="UTC",
    )


def stop_scheduler(scheduler: BackgroundScheduler) -> None:
    """Shut down without consuming due runs.

    APScheduler 3 processes due jobs once more while shutting down, after its executor is
    gone, and then moves their next run past the failed submission: a poll due at that moment
    would be lost. Detaching the job store first leaves the stored schedule untouched.
    """
    scheduler.pause()
    scheduler.remove_jobstore("default", shutdown=True)
    scheduler.shutdown(wait=False)


def sync_poll_jobs(
    scheduler: BackgroundScheduler, repos: Iterable[WatchedRepo], store: str = "default"
) -> list[str]:
    """Make the stored poll jobs match the watch file; keeps the next run of unchanged ones."""
    wanted = {poll_job_id(repo.name): repo for repo in repos}
    for job in scheduler.get_jobs():
        if job.id.startswith(POLL_JOB_PREFIX) and job.id not in wanted:
            scheduler.remove_job(job.id)
    for job_id, repo in wanted.items():
        _ensure_poll_job(scheduler, job_id, repo, store)
    return sorted(wanted)


def _ensure_poll_job(
    scheduler: BackgroundScheduler, job_id: str, repo: WatchedRepo, store: str
) -> None:
    kwargs = {"repo": repo.name, "interval_minutes": repo.poll_interval_minutes, "store": store}
    existing = scheduler.get_job(job_id)
    if existing is not None and existing.kwargs == kwargs:
        return  # same schedule: keep its next run time rather than restarting the interval
    scheduler.add_job(
        enqueue_poll,
        "interval",
        minutes=repo.poll_interval_minutes,
        id=job_id,
        kwargs=kwargs,
        replace_existing=True,
    )
    log.info("polling %s every %d min", repo.name, repo.poll_interval_minutes)

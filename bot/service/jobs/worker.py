"""The worker: claims jobs with a lease, runs their handler, and records the outcome.

A claim holds the job for ``worker_lease_s``; a background thread renews the
lease while the handler runs. A worker that dies (kill -9) stops renewing, the
lease expires and another worker claims the job again; handlers are written to
be re-run (posting finds what a dead worker may already have written), and before
running a job a worker stops the runs that a dead one left on this host and removes
their folders (:func:`bot.repos.reap_left_runs`). A
handler's exception fails the job, which is retried with a backoff until its
attempts run out; a lease lost to another worker drops this worker's result.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import traceback
import uuid
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from bot.context import AppContext
from bot.repos import reap_left_runs
from bot.service.github.client import GitHubClients
from bot.service.jobs.handlers import HandlerRegistry, JobContext, JobRejected, default_handlers
from task_registry.db import session_scope
from task_registry.jobs import LeaseLost, claim_job, complete_job, fail_job, get_job, renew_lease
from task_registry.models import Job

log = logging.getLogger(__name__)
RETRY_BACKOFF_S = (10.0, 60.0, 300.0)


@dataclass(frozen=True)
class Ran:
    job_id: int
    kind: str
    ok: bool
    result: dict[str, Any]


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Worker:
    def __init__(
        self,
        context: AppContext,
        *,
        handlers: HandlerRegistry | None = None,
        github: GitHubClients | None = None,
        name: str | None = None,
    ) -> None:
        self.context, self.settings = context, context.settings
        self.handlers = handlers if handlers is not None else default_handlers()
        self.github = github or GitHubClients(context.settings)
        self.name = name or worker_name()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._schema_checked = False

    def _session(self) -> AbstractContextManager[Session]:
        # The schema is checked once: per transaction it would cost more than the work.
        if not self._schema_checked:
            self.context.checked_engine()
            self._schema_checked = True
        return session_scope(self.context.engine)

    # --- one job -------------------------------------------------------------------------

    def run_once(self) -> Ran | None:
        """Claim and run one job; None when no job is runnable."""
        if not self.handlers:
            return None  # an empty kinds filter would match every kind
        with self._session() as session:
            job = claim_job(
                session=session,
                owner=self.name,
                lease_s=self.settings.worker_lease_s,
                kinds=list(self.handlers),
            )
        if job is None:
            return None
        self._reap()
        return self._run(job)

    def _reap(self) -> None:
        """Stop what a killed worker left running on this host (its tests outlive it in their
        own process groups) and remove its run folders, before this job may redo its work."""
        try:
            reaped = reap_left_runs(self.settings)
        except OSError as exc:  # a folder that cannot be removed must not stop the queue
            log.warning("worker %s: cleaning up left runs failed: %s", self.name, exc)
            return
        for record in reaped:
            log.info("stopped a run left by pid %s: %s", record.owner.pid, record.folders[0])

    def _run(self, job: Job) -> Ran:
        assert job.id is not None
        done = threading.Event()
        renewer = threading.Thread(target=self._renew, args=(job.id, done), daemon=True)
        renewer.start()
        try:
            result = self._call(job)
        except Exception as exc:  # the edge: any handler failure becomes a failed attempt
            log.warning("job %s (%s) failed: %s", job.id, job.kind, exc)
            done.set()
            self._record_failure(job, exc)
            return Ran(job.id, job.kind, False, {"error": str(exc)})
        done.set()
        self._record_success(job, result)
        return Ran(job.id, job.kind, True, result)

    def _call(self, job: Job) -> dict[str, Any]:
        assert job.id is not None
        ctx = JobContext(self.context, self.github, job.id, self.name)
        return self.handlers[job.kind](ctx, job.payload)

    def _renew(self, job_id: int, done: threading.Event) -> None:
        while not done.wait(self.settings.worker_lease_s / 3):
            try:
                with self._session() as session:
                    job = get_job(session=session, job_id=job_id)
                    renew_lease(
                        session=session,
                        job=job,
                        owner=self.name,
                        lease_s=self.settings.worker_lease_s,
                    )
            except LeaseLost:
                return

    def _record_success(self, job: Job, result: dict[str, Any]) -> None:
        try:
            with self._session() as session:
                stored = get_job(session=session, job_id=job.id or 0)
                complete_job(session=session, job=stored, owner=self.name, result=result)
        except LeaseLost:
            log.warning("job %s finished after its lease passed on; result dropped", job.id)

    def _record_failure(self, job: Job, exc: Exception) -> None:
        error = f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, JobRejected):
            error += "\n" + "".join(traceback.format_exception(exc)[-3:])
        retry = RETRY_BACKOFF_S[min(job.attempts, len(RETRY_BACKOFF_S)) - 1]
        try:
            with self._session() as session:
                stored = get_job(session=session, job_id=job.id or 0)
                if isinstance(exc, JobRejected):
                    stored.max_attempts = stored.attempts  # retrying will not help
                    session.add(stored)
                    session.flush()
                fail_job(
                    session=session, job=stored, owner=self.name, error=error, retry_in_s=retry
                )
        except LeaseLost:
            log.warning("job %s failed after its lease passed on", job.id)

    # --- loops ---------------------------------------------------------------------------

    def run_until_idle(self, max_jobs: int = 1_000) -> list[Ran]:
        """Run jobs until none is runnable (tests, one-shot runs)."""
        ran: list[Ran] = []
        while len(ran) < max_jobs:
            outcome = self.run_once()
            if outcome is None:
                break
            ran.append(outcome)
        return ran

    def run_forever(self) -> None:
        self._reap()  # on start: what a killed predecessor left, before any job is claimed
        while not self._stop.is_set():
            try:
                outcome = self.run_once()
            except Exception:  # a database hiccup must not end the worker
                log.exception("worker %s: claiming a job failed", self.name)
                outcome = None
            if outcome is None:
                self._stop.wait(self.settings.worker_poll_s)

    def start(self) -> threading.Thread:
        self._thread = threading.Thread(
            target=self.run_forever, name="probewatch-worker", daemon=True
        )
        self._thread.start()
        return self._thread

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)

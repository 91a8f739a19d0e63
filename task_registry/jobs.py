"""The work queue: jobs with a status, attempts and a lease.

A worker claims the oldest runnable job and holds it for a lease; a worker that
dies (kill -9) simply stops renewing, the lease expires, and another worker
claims the job again. Claims are compare-and-set updates, and on PostgreSQL the
candidate row is read ``FOR UPDATE SKIP LOCKED``, so several service processes
can share one database without taking the same job.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, or_, update
from sqlmodel import Session, col, select

from probewatch.errors import RegistryError
from task_registry.errors import NotFound
from task_registry.models import Job, JobCreate
from task_registry.types import JobStatus, utcnow


class LeaseLost(RegistryError):
    """The job's lease passed to another worker; this worker's result is not stored."""


def enqueue_job(*, session: Session, job_in: JobCreate) -> tuple[Job, bool]:
    """Queue a job; with a ``dedupe_key`` already present, return that job and False."""
    if job_in.dedupe_key is not None:
        existing = session.exec(select(Job).where(Job.dedupe_key == job_in.dedupe_key)).first()
        if existing is not None:
            return existing, False
    job = Job.model_validate(job_in, update={"run_after": job_in.run_after or utcnow()})
    session.add(job)
    session.flush()
    return job, True


def get_job(*, session: Session, job_id: int) -> Job:
    job = session.get(Job, job_id)
    if job is None:
        raise NotFound("job", job_id)
    return job


def claim_job(
    *,
    session: Session,
    owner: str,
    lease_s: float,
    kinds: Sequence[str] | None = None,
    now: datetime | None = None,
) -> Job | None:
    """Take the oldest runnable job for ``lease_s`` seconds, or None when there is none."""
    now = now or utcnow()
    _fail_exhausted(session, now)
    for _ in range(5):  # another worker may win the compare-and-set; look again
        candidate = session.exec(_runnable(now, kinds)).first()
        if candidate is None:
            return None
        if _take(session, candidate, owner, now + timedelta(seconds=lease_s)):
            session.refresh(candidate)
            return candidate
    return None


def renew_lease(*, session: Session, job: Job, owner: str, lease_s: float) -> Job:
    _check_owner(session, job, owner)
    job.lease_expires_at = utcnow() + timedelta(seconds=lease_s)
    session.add(job)
    session.flush()
    return job


def complete_job(
    *, session: Session, job: Job, owner: str, result: dict[str, Any] | None = None
) -> Job:
    _check_owner(session, job, owner)
    job.status, job.result, job.error = JobStatus.done, result or {}, None
    return _release(session, job)


def fail_job(
    *, session: Session, job: Job, owner: str, error: str, retry_in_s: float = 60.0
) -> Job:
    """Record a failure: queue the job again while attempts remain, else mark it failed."""
    _check_owner(session, job, owner)
    job.error = error
    if job.attempts < job.max_attempts:
        job.status, job.run_after = JobStatus.queued, utcnow() + timedelta(seconds=retry_in_s)
    else:
        job.status = JobStatus.failed
    return _release(session, job)


def list_jobs(*, session: Session, status: JobStatus | None = None) -> list[Job]:
    query = select(Job)
    if status is not None:
        query = query.where(Job.status == status)
    return list(session.exec(query.order_by(col(Job.id))))


def _runnable(now: datetime, kinds: Sequence[str] | None) -> Any:
    queued = and_(col(Job.status) == JobStatus.queued, col(Job.run_after) <= now)
    expired = and_(col(Job.status) == JobStatus.running, col(Job.lease_expires_at) < now)
    query = select(Job).where(or_(queued, expired), col(Job.attempts) < col(Job.max_attempts))
    if kinds:
        query = query.where(col(Job.kind).in_(list(kinds)))
    return (
        query.order_by(col(Job.run_after), col(Job.id)).limit(1).with_for_update(skip_locked=True)
    )


def _take(session: Session, job: Job, owner: str, lease_until: datetime) -> bool:
    statement = (
        update(Job)
        .where(col(Job.id) == job.id, col(Job.attempts) == job.attempts)
        .where(col(Job.status) == job.status)
        .values(
            status=JobStatus.running,
            attempts=job.attempts + 1,
            lease_owner=owner,
            lease_expires_at=lease_until,
            updated_at=utcnow(),
        )
    )
    return session.execute(statement).rowcount == 1  # type: ignore[attr-defined]


def _fail_exhausted(session: Session, now: datetime) -> None:
    """A job whose last allowed attempt lost its lease will never finish: say so."""
    statement = (
        update(Job)
        .where(col(Job.status) == JobStatus.running, col(Job.lease_expires_at) < now)
        .where(col(Job.attempts) >= col(Job.max_attempts))
        .values(status=JobStatus.failed, error="lease expired on the last attempt", updated_at=now)
    )
    session.execute(statement)


def _check_owner(session: Session, job: Job, owner: str) -> None:
    session.refresh(job)
    if job.status != JobStatus.running or job.lease_owner != owner:
        raise LeaseLost(f"job {job.id} is no longer leased to {owner}")


def _release(session: Session, job: Job) -> Job:
    job.lease_owner, job.lease_expires_at, job.updated_at = None, None, utcnow()
    session.add(job)
    session.flush()
    return job

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine

from task_registry.db import session_scope
from task_registry.jobs import LeaseLost, claim_job, complete_job, enqueue_job, fail_job, get_job
from task_registry.models import JobCreate
from task_registry.types import JobStatus, utcnow


def test_enqueue_with_a_dedupe_key_returns_the_existing_job(engine: Engine) -> None:
    with session_scope(engine) as session:
        first, created = enqueue_job(
            session=session, job_in=JobCreate(kind="mine_pr", dedupe_key="o/r#1")
        )
        again, created_again = enqueue_job(
            session=session, job_in=JobCreate(kind="mine_pr", dedupe_key="o/r#1")
        )
        assert (created, created_again, again.id) == (True, False, first.id)


def test_a_claimed_job_is_not_claimed_again_while_leased(engine: Engine) -> None:
    with session_scope(engine) as session:
        enqueue_job(session=session, job_in=JobCreate(kind="build"))
    with session_scope(engine) as session:
        job = claim_job(session=session, owner="w1", lease_s=60)
        assert job is not None
        assert (job.status, job.attempts, job.lease_owner) == (JobStatus.running, 1, "w1")
    with session_scope(engine) as session:
        assert claim_job(session=session, owner="w2", lease_s=60) is None


def test_a_dead_workers_job_is_finished_once_by_another(engine: Engine) -> None:
    with session_scope(engine) as session:
        job_id = enqueue_job(session=session, job_in=JobCreate(kind="post_report"))[0].id
    with session_scope(engine) as session:
        dead = claim_job(session=session, owner="dead", lease_s=30)
        assert dead is not None
    later = utcnow() + timedelta(seconds=31)
    with session_scope(engine) as session:
        alive = claim_job(session=session, owner="alive", lease_s=30, now=later)
        assert alive is not None
        assert (alive.id, alive.attempts) == (job_id, 2)
        complete_job(session=session, job=alive, owner="alive", result={"comment_id": 5})
    with pytest.raises(LeaseLost), session_scope(engine) as session:
        complete_job(
            session=session, job=get_job(session=session, job_id=job_id or 0), owner="dead"
        )
    with session_scope(engine) as session:
        stored = get_job(session=session, job_id=job_id or 0)
        assert (stored.status, stored.result) == (JobStatus.done, {"comment_id": 5})


def test_failures_retry_until_attempts_run_out(engine: Engine) -> None:
    with session_scope(engine) as session:
        enqueue_job(session=session, job_in=JobCreate(kind="validate", max_attempts=2))
    for attempt in (1, 2):
        with session_scope(engine) as session:
            job = claim_job(
                session=session, owner="w", lease_s=60, now=utcnow() + timedelta(hours=attempt)
            )
            assert job is not None
            assert job.attempts == attempt
            fail_job(session=session, job=job, owner="w", error=f"boom {attempt}", retry_in_s=0)
    with session_scope(engine) as session:
        assert (
            claim_job(session=session, owner="w", lease_s=60, now=utcnow() + timedelta(hours=3))
            is None
        )
        stored = get_job(session=session, job_id=job.id or 0)
        assert (stored.status, stored.error) == (JobStatus.failed, "boom 2")


def test_a_lease_lost_on_the_last_attempt_marks_the_job_failed(engine: Engine) -> None:
    with session_scope(engine) as session:
        job_id = enqueue_job(session=session, job_in=JobCreate(kind="x", max_attempts=1))[0].id
    with session_scope(engine) as session:
        assert claim_job(session=session, owner="w", lease_s=1) is not None
    with session_scope(engine) as session:
        assert (
            claim_job(session=session, owner="v", lease_s=1, now=utcnow() + timedelta(seconds=5))
            is None
        )
        assert get_job(session=session, job_id=job_id or 0).status == JobStatus.failed


def test_kinds_filter_what_a_worker_claims(engine: Engine) -> None:
    with session_scope(engine) as session:
        enqueue_job(session=session, job_in=JobCreate(kind="build"))
        enqueue_job(session=session, job_in=JobCreate(kind="post_report"))
    with session_scope(engine) as session:
        job = claim_job(session=session, owner="w", lease_s=60, kinds=["post_report"])
        assert job is not None
        assert job.kind == "post_report"


def test_concurrent_workers_never_take_the_same_job(engine: Engine) -> None:
    with session_scope(engine) as session:
        for index in range(20):
            enqueue_job(session=session, job_in=JobCreate(kind="k", dedupe_key=f"j{index}"))
    taken: list[int] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        while True:
            with session_scope(engine) as session:
                job = claim_job(session=session, owner=name, lease_s=60)
                if job is None:
                    return
                with lock:
                    taken.append(job.id or 0)

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(taken) == sorted(set(taken))
    assert len(taken) == 20

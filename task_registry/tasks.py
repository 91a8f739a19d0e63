"""Tasks and what hangs off them: promises, probes, adversarial patches, validation runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from sqlmodel import Session, col, select

from task_registry.errors import AlreadyExists, InvalidTransition, NotFound
from task_registry.models import (
    AdversarialPatch,
    AdversarialPatchCreate,
    Probe,
    ProbeCreate,
    Promise,
    PromiseCreate,
    Task,
    TaskCreate,
    TestResult,
    TestResultBase,
    ValidationRun,
    ValidationRunCreate,
)
from task_registry.types import TaskStatus, utcnow

RowT = TypeVar("RowT", Promise, Probe, AdversarialPatch)

# candidate → built → validated → published → retired; a rebuild steps back to built,
# a re-validation stays validated, and any task can be retired.
TRANSITIONS: dict[TaskStatus, frozenset[TaskStatus]] = {
    TaskStatus.candidate: frozenset({TaskStatus.built, TaskStatus.retired}),
    TaskStatus.built: frozenset({TaskStatus.built, TaskStatus.validated, TaskStatus.retired}),
    TaskStatus.validated: frozenset(
        {TaskStatus.built, TaskStatus.validated, TaskStatus.published, TaskStatus.retired}
    ),
    TaskStatus.published: frozenset({TaskStatus.retired}),
    TaskStatus.retired: frozenset(),
}


def create_task(*, session: Session, task_in: TaskCreate) -> Task:
    if find_task(session=session, instance_id=task_in.instance_id) is not None:
        raise AlreadyExists("task", task_in.instance_id)
    task = Task.model_validate(task_in)
    session.add(task)
    session.flush()
    return task


def find_task(*, session: Session, instance_id: str) -> Task | None:
    return session.exec(select(Task).where(Task.instance_id == instance_id)).first()


def get_task(*, session: Session, instance_id: str) -> Task:
    task = find_task(session=session, instance_id=instance_id)
    if task is None:
        raise NotFound("task", instance_id)
    return task


def list_tasks(
    *,
    session: Session,
    repo: str | None = None,
    statuses: Sequence[TaskStatus] | None = None,
) -> list[Task]:
    query = select(Task)
    if repo is not None:
        query = query.where(Task.repo == repo)
    if statuses:
        query = query.where(col(Task.status).in_([str(s) for s in statuses]))
    return list(session.exec(query.order_by(col(Task.instance_id))))


def set_task_status(*, session: Session, task: Task, status: TaskStatus) -> Task:
    current = TaskStatus(task.status)
    if status not in TRANSITIONS[current]:
        raise InvalidTransition("task", task.instance_id, current, status)
    task.status, task.updated_at = status, utcnow()
    session.add(task)
    session.flush()
    return task


def add_promise(*, session: Session, promise_in: PromiseCreate) -> Promise:
    return _add(session, Promise.model_validate(promise_in))


def add_probe(*, session: Session, probe_in: ProbeCreate) -> Probe:
    return _add(session, Probe.model_validate(probe_in))


def add_adversarial(*, session: Session, patch_in: AdversarialPatchCreate) -> AdversarialPatch:
    return _add(session, AdversarialPatch.model_validate(patch_in))


def list_promises(*, session: Session, task_id: int) -> list[Promise]:
    query = select(Promise).where(Promise.task_id == task_id).order_by(col(Promise.position))
    return list(session.exec(query))


def list_probes(*, session: Session, task_id: int) -> list[Probe]:
    query = select(Probe).where(Probe.task_id == task_id).order_by(col(Probe.path))
    return list(session.exec(query))


def list_adversarials(*, session: Session, task_id: int) -> list[AdversarialPatch]:
    query = select(AdversarialPatch).where(AdversarialPatch.task_id == task_id)
    return list(session.exec(query.order_by(col(AdversarialPatch.id))))


def adversarial_patches(*, session: Session, task_id: int) -> dict[str, str]:
    """Each stored adversarial's diff, by its id in the coverage table."""
    return {str(a.id): a.patch for a in list_adversarials(session=session, task_id=task_id)}


def record_validation_run(
    *,
    session: Session,
    run_in: ValidationRunCreate,
    results: Sequence[TestResultBase] = (),
) -> ValidationRun:
    """Store a run and its per-test results together (one flush: all or nothing)."""
    run = ValidationRun.model_validate(run_in)
    session.add(run)
    session.flush()
    assert run.id is not None
    for result in results:
        session.add(TestResult.model_validate(result, update={"run_id": run.id}))
    session.flush()
    return run


def list_validation_runs(*, session: Session, task_id: int) -> list[ValidationRun]:
    query = select(ValidationRun).where(ValidationRun.task_id == task_id)
    return list(session.exec(query.order_by(col(ValidationRun.id))))


def list_test_results(*, session: Session, run_id: int) -> list[TestResult]:
    query = select(TestResult).where(TestResult.run_id == run_id).order_by(col(TestResult.id))
    return list(session.exec(query))


def _add(session: Session, row: RowT) -> RowT:
    session.add(row)
    session.flush()
    return row

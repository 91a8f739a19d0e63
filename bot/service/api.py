"""The JSON API under ``/api`` (OpenAPI at ``/docs``): read freely, write with the admin token.

Lists are paginated (``limit``/``offset``, with the total). Writes (accepting or
rejecting a candidate) need ``Authorization: Bearer <PROBEWATCH_ADMIN_TOKEN>``;
without a configured admin token every write is refused. Hidden task material
(probe code, the hollow patch) never leaves through this API; the coverage
table carries what the public report shows.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Generic, TypeVar

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field
from sqlalchemy import func
from sqlmodel import Session, SQLModel, col, select

from bot.service.deps import (
    Admin,
    Db,
    InstanceId,
    Offset,
    Owner,
    PullNumber,
    RepoFilter,
    RepoShortName,
    RowId,
)
from task_registry.candidates import decide_candidate
from task_registry.coverage import CoverageTable, stored_coverage
from task_registry.models import (
    CandidatePR,
    CandidatePRPublic,
    PRReport,
    Repo,
    RepoPublic,
    Task,
    ValidationRunPublic,
)
from task_registry.reports import count_reports, get_report, list_reports
from task_registry.tasks import get_task, list_validation_runs
from task_registry.types import Decision, FilterVerdict, ReportStatus, TaskStatus

T = TypeVar("T")
MAX_LIMIT = 200
MAX_REASON = 2000


class Page(BaseModel, Generic[T]):
    items: list[T]
    total: int
    limit: int
    offset: int


class TaskSummary(SQLModel):
    id: int
    instance_id: str
    repo: str
    pull_number: int
    status: TaskStatus
    created_at: datetime
    gpus: int
    areas: list[str]


class TaskDetail(TaskSummary):
    base_commit: str
    merge_commit: str | None
    problem_statement: str
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    lock_hash: str | None
    gpu_type: str | None


class ReportPublic(SQLModel):
    repo: str
    pull_number: int
    status: ReportStatus
    skip_reason: str | None
    summary: str
    actionable: bool
    dry_run: bool
    ignored: bool
    comment_id: int | None
    check_run_id: int | None
    posted_at: datetime | None
    updated_at: datetime


class ReportDetail(ReportPublic):
    body: str
    body_hash: str


class DecisionIn(BaseModel):
    reason: Annotated[str, Field(max_length=MAX_REASON, pattern=r"^[^\x00]*$")] | None = None


Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT)]


def make_api_router() -> APIRouter:
    router = APIRouter(prefix="/api", tags=["api"])
    _add_read_routes(router)
    _add_task_routes(router)
    _add_write_routes(router)
    return router


def _page(db: Session, query: object, limit: int, offset: int, model: type[T]) -> Page[T]:
    total = db.exec(select(func.count()).select_from(query.subquery())).one()  # type: ignore[attr-defined]
    rows = db.exec(query.offset(offset).limit(limit))  # type: ignore[attr-defined]
    items = [model.model_validate(row, from_attributes=True) for row in rows]  # type: ignore[attr-defined]
    return Page[model](items=items, total=int(total), limit=limit, offset=offset)  # type: ignore[valid-type]


def _add_read_routes(router: APIRouter) -> None:
    @router.get("/repos", response_model=Page[RepoPublic])
    def repos(db: Db, limit: Limit = 50, offset: Offset = 0) -> Page[RepoPublic]:
        query = select(Repo).order_by(col(Repo.full_name))
        return _page(db, query, limit, offset, RepoPublic)

    @router.get("/candidates", response_model=Page[CandidatePRPublic])
    def candidates(
        db: Db,
        repo: RepoFilter = None,
        decision: Decision | None = None,
        verdict: FilterVerdict | None = None,
        limit: Limit = 50,
        offset: Offset = 0,
    ) -> Page[CandidatePRPublic]:
        query = select(CandidatePR)
        if repo is not None:
            query = query.join(Repo).where(Repo.full_name == repo)
        if decision is not None:
            query = query.where(CandidatePR.decision == decision)
        if verdict is not None:
            query = query.where(CandidatePR.filter_verdict == verdict)
        query = query.order_by(col(CandidatePR.rank_score).desc(), col(CandidatePR.id))
        return _page(db, query, limit, offset, CandidatePRPublic)

    @router.get("/reports", response_model=Page[ReportPublic])
    def reports(
        db: Db, repo: RepoFilter = None, limit: Limit = 50, offset: Offset = 0
    ) -> Page[ReportPublic]:
        rows = list_reports(session=db, repo=repo, limit=limit, offset=offset)
        items = [ReportPublic.model_validate(row, from_attributes=True) for row in rows]
        total = count_reports(session=db, repo=repo)
        return Page[ReportPublic](items=items, total=total, limit=limit, offset=offset)

    @router.get("/reports/{owner}/{name}/{number}", response_model=ReportDetail)
    def report(db: Db, owner: Owner, name: RepoShortName, number: PullNumber) -> PRReport:
        return get_report(session=db, repo=f"{owner}/{name}", pull_number=number)


def _add_task_routes(router: APIRouter) -> None:
    @router.get("/tasks", response_model=Page[TaskSummary])
    def tasks(
        db: Db,
        repo: RepoFilter = None,
        task_status: Annotated[TaskStatus | None, Query(alias="status")] = None,
        limit: Limit = 50,
        offset: Offset = 0,
    ) -> Page[TaskSummary]:
        query = select(Task)
        if repo is not None:
            query = query.where(Task.repo == repo)
        if task_status is not None:
            query = query.where(Task.status == task_status)
        return _page(db, query.order_by(col(Task.instance_id)), limit, offset, TaskSummary)

    @router.get("/tasks/{instance_id}", response_model=TaskDetail)
    def task(db: Db, instance_id: InstanceId) -> Task:
        return get_task(session=db, instance_id=instance_id)

    @router.get("/tasks/{instance_id}/coverage", response_model=CoverageTable)
    def coverage(db: Db, instance_id: InstanceId) -> CoverageTable:
        return stored_coverage(get_task(session=db, instance_id=instance_id))

    @router.get("/tasks/{instance_id}/runs", response_model=list[ValidationRunPublic])
    def runs(db: Db, instance_id: InstanceId) -> list[ValidationRunPublic]:
        task = get_task(session=db, instance_id=instance_id)
        rows = list_validation_runs(session=db, task_id=task.id or 0)
        return [ValidationRunPublic.model_validate(row, from_attributes=True) for row in rows]


def _add_write_routes(router: APIRouter) -> None:
    @router.post("/candidates/{candidate_id}/accept", response_model=CandidatePRPublic)
    def accept(
        db: Db, _: Admin, candidate_id: RowId, body: DecisionIn | None = None
    ) -> CandidatePR:
        reason = body.reason if body else None
        return decide_candidate(
            session=db,
            candidate_id=candidate_id,
            decision=Decision.accepted,
            reason=reason,
            decided_by="api",
        )

    @router.post("/candidates/{candidate_id}/reject", response_model=CandidatePRPublic)
    def reject(
        db: Db, _: Admin, candidate_id: RowId, body: DecisionIn | None = None
    ) -> CandidatePR:
        reason = body.reason if body else None
        return decide_candidate(
            session=db,
            candidate_id=candidate_id,
            decision=Decision.rejected,
            reason=reason,
            decided_by="api",
        )

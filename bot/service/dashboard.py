"""Server-rendered dashboard pages (jinja2, no build step).

``/`` lists watched repositories with their funnel (mined → passed filters →
accepted → tasks → reports), ``/candidates`` is the curator's queue,
``/tasks/{instance_id}`` shows a task's coverage table and validation matrix,
and ``/reports/{owner}/{name}/{number}`` previews a PR's report in full (the
link a truncated comment points to).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from sqlmodel import Session, col, select

from bot.report.render import full_report_url, render_full_report
from bot.report.store import report_input
from bot.service.deps import Db, SettingsDep
from task_registry.coverage import stored_coverage
from task_registry.models import CandidatePR, PRReport, Repo, Task, ValidationRun
from task_registry.reports import get_report
from task_registry.swebench import instance_id_for
from task_registry.tasks import find_task, get_task, list_validation_runs
from task_registry.types import Control, Decision, FilterVerdict, ReportStatus

TEMPLATES = Jinja2Templates(directory=Path(__file__).with_name("templates"))
QUEUE_LIMIT = 200


@dataclass(frozen=True)
class Funnel:
    repo: str
    mined: int
    passed: int
    accepted: int
    tasks: int
    reports: int
    posted: int


@dataclass(frozen=True)
class MatrixRow:
    control: str
    suite: str
    outcome: str
    passed: int
    collected: int
    attempt: int


def funnel(db: Session, repo: Repo) -> Funnel:
    candidates = list(db.exec(select(CandidatePR).where(CandidatePR.repo_id == repo.id)))
    reports = list(db.exec(select(PRReport).where(PRReport.repo == repo.full_name)))
    tasks = db.exec(select(Task).where(Task.repo == repo.full_name)).all()
    return Funnel(
        repo=repo.full_name,
        mined=len(candidates),
        passed=sum(c.filter_verdict == FilterVerdict.passed for c in candidates),
        accepted=sum(c.decision == Decision.accepted for c in candidates),
        tasks=len(tasks),
        reports=len(reports),
        posted=sum(r.status == ReportStatus.posted for r in reports),
    )


def control_label(run: ValidationRun) -> str:
    if run.control == Control.adversarial and run.adversarial_id is not None:
        return f"adversarial #{run.adversarial_id}"
    return str(run.control)


def matrix(runs: list[ValidationRun]) -> list[MatrixRow]:
    return [
        MatrixRow(control_label(r), r.suite, r.outcome, r.n_passed, r.n_collected, r.attempt)
        for r in runs
    ]


def make_dashboard_router() -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/", response_class=HTMLResponse)
    def index(request: Request, db: Db) -> HTMLResponse:
        repos = db.exec(select(Repo).order_by(col(Repo.full_name))).all()
        rows = [funnel(db, repo) for repo in repos]
        totals = Counter(r.status for r in db.exec(select(Task)).all())
        return TEMPLATES.TemplateResponse(
            request, "index.html", {"funnels": rows, "task_statuses": dict(totals)}
        )

    @router.get("/candidates", response_class=HTMLResponse)
    def candidates(request: Request, db: Db) -> HTMLResponse:
        query = (
            select(CandidatePR, Repo)
            .join(Repo)
            .where(CandidatePR.decision == Decision.pending)
            .where(CandidatePR.filter_verdict == FilterVerdict.passed)
            .order_by(col(CandidatePR.rank_score).desc(), col(CandidatePR.id))
            .limit(QUEUE_LIMIT)
        )
        return TEMPLATES.TemplateResponse(
            request, "candidates.html", {"rows": db.exec(query).all()}
        )

    @router.get("/tasks/{instance_id}", response_class=HTMLResponse)
    def task(request: Request, db: Db, instance_id: str) -> HTMLResponse:
        row = get_task(session=db, instance_id=instance_id)
        context = {
            "task": row,
            "coverage": stored_coverage(row),
            "matrix": matrix(list_validation_runs(session=db, task_id=row.id or 0)),
        }
        return TEMPLATES.TemplateResponse(request, "task.html", context)

    @router.get("/reports/{owner}/{name}/{number}", response_class=HTMLResponse)
    def report(
        request: Request, db: Db, settings: SettingsDep, owner: str, name: str, number: int
    ) -> HTMLResponse:
        repo = f"{owner}/{name}"
        stored = get_report(session=db, repo=repo, pull_number=number)
        task = find_task(session=db, instance_id=instance_id_for(repo, number))
        public = settings.public_url
        full = (
            render_full_report(
                report_input(db, task), full_url=full_report_url(public, repo, number)
            )
            if task is not None
            else stored.body
        )
        context = {"report": stored, "full": full, "task": task}
        return TEMPLATES.TemplateResponse(request, "report.html", context)

    return router

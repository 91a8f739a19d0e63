"""Server-rendered dashboard pages (jinja2, no build step, no JavaScript).

``/`` lists recent PRs with their verdict (gaps, waiting for GPU, clean, failed to validate,
not validated yet) and links, then the watched repositories' funnels; ``/tasks`` and
``/reports`` list every task and every stored report; ``/tasks/{instance_id}`` shows a task's
coverage table and its validation matrix; ``/reports/{owner}/{name}/{number}`` shows a PR's
report in full, rendered as GitHub renders it (the link a truncated comment points to);
``/candidates`` is the curator's queue.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from sqlmodel import Session, col, select

from bot.report.evidence import survivor_hunks
from bot.report.render import full_report_url, render_full_report
from bot.report.store import report_input
from bot.service.deps import Db, InstanceId, Owner, PullNumber, RepoShortName, SettingsDep
from bot.service.pages import TEMPLATES
from bot.service.recent_prs import (
    RECENT_LIMIT,
    VERDICT_MEANING,
    PRVerdict,
    failed_builds,
    pr_verdict,
    recent_prs,
)
from bot.service.validation_matrix import build_matrix
from task_registry.coverage import stored_coverage, validation_finished
from task_registry.models import CandidatePR, PRReport, Repo, Task, TestResult, ValidationRun
from task_registry.reports import feedback_by_month, get_report
from task_registry.swebench import instance_id_for
from task_registry.tasks import (
    adversarial_patches,
    find_task,
    get_task,
    list_validation_runs,
)
from task_registry.types import Decision, FilterVerdict, ReportStatus

QUEUE_LIMIT = 200
LIST_LIMIT = 200


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
class TaskLine:
    task: Task
    verdict: PRVerdict
    promises: int
    problems: int
    accepted_probes: int


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


def task_lines(db: Session, limit: int = LIST_LIMIT) -> list[TaskLine]:
    """The newest tasks (by merge time), each with its PR's verdict and its table's counts."""
    tasks = db.exec(select(Task).order_by(col(Task.created_at).desc()).limit(limit)).all()
    ids = [t.id for t in tasks if t.id is not None]
    found = db.exec(select(PRReport).where(col(PRReport.task_id).in_(ids))).all()
    reports = {(r.repo, r.pull_number): r for r in found}
    failures = failed_builds(db)
    lines = []
    for task in tasks:
        key = (task.repo, task.pull_number)
        table = stored_coverage(task)
        verdict, _ = pr_verdict(task, reports.get(key), failures.get(key))
        accepted = sum(p.accepted for p in table.probes)
        lines.append(TaskLine(task, verdict, len(table.promises), len(table.problems), accepted))
    return lines


def validation_results(db: Session, runs: list[ValidationRun]) -> list[TestResult]:
    ids = [r.id for r in runs if r.id is not None and r.submission_id is None]
    if not ids:
        return []
    return list(db.exec(select(TestResult).where(col(TestResult.run_id).in_(ids))))


def make_dashboard_router() -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/", response_class=HTMLResponse)
    def index(request: Request, db: Db) -> HTMLResponse:
        repos = db.exec(select(Repo).order_by(col(Repo.full_name))).all()
        context = {
            "prs": recent_prs(db, limit=RECENT_LIMIT),
            "limit": RECENT_LIMIT,
            "meaning": VERDICT_MEANING,
            "funnels": [funnel(db, repo) for repo in repos],
            "task_statuses": dict(Counter(t.status for t in db.exec(select(Task)).all())),
        }
        return TEMPLATES.TemplateResponse(request, "index.html", context)

    @router.get("/tasks", response_class=HTMLResponse)
    def tasks(request: Request, db: Db) -> HTMLResponse:
        context = {"lines": task_lines(db), "meaning": VERDICT_MEANING, "limit": LIST_LIMIT}
        return TEMPLATES.TemplateResponse(request, "tasks.html", context)

    @router.get("/reports", response_class=HTMLResponse)
    def reports(request: Request, db: Db) -> HTMLResponse:
        query = select(PRReport).order_by(col(PRReport.updated_at).desc()).limit(LIST_LIMIT)
        context = {
            "reports": db.exec(query).all(),
            "limit": LIST_LIMIT,
            "feedback": feedback_by_month(session=db),
        }
        return TEMPLATES.TemplateResponse(request, "reports.html", context)

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
    def task(request: Request, db: Db, instance_id: InstanceId) -> HTMLResponse:
        row = get_task(session=db, instance_id=instance_id)
        table = stored_coverage(row)
        runs = list_validation_runs(session=db, task_id=row.id or 0)
        patches = adversarial_patches(session=db, task_id=row.id or 0)
        listed_apart = [*table.unlinked(), *table.set_aside()]
        context = {
            "task": row,
            "coverage": table,
            "hunks": survivor_hunks(row.patch, patches, listed_apart),
            "matrix": build_matrix(table, runs, validation_results(db, runs)),
        }
        return TEMPLATES.TemplateResponse(request, "task.html", context)

    @router.get("/reports/{owner}/{name}/{number}", response_class=HTMLResponse)
    def report(
        request: Request,
        db: Db,
        settings: SettingsDep,
        owner: Owner,
        name: RepoShortName,
        number: PullNumber,
    ) -> HTMLResponse:
        repo = f"{owner}/{name}"
        stored = get_report(session=db, repo=repo, pull_number=number)
        task = find_task(session=db, instance_id=instance_id_for(repo, number))
        public = settings.public_url
        # The full report stands on a validated task; else the stored body is what there is.
        full = (
            render_full_report(
                report_input(db, task), full_url=full_report_url(public, repo, number)
            )
            if task is not None and validation_finished(task)
            else stored.body
        )
        context = {"report": stored, "full": full, "task": task}
        return TEMPLATES.TemplateResponse(request, "report.html", context)

    return router

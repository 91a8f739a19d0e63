"""The PRs the dashboard lists, newest merge first, each with one verdict a person can act on.

A PR is listed once it is accepted as a candidate, has a task or has a report. Its verdict
reads, in order: *gaps* (the report is actionable: a promise the PR's tests miss, with a
surviving patch), *waiting for GPU* (some of its tests wait for a GPU runner), *clean*
(validated, no gap shown), *failed to validate* (the last job that built its report failed,
or the machine could run none of its tests), and *not validated yet*. Everything is read
from the registry; nothing is derived again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pydantic import ValidationError
from sqlmodel import Session, col, select

from bot.service.jobs.kinds import JobKind, PRPayload
from task_registry.coverage import CoverageTable, stored_coverage
from task_registry.models import CandidatePR, Job, PRReport, Repo, Task
from task_registry.swebench import instance_id_for
from task_registry.types import Decision, JobStatus, TaskStatus

RECENT_LIMIT = 50
JOB_SCAN_LIMIT = 1000  # latest build jobs read to find the ones that failed
VALIDATED = frozenset({TaskStatus.validated, TaskStatus.published, TaskStatus.retired})

PRKey = tuple[str, int]  # (owner/name, number)


class PRVerdict(StrEnum):
    gaps = "gaps"
    waiting_gpu = "waiting for GPU"
    clean = "clean"
    failed = "failed to validate"
    not_validated = "not validated yet"

    @property
    def slug(self) -> str:
        """A name for CSS classes and data attributes."""
        return self.name.replace("_", "-")


VERDICT_MEANING: Mapping[PRVerdict, str] = {
    PRVerdict.gaps: "the PR's tests miss a promise; a surviving patch shows it",
    PRVerdict.waiting_gpu: "some of its tests wait for a GPU runner",
    PRVerdict.clean: "validated; no surviving patch shows a gap",
    PRVerdict.failed: "validation could not finish",
    PRVerdict.not_validated: "accepted; its task is not validated yet",
}


@dataclass(frozen=True)
class PRRow:
    repo: str
    number: int
    title: str
    merged_at: datetime | None
    verdict: PRVerdict
    detail: str  # the report's summary line, or why validation failed
    instance_id: str | None  # the task's, when there is one
    reported: bool  # a report is stored

    @property
    def report_url(self) -> str:
        return f"/reports/{self.repo}/{self.number}"

    @property
    def task_url(self) -> str | None:
        return f"/tasks/{self.instance_id}" if self.instance_id else None


def pr_verdict(
    task: Task | None, report: PRReport | None, failure: str | None = None
) -> tuple[PRVerdict, str]:
    """The verdict of one PR and the line that explains it."""
    summary = report.summary if report is not None else ""
    table = stored_coverage(task) if task is not None else None
    if task is not None and table is not None and task.status in VALIDATED:
        # The stored report knows the repository's ignores; the bare table does not.
        if report.actionable if report is not None else table.actionable:
            return PRVerdict.gaps, summary
        return (PRVerdict.waiting_gpu if _needs_gpu(table) else PRVerdict.clean), summary
    if table is not None and _needs_gpu(table):
        return PRVerdict.waiting_gpu, _waiting_line(table)
    if failure is not None:
        return PRVerdict.failed, failure
    if table is not None and table.waiting:
        return PRVerdict.failed, f"no test could run here: {table.waiting[0].reason}"
    return PRVerdict.not_validated, summary


def _needs_gpu(table: CoverageTable) -> bool:
    return any(w.needs_gpu for w in table.waiting)


def _waiting_line(table: CoverageTable) -> str:
    count = sum(1 for w in table.waiting if w.needs_gpu)
    return f"{count} test(s) wait for a GPU runner"


def recent_prs(db: Session, *, limit: int = RECENT_LIMIT) -> list[PRRow]:
    """The newest ``limit`` listed PRs (by merge time), each with its verdict."""
    merged: dict[PRKey, datetime | None] = {}
    titles: dict[PRKey, str] = {}
    for candidate, repo in _accepted(db, limit):
        key = (repo.full_name, candidate.number)
        merged[key], titles[key] = candidate.merged_at, candidate.title
    for newest in _newest_tasks(db, limit):
        merged.setdefault((newest.repo, newest.pull_number), newest.created_at)
    for orphan in _reports_without_task(db, limit):  # its time: when it was written
        merged.setdefault((orphan.repo, orphan.pull_number), orphan.created_at)
    keys = sorted(merged, key=lambda k: (_stamp(merged[k]), k), reverse=True)[:limit]
    tasks, reports = _tasks_of(db, keys), _reports_of(db, keys)
    failures = failed_builds(db)
    rows = []
    for key in keys:
        task, report = tasks.get(key), reports.get(key)
        verdict, detail = pr_verdict(task, report, failures.get(key))
        instance_id = task.instance_id if task is not None else None
        title = titles.get(key) or _title_of(task)
        rows.append(
            PRRow(*key, title, merged[key], verdict, detail, instance_id, report is not None)
        )
    return rows


def _stamp(moment: datetime | None) -> float:
    return moment.timestamp() if moment is not None else 0.0


def _title_of(task: Task | None) -> str:
    if task is None:
        return ""
    return next(iter(task.problem_statement.splitlines()), "")


def _accepted(db: Session, limit: int) -> Iterable[tuple[CandidatePR, Repo]]:
    query = (
        select(CandidatePR, Repo)
        .join(Repo)
        .where(CandidatePR.decision == Decision.accepted)
        .order_by(col(CandidatePR.merged_at).desc(), col(CandidatePR.id).desc())
        .limit(limit)
    )
    return db.exec(query).all()


def _newest_tasks(db: Session, limit: int) -> Iterable[Task]:
    query = select(Task).order_by(col(Task.created_at).desc(), col(Task.id).desc()).limit(limit)
    return db.exec(query).all()


def _reports_without_task(db: Session, limit: int) -> Iterable[PRReport]:
    query = (
        select(PRReport)
        .where(col(PRReport.task_id).is_(None))
        .order_by(col(PRReport.created_at).desc())
        .limit(limit)
    )
    return db.exec(query).all()


def _tasks_of(db: Session, keys: Sequence[PRKey]) -> dict[PRKey, Task]:
    ids = [instance_id_for(repo, number) for repo, number in keys]
    found = db.exec(select(Task).where(col(Task.instance_id).in_(ids))).all()
    return {(t.repo, t.pull_number): t for t in found}


def _reports_of(db: Session, keys: Sequence[PRKey]) -> dict[PRKey, PRReport]:
    wanted = set(keys)
    query = select(PRReport).where(col(PRReport.repo).in_({repo for repo, _ in keys}))
    query = query.where(col(PRReport.pull_number).in_({number for _, number in keys}))
    return {(r.repo, r.pull_number): r for r in db.exec(query) if (r.repo, r.pull_number) in wanted}


def failed_builds(db: Session) -> dict[PRKey, str]:
    """PRs whose latest report-building job failed, with the job's error."""
    query = (
        select(Job)
        .where(Job.kind == JobKind.build_report)
        .order_by(col(Job.id).desc())
        .limit(JOB_SCAN_LIMIT)
    )
    latest: dict[PRKey, Job] = {}
    for job in db.exec(query):
        try:
            payload = PRPayload.model_validate(job.payload)
        except ValidationError:
            continue  # a malformed job failed on its payload, not on a PR: nothing to list
        latest.setdefault((payload.repo, payload.number), job)
    return {
        key: job.error or "the job failed"
        for key, job in latest.items()
        if job.status == JobStatus.failed
    }

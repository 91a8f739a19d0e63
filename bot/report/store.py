"""A PR's report from the registry and back: read its task's stored table, store the body.

``load_report_input`` reads the coverage table stored on the PR's task (never deriving it
again) with the patch text of the adversarials it names, and refuses a task whose validation
did not finish; ``store_report`` renders it and keeps the result on the PR's one report row,
which posting later reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import Session

from bot.report.evidence import run_context
from bot.report.ranking import Votes
from bot.report.render import RenderedReport, ReportInput, full_report_url, render_report
from probewatch.errors import ServiceError
from task_registry.coverage import stored_coverage, validation_finished
from task_registry.models import Task
from task_registry.reports import get_or_create_report, save_report, votes_by_operator
from task_registry.swebench import instance_id_for
from task_registry.tasks import adversarial_patches, find_task, list_validation_runs
from task_registry.types import ReportStatus


class NotValidated(ServiceError):
    """The task's validation did not finish: a report on it would claim checks never run."""


def report_input(session: Session, task: Task) -> ReportInput:
    """The report's input for a stored task: its coverage table, the survivors' patches, the
    golden patch they are read against, and how its validation ran.

    Refused (:class:`NotValidated`) for a task whose validation did not finish: its table
    judges no patch, so a report would say the tests check nothing and show no gap."""
    assert task.id is not None
    if not validation_finished(task):
        raise NotValidated(
            f"task {task.instance_id} is {task.status} but its validation did not finish: "
            f"validate it first (`probewatch validate {task.instance_id}`)"
        )
    table = stored_coverage(task)
    named = {a.id for a in table.adversarials}
    stored = adversarial_patches(session=session, task_id=task.id)
    patches = {id_: patch for id_, patch in stored.items() if id_ in named}
    return ReportInput(
        repo=task.repo,
        pull_number=task.pull_number,
        table=table,
        merge_commit=task.merge_commit,
        task_id=task.id,
        patches=patches,
        golden_patch=task.patch,
        context=run_context(table, list_validation_runs(session=session, task_id=task.id)),
        feedback=repository_feedback(session, task.repo),
    )


def repository_feedback(session: Session, repo: str) -> dict[str, Votes]:
    """The repository's votes on report entries, per mutation operator: they rank its reports."""
    found = votes_by_operator(session=session, repo=repo)
    return {operator: Votes(useful, not_useful) for operator, (useful, not_useful) in found.items()}


def load_report_input(*, session: Session, repo: str, number: int) -> ReportInput | None:
    """The report's input for a merged PR, or None when no task exists for it yet."""
    task = find_task(session=session, instance_id=instance_id_for(repo, number))
    return report_input(session, task) if task is not None else None


@dataclass(frozen=True)
class StoredReport:
    rendered: RenderedReport
    written: bool  # False: the stored body was already this one


def store_report(
    *,
    session: Session,
    report: ReportInput,
    public_url: str,
    dry_run: bool,
    merge_sha: str | None = None,
    status: ReportStatus | None = None,
    skip_reason: str | None = None,
) -> StoredReport:
    """Render the PR's report and store it on the PR's one report row.

    Posting is a separate step (the post_report job); ``status`` and ``skip_reason`` are set
    here only by callers that never post (the demo's dry run).
    """
    repo, number = report.repo, report.pull_number
    rendered = render_report(report, full_url=full_report_url(public_url, repo, number))
    row = get_or_create_report(session=session, repo=repo, pull_number=number)
    written = row.body_hash != rendered.body_hash
    fields: dict[str, object] = {}
    if status is not None:
        fields.update(status=status, skip_reason=skip_reason)
    save_report(
        session=session,
        report=row,
        task_id=report.task_id,
        merge_sha=report.merge_commit or merge_sha,
        body=rendered.body,
        body_hash=rendered.body_hash,
        summary=rendered.summary,
        actionable=rendered.actionable,
        dry_run=dry_run,
        **fields,
    )
    return StoredReport(rendered, written)

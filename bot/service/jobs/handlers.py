"""What each kind of job does: a registry that maps a :class:`JobKind` to its route.

A route pairs the kind's payload model with its handler; the payload stored on
the job is validated once, by the route, and the handler receives the model. A
handler gets a :class:`JobContext` (the application context, GitHub clients, the
job's id and the worker's name), does its work in short transactions, queues any
follow-up job with a key derived from its own id (so a reclaimed job does not
queue it twice), and returns a small result that the queue stores.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import ValidationError
from sqlmodel import Session

from bot.context import AppContext
from bot.pipeline import ensure_task, mine_one_pr, poll_merged
from bot.report.check import check_output
from bot.report.render import entry_ids, full_report_url
from bot.report.store import load_report_input, store_report
from bot.repos import run_settings
from bot.service.github.client import GitHubClients
from bot.service.github.posting import (
    CHECK_RULES,
    COMMENT_RULES,
    PostAction,
    PostContext,
    publish_check_run,
    publish_comment,
    skip_reason,
    wait_for,
)
from bot.service.github.redelivery import fetch_attempts, redeliver, to_redeliver
from bot.service.github.repo_config import load_repo_config
from bot.service.jobs.kinds import (
    PAYLOADS,
    FeedbackPayload,
    IgnorePayload,
    InstallationPayload,
    JobKind,
    JobPayload,
    PollPayload,
    PRPayload,
    RedeliverPayload,
    followup_key,
    job_create,
    mine_key,
)
from bot.settings import Settings
from bot.watchfile import WatchedRepo
from probewatch.errors import ServiceError
from task_registry.db import session_scope
from task_registry.deliveries import find_delivery
from task_registry.jobs import enqueue_job
from task_registry.models import AdversarialPatch, PRReport
from task_registry.reports import (
    change_installation_repos,
    find_report,
    get_or_create_report,
    get_report,
    record_feedback,
    release_post_lock,
    save_report,
    take_post_lock,
    upsert_installation,
)
from task_registry.types import ReportStatus, utcnow


class JobRejected(ServiceError):
    """The job cannot run as asked (unknown repo, bad payload); retrying will not help."""


@dataclass
class JobContext:
    app: AppContext
    github: GitHubClients
    job_id: int
    owner: str

    @property
    def settings(self) -> Settings:
        return self.app.settings

    def session(self) -> AbstractContextManager[Session]:
        """A transaction on the registry (the worker checked the schema once at start)."""
        return session_scope(self.app.engine)

    def watched(self, repo: str) -> WatchedRepo:
        found = self.app.watch_file().find(repo)
        if found is None:
            raise JobRejected(f"{repo} is not in the watch file")
        return found

    def enqueue(self, kind: JobKind, payload: JobPayload, dedupe_key: str) -> bool:
        with self.session() as session:
            return enqueue_job(session=session, job_in=job_create(kind, payload, dedupe_key))[1]


P = TypeVar("P", bound=JobPayload)


@dataclass(frozen=True)
class Route(Generic[P]):
    """A job kind's payload model and its handler: the stored payload is validated here,
    once, and the handler receives the model."""

    payload: type[P]
    handle: Callable[[JobContext, P], dict[str, Any]]

    def __call__(self, ctx: JobContext, raw: Mapping[str, Any]) -> dict[str, Any]:
        try:
            payload = self.payload.model_validate(dict(raw))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "payload"
            raise JobRejected(f"bad {self.payload.__name__}: {where}: {first['msg']}") from None
        return self.handle(ctx, payload)


def route(kind: JobKind, handle: Callable[[JobContext, Any], dict[str, Any]]) -> Route[Any]:
    """The route of one of probewatch's own kinds: its payload model comes from PAYLOADS."""
    return Route(PAYLOADS[kind], handle)


def mine_pr(ctx: JobContext, job: PRPayload) -> dict[str, Any]:
    watched = ctx.watched(job.repo)
    client = ctx.github.for_repo(job.repo)
    mined = mine_one_pr(engine=ctx.app.engine, client=client, watched=watched, number=job.number)
    if mined.passed:
        follow = PRPayload(repo=job.repo, number=job.number, merge_sha=mined.merge_sha)
        ctx.enqueue(JobKind.build_report, follow, followup_key(JobKind.build_report, ctx.job_id))
    return {"passed": mined.passed, "reason": mined.reason}


def build_report(ctx: JobContext, job: PRPayload) -> dict[str, Any]:
    watched, watch = ctx.watched(job.repo), ctx.app.watch_file()
    repo_settings = run_settings(watched, settings=ctx.settings, watch=watch)
    built = ensure_task(
        engine=ctx.app.engine,
        watched=watched,
        watch=watch,
        number=job.number,
        settings=ctx.settings,
        repo_settings=repo_settings,
    )
    with ctx.session() as session:
        report = load_report_input(session=session, repo=job.repo, number=job.number)
    if report is None:
        return {"report": f"no task for this PR: {built}"}
    config = load_repo_config(ctx.github.for_repo(job.repo).get_repo(job.repo))
    with ctx.session() as session:
        stored = store_report(
            session=session,
            report=report.ignoring(config.ignores).showing(config.max_entries),
            public_url=ctx.settings.public_url,
            dry_run=watched.dry_run,
            merge_sha=job.merge_sha,
        )
    rendered = stored.rendered
    post = PRPayload(repo=job.repo, number=job.number)
    ctx.enqueue(JobKind.post_report, post, followup_key(JobKind.post_report, ctx.job_id))
    return {"actionable": rendered.actionable, "body_hash": rendered.body_hash}


def post_report(ctx: JobContext, job: PRPayload) -> dict[str, Any]:
    watched = ctx.watched(job.repo)
    with ctx.session() as session:
        report_id = get_report(session=session, repo=job.repo, pull_number=job.number).id
    assert report_id is not None
    if not wait_for(lambda: _lock(ctx, report_id), timeout_s=ctx.settings.worker_lease_s + 1):
        raise RuntimeError(f"{job.repo}#{job.number}: another worker is posting this report")
    try:
        return _post_locked(ctx, job, watched)
    finally:
        with ctx.session() as session:
            release_post_lock(session=session, report_id=report_id, owner=ctx.owner)


def _lock(ctx: JobContext, report_id: int) -> bool:
    with ctx.session() as session:
        return take_post_lock(
            session=session, report_id=report_id, owner=ctx.owner, ttl_s=ctx.settings.worker_lease_s
        )


def _post_locked(ctx: JobContext, job: PRPayload, watched: WatchedRepo) -> dict[str, Any]:
    with ctx.session() as session:
        report = get_report(session=session, repo=job.repo, pull_number=job.number)
    if watched.dry_run:
        _store(ctx, report, status=ReportStatus.dry_run, skip_reason="dry run (watch file)")
        return {"comment": PostAction.skipped, "reason": "dry run (watch file)"}
    gh_repo = ctx.github.for_repo(job.repo).get_repo(job.repo)
    pull = gh_repo.get_pull(job.number)
    context = PostContext(
        report=report,
        config=load_repo_config(gh_repo),
        labels=frozenset(label.name for label in pull.labels),
        dry_run=False,
    )
    result = {"comment": _comment(ctx, pull, context)}
    check_skip = skip_reason(CHECK_RULES, context)
    result["check_run"] = check_skip or _check_run(ctx, gh_repo, context)
    return result


def _comment(ctx: JobContext, pull: Any, context: PostContext) -> str:
    report = context.report
    reason = skip_reason(COMMENT_RULES, context)
    if reason is not None:
        _store(ctx, report, status=ReportStatus.skipped, skip_reason=reason)
        return f"{PostAction.skipped}: {reason}"
    outcome = publish_comment(pull, report)
    if outcome.action in (PostAction.created, PostAction.edited, PostAction.unchanged):
        changes: dict[str, Any] = {"comment_id": outcome.comment_id, "status": ReportStatus.posted}
        changes.update(posted_hash=report.body_hash, skip_reason=None)
        if outcome.action is not PostAction.unchanged:
            changes["posted_at"] = utcnow()
        _store(ctx, report, **changes)
    else:
        _store(ctx, report, status=ReportStatus.skipped, skip_reason=outcome.reason)
    return str(outcome.action)


def _check_run(ctx: JobContext, gh_repo: Any, context: PostContext) -> str:
    report = context.report
    with ctx.session() as session:
        found = load_report_input(session=session, repo=report.repo, number=report.pull_number)
    output = check_output(
        found.ignoring(context.config.ignores) if found is not None else None,
        body=report.body,
        summary=report.summary,
        full_url=full_report_url(ctx.settings.public_url, report.repo, report.pull_number),
    )
    outcome = publish_check_run(gh_repo, report, output)
    _store(ctx, report, check_run_id=outcome.check_run_id, check_run_hash=output.hash)
    return str(outcome.action)


def _store(ctx: JobContext, report: PRReport, **fields: Any) -> None:
    with ctx.session() as session:
        fresh = get_report(session=session, repo=report.repo, pull_number=report.pull_number)
        save_report(session=session, report=fresh, **fields)


def poll_repo(ctx: JobContext, job: PollPayload) -> dict[str, Any]:
    watched = ctx.watched(job.repo)
    client = ctx.github.for_repo(job.repo)
    numbers = poll_merged(engine=ctx.app.engine, client=client, watched=watched)
    queued = [
        n
        for n in numbers
        if ctx.enqueue(
            JobKind.mine_pr, PRPayload(repo=job.repo, number=n), mine_key(job.repo, n, None)
        )
    ]
    return {"merged": numbers, "queued": queued}


def ignore_pr(ctx: JobContext, job: IgnorePayload) -> dict[str, Any]:
    with ctx.session() as session:
        report = get_or_create_report(session=session, repo=job.repo, pull_number=job.number)
        save_report(session=session, report=report, ignored=True)
    return {"ignored": f"{job.repo}#{job.number}", "by": job.by}


def entry_feedback(ctx: JobContext, job: FeedbackPayload) -> dict[str, Any]:
    """Store a maintainer's vote on entry ``job.entry`` of the PR's comment, by the patch the
    comment showed there; the repository's next reports rank by it."""
    with ctx.session() as session:
        report = find_report(session=session, repo=job.repo, pull_number=job.number)
        shown = entry_ids(report.body) if report is not None else []
        if not 1 <= job.entry <= len(shown):
            return {"feedback": f"{job.repo}#{job.number} has no entry {job.entry} to mark"}
        patch = session.get(AdversarialPatch, int(shown[job.entry - 1]))
        if patch is None:
            return {"feedback": f"entry {job.entry}'s patch is no longer stored"}
        record_feedback(
            session=session,
            repo=job.repo,
            pull_number=job.number,
            adversarial_id=int(shown[job.entry - 1]),
            operator=patch.operator,
            useful=job.useful,
            author=job.by,
        )
    said = "useful" if job.useful else "not useful"
    return {"feedback": said, "entry": job.entry, "operator": patch.operator, "by": job.by}


def installation(ctx: JobContext, job: InstallationPayload) -> dict[str, Any]:
    with ctx.session() as session:
        if job.repositories is not None or not job.active:
            row = upsert_installation(
                session=session,
                installation_id=job.installation_id,
                account=job.account,
                repositories=job.repositories,
                active=job.active,
            )
        else:
            row = change_installation_repos(
                session=session,
                installation_id=job.installation_id,
                account=job.account,
                added=job.added,
                removed=job.removed,
            )
        return {"installation": row.installation_id, "repositories": list(row.repositories)}


def redeliver_failed(ctx: JobContext, job: RedeliverPayload) -> dict[str, Any]:
    requester = ctx.github.integration().requester
    with ctx.session() as session:

        def received(guid: str) -> bool:
            return find_delivery(session=session, delivery_id=guid) is not None

        chosen = to_redeliver(fetch_attempts(requester), received)
    for attempt in chosen:
        redeliver(requester, attempt)
    return {"redelivered": [attempt.guid for attempt in chosen]}


HandlerRegistry = dict[str, Route[Any]]


def default_handlers() -> HandlerRegistry:
    return {
        JobKind.mine_pr: route(JobKind.mine_pr, mine_pr),
        JobKind.build_report: route(JobKind.build_report, build_report),
        JobKind.post_report: route(JobKind.post_report, post_report),
        JobKind.poll_repo: route(JobKind.poll_repo, poll_repo),
        JobKind.ignore_pr: route(JobKind.ignore_pr, ignore_pr),
        JobKind.entry_feedback: route(JobKind.entry_feedback, entry_feedback),
        JobKind.installation: route(JobKind.installation, installation),
        JobKind.redeliver: route(JobKind.redeliver, redeliver_failed),
    }

"""``POST /webhook``: verify, deduplicate, queue, answer at once.

The signature (``X-Hub-Signature-256``, HMAC-SHA256 of the raw body with the
webhook secret) is computed while the body streams in and checked in constant time
before the body is parsed; a SHA-1-only signature is refused, and the body is bounded
in size and in how many are read at once (``bot.service.webhook_input``). The
delivery id (``X-GitHub-Delivery``) is stored with the payload, so a redelivered
event is answered "duplicate" and queues nothing. Each event becomes at most one
job whose dedupe key comes from the signed body, so a replay under a fresh
delivery id queues nothing either.
Malformed JSON, unknown events, oversized bodies and payloads whose fields are
mistyped or too long for the registry get a 4xx with a reason and nothing is
stored. The work itself happens in the worker.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sqlmodel import Session

from bot.service.intake import GroupCommitWriter
from bot.service.jobs.kinds import (
    FeedbackPayload,
    IgnorePayload,
    InstallationPayload,
    JobKind,
    JobPayload,
    PRPayload,
    feedback_key,
    ignore_key,
    installation_key,
    job_create,
    mine_key,
    rerun_key,
)
from bot.service.webhook_input import (
    BodyGate,
    InstallationEvent,
    IssueCommentEvent,
    PullRequestEvent,
    Rejected,
    RepoRef,
    check_headers,
    parse_payload,
    read_event,
    read_signed_body,
)
from bot.service.webhook_input import signature_for as signature_for
from probewatch.errors import ConfigError
from task_registry.deliveries import record_delivery, set_delivery_status
from task_registry.jobs import enqueue_job
from task_registry.types import DeliveryStatus

COMMAND_PREFIX = "/probewatch"
MAINTAINER_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})


class Command(StrEnum):
    rerun = "rerun"
    ignore = "ignore"
    useful = "useful"  # /probewatch useful N: entry N of the comment was worth the time
    not_useful = "not-useful"


NO_SECRET = (
    "PROBEWATCH_WEBHOOK_SECRET is not set: set it, or disable the webhook with "
    "PROBEWATCH_WEBHOOK_ENABLED=false"
)


class WebhookConfigError(ConfigError):
    """The webhook is enabled but has no secret to check signatures with."""


@dataclass(frozen=True)
class Work:
    """The job an event asks for, or the reason it asks for none."""

    kind: JobKind | None
    payload: JobPayload | None = None
    dedupe_key: str | None = None
    note: str = ""
    action: str | None = None  # as stored with the delivery, checked
    repo: str | None = None


# --- events → work -------------------------------------------------------------------


def _said(action: str | None, repository: RepoRef) -> dict[str, Any]:
    """What the delivery row records of an event: its action and repository, checked."""
    return {"action": action, "repo": repository.full_name}


def pull_request_work(payload: dict[str, Any]) -> Work:
    event = read_event(PullRequestEvent, "pull_request", payload)
    pull, said = event.pull_request, _said(event.action, event.repository)
    if event.action != "closed" or pull is None or not pull.merged:
        return Work(None, note="only merged pull requests are mined", **said)
    repo, number, sha = event.repository.full_name, pull.number, pull.merge_commit_sha
    return Work(
        JobKind.mine_pr,
        PRPayload(repo=repo, number=number, merge_sha=sha),
        mine_key(repo, number, sha),
        **said,
    )


def parse_command(body: str) -> Command | None:
    words = body.strip().split()
    if len(words) < 2 or words[0] != COMMAND_PREFIX:
        return None
    try:
        return Command(words[1])
    except ValueError:
        return None


def parse_entry(body: str) -> int | None:
    """The entry number after a feedback command (``/probewatch useful 2``); None if absent."""
    words = body.strip().split()
    if len(words) < 3 or not words[2].isdecimal() or len(words[2]) > 3:
        return None
    return int(words[2]) or None


def issue_comment_work(payload: dict[str, Any]) -> Work:
    event = read_event(IssueCommentEvent, "issue_comment", payload)
    comment, issue = event.comment, event.issue
    said = _said(event.action, event.repository)
    command = parse_command(comment.body or "") if comment else None
    if event.action != "created" or comment is None or issue is None or command is None:
        return Work(None, note="not a probewatch command", **said)
    if issue.pull_request is None:
        return Work(None, note="commands work on pull requests only", **said)
    if comment.author_association not in MAINTAINER_ASSOCIATIONS:
        return Work(None, note="only maintainers (owner, member, collaborator) may command", **said)
    repo, number = event.repository.full_name, issue.number
    if command is Command.rerun:
        job: JobPayload = PRPayload(repo=repo, number=number)
        return Work(JobKind.build_report, job, rerun_key(repo, number, comment.id), **said)
    by = comment.user.login if comment.user else ""
    if command in (Command.useful, Command.not_useful):
        entry = parse_entry(comment.body or "")
        if entry is None:
            note = f"say which entry: {COMMAND_PREFIX} {command} N (N: the entry's number)"
            return Work(None, note=note, **said)
        useful = command is Command.useful
        job = FeedbackPayload(repo=repo, number=number, entry=entry, useful=useful, by=by)
        return Work(JobKind.entry_feedback, job, feedback_key(repo, number, comment.id), **said)
    job = IgnorePayload(repo=repo, number=number, by=by)
    return Work(JobKind.ignore_pr, job, ignore_key(repo, number, comment.id), **said)


def _names(repos: list[RepoRef] | None) -> list[str]:
    return [repo.full_name for repo in repos or []]


def installation_work(payload: dict[str, Any], delivery_id: str) -> Work:
    event = read_event(InstallationEvent, "installation", payload)
    installation = event.installation
    account = installation.account if installation else None
    job = InstallationPayload(
        installation_id=installation.id if installation else 0,
        account=account.login if account else "",
        active=event.action not in ("deleted", "suspend"),
        repositories=_names(event.repositories) if event.action == "created" else None,
        added=_names(event.repositories_added),
        removed=_names(event.repositories_removed),
    )
    return Work(JobKind.installation, job, installation_key(delivery_id), action=event.action)


EVENT_WORK = {
    "pull_request": lambda payload, _: pull_request_work(payload),
    "issue_comment": lambda payload, _: issue_comment_work(payload),
    "installation": installation_work,
    "installation_repositories": installation_work,
}
ANSWER_ONLY = frozenset({"ping"})


# --- storing -------------------------------------------------------------------------


def store_delivery(
    session: Session,
    delivery_id: str,
    event: str,
    body: bytes,
    work: Work,
) -> dict[str, Any]:
    """Record the delivery and queue its job; a delivery seen before is a duplicate."""
    delivery, created = record_delivery(
        session=session,
        delivery_id=delivery_id,
        event=event,
        payload=body,
        action=work.action,
        repo=work.repo,
    )
    if not created:
        return {"status": "duplicate", "delivery": delivery_id}
    if work.kind is None:
        set_delivery_status(session=session, delivery=delivery, status=DeliveryStatus.processed)
        return {"status": "ignored", "reason": work.note}
    assert work.payload is not None and work.dedupe_key is not None
    job_in = job_create(work.kind, work.payload, work.dedupe_key)
    job, queued = enqueue_job(session=session, job_in=job_in)
    return {"status": "queued" if queued else "already queued", "job": job.id}


# --- the route -----------------------------------------------------------------------


def make_webhook_router(
    writer: GroupCommitWriter, secret: bytes | None, max_body_bytes: int, max_concurrent: int
) -> APIRouter:
    router = APIRouter()
    gate = BodyGate(max_concurrent)

    @router.post("/webhook", tags=["webhook"], status_code=202)
    async def webhook(request: Request) -> JSONResponse:
        """Receive a GitHub webhook delivery."""
        try:
            answer = await _handle(request, writer, secret, max_body_bytes, gate)
        except Rejected as exc:
            return JSONResponse(
                {"detail": exc.reason}, status_code=exc.status, headers=exc.headers()
            )
        return JSONResponse(answer, status_code=200 if answer["status"] != "queued" else 202)

    return router


async def _handle(
    request: Request,
    writer: GroupCommitWriter,
    secret: bytes | None,
    limit: int,
    gate: BodyGate,
) -> dict[str, Any]:
    if secret is None:
        raise Rejected(503, "the webhook secret is not configured")
    signature, event, delivery_id = check_headers(request, limit)
    with gate.reading():
        body = await read_signed_body(request, secret, signature, limit)
    payload = parse_payload(body)
    if event in ANSWER_ONLY:
        zen = payload.get("zen")
        return {"status": "pong", "zen": zen if isinstance(zen, str) else None}
    if event not in EVENT_WORK:
        raise Rejected(
            400, f"unsupported event {event!r} (handled: {', '.join(sorted(EVENT_WORK))})"
        )
    work = EVENT_WORK[event](payload, delivery_id)
    store = partial(store_delivery, delivery_id=delivery_id, event=event, body=body, work=work)
    return await asyncio.wrap_future(writer.submit(store))

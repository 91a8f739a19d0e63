"""``POST /webhook``: verify, deduplicate, queue, answer at once.

The signature (``X-Hub-Signature-256``, HMAC-SHA256 of the raw body with the
webhook secret) is checked in constant time before anything else is read; a
SHA-1-only signature is refused. The delivery id (``X-GitHub-Delivery``) is
stored with the payload, so a redelivered event is answered "duplicate" and
queues nothing. Each event becomes at most one job whose dedupe key comes from
the signed body, so a replay under a fresh delivery id queues nothing either.
Malformed JSON, unknown events and oversized bodies get a 4xx with a reason
and nothing is stored. The work itself happens in the worker.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sqlmodel import Session

from bot.service.intake import GroupCommitWriter
from bot.service.jobs.kinds import (
    IgnorePayload,
    InstallationPayload,
    JobKind,
    JobPayload,
    PRPayload,
    ignore_key,
    installation_key,
    job_create,
    mine_key,
    rerun_key,
)
from probewatch.errors import ConfigError, ServiceError
from task_registry.deliveries import record_delivery, set_delivery_status
from task_registry.jobs import enqueue_job
from task_registry.types import DeliveryStatus

SIGNATURE_HEADER = "X-Hub-Signature-256"
SHA1_HEADER = "X-Hub-Signature"
EVENT_HEADER = "X-GitHub-Event"
DELIVERY_HEADER = "X-GitHub-Delivery"
SIGNATURE_PREFIX = "sha256="
COMMAND_PREFIX = "/probewatch"
MAINTAINER_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})


class Command(StrEnum):
    rerun = "rerun"
    ignore = "ignore"


NO_SECRET = (
    "PROBEWATCH_WEBHOOK_SECRET is not set: set it, or disable the webhook with "
    "PROBEWATCH_WEBHOOK_ENABLED=false"
)


class WebhookConfigError(ConfigError):
    """The webhook is enabled but has no secret to check signatures with."""


class Rejected(ServiceError):
    """A delivery refused with an HTTP status and a reason; nothing is stored."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


@dataclass(frozen=True)
class Work:
    """The job an event asks for, or the reason it asks for none."""

    kind: JobKind | None
    payload: JobPayload | None = None
    dedupe_key: str | None = None
    note: str = ""


def signature_for(secret: bytes, body: bytes) -> str:
    return SIGNATURE_PREFIX + hmac.new(secret, body, hashlib.sha256).hexdigest()


def verify_signature(secret: bytes, body: bytes, header: str | None, sha1: str | None) -> None:
    if not header:
        reason = (
            "SHA-1 signatures are not accepted; send X-Hub-Signature-256"
            if sha1
            else (f"missing {SIGNATURE_HEADER}")
        )
        raise Rejected(401, reason)
    if not hmac.compare_digest(signature_for(secret, body), header.strip()):
        raise Rejected(401, f"{SIGNATURE_HEADER} does not match the body")


def parse_payload(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Rejected(400, f"body is not valid JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise Rejected(400, "body must be a JSON object")
    return payload


# --- events → work -------------------------------------------------------------------


def _repo(payload: dict[str, Any]) -> str:
    try:
        return str(payload["repository"]["full_name"])
    except (KeyError, TypeError):
        raise Rejected(422, "payload has no repository.full_name") from None


def pull_request_work(payload: dict[str, Any]) -> Work:
    pull = payload.get("pull_request") or {}
    if payload.get("action") != "closed" or not pull.get("merged"):
        return Work(None, note="only merged pull requests are mined")
    repo, number, sha = _repo(payload), int(pull["number"]), pull.get("merge_commit_sha")
    return Work(
        JobKind.mine_pr,
        PRPayload(repo=repo, number=number, merge_sha=sha),
        mine_key(repo, number, sha),
    )


def parse_command(body: str) -> Command | None:
    words = body.strip().split()
    if len(words) < 2 or words[0] != COMMAND_PREFIX:
        return None
    try:
        return Command(words[1])
    except ValueError:
        return None


def issue_comment_work(payload: dict[str, Any]) -> Work:
    comment, issue = payload.get("comment") or {}, payload.get("issue") or {}
    command = parse_command(str(comment.get("body") or ""))
    if payload.get("action") != "created" or command is None:
        return Work(None, note="not a probewatch command")
    if "pull_request" not in issue:
        return Work(None, note="commands work on pull requests only")
    if comment.get("author_association") not in MAINTAINER_ASSOCIATIONS:
        return Work(None, note="only maintainers (owner, member, collaborator) may command")
    repo, number, comment_id = _repo(payload), int(issue["number"]), int(comment["id"])
    if command is Command.rerun:
        return Work(
            JobKind.build_report,
            PRPayload(repo=repo, number=number),
            rerun_key(repo, number, comment_id),
        )
    by = str((comment.get("user") or {}).get("login", ""))
    return Work(
        JobKind.ignore_pr,
        IgnorePayload(repo=repo, number=number, by=by),
        ignore_key(repo, number, comment_id),
    )


def _names(payload: dict[str, Any], key: str) -> list[str]:
    return [str(repo["full_name"]) for repo in payload.get(key) or []]


def installation_work(payload: dict[str, Any], delivery_id: str) -> Work:
    installation = payload.get("installation") or {}
    account = str((installation.get("account") or {}).get("login", ""))
    action = payload.get("action")
    job = InstallationPayload(
        installation_id=int(installation.get("id", 0)),
        account=account,
        active=action not in ("deleted", "suspend"),
        repositories=_names(payload, "repositories") if action == "created" else None,
        added=_names(payload, "repositories_added"),
        removed=_names(payload, "repositories_removed"),
    )
    return Work(JobKind.installation, job, installation_key(delivery_id))


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
    payload: dict[str, Any],
    work: Work,
) -> dict[str, Any]:
    """Record the delivery and queue its job; a delivery seen before is a duplicate."""
    delivery, created = record_delivery(
        session=session,
        delivery_id=delivery_id,
        event=event,
        payload=body,
        action=payload.get("action"),
        repo=(payload.get("repository") or {}).get("full_name"),
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


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise Rejected(413, f"body of {declared} bytes is over the {limit}-byte limit")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Rejected(413, f"body is over the {limit}-byte limit")
        chunks.append(chunk)
    return b"".join(chunks)


def make_webhook_router(
    writer: GroupCommitWriter, secret: bytes | None, max_body_bytes: int
) -> APIRouter:
    router = APIRouter()

    @router.post("/webhook", tags=["webhook"], status_code=202)
    async def webhook(request: Request) -> JSONResponse:
        """Receive a GitHub webhook delivery."""
        try:
            answer = await _handle(request, writer, secret, max_body_bytes)
        except Rejected as exc:
            return JSONResponse({"detail": exc.reason}, status_code=exc.status)
        return JSONResponse(answer, status_code=200 if answer["status"] != "queued" else 202)

    return router


async def _handle(
    request: Request, writer: GroupCommitWriter, secret: bytes | None, limit: int
) -> dict[str, Any]:
    if secret is None:
        raise Rejected(503, "the webhook secret is not configured")
    body = await read_body(request, limit)
    headers = request.headers
    verify_signature(secret, body, headers.get(SIGNATURE_HEADER), headers.get(SHA1_HEADER))
    event, delivery_id = headers.get(EVENT_HEADER), headers.get(DELIVERY_HEADER)
    if not event or not delivery_id:
        raise Rejected(400, f"missing {EVENT_HEADER} or {DELIVERY_HEADER}")
    payload = parse_payload(body)
    if event in ANSWER_ONLY:
        return {"status": "pong", "zen": payload.get("zen")}
    if event not in EVENT_WORK:
        raise Rejected(
            400, f"unsupported event {event!r} (handled: {', '.join(sorted(EVENT_WORK))})"
        )
    try:
        work = EVENT_WORK[event](payload, delivery_id)
    except (KeyError, TypeError, ValueError) as exc:
        raise Rejected(422, f"{event} payload lacks or mistypes a field: {exc}") from None
    store = partial(
        store_delivery, delivery_id=delivery_id, event=event, body=body, payload=payload, work=work
    )
    return await asyncio.wrap_future(writer.submit(store))

"""What a webhook delivery must be before it is believed: bounded, signed, well-formed.

Nothing unauthenticated is held beyond the body limit, and only a few bodies are read at
once: the headers are checked before the first byte of the body is read (a missing or
malformed signature, event or delivery id is refused at once), the HMAC is computed while
the body streams in, a body over the limit is dropped as soon as it crosses it, and when
``max_concurrent`` bodies are already being read the next request is answered 503 at once
instead of queueing another buffer. A signed payload is then read into typed models whose
every field is bounded as the registry stores it (a 300-character SHA, a repository name
with a NUL or a ``pull_request`` that is a string are a 422 with the reason, never a 500).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from probewatch.errors import ServiceError
from probewatch.names import RepoName
from task_registry.types import MAX_PR_NUMBER, MAX_ROW_ID

SIGNATURE_HEADER = "X-Hub-Signature-256"
SHA1_HEADER = "X-Hub-Signature"
EVENT_HEADER = "X-GitHub-Event"
DELIVERY_HEADER = "X-GitHub-Delivery"
SIGNATURE_PREFIX = "sha256="
SIGNATURE_PATTERN = r"^sha256=[0-9a-f]{64}$"
EVENT_PATTERN = r"^[a-z_]{1,64}$"
DELIVERY_PATTERN = r"^[A-Za-z0-9._:-]{1,100}$"  # GitHub sends a GUID; the column holds 100
MAX_PROBLEMS_SHOWN = 3

Id = Annotated[int, Field(ge=0, le=MAX_ROW_ID)]
PRNumber = Annotated[int, Field(ge=1, le=MAX_PR_NUMBER)]
Word = Annotated[str, Field(max_length=64, pattern=r"^[A-Za-z0-9_.-]*$")]
Sha = Annotated[str, Field(pattern=r"^[0-9a-fA-F]{1,64}$")]
M = TypeVar("M", bound=BaseModel)


IN_MEMORY_BYTES = 1 << 20  # an unauthenticated body past this waits on disk
BUSY_RETRY_AFTER_S = 5  # GitHub redelivers; a client that honours Retry-After waits this long


class Rejected(ServiceError):
    """A delivery refused with an HTTP status and a reason; nothing is stored."""

    def __init__(self, status: int, reason: str, retry_after_s: int | None = None) -> None:
        super().__init__(reason)
        self.status, self.reason, self.retry_after_s = status, reason, retry_after_s

    def headers(self) -> dict[str, str]:
        """``Retry-After`` when the refusal is for now only (too many bodies at once)."""
        return {"Retry-After": str(self.retry_after_s)} if self.retry_after_s else {}


# --- headers and body ------------------------------------------------------------------


class BodyGate:
    """At most ``limit`` bodies read at once; the next one is refused, not queued."""

    def __init__(self, limit: int) -> None:
        self.limit, self._reading = limit, 0
        self._lock = threading.Lock()

    @contextmanager
    def reading(self) -> Iterator[None]:
        with self._lock:
            if self._reading >= self.limit:
                raise Rejected(
                    503,
                    f"{self.limit} webhook bodies are being read; retry later",
                    retry_after_s=BUSY_RETRY_AFTER_S,
                )
            self._reading += 1
        try:
            yield
        finally:
            with self._lock:
                self._reading -= 1


def signature_for(secret: bytes, body: bytes) -> str:
    return SIGNATURE_PREFIX + hmac.new(secret, body, hashlib.sha256).hexdigest()


def check_headers(request: Request, limit: int) -> tuple[str, str, str]:
    """The signature, event and delivery id, each checked before any of the body is read."""
    headers = request.headers
    signature = (headers.get(SIGNATURE_HEADER) or "").strip()
    if not signature:
        sha1 = headers.get(SHA1_HEADER)
        reason = "SHA-1 signatures are not accepted; send " if sha1 else "missing "
        raise Rejected(401, reason + SIGNATURE_HEADER)
    if not _matches(SIGNATURE_PATTERN, signature):
        raise Rejected(401, f"{SIGNATURE_HEADER} is not sha256=<64 hex digits>")
    event, delivery_id = headers.get(EVENT_HEADER), headers.get(DELIVERY_HEADER)
    if not event or not delivery_id:
        raise Rejected(400, f"missing {EVENT_HEADER} or {DELIVERY_HEADER}")
    if not _matches(EVENT_PATTERN, event):
        raise Rejected(400, f"{EVENT_HEADER} is not an event name (a-z and _, up to 64)")
    if not _matches(DELIVERY_PATTERN, delivery_id):
        raise Rejected(400, f"{DELIVERY_HEADER} is not a delivery id (up to 100 of A-Z0-9._:-)")
    declared = headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise Rejected(413, f"body of {declared} bytes is over the {limit}-byte limit")
    return signature, event, delivery_id


def _matches(pattern: str, value: str) -> bool:
    return re.fullmatch(pattern, value) is not None


async def read_signed_body(request: Request, secret: bytes, signature: str, limit: int) -> bytes:
    """The body, read with its HMAC as it streams in; over ``limit`` it is dropped at once.
    Until the signature matches, a body past :data:`IN_MEMORY_BYTES` waits in a temporary
    file, not in memory: an unauthenticated sender cannot make the process hold it."""
    mac, size = hmac.new(secret, digestmod=hashlib.sha256), 0
    with tempfile.SpooledTemporaryFile(max_size=IN_MEMORY_BYTES) as spool:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise Rejected(413, f"body is over the {limit}-byte limit")
            mac.update(chunk)
            spool.write(chunk)
        if not hmac.compare_digest(SIGNATURE_PREFIX + mac.hexdigest(), signature):
            raise Rejected(401, f"{SIGNATURE_HEADER} does not match the body")
        spool.seek(0)
        return spool.read()


def parse_payload(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Rejected(400, f"body is not valid JSON: {exc}") from None
    except RecursionError:
        raise Rejected(400, "body is not valid JSON: nested too deeply") from None
    if not isinstance(payload, dict):
        raise Rejected(400, "body must be a JSON object")
    return payload


# --- the payloads, as far as the webhook reads them -------------------------------------


class _Part(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class RepoRef(_Part):
    full_name: RepoName


class PullRef(_Part):
    number: PRNumber
    merged: bool | None = None
    merge_commit_sha: Sha | None = None


class PullRequestEvent(_Part):
    action: Word
    repository: RepoRef
    pull_request: PullRef | None = None


class UserRef(_Part):
    login: Annotated[str, Field(max_length=100)] = ""


class CommentRef(_Part):
    id: Id
    body: Annotated[str, Field(max_length=65536)] | None = None
    author_association: Word | None = None
    user: UserRef | None = None


class IssueRef(_Part):
    number: PRNumber
    pull_request: dict[str, Any] | None = None


class IssueCommentEvent(_Part):
    action: Word
    repository: RepoRef
    comment: CommentRef | None = None
    issue: IssueRef | None = None


class InstallationRef(_Part):
    id: Id = 0
    account: UserRef | None = None


class InstallationEvent(_Part):
    action: Word | None = None
    installation: InstallationRef | None = None
    repositories: list[RepoRef] | None = None
    repositories_added: list[RepoRef] | None = None
    repositories_removed: list[RepoRef] | None = None


def read_event(model: type[M], event: str, payload: dict[str, Any]) -> M:
    """``payload`` as ``model``, or a 422 naming the fields that are wrong and why."""
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        problems = [_problem(error) for error in exc.errors()[:MAX_PROBLEMS_SHOWN]]
        raise Rejected(422, f"{event} payload: {'; '.join(problems)}") from None


def _problem(error: ErrorDetails) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "payload"
    return f"{where}: {error['msg'].removeprefix('Value error, ')}"

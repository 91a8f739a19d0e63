"""FastAPI application answering a subset of the GitHub REST v3 API from an EmulatorState: an ASGI
middleware gives every request GitHub's cross-cutting behaviour (token auth, per-token primary quota
with X-RateLimit-* headers, injected faults and delays, the request log), JSON responses carry ETag
and Last-Modified and answer matching conditional requests with 304 (which, as on GitHub, costs no
quota), and routes only read request fields, call state methods and render records into GitHub's
JSON shapes with absolute `url`/`html_url` fields that PyGithub follows for lazy completion.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from http import HTTPStatus
from typing import TYPE_CHECKING, Annotated, Any, TypeVar
from urllib.parse import parse_qsl, quote, urlencode

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .state import (
    Artifact,
    CheckRun,
    Comment,
    ContentEntry,
    EmulatorError,
    EmulatorState,
    HookDelivery,
    Installation,
    Pull,
    PullFile,
    Quota,
    Repo,
    RequestRecord,
    Workflow,
    WorkflowRun,
    fake_sha,
    git_blob_sha,
    parse_timestamp,
)

if TYPE_CHECKING:
    from .server import GitHubEmulator

DOCS_URL = "https://docs.github.com/rest"
PRIMARY_DOCS_URL = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
EMULATOR_PREFIX = "/_emulator"
DEFAULT_PER_PAGE, MAX_PER_PAGE = 30, 100
TOKEN_KEY = "github_emulator.token"
_T = TypeVar("_T")


# ----------------------------------------------------------------- rendering


def _ts(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def user_id(login: str) -> int:
    return int(hashlib.sha1(login.encode()).hexdigest()[:7], 16)


class Renderer:
    """Turns state records into GitHub JSON; every link is absolute on the emulator's base URL."""

    def __init__(self, base: str):
        self.base = base

    def api(self, full_name: str) -> str:
        return f"{self.base}/repos/{full_name}"

    def html(self, full_name: str) -> str:
        return f"{self.base}/{full_name}"

    def user(self, login: str) -> dict[str, Any]:
        uid = user_id(login)
        return {
            "login": login,
            "id": uid,
            "node_id": f"U_{uid}",
            "type": "Bot" if login.endswith("[bot]") else "User",
            "site_admin": False,
            "url": f"{self.base}/users/{quote(login)}",
            "html_url": f"{self.base}/{quote(login)}",
            "avatar_url": f"{self.base}{EMULATOR_PREFIX}/avatars/{quote(login)}",
        }

    def repo(self, repo: Repo) -> dict[str, Any]:
        api, html = self.api(repo.full_name), self.html(repo.full_name)
        return {
            "id": repo.id,
            "node_id": f"R_{repo.id}",
            "name": repo.name,
            "full_name": repo.full_name,
            "owner": self.user(repo.owner),
            "private": repo.private,
            "visibility": "private" if repo.private else "public",
            "html_url": html,
            "url": api,
            "description": repo.description,
            "fork": False,
            "archived": False,
            "disabled": False,
            "default_branch": repo.default_branch,
            "created_at": _ts(repo.created_at),
            "updated_at": _ts(repo.updated_at),
            "pushed_at": _ts(repo.updated_at),
            "pulls_url": f"{api}/pulls{{/number}}",
            "issues_url": f"{api}/issues{{/number}}",
            "contents_url": f"{api}/contents/{{+path}}",
        }

    def pull(
        self, pull: Pull, repo: Repo, *, full: bool = False, comments: int = 0
    ) -> dict[str, Any]:
        api, html = self.api(repo.full_name), self.html(repo.full_name)
        url, issue_url = f"{api}/pulls/{pull.number}", f"{api}/issues/{pull.number}"
        data: dict[str, Any] = {
            "url": url,
            "id": pull.id,
            "node_id": f"PR_{pull.id}",
            "html_url": f"{html}/pull/{pull.number}",
            "diff_url": f"{html}/pull/{pull.number}.diff",
            "patch_url": f"{html}/pull/{pull.number}.patch",
            "issue_url": issue_url,
            "commits_url": f"{url}/commits",
            "review_comments_url": f"{url}/comments",
            "review_comment_url": f"{api}/pulls/comments{{/number}}",
            "comments_url": f"{issue_url}/comments",
            "statuses_url": f"{api}/statuses/{pull.head_sha}",
            "number": pull.number,
            "state": pull.state,
            "locked": False,
            "title": pull.title,
            "user": self.user(pull.user),
            "body": pull.body,
            "labels": [self.label(repo, name) for name in pull.labels],
            "milestone": None,
            "active_lock_reason": None,
            "created_at": _ts(pull.created_at),
            "updated_at": _ts(pull.updated_at),
            "closed_at": _ts(pull.closed_at),
            "merged_at": _ts(pull.merged_at),
            "merge_commit_sha": pull.merge_commit_sha,
            "assignee": None,
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
            "head": self.pull_part(repo, pull.head_ref, pull.head_sha),
            "base": self.pull_part(repo, pull.base_ref, pull.base_sha),
            "_links": {
                "self": {"href": url},
                "html": {"href": f"{html}/pull/{pull.number}"},
                "issue": {"href": issue_url},
                "comments": {"href": f"{issue_url}/comments"},
            },
            "author_association": "CONTRIBUTOR",
            "auto_merge": None,
            "draft": pull.draft,
        }
        if full:
            data.update(self._pull_details(pull, comments))
        return data

    def _pull_details(self, pull: Pull, comments: int) -> dict[str, Any]:
        """Fields GitHub sends only on GET /pulls/{n}, which is what makes PyGithub complete lazily."""
        return {
            "merged": pull.merged,
            "mergeable": None if pull.state == "closed" else True,
            "rebaseable": None if pull.state == "closed" else True,
            "mergeable_state": "unknown" if pull.state == "closed" else "clean",
            "merged_by": self.user(pull.merged_by) if pull.merged_by else None,
            "comments": comments,
            "review_comments": 0,
            "maintainer_can_modify": False,
            "commits": pull.commits,
            "additions": pull.additions,
            "deletions": pull.deletions,
            "changed_files": pull.changed_files,
        }

    def pull_part(self, repo: Repo, ref: str, sha: str) -> dict[str, Any]:
        return {
            "label": f"{repo.owner}:{ref}",
            "ref": ref,
            "sha": sha,
            "user": self.user(repo.owner),
            "repo": self.repo(repo),
        }

    def label(self, repo: Repo, name: str) -> dict[str, Any]:
        label_id = user_id(f"{repo.full_name}:{name}")
        return {
            "id": label_id,
            "node_id": f"LA_{label_id}",
            "name": name,
            "color": "ededed",
            "default": False,
            "description": None,
            "url": f"{self.api(repo.full_name)}/labels/{quote(name)}",
        }

    def file(self, repo: Repo, pull: Pull, entry: PullFile) -> dict[str, Any]:
        html, path = self.html(repo.full_name), quote(entry.filename)
        data: dict[str, Any] = {
            "sha": fake_sha(repo.full_name, pull.head_sha, entry.filename),
            "filename": entry.filename,
            "status": entry.status,
            "additions": entry.additions,
            "deletions": entry.deletions,
            "changes": entry.changes,
            "blob_url": f"{html}/blob/{pull.head_sha}/{path}",
            "raw_url": f"{html}/raw/{pull.head_sha}/{path}",
            "contents_url": f"{self.api(repo.full_name)}/contents/{path}?ref={pull.head_sha}",
        }
        if entry.patch is not None:
            data["patch"] = entry.patch
        if entry.previous_filename is not None:
            data["previous_filename"] = entry.previous_filename
        return data

    def comment(self, comment: Comment) -> dict[str, Any]:
        api = self.api(comment.repo)
        return {
            "url": f"{api}/issues/comments/{comment.id}",
            "html_url": f"{self.html(comment.repo)}/pull/{comment.issue_number}"
            f"#issuecomment-{comment.id}",
            "issue_url": f"{api}/issues/{comment.issue_number}",
            "id": comment.id,
            "node_id": f"IC_{comment.id}",
            "user": self.user(comment.user),
            "created_at": _ts(comment.created_at),
            "updated_at": _ts(comment.updated_at),
            "author_association": "NONE",
            "body": comment.body,
            "performed_via_github_app": None,
        }

    def check_run(self, run: CheckRun) -> dict[str, Any]:
        url = f"{self.api(run.repo)}/check-runs/{run.id}"
        output = run.output
        return {
            "id": run.id,
            "node_id": f"CR_{run.id}",
            "head_sha": run.head_sha,
            "external_id": run.external_id or "",
            "url": url,
            "html_url": f"{self.html(run.repo)}/runs/{run.id}",
            "details_url": run.details_url,
            "status": run.status,
            "conclusion": run.conclusion,
            "started_at": _ts(run.started_at),
            "completed_at": _ts(run.completed_at),
            "output": {
                "title": output.get("title"),
                "summary": output.get("summary"),
                "text": output.get("text"),
                "annotations_count": len(output.get("annotations") or ()),
                "annotations_url": f"{url}/annotations",
            },
            "name": run.name,
            "check_suite": {"id": run.id + 1},
            "app": self.app(run.app_slug),
            "pull_requests": [],
        }

    def app(self, slug: str) -> dict[str, Any]:
        return {
            "id": user_id(slug),
            "slug": slug,
            "node_id": f"A_{user_id(slug)}",
            "name": slug,
            "owner": self.user(slug),
            "description": "",
            "external_url": f"{self.base}/apps/{slug}",
            "html_url": f"{self.base}/apps/{slug}",
            "permissions": {},
            "events": [],
        }

    def installation(self, installation: Installation) -> dict[str, Any]:
        url = f"{self.base}/app/installations/{installation.id}"
        return {
            "id": installation.id,
            "app_id": installation.app_id,
            "account": self.user(installation.account),
            "target_type": "Organization",
            "repository_selection": "selected",
            "access_tokens_url": f"{url}/access_tokens",
            "repositories_url": f"{self.base}/installation/repositories",
            "html_url": f"{self.base}/settings/installations/{installation.id}",
            "permissions": {"issues": "write", "checks": "write", "contents": "read"},
            "events": ["pull_request", "issue_comment"],
            "created_at": _ts(installation.created_at),
            "updated_at": _ts(installation.created_at),
        }

    def hook_delivery(self, delivery: HookDelivery) -> dict[str, Any]:
        return {
            "id": delivery.id,
            "guid": delivery.guid,
            "delivered_at": _ts(delivery.delivered_at),
            "redelivery": delivery.redelivery,
            "duration": 0.05,
            "status": delivery.status,
            "status_code": delivery.status_code,
            "event": delivery.event,
            "action": delivery.action,
            "installation_id": None,
            "repository_id": None,
        }

    def commit(self, repo: Repo, sha: str) -> dict[str, Any]:
        api = self.api(repo.full_name)
        person = {
            "name": repo.owner,
            "email": f"{repo.owner}@example.com",
            "date": _ts(repo.created_at),
        }
        return {
            "sha": sha,
            "node_id": f"C_{sha}",
            "url": f"{api}/commits/{sha}",
            "html_url": f"{self.html(repo.full_name)}/commit/{sha}",
            "comments_url": f"{api}/commits/{sha}/comments",
            "commit": {
                "url": f"{api}/git/commits/{sha}",
                "message": "",
                "author": person,
                "committer": person,
                "comment_count": 0,
                "tree": {"sha": fake_sha(sha, "tree"), "url": f"{api}/git/trees/{sha}"},
            },
            "author": None,
            "committer": None,
            "parents": [],
            "stats": {"total": 0, "additions": 0, "deletions": 0},
            "files": [],
        }

    def content(self, repo: Repo, entry: ContentEntry) -> dict[str, Any]:
        api, html = self.api(repo.full_name), self.html(repo.full_name)
        path, ref = quote(entry.path), quote(entry.ref, safe="")
        is_file = entry.type == "file"
        sha = git_blob_sha(entry.data) if is_file else fake_sha(repo.full_name, ref, entry.path)
        url = f"{api}/contents/{path}?ref={ref}"
        html_url = f"{html}/{'blob' if is_file else 'tree'}/{ref}/{path}"
        git_url = f"{api}/git/{'blobs' if is_file else 'trees'}/{sha}"
        return {
            "type": entry.type,
            "size": len(entry.data),
            "name": entry.path.rsplit("/", 1)[-1],
            "path": entry.path,
            "sha": sha,
            "url": url,
            "git_url": git_url,
            "html_url": html_url,
            "download_url": f"{self.base}{EMULATOR_PREFIX}/raw/{repo.full_name}/{ref}/{path}"
            if is_file
            else None,
            "_links": {"self": url, "git": git_url, "html": html_url},
        }

    def file_content(self, repo: Repo, entry: ContentEntry) -> dict[str, Any]:
        encoded = base64.b64encode(entry.data).decode()
        lines = [encoded[i : i + 60] for i in range(0, len(encoded), 60)]
        return {
            **self.content(repo, entry),
            "encoding": "base64",
            "content": "\n".join(lines) + "\n" if lines else "",
        }

    def workflow(self, repo: Repo, workflow: Workflow) -> dict[str, Any]:
        html = self.html(repo.full_name)
        return {
            "id": workflow.id,
            "node_id": f"W_{workflow.id}",
            "name": workflow.name,
            "path": workflow.path,
            "state": workflow.state,
            "created_at": _ts(workflow.created_at),
            "updated_at": _ts(workflow.updated_at),
            "url": f"{self.api(repo.full_name)}/actions/workflows/{workflow.id}",
            "html_url": f"{html}/blob/{repo.default_branch}/{workflow.path}",
            "badge_url": f"{html}/workflows/{workflow.filename}/badge.svg",
        }

    def run(self, repo: Repo, run: WorkflowRun) -> dict[str, Any]:
        api = self.api(repo.full_name)
        url = f"{api}/actions/runs/{run.id}"
        compact = {
            k: v
            for k, v in self.repo(repo).items()
            if k in ("id", "node_id", "name", "full_name", "owner", "private", "html_url", "url")
        }
        return {
            "id": run.id,
            "name": run.name,
            "node_id": f"WFR_{run.id}",
            "head_branch": run.head_branch,
            "head_sha": run.head_sha,
            "path": run.path,
            "display_title": run.display_title,
            "run_number": run.run_number,
            "event": run.event,
            "status": run.status,
            "conclusion": run.conclusion,
            "workflow_id": run.workflow_id,
            "check_suite_id": run.id + 1,
            "check_suite_node_id": f"CS_{run.id + 1}",
            "url": url,
            "html_url": f"{self.html(repo.full_name)}/actions/runs/{run.id}",
            "pull_requests": [],
            "created_at": _ts(run.created_at),
            "updated_at": _ts(run.updated_at),
            "actor": self.user(run.actor),
            "triggering_actor": self.user(run.actor),
            "run_attempt": 1,
            "referenced_workflows": [],
            "run_started_at": _ts(run.run_started_at),
            "jobs_url": f"{url}/jobs",
            "logs_url": f"{url}/logs",
            "check_suite_url": f"{api}/check-suites/{run.id + 1}",
            "artifacts_url": f"{url}/artifacts",
            "cancel_url": f"{url}/cancel",
            "rerun_url": f"{url}/rerun",
            "previous_attempt_url": None,
            "workflow_url": f"{api}/actions/workflows/{run.workflow_id}",
            "head_commit": {
                "id": run.head_sha,
                "tree_id": fake_sha(run.head_sha, "tree"),
                "message": run.display_title,
                "timestamp": _ts(run.created_at),
            },
            "repository": compact,
            "head_repository": compact,
        }

    def artifact(self, repo: Repo, artifact: Artifact, run: WorkflowRun) -> dict[str, Any]:
        url = f"{self.api(repo.full_name)}/actions/artifacts/{artifact.id}"
        return {
            "id": artifact.id,
            "node_id": f"MDg6QXJ0aWZhY3Q{artifact.id}",
            "name": artifact.name,
            "size_in_bytes": artifact.size_in_bytes,
            "url": url,
            "archive_download_url": f"{url}/zip",
            "expired": artifact.expired,
            "digest": "sha256:" + hashlib.sha256(artifact.data).hexdigest(),
            "created_at": _ts(artifact.created_at),
            "updated_at": _ts(artifact.updated_at),
            "expires_at": _ts(artifact.expires_at),
            "workflow_run": {
                "id": run.id,
                "repository_id": repo.id,
                "head_repository_id": repo.id,
                "head_branch": run.head_branch,
                "head_sha": run.head_sha,
            },
        }


# ------------------------------------------------------- responses and paging


def error_body(
    status: int,
    message: str,
    errors: list[dict[str, str]] | None = None,
    documentation_url: str = DOCS_URL,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "message": message,
        "documentation_url": documentation_url,
        "status": str(status),
    }
    if errors:
        body["errors"] = errors
    return body


def _etag_matches(header: str, etag: str) -> bool:
    wanted = {tag.strip().removeprefix("W/") for tag in header.split(",")}
    return "*" in wanted or etag.removeprefix("W/") in wanted


def _not_modified(request: Request, etag: str, last_modified: datetime | None) -> bool:
    if_none_match = request.headers.get("if-none-match")
    if if_none_match is not None:
        return _etag_matches(if_none_match, etag)
    if_modified_since = request.headers.get("if-modified-since")
    if not if_modified_since or last_modified is None:
        return False
    try:
        since = parsedate_to_datetime(if_modified_since)
    except (TypeError, ValueError):
        return False
    return last_modified.replace(microsecond=0) <= since


def json_response(
    request: Request,
    data: Any,
    *,
    status: int = 200,
    last_modified: datetime | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    body = json.dumps(data, separators=(",", ":")).encode()
    out = {
        "ETag": f'W/"{hashlib.sha256(body).hexdigest()[:40]}"',
        "Cache-Control": "private, max-age=60, s-maxage=60",
        "Vary": "Accept, Authorization, Cookie, X-GitHub-OTP",
        **(headers or {}),
    }
    if last_modified is not None:
        out["Last-Modified"] = format_datetime(last_modified.astimezone(UTC), usegmt=True)
    if (
        request.method == "GET"
        and status == 200
        and _not_modified(request, out["ETag"], last_modified)
    ):
        return Response(status_code=304, headers=out)
    return Response(body, status, headers=out, media_type="application/json; charset=utf-8")


def _int_param(request: Request, name: str, default: int) -> int:
    try:
        return int(request.query_params.get(name, default))
    except ValueError:
        return default


def _paging(request: Request) -> tuple[int, int]:
    per_page = _int_param(request, "per_page", DEFAULT_PER_PAGE)
    per_page = DEFAULT_PER_PAGE if per_page < 1 else min(per_page, MAX_PER_PAGE)
    return max(1, _int_param(request, "page", 1)), per_page


def _page_url(request: Request, base: str, page: int) -> str:
    params = [(k, v) for k, v in request.query_params.multi_items() if k != "page"]
    return f"{base}{request.url.path}?{urlencode([*params, ('page', str(page))])}"


def link_header(request: Request, base: str, page: int, per_page: int, total: int) -> str:
    """RFC 5988 links the way GitHub sends them: next/last before the end, prev/first after page 1."""
    last = max(1, math.ceil(total / per_page))
    rels: list[tuple[str, int]] = []
    if page > 1:
        rels += [("prev", min(page - 1, last)), ("first", 1)]
    if page < last:
        rels += [("next", page + 1), ("last", last)]
    return ", ".join(f'<{_page_url(request, base, p)}>; rel="{rel}"' for rel, p in rels)


def paged_response(
    request: Request,
    items: Sequence[_T],
    render: Callable[[_T], dict[str, Any]],
    *,
    wrap: str | None = None,
) -> Response:
    page, per_page = _paging(request)
    chunk = [render(item) for item in items[(page - 1) * per_page : page * per_page]]
    data: Any = {"total_count": len(items), wrap: chunk} if wrap else chunk
    links = link_header(request, _state(request).base_url, page, per_page, len(items))
    return json_response(request, data, headers={"Link": links} if links else None)


# ---------------------------------------------------------------- middleware


def parse_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    return value.strip() or None if scheme.lower() in ("token", "bearer") else None


def rate_headers(quota: Quota) -> list[tuple[bytes, bytes]]:
    values = {
        "x-ratelimit-limit": quota.limit,
        "x-ratelimit-remaining": quota.remaining,
        "x-ratelimit-reset": quota.reset_at,
        "x-ratelimit-used": quota.used,
        "x-ratelimit-resource": "core",
    }
    return [(k.encode(), str(v).encode()) for k, v in values.items()]


async def send_json(
    send: Send, status: int, payload: Any, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    body = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class _Exchange:
    """One request's bookkeeping; it is logged as its response starts, so before the client can
    have read the response, which keeps counts in tests race-free."""

    def __init__(self, state: EmulatorState, scope: Scope) -> None:
        self.state, self.scope = state, scope
        headers = Headers(scope=scope)
        self.token = parse_token(headers.get("authorization"))
        self.conditional = "if-none-match" in headers or "if-modified-since" in headers
        self.consumed = False
        self.logged = False

    def log(self, status: int) -> None:
        if self.logged:
            return
        self.logged = True
        scope = self.scope
        self.state.record_request(
            RequestRecord(
                method=scope["method"],
                path=scope["path"],
                query=dict(
                    parse_qsl(scope.get("query_string", b"").decode(), keep_blank_values=True)
                ),
                status=status,
                conditional=self.conditional,
                consumed_quota=self.consumed,
                timestamp=time.time(),
                token=self.token,
                route=getattr(scope.get("route"), "path", None),
            )
        )

    async def reply(
        self, send: Send, status: int, payload: Any, headers: Sequence[tuple[bytes, bytes]] = ()
    ) -> None:
        self.log(status)
        await send_json(send, status, payload, headers)


class GitHubSemantics:
    """Auth, primary quota, faults, delays and the request log around every API request."""

    def __init__(self, app: ASGIApp, state: EmulatorState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        exchange = _Exchange(self.state, scope)
        scope[TOKEN_KEY] = exchange.token
        delay = self.state.take_delay(scope["method"], scope["path"])
        if delay:
            await asyncio.sleep(delay)
        try:
            await self._handle(scope, receive, send, exchange)
        finally:
            exchange.log(500)

    async def _handle(
        self, scope: Scope, receive: Receive, send: Send, exchange: _Exchange
    ) -> None:
        state, path, token = self.state, scope["path"], exchange.token
        if path.startswith(EMULATOR_PREFIX):  # signed download URLs: no token, no quota
            await self.app(scope, receive, self._recording(send, exchange, None))
            return
        fault = state.take_fault(scope["method"], path)
        if fault is not None:
            extra = (
                [(b"retry-after", str(fault.retry_after).encode())]
                if fault.retry_after is not None
                else []
            )
            await exchange.reply(
                send,
                fault.status,
                error_body(fault.status, fault.message),
                [*rate_headers(state.quota(token)), *extra],
            )
            return
        if state.tokens and not state.accepts(token):
            await exchange.reply(
                send, 401, error_body(401, "Bad credentials"), rate_headers(state.quota(None))
            )
            return
        free = path == "/rate_limit"
        quota = state.quota(token) if free else state.take_quota(token)
        if quota is None:
            message = f"API rate limit exceeded for user ID {user_id(state.login_for(token))}."
            await exchange.reply(
                send,
                403,
                error_body(403, message, documentation_url=PRIMARY_DOCS_URL),
                rate_headers(state.quota(token)),
            )
            return
        exchange.consumed = not free
        await self.app(scope, receive, self._recording(send, exchange, quota))

    def _recording(self, send: Send, exchange: _Exchange, quota: Quota | None) -> Send:
        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                current = quota
                if message["status"] == 304 and exchange.consumed:
                    exchange.consumed = False
                    current = self.state.refund_quota(exchange.token)
                if current is not None:
                    message = {**message, "headers": [*message["headers"], *rate_headers(current)]}
                exchange.log(message["status"])
            await send(message)

        return wrapped


# -------------------------------------------------------------------- routes


def _state(request: Request) -> EmulatorState:
    state: EmulatorState = request.app.state.emulator_state
    return state


def _render(request: Request) -> Renderer:
    return Renderer(_state(request).base_url)


def _login(request: Request) -> str:
    return _state(request).login_for(request.scope.get(TOKEN_KEY))


async def json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        raise EmulatorError(400, "Problems parsing JSON") from None
    if not isinstance(data, dict):
        raise EmulatorError(400, "Problems parsing JSON")
    return data


Body = Annotated[dict[str, Any], Depends(json_body)]


def _repo_name(owner: str, repo: str) -> str:
    return f"{owner}/{repo}"


def _add_meta_routes(app: FastAPI) -> None:
    @app.get("/rate_limit")
    def rate_limit(request: Request) -> Response:
        quota = _state(request).quota(request.scope.get(TOKEN_KEY))
        core = {
            "limit": quota.limit,
            "remaining": quota.remaining,
            "reset": quota.reset_at,
            "used": quota.used,
            "resource": "core",
        }
        return json_response(request, {"resources": {"core": core}, "rate": core})

    @app.get("/user")
    def authenticated_user(request: Request) -> Response:
        return json_response(request, _render(request).user(_login(request)))

    @app.get("/users/{login}")
    def named_user(request: Request, login: str) -> Response:
        return json_response(request, _render(request).user(login))

    @app.get("/repos/{owner}/{repo}")
    def get_repo(request: Request, owner: str, repo: str) -> Response:
        record = _state(request).get_repo(_repo_name(owner, repo))
        return json_response(
            request, _render(request).repo(record), last_modified=record.updated_at
        )

    @app.get("/repositories/{repo_id}")
    def get_repo_by_id(request: Request, repo_id: int) -> Response:
        record = _state(request).get_repo_by_id(repo_id)
        return json_response(
            request, _render(request).repo(record), last_modified=record.updated_at
        )

    @app.get("/repos/{owner}/{repo}/commits/{ref}")
    def get_commit(request: Request, owner: str, repo: str, ref: str) -> Response:
        state = _state(request)
        sha = state.get_commit_sha(_repo_name(owner, repo), ref)
        record = state.get_repo(_repo_name(owner, repo))
        return json_response(
            request, _render(request).commit(record, sha), last_modified=record.created_at
        )


def _add_pull_routes(app: FastAPI) -> None:
    @app.get("/repos/{owner}/{repo}/pulls")
    def list_pulls(
        request: Request,
        owner: str,
        repo: str,
        state: str = "open",
        sort: str = "created",
        direction: str | None = None,
        base: str | None = None,
        head: str | None = None,
    ) -> Response:
        emulator_state, name = _state(request), _repo_name(owner, repo)
        pulls = emulator_state.list_pulls(
            name, state=state, sort=sort, direction=direction, base=base, head=head
        )
        record, render = emulator_state.get_repo(name), _render(request)
        return paged_response(request, pulls, lambda p: render.pull(p, record))

    @app.get("/repos/{owner}/{repo}/pulls/{number}")
    def get_pull(request: Request, owner: str, repo: str, number: int) -> Response:
        state, name = _state(request), _repo_name(owner, repo)
        pull = state.get_pull(name, number)
        data = _render(request).pull(
            pull, state.get_repo(name), full=True, comments=state.comment_count(name, number)
        )
        return json_response(request, data, last_modified=pull.updated_at)

    @app.get("/repos/{owner}/{repo}/pulls/{number}/files")
    def list_pull_files(request: Request, owner: str, repo: str, number: int) -> Response:
        state, name = _state(request), _repo_name(owner, repo)
        pull, record, render = state.get_pull(name, number), state.get_repo(name), _render(request)
        return paged_response(request, pull.files, lambda f: render.file(record, pull, f))


def _add_comment_routes(app: FastAPI) -> None:
    @app.get("/repos/{owner}/{repo}/issues/{number}/comments")
    def list_comments(
        request: Request, owner: str, repo: str, number: int, since: str | None = None
    ) -> Response:
        after = parse_timestamp(since, "IssueComment", "since") if since else None
        comments = _state(request).list_comments(_repo_name(owner, repo), number, after)
        return paged_response(request, comments, _render(request).comment)

    @app.post("/repos/{owner}/{repo}/issues/{number}/comments")
    def create_comment(
        request: Request, owner: str, repo: str, number: int, body: Body
    ) -> Response:
        comment = _state(request).add_comment(
            _repo_name(owner, repo), number, body.get("body"), user=_login(request)
        )
        data = _render(request).comment(comment)
        return json_response(request, data, status=201, headers={"Location": data["url"]})

    @app.get("/repos/{owner}/{repo}/issues/comments/{comment_id}")
    def get_comment(request: Request, owner: str, repo: str, comment_id: int) -> Response:
        comment = _state(request).get_comment(_repo_name(owner, repo), comment_id)
        return json_response(
            request, _render(request).comment(comment), last_modified=comment.updated_at
        )

    @app.patch("/repos/{owner}/{repo}/issues/comments/{comment_id}")
    def edit_comment(
        request: Request, owner: str, repo: str, comment_id: int, body: Body
    ) -> Response:
        comment = _state(request).edit_comment(
            _repo_name(owner, repo), comment_id, body.get("body")
        )
        return json_response(request, _render(request).comment(comment))

    @app.delete("/repos/{owner}/{repo}/issues/comments/{comment_id}")
    def delete_comment(request: Request, owner: str, repo: str, comment_id: int) -> Response:
        _state(request).delete_comment(_repo_name(owner, repo), comment_id)
        return Response(status_code=204)


def _add_check_routes(app: FastAPI) -> None:
    @app.post("/repos/{owner}/{repo}/check-runs")
    def create_check_run(request: Request, owner: str, repo: str, body: Body) -> Response:
        run = _state(request).create_check_run(_repo_name(owner, repo), body, _login(request))
        return json_response(request, _render(request).check_run(run), status=201)

    @app.get("/repos/{owner}/{repo}/check-runs/{check_run_id}")
    def get_check_run(request: Request, owner: str, repo: str, check_run_id: int) -> Response:
        run = _state(request).get_check_run(_repo_name(owner, repo), check_run_id)
        return json_response(request, _render(request).check_run(run), last_modified=run.updated_at)

    @app.patch("/repos/{owner}/{repo}/check-runs/{check_run_id}")
    def update_check_run(
        request: Request, owner: str, repo: str, check_run_id: int, body: Body
    ) -> Response:
        run = _state(request).update_check_run(_repo_name(owner, repo), check_run_id, body)
        return json_response(request, _render(request).check_run(run))

    @app.get("/repos/{owner}/{repo}/commits/{ref}/check-runs")
    def list_check_runs(
        request: Request,
        owner: str,
        repo: str,
        ref: str,
        check_name: str | None = None,
        status: str | None = None,
        filter: str = "latest",
    ) -> Response:
        runs = _state(request).list_check_runs(
            _repo_name(owner, repo), ref, check_name=check_name, status=status, filter=filter
        )
        return paged_response(request, runs, _render(request).check_run, wrap="check_runs")


def _add_content_routes(app: FastAPI) -> None:
    @app.get("/repos/{owner}/{repo}/contents")
    @app.get("/repos/{owner}/{repo}/contents/{path:path}")
    def get_contents(
        request: Request, owner: str, repo: str, path: str = "", ref: str | None = None
    ) -> Response:
        state, name = _state(request), _repo_name(owner, repo)
        found, record, render = (
            state.get_content(name, path, ref),
            state.get_repo(name),
            _render(request),
        )
        if isinstance(found, list):
            return json_response(request, [render.content(record, e) for e in found])
        return json_response(
            request, render.file_content(record, found), last_modified=found.modified_at
        )

    @app.get(EMULATOR_PREFIX + "/raw/{owner}/{repo}/{ref}/{path:path}")
    def raw_content(request: Request, owner: str, repo: str, ref: str, path: str) -> Response:
        found = _state(request).get_content(_repo_name(owner, repo), path, ref)
        if isinstance(found, list):
            raise EmulatorError(404, "Not Found")
        return Response(found.data, media_type="text/plain; charset=utf-8")


def _add_workflow_routes(app: FastAPI) -> None:
    @app.get("/repos/{owner}/{repo}/actions/workflows")
    def list_workflows(request: Request, owner: str, repo: str) -> Response:
        state, name = _state(request), _repo_name(owner, repo)
        record, render = state.get_repo(name), _render(request)
        return paged_response(
            request,
            state.list_workflows(name),
            lambda w: render.workflow(record, w),
            wrap="workflows",
        )

    @app.get("/repos/{owner}/{repo}/actions/workflows/{workflow}")
    def get_workflow(request: Request, owner: str, repo: str, workflow: str) -> Response:
        state, name = _state(request), _repo_name(owner, repo)
        found = state.get_workflow(name, workflow)
        return json_response(
            request,
            _render(request).workflow(state.get_repo(name), found),
            last_modified=found.updated_at,
        )

    @app.post("/repos/{owner}/{repo}/actions/workflows/{workflow}/dispatches")
    def dispatch(request: Request, owner: str, repo: str, workflow: str, body: Body) -> Response:
        state, name = _state(request), _repo_name(owner, repo)
        run = state.dispatch(name, workflow, body.get("ref"), body.get("inputs"), _login(request))
        if not body.get("return_run_details"):
            return Response(status_code=204)
        data = _render(request).run(state.get_repo(name), run)
        return json_response(
            request,
            {"workflow_run_id": run.id, "run_url": data["url"], "html_url": data["html_url"]},
        )

    @app.get("/repos/{owner}/{repo}/actions/workflows/{workflow}/runs")
    def list_workflow_runs(request: Request, owner: str, repo: str, workflow: str) -> Response:
        found = _state(request).get_workflow(_repo_name(owner, repo), workflow)
        return _runs_response(request, _repo_name(owner, repo), found.id)


def _runs_response(request: Request, name: str, workflow_id: int | None) -> Response:
    state, query = _state(request), request.query_params
    runs = state.list_runs(
        name,
        workflow_id=workflow_id,
        event=query.get("event"),
        status=query.get("status"),
        branch=query.get("branch"),
        created=query.get("created"),
        head_sha=query.get("head_sha"),
        actor=query.get("actor"),
    )
    record, render = state.get_repo(name), _render(request)
    return paged_response(request, runs, lambda r: render.run(record, r), wrap="workflow_runs")


def _add_run_routes(app: FastAPI) -> None:
    @app.get("/repos/{owner}/{repo}/actions/runs")
    def list_runs(request: Request, owner: str, repo: str) -> Response:
        return _runs_response(request, _repo_name(owner, repo), None)

    @app.get("/repos/{owner}/{repo}/actions/runs/{run_id}")
    def get_run(request: Request, owner: str, repo: str, run_id: int) -> Response:
        state, name = _state(request), _repo_name(owner, repo)
        run = state.get_run(name, run_id)
        return json_response(
            request, _render(request).run(state.get_repo(name), run), last_modified=run.updated_at
        )

    @app.post("/repos/{owner}/{repo}/actions/runs/{run_id}/cancel")
    def cancel_run(request: Request, owner: str, repo: str, run_id: int) -> Response:
        _state(request).cancel_run(_repo_name(owner, repo), run_id)
        return json_response(request, {}, status=202)

    @app.get("/repos/{owner}/{repo}/actions/runs/{run_id}/artifacts")
    def list_run_artifacts(
        request: Request, owner: str, repo: str, run_id: int, name: str | None = None
    ) -> Response:
        return _artifacts_response(request, _repo_name(owner, repo), run_id, name)

    @app.get("/repos/{owner}/{repo}/actions/artifacts")
    def list_artifacts(
        request: Request, owner: str, repo: str, name: str | None = None
    ) -> Response:
        return _artifacts_response(request, _repo_name(owner, repo), None, name)

    @app.get("/repos/{owner}/{repo}/actions/artifacts/{artifact_id}")
    def get_artifact(request: Request, owner: str, repo: str, artifact_id: int) -> Response:
        state, name = _state(request), _repo_name(owner, repo)
        artifact = state.get_artifact(name, artifact_id)
        data = _render(request).artifact(
            state.get_repo(name), artifact, state.find_run(artifact.run_id)
        )
        return json_response(request, data, last_modified=artifact.updated_at)

    @app.get("/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip")
    def download_artifact(request: Request, owner: str, repo: str, artifact_id: int) -> Response:
        state = _state(request)
        artifact = state.get_artifact(_repo_name(owner, repo), artifact_id)
        if artifact.expired:
            raise EmulatorError(410, "Artifact has expired")
        location = (
            f"{state.base_url}{EMULATOR_PREFIX}/artifacts/{artifact.id}/{artifact.download_key}.zip"
        )
        return Response(status_code=302, headers={"Location": location})

    @app.get(EMULATOR_PREFIX + "/artifacts/{artifact_id}/{key}.zip")
    def artifact_blob(request: Request, artifact_id: int, key: str) -> Response:
        artifact = _state(request).artifact_for_download(artifact_id, key)
        return Response(
            artifact.data,
            media_type="application/zip",
            headers={"Content-Disposition": f'attachment; filename="{artifact.name}.zip"'},
        )


def _artifacts_response(
    request: Request, name: str, run_id: int | None, artifact_name: str | None
) -> Response:
    state = _state(request)
    artifacts = state.list_artifacts(name, run_id=run_id, name=artifact_name)
    record, render = state.get_repo(name), _render(request)
    return paged_response(
        request,
        artifacts,
        lambda a: render.artifact(record, a, state.find_run(a.run_id)),
        wrap="artifacts",
    )


def _add_app_routes(app: FastAPI) -> None:
    """GitHub App endpoints: they answer only to the app's JWT, never to a token."""

    def app_id(request: Request) -> str:
        found = _state(request).app_for_jwt(request.scope.get(TOKEN_KEY))
        if found is None:
            raise EmulatorError(401, "A JSON web token could not be decoded")
        return found

    @app.get("/repos/{owner}/{repo}/installation")
    def repo_installation(request: Request, owner: str, repo: str) -> Response:
        state = _state(request)
        found = state.repo_installation(app_id(request), _repo_name(owner, repo))
        return json_response(request, _render(request).installation(found))

    @app.post("/app/installations/{installation_id}/access_tokens")
    def access_token(request: Request, installation_id: int) -> Response:
        token, expires = _state(request).issue_installation_token(app_id(request), installation_id)
        data = {
            "token": token,
            "expires_at": _ts(expires),
            "permissions": {"issues": "write", "checks": "write", "contents": "read"},
            "repository_selection": "selected",
        }
        return json_response(request, data, status=201)

    @app.get("/app/hook/deliveries")
    def hook_deliveries(request: Request) -> Response:
        app_id(request)
        render = _render(request)
        return paged_response(request, _state(request).list_hook_deliveries(), render.hook_delivery)

    @app.post("/app/hook/deliveries/{delivery_id}/attempts")
    def redeliver(request: Request, delivery_id: int) -> Response:
        app_id(request)
        _state(request).redeliver(delivery_id)
        return json_response(request, {}, status=202)


# ---------------------------------------------------------------- assembly


def _add_error_handlers(app: FastAPI) -> None:
    def respond(status: int, message: str, errors: list[dict[str, str]] | None = None) -> Response:
        body = json.dumps(error_body(status, message, errors)).encode()
        return Response(body, status, media_type="application/json; charset=utf-8")

    @app.exception_handler(EmulatorError)
    async def emulator_error(_: Request, exc: EmulatorError) -> Response:
        return respond(exc.status, exc.message, exc.errors)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> Response:
        status = 404 if exc.status_code in (404, 405) else exc.status_code
        return respond(status, HTTPStatus(status).phrase)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> Response:
        # GitHub answers a malformed path segment (e.g. /pulls/abc) with 404, bad input with 422.
        if any(error.get("loc", ("",))[0] == "path" for error in exc.errors()):
            return respond(404, "Not Found")
        errors = [
            {"resource": "Request", "field": str(e.get("loc", ("",))[-1]), "code": "invalid"}
            for e in exc.errors()
        ]
        return respond(422, "Validation Failed", errors)


def create_app(emulator: GitHubEmulator | EmulatorState) -> FastAPI:
    """Build the ASGI app serving `emulator`'s state (an EmulatorState works too)."""
    state = emulator if isinstance(emulator, EmulatorState) else emulator.state
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.state.emulator_state = state
    for add_routes in (
        _add_meta_routes,
        _add_pull_routes,
        _add_comment_routes,
        _add_check_routes,
        _add_content_routes,
        _add_workflow_routes,
        _add_run_routes,
        _add_app_routes,
        _add_error_handlers,
    ):
        add_routes(app)
    app.add_middleware(GitHubSemantics, state=state)
    return app

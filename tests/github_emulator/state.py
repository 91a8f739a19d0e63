"""In-memory, thread-safe state behind the GitHub emulator: frozen record dataclasses (repos, pull
requests and their files, issue comments, check runs, repository contents, workflows, workflow runs,
artifacts), the seeding helpers tests call to fill them, and the knobs that shape HTTP behaviour
(accepted tokens, per-token primary quota, injected faults and delays, the dispatch hook and the
request log). Records are immutable snapshots: every change stores a new record under the lock, so
the server thread can render whatever it read without further locking.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import math
import re
import secrets
import threading
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

OPEN, CLOSED = "open", "closed"
RUN_STATUSES = ("queued", "in_progress", "completed", "waiting", "requested", "pending")
CONCLUSIONS = (
    "success",
    "failure",
    "neutral",
    "cancelled",
    "skipped",
    "timed_out",
    "action_required",
    "stale",
)
FILE_STATUSES = ("added", "removed", "modified", "renamed", "copied", "changed", "unchanged")
PULL_SORTS = ("created", "updated", "popularity", "long-running")
DEFAULT_LOGIN = "probewatch-bot"
UNAUTHENTICATED_LIMIT = 60
SECONDARY_RATE_LIMIT_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID {request_id}."
)


class EmulatorError(Exception):
    """A GitHub API error answer: HTTP status, message and optional validation errors."""

    def __init__(self, status: int, message: str, errors: list[dict[str, str]] | None = None):
        super().__init__(f"{status} {message}")
        self.status = status
        self.message = message
        self.errors = errors


def not_found() -> EmulatorError:
    return EmulatorError(404, "Not Found")


def validation_failed(resource: str, field_name: str, code: str = "missing_field") -> EmulatorError:
    return EmulatorError(
        422, "Validation Failed", [{"resource": resource, "field": field_name, "code": code}]
    )


def utc_now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def fake_sha(*parts: object) -> str:
    """Deterministic 40-hex SHA for seeded commits, so tests can predict it."""
    return hashlib.sha1(":".join(map(str, parts)).encode()).hexdigest()


def git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def make_zip(files: Mapping[str, bytes | str]) -> bytes:
    """Build a zip archive in memory, e.g. for an artifact."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def _as_bytes(data: bytes | str) -> bytes:
    return data.encode() if isinstance(data, str) else data


@dataclass(frozen=True)
class PullFile:
    """One entry of GET /pulls/{n}/files; `changes` defaults to additions + deletions."""

    filename: str
    status: str = "modified"
    additions: int = 1
    deletions: int = 0
    patch: str | None = None
    previous_filename: str | None = None
    changes: int | None = None

    def __post_init__(self) -> None:
        if self.status not in FILE_STATUSES:
            raise ValueError(f"file status must be one of {FILE_STATUSES}: {self.status!r}")
        if self.changes is None:
            object.__setattr__(self, "changes", self.additions + self.deletions)


@dataclass(frozen=True, kw_only=True)
class Repo:
    full_name: str
    id: int
    default_branch: str = "main"
    private: bool = False
    description: str = ""
    created_at: datetime
    updated_at: datetime

    @property
    def owner(self) -> str:
        return self.full_name.split("/")[0]

    @property
    def name(self) -> str:
        return self.full_name.split("/")[1]


@dataclass(frozen=True, kw_only=True)
class Pull:
    repo: str
    number: int
    id: int
    title: str
    body: str | None
    state: str
    merged: bool
    merged_at: datetime | None
    merged_by: str | None
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None
    base_ref: str
    base_sha: str
    head_ref: str
    head_sha: str
    merge_commit_sha: str | None
    labels: tuple[str, ...]
    user: str
    draft: bool
    files: tuple[PullFile, ...]
    additions: int
    deletions: int
    changed_files: int
    commits: int = 1


@dataclass(frozen=True, kw_only=True)
class Comment:
    id: int
    repo: str
    issue_number: int
    body: str
    user: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, kw_only=True)
class CheckRun:
    id: int
    repo: str
    name: str
    head_sha: str
    status: str = "queued"
    conclusion: str | None = None
    started_at: datetime | None = None
    completed_at: datetime | None = None
    details_url: str | None = None
    external_id: str | None = None
    output: Mapping[str, Any] = field(default_factory=dict, hash=False)
    app_slug: str = DEFAULT_LOGIN
    updated_at: datetime


@dataclass(frozen=True, kw_only=True)
class Workflow:
    """`inputs=None` accepts any dispatch inputs; a tuple declares the accepted names."""

    id: int
    repo: str
    name: str
    path: str
    state: str = "active"
    created_at: datetime
    updated_at: datetime
    inputs: tuple[str, ...] | None = None
    required_inputs: tuple[str, ...] = ()
    run_name: str | None = None
    dispatchable: bool = True

    @property
    def filename(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True, kw_only=True)
class WorkflowRun:
    id: int
    repo: str
    workflow_id: int
    run_number: int
    name: str
    display_title: str
    path: str
    event: str
    status: str
    conclusion: str | None
    head_branch: str
    head_sha: str
    actor: str
    created_at: datetime
    updated_at: datetime
    run_started_at: datetime
    inputs: Mapping[str, Any] = field(default_factory=dict, hash=False)
    visible_at: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Artifact:
    id: int
    repo: str
    run_id: int
    name: str
    data: bytes
    expired: bool
    created_at: datetime
    updated_at: datetime
    expires_at: datetime
    download_key: str

    @property
    def size_in_bytes(self) -> int:
        return len(self.data)


@dataclass(frozen=True)
class ContentEntry:
    path: str
    type: str
    ref: str
    data: bytes = b""
    modified_at: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class Installation:
    """A GitHub App installed on an account, with the repositories it may access."""

    id: int
    app_id: int
    account: str
    repositories: tuple[str, ...]
    created_at: datetime


@dataclass(frozen=True, kw_only=True)
class HookDelivery:
    """One attempt of GitHub to deliver a webhook event to the App's URL."""

    id: int
    guid: str
    event: str
    action: str | None
    status_code: int
    delivered_at: datetime
    redelivery: bool = False

    @property
    def status(self) -> str:
        return (
            "OK" if 200 <= self.status_code < 300 else f"Invalid HTTP Response: {self.status_code}"
        )


@dataclass(frozen=True)
class Dispatch:
    workflow_id: int
    ref: str
    inputs: Mapping[str, Any]
    run_id: int
    login: str
    at: datetime


@dataclass(frozen=True)
class Quota:
    limit: int
    remaining: int
    reset_at: int

    @property
    def used(self) -> int:
        return self.limit - self.remaining


@dataclass(frozen=True)
class RequestRecord:
    method: str
    path: str
    query: Mapping[str, str]
    status: int
    conditional: bool
    consumed_quota: bool
    timestamp: float
    token: str | None = None
    route: str | None = None


@dataclass
class FaultRule:
    status: int
    remaining: int
    retry_after: int | None
    path_contains: str | None
    method: str | None
    message: str

    def matches(self, method: str, path: str) -> bool:
        return (self.method is None or self.method == method) and (
            self.path_contains is None or self.path_contains in path
        )


@dataclass
class DelayRule:
    seconds: float
    remaining: int
    path_contains: str | None
    method: str | None

    def matches(self, method: str, path: str) -> bool:
        return (self.method is None or self.method == method) and (
            self.path_contains is None or self.path_contains in path
        )


DispatchHook = Callable[["EmulatorState", WorkflowRun], None]


def _default_fault_message(status: int) -> str:
    if status in (403, 429):
        return SECONDARY_RATE_LIMIT_MESSAGE.format(request_id=secrets.token_hex(4).upper())
    return {500: "Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}.get(
        status, "Server Error"
    )


class EmulatorState:
    """Everything the emulator knows; safe to call from tests while the server thread serves."""

    def __init__(
        self,
        *,
        tokens: Iterable[str] = ("t",),
        token_logins: Mapping[str, str] | None = None,
        default_login: str = DEFAULT_LOGIN,
        rate_limit: int = 5000,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.lock = threading.RLock()
        self.tokens: set[str] = set(tokens)
        self.token_logins: dict[str, str] = dict(token_logins or {})
        self.default_login = default_login
        self.rate_limit = rate_limit
        self.clock = clock
        self.base_url = ""
        self.on_dispatch: DispatchHook | None = None
        self.dispatch_delay_s = 0.0
        self.dispatches: list[Dispatch] = []
        self._ids = {
            kind: itertools.count(start)
            for kind, start in (
                ("repo", 100_001),
                ("pull", 200_000_001),
                ("comment", 300_000_001),
                ("check", 400_000_001),
                ("workflow", 500_001),
                ("run", 600_000_001),
                ("artifact", 700_000_001),
                ("installation", 800_001),
                ("hook_delivery", 900_000_001),
            )
        }
        self._repos: dict[str, Repo] = {}
        self._branches: dict[str, dict[str, str]] = {}
        self._pulls: dict[tuple[str, int], Pull] = {}
        self._comments: dict[int, Comment] = {}
        self._check_runs: dict[int, CheckRun] = {}
        self._contents: dict[tuple[str, str], dict[str, tuple[bytes, datetime]]] = {}
        self._workflows: dict[int, Workflow] = {}
        self._runs: dict[int, WorkflowRun] = {}
        self._artifacts: dict[int, Artifact] = {}
        self._quotas: dict[str, Quota] = {}
        self._faults: list[FaultRule] = []
        self._delays: list[DelayRule] = []
        self._requests: list[RequestRecord] = []
        self._apps: dict[str, str] = {}
        self._installations: dict[int, Installation] = {}
        self._installation_tokens: dict[str, tuple[int, datetime]] = {}
        self.installation_token_ttl_s = 3600.0
        self._hook_deliveries: dict[int, HookDelivery] = {}

    # ---------------------------------------------------------------- helpers

    def now(self) -> datetime:
        return self.clock()

    def login_for(self, token: str | None) -> str:
        return self.token_logins.get(token or "", self.default_login)

    def _next_id(self, kind: str) -> int:
        return next(self._ids[kind])

    def _repo_key(self, full_name: str) -> str:
        key = full_name.lower()
        if key not in self._repos:
            raise not_found()
        return key

    def _full_name(self, full_name: str) -> str:
        with self.lock:
            return self._repos[self._repo_key(full_name)].full_name

    # ------------------------------------------------------------------ repos

    def add_repo(
        self,
        full_name: str,
        *,
        default_branch: str = "main",
        private: bool = False,
        description: str = "",
        default_branch_sha: str | None = None,
    ) -> Repo:
        if full_name.count("/") != 1:
            raise ValueError(f"repo must be 'owner/name': {full_name!r}")
        with self.lock:
            now = self.now()
            repo = Repo(
                full_name=full_name,
                id=self._next_id("repo"),
                default_branch=default_branch,
                private=private,
                description=description,
                created_at=now,
                updated_at=now,
            )
            key = full_name.lower()
            self._repos[key] = repo
            sha = default_branch_sha or fake_sha(full_name, default_branch)
            self._branches[key] = {default_branch: sha}
            return repo

    def get_repo(self, full_name: str) -> Repo:
        with self.lock:
            return self._repos[self._repo_key(full_name)]

    def get_repo_by_id(self, repo_id: int) -> Repo:
        with self.lock:
            for repo in self._repos.values():
                if repo.id == repo_id:
                    return repo
        raise not_found()

    def add_branch(self, repo: str, name: str, sha: str | None = None) -> str:
        with self.lock:
            branches = self._branches[self._repo_key(repo)]
            branches[name] = sha or fake_sha(repo, name)
            return branches[name]

    def branch_sha(self, repo: str, name: str) -> str | None:
        with self.lock:
            return self._branches[self._repo_key(repo)].get(name)

    # ------------------------------------------------------------------ pulls

    def add_pull(
        self,
        repo: str,
        number: int | None = None,
        *,
        title: str | None = None,
        body: str | None = "",
        state: str | None = None,
        merged: bool = False,
        user: str = "contributor",
        created_at: datetime | None = None,
        updated_at: datetime | None = None,
        closed_at: datetime | None = None,
        merged_at: datetime | None = None,
        merged_by: str | None = None,
        base_ref: str | None = None,
        head_ref: str | None = None,
        base_sha: str | None = None,
        head_sha: str | None = None,
        merge_commit_sha: str | None = None,
        labels: Sequence[str] = (),
        files: Sequence[PullFile | str] = (),
        additions: int | None = None,
        deletions: int | None = None,
        changed_files: int | None = None,
        draft: bool = False,
        commits: int = 1,
    ) -> Pull:
        """Seed a pull request; merged implies closed, and file totals default to the files' sums."""
        with self.lock:
            key = self._repo_key(repo)
            full_name = self._repos[key].full_name
            number = number or self._next_number(key)
            state = state or (CLOSED if merged or closed_at else OPEN)
            created = created_at or self.now()
            updated = updated_at or merged_at or closed_at or created
            finished = closed_at or merged_at or (updated if state == CLOSED else None)
            entries = tuple(f if isinstance(f, PullFile) else PullFile(f) for f in files)
            pull = Pull(
                repo=full_name,
                number=number,
                id=self._next_id("pull"),
                title=title or f"Pull request #{number}",
                body=body,
                state=state,
                merged=merged,
                merged_at=(merged_at or finished) if merged else None,
                merged_by=(merged_by or self._repos[key].owner) if merged else None,
                created_at=created,
                updated_at=updated,
                closed_at=finished,
                base_ref=base_ref or self._repos[key].default_branch,
                base_sha=base_sha or fake_sha(full_name, number, "base"),
                head_ref=head_ref or f"feature-{number}",
                head_sha=head_sha or fake_sha(full_name, number, "head"),
                merge_commit_sha=merge_commit_sha or fake_sha(full_name, number, "merge"),
                labels=tuple(labels),
                user=user,
                draft=draft,
                files=entries,
                additions=sum(f.additions for f in entries) if additions is None else additions,
                deletions=sum(f.deletions for f in entries) if deletions is None else deletions,
                changed_files=len(entries) if changed_files is None else changed_files,
                commits=commits,
            )
            self._pulls[(key, number)] = pull
            self._branches[key].setdefault(pull.head_ref, pull.head_sha)
            return pull

    def _next_number(self, key: str) -> int:
        return max((n for k, n in self._pulls if k == key), default=0) + 1

    def update_pull(self, repo: str, number: int, **changes: Any) -> Pull:
        """Replace fields of a pull request; `updated_at` moves to now unless given."""
        with self.lock:
            pull = self.get_pull(repo, number)
            changes.setdefault("updated_at", self.now())
            if "files" in changes:
                changes["files"] = tuple(
                    f if isinstance(f, PullFile) else PullFile(f) for f in changes["files"]
                )
            updated = replace(pull, **changes)
            self._pulls[(repo.lower(), number)] = updated
            return updated

    def get_pull(self, repo: str, number: int) -> Pull:
        with self.lock:
            pull = self._pulls.get((self._repo_key(repo), number))
        if pull is None:
            raise not_found()
        return pull

    def list_pulls(
        self,
        repo: str,
        *,
        state: str = OPEN,
        sort: str = "created",
        direction: str | None = None,
        base: str | None = None,
        head: str | None = None,
    ) -> list[Pull]:
        if state not in (OPEN, CLOSED, "all"):
            raise validation_failed("PullRequest", "state", "invalid")
        if sort not in PULL_SORTS:
            raise validation_failed("PullRequest", "sort", "invalid")
        direction = direction or ("desc" if sort == "created" else "asc")
        if direction not in ("asc", "desc"):
            raise validation_failed("PullRequest", "direction", "invalid")
        with self.lock:
            key = self._repo_key(repo)
            pulls = [p for (k, _), p in self._pulls.items() if k == key]
            counts = {p.number: self._comment_count(key, p.number) for p in pulls}
        pulls = [p for p in pulls if _pull_matches(p, state, base, head)]
        if sort == "long-running":
            month_ago = self.now() - timedelta(days=30)
            pulls = [p for p in pulls if p.updated_at >= month_ago]
        sort_key = _pull_sort_key(sort, counts)
        return sorted(pulls, key=sort_key, reverse=direction == "desc")

    def pull_files(self, repo: str, number: int) -> tuple[PullFile, ...]:
        return self.get_pull(repo, number).files

    # --------------------------------------------------------------- comments

    def add_comment(
        self,
        repo: str,
        issue_number: int,
        body: str,
        *,
        user: str | None = None,
        created_at: datetime | None = None,
    ) -> Comment:
        if not isinstance(body, str) or not body:
            raise validation_failed("IssueComment", "body")
        with self.lock:
            self.get_pull(repo, issue_number)
            created = created_at or self.now()
            comment = Comment(
                id=self._next_id("comment"),
                repo=self._full_name(repo),
                issue_number=issue_number,
                body=body,
                user=user or self.default_login,
                created_at=created,
                updated_at=created,
            )
            self._comments[comment.id] = comment
            return comment

    def list_comments(
        self, repo: str, issue_number: int, since: datetime | None = None
    ) -> list[Comment]:
        with self.lock:
            self.get_pull(repo, issue_number)
            key = repo.lower()
            found = [
                c
                for c in self._comments.values()
                if c.repo.lower() == key and c.issue_number == issue_number
            ]
        found = [c for c in found if since is None or c.updated_at >= since]
        return sorted(found, key=lambda c: c.id)

    def get_comment(self, repo: str, comment_id: int) -> Comment:
        with self.lock:
            key = self._repo_key(repo)
            comment = self._comments.get(comment_id)
        if comment is None or comment.repo.lower() != key:
            raise not_found()
        return comment

    def edit_comment(self, repo: str, comment_id: int, body: str) -> Comment:
        if not isinstance(body, str) or not body:
            raise validation_failed("IssueComment", "body")
        with self.lock:
            comment = replace(self.get_comment(repo, comment_id), body=body, updated_at=self.now())
            self._comments[comment_id] = comment
            return comment

    def delete_comment(self, repo: str, comment_id: int) -> None:
        with self.lock:
            self.get_comment(repo, comment_id)
            del self._comments[comment_id]

    def _comment_count(self, key: str, number: int) -> int:
        return sum(
            1 for c in self._comments.values() if c.repo.lower() == key and c.issue_number == number
        )

    def comment_count(self, repo: str, number: int) -> int:
        with self.lock:
            return self._comment_count(self._repo_key(repo), number)

    # ------------------------------------------------------------- check runs

    def create_check_run(self, repo: str, payload: Mapping[str, Any], login: str) -> CheckRun:
        for required in ("name", "head_sha"):
            if not isinstance(payload.get(required), str) or not payload[required]:
                raise validation_failed("CheckRun", required)
        with self.lock:
            now = self.now()
            run = CheckRun(
                id=self._next_id("check"),
                repo=self._full_name(repo),
                name=payload["name"],
                head_sha=payload["head_sha"],
                app_slug=login,
                updated_at=now,
                started_at=now,
            )
            run = _apply_check_fields(run, payload, now)
            self._check_runs[run.id] = run
            return run

    def update_check_run(
        self, repo: str, check_run_id: int, payload: Mapping[str, Any]
    ) -> CheckRun:
        with self.lock:
            now = self.now()
            run = _apply_check_fields(self.get_check_run(repo, check_run_id), payload, now)
            self._check_runs[check_run_id] = replace(run, updated_at=now)
            return self._check_runs[check_run_id]

    def get_check_run(self, repo: str, check_run_id: int) -> CheckRun:
        with self.lock:
            key = self._repo_key(repo)
            run = self._check_runs.get(check_run_id)
        if run is None or run.repo.lower() != key:
            raise not_found()
        return run

    def list_check_runs(
        self,
        repo: str,
        ref: str,
        *,
        check_name: str | None = None,
        status: str | None = None,
        filter: str = "latest",
    ) -> list[CheckRun]:
        with self.lock:
            key = self._repo_key(repo)
            sha = self._branches[key].get(ref, ref)
            runs = [r for r in self._check_runs.values() if r.repo.lower() == key]
        runs = [
            r
            for r in runs
            if r.head_sha == sha and check_name in (None, r.name) and status in (None, r.status)
        ]
        if filter == "latest":
            latest: dict[str, CheckRun] = {}
            for run in sorted(runs, key=lambda r: r.id):
                latest[run.name] = run
            runs = list(latest.values())
        return sorted(runs, key=lambda r: r.id, reverse=True)

    # --------------------------------------------------------------- contents

    def add_content(
        self, repo: str, path: str, data: bytes | str, *, ref: str | None = None
    ) -> ContentEntry:
        """Store a file at `ref` (default branch when None); later reads serve it base64-encoded."""
        with self.lock:
            key = self._repo_key(repo)
            ref = ref or self._repos[key].default_branch
            now = self.now()
            files = self._contents.setdefault((key, ref), {})
            files[path.strip("/")] = (_as_bytes(data), now)
            return ContentEntry(path.strip("/"), "file", ref, _as_bytes(data), now)

    def remove_content(self, repo: str, path: str, *, ref: str | None = None) -> None:
        with self.lock:
            key = self._repo_key(repo)
            ref = ref or self._repos[key].default_branch
            self._contents.get((key, ref), {}).pop(path.strip("/"), None)

    def get_content(
        self, repo: str, path: str, ref: str | None = None
    ) -> ContentEntry | list[ContentEntry]:
        """A file entry, or the sorted listing when `path` names a directory (root is '')."""
        with self.lock:
            key = self._repo_key(repo)
            ref = self._resolve_ref(key, ref)
            files = dict(self._contents.get((key, ref), {}))
        path = path.strip("/")
        if path in files:
            data, modified = files[path]
            return ContentEntry(path, "file", ref, data, modified)
        listing = _directory_listing(files, path, ref)
        if not listing:
            raise not_found()
        return listing

    def _resolve_ref(self, key: str, ref: str | None) -> str:
        if ref is None:
            return self._repos[key].default_branch
        ref = ref.removeprefix("refs/heads/")
        branches = self._branches[key]
        if ref in branches or (key, ref) in self._contents:
            return ref
        for name, sha in branches.items():
            if sha == ref:
                return name
        raise EmulatorError(404, f"No commit found for the ref {ref}")

    def get_commit_sha(self, repo: str, ref: str) -> str:
        """Resolve a branch name or a SHA the emulator has seen; 422 otherwise, as GitHub does."""
        with self.lock:
            key = self._repo_key(repo)
            if ref in self._branches[key]:
                return self._branches[key][ref]
            if ref in self._known_shas(key):
                return ref
        raise EmulatorError(422, f"No commit found for SHA: {ref}")

    def _known_shas(self, key: str) -> set[str]:
        shas = set(self._branches[key].values())
        for (k, _), pull in self._pulls.items():
            if k == key:
                shas |= {pull.head_sha, pull.base_sha, pull.merge_commit_sha or ""}
        shas |= {r.head_sha for r in self._check_runs.values() if r.repo.lower() == key}
        shas |= {r.head_sha for r in self._runs.values() if r.repo.lower() == key}
        return shas

    # -------------------------------------------------------------- workflows

    def add_workflow(
        self,
        repo: str,
        path: str,
        *,
        name: str | None = None,
        state: str = "active",
        inputs: Sequence[str] | None = None,
        required_inputs: Sequence[str] = (),
        run_name: str | None = None,
        dispatchable: bool = True,
    ) -> Workflow:
        """Seed a workflow; `run_name` is formatted with the dispatch inputs, like `run-name:`."""
        with self.lock:
            now = self.now()
            workflow = Workflow(
                id=self._next_id("workflow"),
                repo=self._full_name(repo),
                name=name or path.rsplit("/", 1)[-1],
                path=path,
                state=state,
                created_at=now,
                updated_at=now,
                inputs=None if inputs is None else tuple(inputs),
                required_inputs=tuple(required_inputs),
                run_name=run_name,
                dispatchable=dispatchable,
            )
            self._workflows[workflow.id] = workflow
            return workflow

    def list_workflows(self, repo: str) -> list[Workflow]:
        with self.lock:
            key = self._repo_key(repo)
            return sorted(
                (w for w in self._workflows.values() if w.repo.lower() == key), key=lambda w: w.id
            )

    def get_workflow(self, repo: str, id_or_filename: str | int) -> Workflow:
        wanted = str(id_or_filename)
        for workflow in self.list_workflows(repo):
            if wanted in (str(workflow.id), workflow.filename):
                return workflow
        raise not_found()

    def dispatch(
        self, repo: str, id_or_filename: str | int, ref: Any, inputs: Any, login: str
    ) -> WorkflowRun:
        """POST .../dispatches: validate like GitHub, queue a run, then call `on_dispatch`."""
        workflow = self.get_workflow(repo, id_or_filename)
        inputs = _check_dispatch(workflow, ref, inputs)
        with self.lock:
            sha = self.branch_sha(repo, ref)
            if sha is None:
                raise EmulatorError(422, f"No ref found for: {ref}")
            run = self._new_run(
                workflow,
                event="workflow_dispatch",
                head_branch=ref,
                head_sha=sha,
                actor=login,
                inputs=inputs,
                visible_at=time.time() + self.dispatch_delay_s,
            )
            self.dispatches.append(
                Dispatch(workflow.id, ref, inputs, run.id, login, run.created_at)
            )
        hook = self.on_dispatch
        if hook is not None:
            hook(self, run)
        return self.get_run(repo, run.id, include_hidden=True)

    def add_workflow_run(
        self,
        repo: str,
        workflow: Workflow | int | str,
        *,
        status: str = "completed",
        conclusion: str | None = "success",
        event: str = "push",
        head_branch: str | None = None,
        head_sha: str | None = None,
        actor: str = "contributor",
        created_at: datetime | None = None,
        inputs: Mapping[str, Any] | None = None,
    ) -> WorkflowRun:
        wf = workflow if isinstance(workflow, Workflow) else self.get_workflow(repo, workflow)
        with self.lock:
            branch = head_branch or self.get_repo(repo).default_branch
            return self._new_run(
                wf,
                event=event,
                head_branch=branch,
                head_sha=head_sha or self.branch_sha(repo, branch) or fake_sha(repo, branch),
                actor=actor,
                inputs=dict(inputs or {}),
                status=status,
                conclusion=conclusion if status == "completed" else None,
                created_at=created_at,
            )

    def _new_run(
        self,
        workflow: Workflow,
        *,
        event: str,
        head_branch: str,
        head_sha: str,
        actor: str,
        inputs: Mapping[str, Any],
        status: str = "queued",
        conclusion: str | None = None,
        created_at: datetime | None = None,
        visible_at: float = 0.0,
    ) -> WorkflowRun:
        created = created_at or self.now()
        number = 1 + sum(1 for r in self._runs.values() if r.workflow_id == workflow.id)
        title = _format_run_name(workflow.run_name, inputs) if workflow.run_name else workflow.name
        run = WorkflowRun(
            id=self._next_id("run"),
            repo=workflow.repo,
            workflow_id=workflow.id,
            run_number=number,
            name=workflow.name,
            display_title=title,
            path=workflow.path,
            event=event,
            status=status,
            conclusion=conclusion,
            head_branch=head_branch,
            head_sha=head_sha,
            actor=actor,
            created_at=created,
            updated_at=created,
            run_started_at=created,
            inputs=dict(inputs),
            visible_at=visible_at,
        )
        self._runs[run.id] = run
        return run

    def get_run(self, repo: str, run_id: int, *, include_hidden: bool = False) -> WorkflowRun:
        with self.lock:
            key = self._repo_key(repo)
            run = self._runs.get(run_id)
        if run is None or run.repo.lower() != key:
            raise not_found()
        if not include_hidden and run.visible_at > time.time():
            raise not_found()
        return run

    def find_run(self, run_id: int) -> WorkflowRun:
        with self.lock:
            if run_id not in self._runs:
                raise KeyError(f"no workflow run {run_id}")
            return self._runs[run_id]

    def list_runs(
        self,
        repo: str,
        *,
        workflow_id: int | None = None,
        event: str | None = None,
        status: str | None = None,
        branch: str | None = None,
        created: str | None = None,
        head_sha: str | None = None,
        actor: str | None = None,
    ) -> list[WorkflowRun]:
        """Newest first, filtered like GET /actions/runs (status also matches conclusions)."""
        in_range = _created_filter(created) if created else None
        with self.lock:
            key = self._repo_key(repo)
            runs = [r for r in self._runs.values() if r.repo.lower() == key]
        now = time.time()
        runs = [
            r
            for r in runs
            if r.visible_at <= now
            and workflow_id in (None, r.workflow_id)
            and event in (None, r.event)
            and branch in (None, r.head_branch)
            and head_sha in (None, r.head_sha)
            and actor in (None, r.actor)
            and status in (None, r.status, r.conclusion)
            and (in_range is None or in_range(r.created_at))
        ]
        return sorted(runs, key=lambda r: (r.created_at, r.id), reverse=True)

    def set_run_status(
        self, run_id: int, status: str, conclusion: str | None = None
    ) -> WorkflowRun:
        if status not in RUN_STATUSES:
            raise ValueError(f"status must be one of {RUN_STATUSES}: {status!r}")
        if conclusion is not None and conclusion not in CONCLUSIONS:
            raise ValueError(f"conclusion must be one of {CONCLUSIONS}: {conclusion!r}")
        with self.lock:
            run = self.find_run(run_id)
            now = self.now()
            started = now if status == "in_progress" and run.status == "queued" else None
            updated = replace(
                run,
                status=status,
                updated_at=now,
                conclusion=conclusion if status == "completed" else None,
                run_started_at=started or run.run_started_at,
            )
            self._runs[run_id] = updated
            return updated

    def complete_run(
        self,
        run_id: int,
        conclusion: str = "success",
        artifacts: Iterable[tuple[str, bytes]] = (),
    ) -> WorkflowRun:
        with self.lock:
            for name, data in artifacts:
                self.add_artifact(run_id, name, data)
            return self.set_run_status(run_id, "completed", conclusion)

    def cancel_run(self, repo: str, run_id: int) -> WorkflowRun:
        with self.lock:
            run = self.get_run(repo, run_id)
            if run.status == "completed":
                raise EmulatorError(409, "Cannot cancel a workflow run that is completed.")
            return self.set_run_status(run_id, "completed", "cancelled")

    # -------------------------------------------------------------- artifacts

    def add_artifact(
        self, run_id: int, name: str, data: bytes, *, expired: bool = False
    ) -> Artifact:
        with self.lock:
            run = self.find_run(run_id)
            now = self.now()
            artifact = Artifact(
                id=self._next_id("artifact"),
                repo=run.repo,
                run_id=run_id,
                name=name,
                data=bytes(data),
                expired=expired,
                created_at=now,
                updated_at=now,
                expires_at=now + timedelta(days=90),
                download_key=secrets.token_urlsafe(16),
            )
            self._artifacts[artifact.id] = artifact
            return artifact

    def expire_artifact(self, artifact_id: int) -> Artifact:
        with self.lock:
            artifact = replace(self._artifacts[artifact_id], expired=True, updated_at=self.now())
            self._artifacts[artifact_id] = artifact
            return artifact

    def list_artifacts(
        self, repo: str, *, run_id: int | None = None, name: str | None = None
    ) -> list[Artifact]:
        with self.lock:
            key = self._repo_key(repo)
            if run_id is not None:
                self.get_run(repo, run_id)
            found = [a for a in self._artifacts.values() if a.repo.lower() == key]
        found = [a for a in found if run_id in (None, a.run_id) and name in (None, a.name)]
        return sorted(found, key=lambda a: a.id, reverse=True)

    def get_artifact(self, repo: str, artifact_id: int) -> Artifact:
        with self.lock:
            key = self._repo_key(repo)
            artifact = self._artifacts.get(artifact_id)
        if artifact is None or artifact.repo.lower() != key:
            raise not_found()
        return artifact

    def artifact_for_download(self, artifact_id: int, download_key: str) -> Artifact:
        with self.lock:
            artifact = self._artifacts.get(artifact_id)
        if artifact is None or not secrets.compare_digest(artifact.download_key, download_key):
            raise not_found()
        return artifact

    # -------------------------------------------------------- quota and faults

    def set_quota(
        self,
        remaining: int | None = None,
        *,
        reset_in_s: float | None = None,
        limit: int | None = None,
        token: str | None = None,
    ) -> None:
        """Adjust the primary quota of one token, or of every known token when `token` is None."""
        with self.lock:
            targets = [token] if token is not None else sorted(self.tokens | set(self._quotas))
            for name in targets:
                quota = self._quota(name)
                new_limit = quota.limit if limit is None else limit
                self._quotas[name] = Quota(
                    limit=new_limit,
                    remaining=min(new_limit, quota.remaining if remaining is None else remaining),
                    reset_at=quota.reset_at
                    if reset_in_s is None
                    else math.ceil(time.time() + reset_in_s),
                )

    def quota(self, token: str | None = "t") -> Quota:
        with self.lock:
            return self._quota(token or "")

    def _quota(self, token: str) -> Quota:
        quota = self._quotas.get(token)
        now = time.time()
        if quota is None or now >= quota.reset_at:
            default = self.rate_limit if token or not self.tokens else UNAUTHENTICATED_LIMIT
            limit = default if quota is None else quota.limit
            quota = Quota(limit=limit, remaining=limit, reset_at=int(now) + 3600)
            self._quotas[token] = quota
        return quota

    def take_quota(self, token: str | None) -> Quota | None:
        """Consume one request of quota; None when the quota is exhausted."""
        with self.lock:
            quota = self._quota(token or "")
            if quota.remaining <= 0:
                return None
            self._quotas[token or ""] = replace(quota, remaining=quota.remaining - 1)
            return self._quotas[token or ""]

    def refund_quota(self, token: str | None) -> Quota:
        with self.lock:
            quota = self._quota(token or "")
            self._quotas[token or ""] = replace(
                quota, remaining=min(quota.limit, quota.remaining + 1)
            )
            return self._quotas[token or ""]

    def fail_next(
        self,
        status: int = 502,
        count: int = 1,
        *,
        retry_after: int | None = None,
        path_contains: str | None = None,
        method: str | None = None,
        message: str | None = None,
    ) -> FaultRule:
        """Answer the next `count` matching requests with `status` (403/429 default to GitHub's
        secondary-rate-limit message; `retry_after` adds a Retry-After header)."""
        rule = FaultRule(
            status=status,
            remaining=count,
            retry_after=retry_after,
            path_contains=path_contains,
            method=method.upper() if method else None,
            message=message or _default_fault_message(status),
        )
        with self.lock:
            self._faults.append(rule)
        return rule

    def delay_next(
        self,
        seconds: float,
        count: int = 1,
        *,
        path_contains: str | None = None,
        method: str | None = None,
    ) -> DelayRule:
        rule = DelayRule(seconds, count, path_contains, method.upper() if method else None)
        with self.lock:
            self._delays.append(rule)
        return rule

    def take_fault(self, method: str, path: str) -> FaultRule | None:
        with self.lock:
            return _take_rule(self._faults, method, path)

    def take_delay(self, method: str, path: str) -> float:
        with self.lock:
            rule = _take_rule(self._delays, method, path)
        return rule.seconds if rule else 0.0

    def clear_faults(self) -> None:
        with self.lock:
            self._faults.clear()
            self._delays.clear()

    # ------------------------------------------------- GitHub Apps and installations

    def add_app(self, app_id: int | str, public_key_pem: str) -> None:
        """Register a GitHub App by the public half of its key; its JWTs then authenticate."""
        with self.lock:
            self._apps[str(app_id)] = public_key_pem

    def add_installation(
        self, app_id: int | str, account: str, repositories: Sequence[str]
    ) -> Installation:
        with self.lock:
            if str(app_id) not in self._apps:
                raise ValueError(f"no app {app_id}: call add_app first")
            installation = Installation(
                id=self._next_id("installation"),
                app_id=int(app_id),
                account=account,
                repositories=tuple(self._full_name(r) for r in repositories),
                created_at=self.now(),
            )
            self._installations[installation.id] = installation
            return installation

    def app_for_jwt(self, token: str | None) -> str | None:
        """The app id a JWT (RS256, signed by a registered app, not expired) authenticates."""
        import jwt  # PyJWT, which PyGithub already needs to sign app JWTs

        if not token or token.count(".") != 2:
            return None
        try:
            issuer = str(jwt.decode(token, options={"verify_signature": False})["iss"])
            with self.lock:
                key = self._apps.get(issuer)
            if key is None:
                return None
            jwt.decode(token, key, algorithms=["RS256"], options={"require": ["exp", "iat"]})
        except (jwt.PyJWTError, KeyError):
            return None
        return issuer

    def repo_installation(self, app_id: str, repo: str) -> Installation:
        with self.lock:
            name = self._full_name(repo).lower()
            for installation in self._installations.values():
                if str(installation.app_id) == app_id and name in {
                    r.lower() for r in installation.repositories
                }:
                    return installation
        raise not_found()

    def issue_installation_token(self, app_id: str, installation_id: int) -> tuple[str, datetime]:
        with self.lock:
            installation = self._installations.get(installation_id)
            if installation is None or str(installation.app_id) != app_id:
                raise not_found()
            token = "ghs_" + secrets.token_hex(18)
            expires = self.now() + timedelta(seconds=self.installation_token_ttl_s)
            self._installation_tokens[token] = (installation_id, expires)
            return token, expires

    def accepts(self, token: str | None) -> bool:
        """Whether a bearer may call the API: a seeded token, a live installation token or an
        app JWT (the /app routes check that they got a JWT)."""
        with self.lock:
            if token in self.tokens:
                return True
            issued = self._installation_tokens.get(token or "")
        if issued is not None:
            return issued[1] > self.now()
        return self.app_for_jwt(token) is not None

    def add_hook_delivery(
        self,
        guid: str,
        *,
        event: str = "pull_request",
        action: str | None = "closed",
        status_code: int = 200,
        delivered_at: datetime | None = None,
        redelivery: bool = False,
    ) -> HookDelivery:
        """Record an attempt to deliver the App's webhook (GitHub keeps them for 3 days)."""
        with self.lock:
            delivery = HookDelivery(
                id=self._next_id("hook_delivery"),
                guid=guid,
                event=event,
                action=action,
                status_code=status_code,
                delivered_at=delivered_at or self.now(),
                redelivery=redelivery,
            )
            self._hook_deliveries[delivery.id] = delivery
            return delivery

    def list_hook_deliveries(self) -> list[HookDelivery]:
        with self.lock:
            return sorted(self._hook_deliveries.values(), key=lambda d: d.id, reverse=True)

    def redeliver(self, delivery_id: int) -> HookDelivery:
        """A redelivery attempt of a recorded delivery (it succeeds: the test's receiver is up)."""
        with self.lock:
            original = self._hook_deliveries.get(delivery_id)
            if original is None:
                raise not_found()
            return self.add_hook_delivery(
                original.guid, event=original.event, action=original.action, redelivery=True
            )

    @property
    def installation_tokens(self) -> list[str]:
        with self.lock:
            return list(self._installation_tokens)

    # ------------------------------------------------------------ request log

    def record_request(self, record: RequestRecord) -> None:
        with self.lock:
            self._requests.append(record)

    @property
    def requests(self) -> list[RequestRecord]:
        with self.lock:
            return list(self._requests)

    def reset_log(self) -> None:
        with self.lock:
            self._requests.clear()


_Rule = TypeVar("_Rule", FaultRule, DelayRule)


def _take_rule(rules: list[_Rule], method: str, path: str) -> _Rule | None:
    for rule in rules:
        if rule.matches(method, path):
            rule.remaining -= 1
            if rule.remaining <= 0:
                rules.remove(rule)
            return rule
    return None


def _pull_matches(pull: Pull, state: str, base: str | None, head: str | None) -> bool:
    if state != "all" and pull.state != state:
        return False
    if base is not None and pull.base_ref != base:
        return False
    if head is None:
        return True
    owner, _, ref = head.rpartition(":")
    return pull.head_ref == ref and (not owner or owner.lower() == pull.repo.split("/")[0].lower())


def _pull_sort_key(sort: str, comment_counts: Mapping[int, int]) -> Callable[[Pull], Any]:
    if sort == "updated":
        return lambda p: (p.updated_at, p.number)
    if sort == "popularity":
        return lambda p: (comment_counts[p.number], p.number)
    if sort == "long-running":
        return lambda p: (-p.created_at.timestamp(), p.number)
    return lambda p: (p.created_at, p.number)


def _apply_check_fields(run: CheckRun, payload: Mapping[str, Any], now: datetime) -> CheckRun:
    changes: dict[str, Any] = {
        k: payload[k] for k in ("name", "details_url", "external_id") if k in payload
    }
    if "output" in payload:
        if not isinstance(payload["output"], Mapping):
            raise validation_failed("CheckRun", "output", "invalid")
        changes["output"] = dict(payload["output"])
        _check_output(changes["output"])
    for stamp in ("started_at", "completed_at"):
        if stamp in payload:
            changes[stamp] = parse_timestamp(payload[stamp], "CheckRun", stamp)
    status = payload.get("status", run.status)
    conclusion = payload.get("conclusion", run.conclusion)
    if conclusion is not None:
        status = "completed"
    if status not in RUN_STATUSES:
        raise validation_failed("CheckRun", "status", "invalid")
    if status == "completed" and conclusion not in CONCLUSIONS:
        raise validation_failed(
            "CheckRun", "conclusion", "missing_field" if conclusion is None else "invalid"
        )
    if status == "completed":
        changes.setdefault("completed_at", run.completed_at or now)
    return replace(run, status=status, conclusion=conclusion, **changes)


ANNOTATION_LEVELS = ("notice", "warning", "failure")
ANNOTATIONS_PER_REQUEST = 50
OUTPUT_TEXT_LIMIT = 65_535


def _check_output(output: Mapping[str, Any]) -> None:
    """GitHub's rules for a check run's output: title and summary, text and summary under
    its limit, at most 50 annotations per request, each with a path, lines and a level."""
    for name in ("title", "summary"):
        if not isinstance(output.get(name), str):
            raise validation_failed("CheckRun", f"output.{name}", "missing_field")
    for name in ("summary", "text"):
        if len(output.get(name) or "") > OUTPUT_TEXT_LIMIT:
            raise validation_failed("CheckRun", f"output.{name}", "too_long")
    annotations = output.get("annotations", [])
    if not isinstance(annotations, list) or len(annotations) > ANNOTATIONS_PER_REQUEST:
        raise validation_failed("CheckRun", "output.annotations", "invalid")
    for item in annotations:
        lines = (item.get("start_line"), item.get("end_line"))
        if (
            not isinstance(item.get("path"), str)
            or not all(isinstance(n, int) and n >= 1 for n in lines)
            or item.get("annotation_level") not in ANNOTATION_LEVELS
            or not isinstance(item.get("message"), str)
        ):
            raise validation_failed("CheckRun", "output.annotations", "invalid")


def parse_timestamp(value: Any, resource: str, name: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise validation_failed(resource, name, "invalid") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _directory_listing(
    files: Mapping[str, tuple[bytes, datetime]], path: str, ref: str
) -> list[ContentEntry]:
    prefix = f"{path}/" if path else ""
    entries: dict[str, ContentEntry] = {}
    for name, (data, modified) in files.items():
        if not name.startswith(prefix):
            continue
        head, sep, _ = name[len(prefix) :].partition("/")
        child = prefix + head
        if sep:
            entries.setdefault(child, ContentEntry(child, "dir", ref))
        else:
            entries[child] = ContentEntry(child, "file", ref, data, modified)
    return [entries[k] for k in sorted(entries)]


def _check_dispatch(workflow: Workflow, ref: Any, inputs: Any) -> dict[str, Any]:
    if not workflow.dispatchable:
        raise EmulatorError(422, "Workflow does not have 'workflow_dispatch' trigger")
    if workflow.state != "active":
        raise EmulatorError(422, "Cannot trigger a 'workflow_dispatch' on a disabled workflow")
    if not isinstance(ref, str) or not ref:
        raise EmulatorError(422, 'Invalid request.\n\n"ref" wasn\'t supplied.')
    if inputs is None:
        inputs = {}
    if not isinstance(inputs, Mapping):
        raise EmulatorError(422, "Invalid request.\n\nFor 'properties/inputs', is not an object.")
    if workflow.inputs is not None:
        unexpected = sorted(set(inputs) - set(workflow.inputs))
        if unexpected:
            raise EmulatorError(422, f"Unexpected inputs provided: {unexpected}")
    for name in workflow.required_inputs:
        if name not in inputs:
            raise EmulatorError(422, f"Required input '{name}' not provided")
    return dict(inputs)


class _BlankMissing(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return ""


def _format_run_name(template: str, inputs: Mapping[str, Any]) -> str:
    return template.format_map(_BlankMissing(inputs))


_CREATED_BOUND = re.compile(r"^(>=|<=|>|<)?(.+)$")


def _created_filter(expression: str) -> Callable[[datetime], bool]:
    """GitHub's search-style date filter: `D`, `>=D`, `>D`, `<=D`, `<D`, `A..B` (`*` open)."""
    if ".." in expression:
        low, high = expression.split("..", 1)
        lo = None if low == "*" else _bounds(low)[0]
        hi = None if high == "*" else _bounds(high)[1]
        return lambda t: (lo is None or t >= lo) and (hi is None or t < hi)
    match = _CREATED_BOUND.match(expression.strip())
    if match is None:
        raise validation_failed("WorkflowRun", "created", "invalid")
    operator, value = match.groups()
    lo, hi = _bounds(value)
    checks: dict[str | None, Callable[[datetime], bool]] = {
        ">=": lambda t: t >= lo,
        ">": lambda t: t >= hi,
        "<=": lambda t: t < hi,
        "<": lambda t: t < lo,
        None: lambda t: lo <= t < hi,
    }
    return checks[operator]


def _bounds(value: str) -> tuple[datetime, datetime]:
    """The half-open interval a date (whole day) or a timestamp (that second) covers."""
    try:
        if "T" not in value:
            day = datetime.fromisoformat(value).replace(tzinfo=UTC)
            return day, day + timedelta(days=1)
        moment = parse_timestamp(value, "WorkflowRun", "created").replace(microsecond=0)
    except ValueError:
        raise validation_failed("WorkflowRun", "created", "invalid") from None
    return moment, moment + timedelta(seconds=1)

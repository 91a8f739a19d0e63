"""Merged PRs from the GitHub REST API, polled cheaply.

Closed PRs into the branch are listed by update time, newest first, until the
lower bound (the window's start, or the cursor's update time); merged ones in
the window become PRs, oldest first. The first page is a conditional request
carrying the ETag stored with the cursor, so an unchanged re-poll is one 304
that costs no primary quota. A new PR costs one more request, its file list
(100 files a page); title, body, labels, SHAs and merge time come with the
list. The cursor is ``{"updated_at", "number"}`` of the last stored PR, plus
the first page's ETag once a run got through everything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import github
from github.PullRequest import PullRequest

from pr_miner.errors import BadCursor, EmptyRange, NotMerged
from pr_miner.sources.base import QuotaState, Scan, ScanProgress, ScanRequest
from pr_miner.sources.github_client import github_errors, reset_time
from pr_miner.types import FileChange, HistoryEntry, MergedPR, PRRef, PRStyle
from task_registry.types import CursorSource, DescriptionSource, PRKind

NEXT_LINK = re.compile(r'<([^>]+)>;\s*rel="next"')
CURSOR_LIMIT = 200  # the registry's cursor column
BINARY_STATUSES = ("added", "modified", "removed")
STAYS = "cursor not moved: a window with --until, or one starting after the cursor, leaves a gap"


@dataclass(frozen=True, slots=True)
class GitHubCursor:
    updated_at: datetime
    number: int
    etag: str | None = None

    def dump(self) -> str:
        data = {"updated_at": self.updated_at.isoformat(), "number": self.number}
        text = json.dumps({**data, "etag": self.etag}) if self.etag else json.dumps(data)
        return text if len(text) <= CURSOR_LIMIT else json.dumps(data)

    @classmethod
    def load(cls, text: str) -> GitHubCursor:
        """Read a stored cursor; a bare ISO time (an older poller's format) reads as number 0."""
        try:
            if not text.lstrip().startswith("{"):
                return cls(_parse_time(text.strip()), 0)
            data = json.loads(text)
            return cls(_parse_time(data["updated_at"]), int(data["number"]), data.get("etag"))
        except (ValueError, KeyError, TypeError):
            raise BadCursor(f"unreadable GitHub cursor {text!r}: run again with --since") from None

    @property
    def key(self) -> tuple[datetime, int]:
        return self.updated_at, self.number


@dataclass(frozen=True, slots=True)
class _Listing:
    items: list[dict[str, Any]]
    etag: str | None
    not_modified: bool


class GitHubSource:
    """A ``PRSource`` over one repository's pull requests into one branch; ``on_progress``
    hears of every page and file list it fetches (a long first run takes minutes)."""

    def __init__(
        self,
        client: github.Github,
        repo: str,
        branch: str = "main",
        on_progress: Callable[[ScanProgress], None] | None = None,
    ) -> None:
        self.client = client
        self.repo = repo
        self.branch = branch
        self.on_progress = on_progress
        self._raw: dict[int, dict[str, Any]] = {}
        self._progress = ScanProgress(pages=0, seen=0)

    def _advance(self, *, pages: int = 0, seen: int = 0, files: int = 0) -> None:
        done = self._progress
        self._progress = ScanProgress(done.pages + pages, done.seen + seen, done.files + files)
        if self.on_progress is not None:
            self.on_progress(self._progress)

    @property
    def cursor_source(self) -> CursorSource:
        return CursorSource.github

    @property
    def location(self) -> str:
        return f"GitHub {self.repo} ({self.branch})"

    def quota(self) -> QuotaState | None:
        remaining, limit = self.client.requester.rate_limiting
        if limit < 0:
            return None
        return QuotaState(remaining, limit, reset_time(self.client))

    # --- scan ------------------------------------------------------------------------

    def scan(self, request: ScanRequest) -> Scan:
        cursor = GitHubCursor.load(request.cursor) if request.cursor else None
        bound = request.since or (cursor.updated_at if cursor else None)
        if bound is None:
            raise EmptyRange("no --since and no cursor: say where mining starts")
        incremental = request.since is None
        etag = cursor.etag if incremental and cursor else None
        with github_errors(self.repo, self.client):
            listing = self._list_closed(bound, etag)
        if listing.not_modified:
            return Scan([], [], 0, "closed PRs", not_modified=True, quota=self.quota())
        return self._scan_result(listing, request, cursor, incremental)

    def _scan_result(
        self,
        listing: _Listing,
        request: ScanRequest,
        cursor: GitHubCursor | None,
        incremental: bool,
    ) -> Scan:
        in_scope = [item for item in listing.items if _in_scope(item, request, cursor)]
        chosen = sorted((item for item in in_scope if item.get("merged_at")), key=_order_key)
        advance = incremental or (
            request.until is None
            and (cursor is None or request.since is None or request.since <= cursor.updated_at)
        )
        for item in chosen:
            self._raw[item["number"]] = item
        merged = sorted((item for item in listing.items if item.get("merged_at")), key=_order_key)
        return Scan(
            prs=[_merged_pr(item, _moves(item, cursor, advance)) for item in chosen],
            history=[_history_entry(item) for item in merged],
            scanned=len(in_scope),
            scanned_label="closed PRs",
            final_cursor=self._final_cursor(listing, advance),
            quota=self.quota(),
            notes=[] if advance else [STAYS],
        )

    def _final_cursor(self, listing: _Listing, advance: bool) -> str | None:
        if not advance or not listing.items:
            return None
        newest = max(listing.items, key=_order_key)
        updated_at, number = _order_key(newest)
        return GitHubCursor(updated_at, number, listing.etag).dump()

    def _list_closed(self, bound: datetime, etag: str | None) -> _Listing:
        """Closed PRs updated at or after ``bound``, following pages until older ones show."""
        url = f"/repos/{self.repo}/pulls"
        params = {"state": "closed", "sort": "updated", "direction": "desc", "base": self.branch}
        params["per_page"] = str(self.client.per_page)
        headers = {"If-None-Match": etag} if etag else None
        response_headers, page = self.client.requester.requestJsonAndCheck(
            "GET", url, parameters=params, headers=headers
        )
        if page is None:  # 304: nothing changed since the ETag was stored
            return _Listing([], etag, not_modified=True)
        first_etag = response_headers.get("etag")
        items: list[dict[str, Any]] = []
        while True:
            self._advance(pages=1, seen=len(page))
            fresh = [item for item in page if _parse_time(item["updated_at"]) >= bound]
            items.extend(fresh)
            next_url = _next_link(response_headers)
            if len(fresh) < len(page) or next_url is None:
                return _Listing(items, first_etag, not_modified=False)
            response_headers, page = self.client.requester.requestJsonAndCheck("GET", next_url)

    def scan_pull(self, number: int) -> Scan:
        """One PR a webhook said merged, as a scan of its own: the same conversion as a poll's,
        and no cursor move (the poll that lists it later finds it stored and unchanged)."""
        with github_errors(self.repo, self.client):
            _, item = self.client.requester.requestJsonAndCheck(
                "GET", f"/repos/{self.repo}/pulls/{number}"
            )
        if not item.get("merged_at"):
            raise NotMerged(f"{self.repo}#{number} is not merged")
        self._raw[number] = item
        return Scan(
            prs=[_merged_pr(item, None)],
            history=[_history_entry(item)],
            scanned=1,
            scanned_label="merged PR",
            quota=self.quota(),
        )

    # --- files -------------------------------------------------------------------------

    def files(self, pr: MergedPR) -> tuple[FileChange, ...]:
        raw = self._raw[pr.ref.number]
        pull = self.client.create_from_raw_data(PullRequest, raw)
        with github_errors(self.repo, self.client):
            changes = tuple(_file_change(entry) for entry in pull.get_files())
        self._advance(files=1)
        return changes


def _file_change(entry: Any) -> FileChange:
    # The API flags no binary files; a binary diff is one with no patch and no line counts.
    binary = entry.patch is None and entry.changes == 0 and entry.status in BINARY_STATUSES
    return FileChange(
        path=entry.filename,
        additions=entry.additions,
        deletions=entry.deletions,
        binary=binary,
        old_path=entry.previous_filename,
    )


def _merged_pr(item: dict[str, Any], cursor: str | None) -> MergedPR:
    body = item.get("body") or ""
    number = int(item["number"])
    return MergedPR(
        ref=PRRef(PRKind.github, number),
        title=item.get("title") or "",
        body=body.strip(),
        description_source=DescriptionSource.api if body.strip() else DescriptionSource.none,
        merged_at=_parse_time(item["merged_at"]),
        merge_sha=item.get("merge_commit_sha"),
        base_sha=(item.get("base") or {}).get("sha"),
        author=(item.get("user") or {}).get("login"),
        labels=tuple(label["name"] for label in item.get("labels") or ()),
        subject=f"{item.get('title') or ''} (#{number})",
        style=PRStyle.api,
        cursor=cursor,
    )


def _history_entry(item: dict[str, Any]) -> HistoryEntry:
    number = int(item["number"])
    return HistoryEntry(
        at=_parse_time(item["merged_at"]),
        subject=f"{item.get('title') or ''} (#{number})",
        title=item.get("title") or "",
        body=item.get("body") or "",
        sha=item.get("merge_commit_sha"),
        ref=PRRef(PRKind.github, number),
    )


def _in_scope(item: dict[str, Any], request: ScanRequest, cursor: GitHubCursor | None) -> bool:
    """Incremental: updated after the cursor. Window: closed (merged) inside [since, until)."""
    if request.since is None:
        return cursor is None or _order_key(item) > cursor.key
    closed = item.get("merged_at") or item.get("closed_at")
    if not closed:
        return False
    moment = _parse_time(closed)
    return moment >= request.since and (request.until is None or moment < request.until)


def _moves(item: dict[str, Any], cursor: GitHubCursor | None, advance: bool) -> str | None:
    """The cursor this PR reaches once stored; None where that would move it back."""
    updated_at, number = _order_key(item)
    if not advance or (cursor is not None and (updated_at, number) <= cursor.key):
        return None
    return GitHubCursor(updated_at, number).dump()


def _order_key(item: dict[str, Any]) -> tuple[datetime, int]:
    return _parse_time(item["updated_at"]), int(item["number"])


def _parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _next_link(headers: dict[str, Any]) -> str | None:
    match = NEXT_LINK.search(str(headers.get("link", "")))
    return match.group(1) if match else None

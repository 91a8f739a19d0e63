"""The plug-in point for PR sources: a Protocol, the scan request and result, and a registry.

A source answers two questions. ``scan``: which merged PRs fall in this window
(oldest first, each with the cursor position reached once it is stored), and
which mainline history surrounds them (for revert and follow-up detection).
``files``: the changed files of one PR, asked separately because on GitHub
it costs a request and is skipped when the registry already holds them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from pr_miner.types import FileChange, HistoryEntry, MergedPR
from task_registry.types import CursorSource


@dataclass(frozen=True, slots=True)
class ScanRequest:
    """A window of merge times, [since, until); ``since`` None means "from the cursor"."""

    since: datetime | None
    until: datetime | None
    cursor: str | None
    # Oldest merge time the registry already holds for this repo: history must reach it.
    history_since: datetime | None = None


@dataclass(frozen=True, slots=True)
class QuotaState:
    remaining: int
    limit: int
    reset_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ScanProgress:
    """How far a source has read, told after each page of its listing and each file list."""

    pages: int  # listing pages fetched
    seen: int  # PRs listed so far, in the window or not
    files: int = 0  # PRs whose changed files were fetched


@dataclass(slots=True)
class Scan:
    prs: list[MergedPR]
    history: list[HistoryEntry]
    scanned: int
    scanned_label: str
    final_cursor: str | None = None
    not_modified: bool = False
    quota: QuotaState | None = None
    notes: list[str] = field(default_factory=list)


class PRSource(Protocol):
    """Where merged PRs come from: a git clone or mirror, or the GitHub API."""

    @property
    def cursor_source(self) -> CursorSource: ...

    @property
    def location(self) -> str: ...

    def scan(self, request: ScanRequest) -> Scan: ...

    def files(self, pr: MergedPR) -> tuple[FileChange, ...]: ...

    def quota(self) -> QuotaState | None: ...


class PullSource(PRSource, Protocol):
    """A source that can also fetch one merged PR by number (a webhook said it merged)."""

    def scan_pull(self, number: int) -> Scan: ...


# Registry of sources by cursor kind, as "module:attribute" so that naming a source never
# imports PyGithub for a git-only run.
SOURCES: dict[CursorSource, str] = {
    CursorSource.git: "pr_miner.sources.git_source:GitSource",
    CursorSource.github: "pr_miner.sources.github_source:GitHubSource",
}


def source_class(kind: CursorSource) -> Callable[..., PRSource]:
    """The source class registered for ``kind``, imported on first use."""
    module_name, _, attribute = SOURCES[kind].partition(":")
    factory: Callable[..., PRSource] = getattr(importlib.import_module(module_name), attribute)
    return factory

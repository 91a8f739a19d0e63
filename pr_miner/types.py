"""The miner's vocabulary: PR references, changed files, merged PRs, history entries, verdicts.

Hot records (one per commit or file, tens of thousands per run) are frozen
slotted dataclasses; what leaves the package in reports is pydantic (see
:mod:`pr_miner.report`). Names of filters, PR styles and follow-up relations are
enums here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from task_registry.types import DescriptionSource, PRKind


class FilterName(StrEnum):
    """The selection filters, in the order they run; a rejected PR stores the first it failed."""

    merged = "merged"
    size = "size"
    adds_tests = "adds_tests"
    changes_code = "changes_code"
    not_reverted = "not_reverted"
    docs_ci_only = "docs_ci_only"
    max_files = "max_files"
    paths = "paths"
    formatting_only = "formatting_only"


class PRStyle(StrEnum):
    """How a merged PR shows on the mainline."""

    squash = "squash"  # subject ends with "(#N)"
    merge_commit = "merge_commit"  # "Merge pull request #N from ..."
    gitlab = "gitlab"  # body carries "See merge request GROUP/PROJECT!N"
    api = "api"  # read from the GitHub API
    stored = "stored"  # rebuilt from a registry row


class FollowUpRelation(StrEnum):
    revert = "revert"  # a later change reverts this PR
    reapply = "reapply"  # a later change reverts one of its reverts
    mention = "mention"  # a later change names this PR (#N or !N)


@dataclass(frozen=True, slots=True, order=True)
class PRRef:
    """A PR's identity in one repository; GitLab merge requests never collide with GitHub PRs."""

    kind: PRKind
    number: int

    def __str__(self) -> str:
        return f"{'!' if self.kind is PRKind.gitlab else '#'}{self.number}"


@dataclass(frozen=True, slots=True)
class FileChange:
    """One changed file of a PR's diff against its base (the mainline parent)."""

    path: str
    additions: int
    deletions: int
    binary: bool = False
    old_path: str | None = None

    @property
    def lines(self) -> int:
        return 0 if self.binary else self.additions + self.deletions


@dataclass(frozen=True, slots=True)
class MergedPR:
    """A merged PR as a source sees it, without its files (those may cost a request)."""

    ref: PRRef
    title: str
    body: str
    description_source: DescriptionSource
    merged_at: datetime
    merge_sha: str | None
    base_sha: str | None = None
    author: str | None = None
    labels: tuple[str, ...] = ()
    subject: str = ""
    style: PRStyle = PRStyle.squash
    # Where the source's cursor stands once this PR is stored; None: leave the cursor alone.
    cursor: str | None = None


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One mainline change (commit or merged PR), as revert and follow-up detection reads it."""

    at: datetime
    subject: str
    title: str
    body: str
    sha: str | None = None
    ref: PRRef | None = None


@dataclass(frozen=True, slots=True)
class FollowUp:
    """A later mainline change that reverts, reapplies or mentions a PR; shown to curators."""

    relation: FollowUpRelation
    subject: str
    at: datetime
    sha: str | None = None
    ref: PRRef | None = None

    def as_record(self) -> dict[str, object]:
        """The JSON form stored in the registry's ``follow_ups`` column."""
        return {
            "relation": self.relation.value,
            "subject": self.subject,
            "at": self.at.isoformat(),
            "sha": self.sha,
            "kind": self.ref.kind.value if self.ref else None,
            "number": self.ref.number if self.ref else None,
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    failed_filter: FilterName | None = None
    reason: str | None = None

    @property
    def passed(self) -> bool:
        return self.failed_filter is None


PASSED = Verdict()

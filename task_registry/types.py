"""Column types and status vocabularies shared by every table.

Statuses are ``StrEnum`` values stored as plain strings, so a new status is a
code change, not a database enum migration.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import DateTime
from sqlalchemy.types import TypeDecorator

# The largest integer a row id (BIGINT; SQLite's INTEGER) and an offset can hold, and the
# largest pull request number GitHub issues (int32): anything above is refused as input.
MAX_ROW_ID = 2**63 - 1
MAX_PR_NUMBER = 2**31 - 1


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every backend (SQLite stores no zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: registry datetimes must carry a zone")
        return value.astimezone(UTC).replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class CursorSource(StrEnum):
    git = "git"
    github = "github"


class PRKind(StrEnum):
    github = "github"
    gitlab = "gitlab"


class DescriptionSource(StrEnum):
    commit = "commit"
    api = "api"
    none = "none"


class FilterVerdict(StrEnum):
    passed = "passed"
    rejected = "rejected"


class Decision(StrEnum):
    pending = "pending"
    accepted = "accepted"
    rejected = "rejected"


class TaskStatus(StrEnum):
    candidate = "candidate"
    built = "built"
    validated = "validated"
    published = "published"
    retired = "retired"


class PromiseCategory(StrEnum):
    memory = "resource.memory"
    time = "resource.time"
    traffic = "resource.traffic"
    state = "state"
    mode = "mode"
    numeric = "numeric"
    functional = "functional"


class PromiseVerdict(StrEnum):
    checked = "checked"
    exercised = "exercised"
    unchecked = "unchecked"


class ProbeStatus(StrEnum):
    proposed = "proposed"
    accepted = "accepted"
    rejected = "rejected"
    waiting = "waiting"  # needs GPUs the validating runner did not offer


class PatchSource(StrEnum):
    mechanical = "mechanical"
    llm = "llm"
    curator = "curator"


class Control(StrEnum):
    golden = "golden"
    snapshot = "snapshot"
    hollow = "hollow"
    adversarial = "adversarial"
    submission = "submission"


class Suite(StrEnum):
    original = "original"
    probes = "probes"
    all = "all"


class RunOutcome(StrEnum):
    completed = "completed"
    unappliable = "unappliable"
    timeout = "timeout"
    fault = "fault"
    unschedulable = "unschedulable"


class TestOutcome(StrEnum):
    passed = "passed"
    failed = "failed"
    error = "error"
    skipped = "skipped"
    xfailed = "xfailed"
    xpassed = "xpassed"
    timeout = "timeout"


class SubmissionStatus(StrEnum):
    pending = "pending"
    running = "running"
    submitted = "submitted"
    graded = "graded"
    fault = "fault"


class ScoreSuite(StrEnum):
    original = "original"
    with_probes = "with_probes"


class DeliveryStatus(StrEnum):
    queued = "queued"
    processed = "processed"
    failed = "failed"


class JobStatus(StrEnum):
    queued = "queued"
    running = "running"
    done = "done"
    failed = "failed"


class ReportStatus(StrEnum):
    """Where a PR's report stands on GitHub."""

    rendered = "rendered"  # stored, not yet handed to GitHub
    posted = "posted"  # the sticky comment (or check run) carries this body
    skipped = "skipped"  # deliberately not posted; ``skip_reason`` says why
    dry_run = "dry_run"  # the watch file says dry run: stored for the dashboard only

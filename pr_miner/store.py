"""Store judged PRs in batches: each batch one transaction of whole PRs plus the cursor.

A batch holds complete candidate rows and the cursor position they reach,
so an interrupted run (Ctrl-C, kill, a source failing mid-way) leaves only
whole PRs behind and a cursor that never runs ahead of them; the next run
resumes from there. Rows whose mined fields would not change are not
written at all, which makes re-mining a range cheap and idempotent. The
auto-accept rule runs in the same transaction as the row it accepts, and
only on candidates nobody has decided yet: re-mining never re-asks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine
from sqlmodel import Session

from pr_miner.config import MiningConfig
from pr_miner.records import is_unchanged, to_create
from pr_miner.selection.judge import Judged
from pr_miner.selection.ranking import AUTO_ACCEPTED_BY, auto_accept_reason
from pr_miner.types import PRRef
from task_registry.candidates import decide_candidate, upsert_candidate
from task_registry.db import session_scope
from task_registry.models import CandidatePR, RepoCreate
from task_registry.repos import get_or_create_repo, set_cursor
from task_registry.types import CursorSource, Decision


@dataclass(frozen=True, slots=True)
class BatchProgress:
    """Told to the caller after each committed batch."""

    stored: int
    created: int
    updated: int
    unchanged: int
    cursor: str | None


@dataclass(slots=True)
class _Pending:
    judged: Judged
    auto_accept: str | None


@dataclass(frozen=True, slots=True)
class _Written:
    ref: PRRef
    row: CandidatePR
    existed: bool
    accepted: bool


@dataclass
class CandidateWriter:
    """Queues judged PRs and commits them in batches; the repository row is created with the
    first batch, so a run that fails before storing anything leaves the registry untouched."""

    engine: Engine
    repo: RepoCreate
    repo_id: int | None
    cursor_source: CursorSource
    config: MiningConfig
    stored: dict[PRRef, CandidatePR]
    cursor: str | None
    batch_size: int = 100
    on_batch: Callable[[BatchProgress], None] | None = None
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    auto_accepted: list[str] = field(default_factory=list)
    _pending: list[_Pending] = field(default_factory=list)
    _pending_cursor: str | None = None

    def add(self, judged: Judged, cursor: str | None = None) -> None:
        """Queue one PR (and the cursor it reaches); commits when the batch is full."""
        row = self.stored.get(judged.pr.ref)
        accept = self._auto_accept(judged, row)
        if row is not None and accept is None and is_unchanged(row, to_create(judged, row.repo_id)):
            self.unchanged += 1
        else:
            self._pending.append(_Pending(judged, accept))
        if cursor is not None:
            self._pending_cursor = cursor
        if len(self._pending) >= self.batch_size:
            self.flush()

    def finish(self, final_cursor: str | None) -> None:
        if final_cursor is not None:
            self._pending_cursor = final_cursor
        self.flush()

    def flush(self) -> None:
        """Commit the queued rows and cursor in one transaction."""
        moves_cursor = self._pending_cursor not in (None, self.cursor)
        if not self._pending and not moves_cursor:
            return
        with session_scope(self.engine) as session:
            repo_id = self._repo_id(session)
            written = [self._store(session, repo_id, item) for item in self._pending]
            if moves_cursor:
                assert self._pending_cursor is not None
                set_cursor(
                    session=session,
                    repo_id=repo_id,
                    source=self.cursor_source,
                    position=self._pending_cursor,
                )
        self._committed(written, moves_cursor, repo_id)

    def _repo_id(self, session: Session) -> int:
        if self.repo_id is not None:
            return self.repo_id
        row = get_or_create_repo(session=session, repo_in=self.repo)
        assert row.id is not None
        return row.id

    def _store(self, session: Session, repo_id: int, item: _Pending) -> _Written:
        ref = item.judged.pr.ref
        row = upsert_candidate(session=session, candidate_in=to_create(item.judged, repo_id))
        if item.auto_accept is not None and row.id is not None:
            row = decide_candidate(
                session=session,
                candidate_id=row.id,
                decision=Decision.accepted,
                reason=item.auto_accept,
                decided_by=AUTO_ACCEPTED_BY,
            )
        return _Written(ref, row, existed=ref in self.stored, accepted=item.auto_accept is not None)

    def _committed(self, written: list[_Written], moved_cursor: bool, repo_id: int) -> None:
        """Book-keeping once the transaction is in: nothing here runs for a rolled-back batch."""
        self.repo_id = repo_id
        for item in written:
            self.stored[item.ref] = item.row
            self.updated += item.existed
            self.created += not item.existed
            if item.accepted:
                self.auto_accepted.append(str(item.ref))
        self._pending.clear()
        if moved_cursor:
            self.cursor = self._pending_cursor
        if self.on_batch is not None:
            self.on_batch(
                BatchProgress(len(written), self.created, self.updated, self.unchanged, self.cursor)
            )

    def _auto_accept(self, judged: Judged, row: CandidatePR | None) -> str | None:
        undecided = row is None or (row.decision == Decision.pending and row.decided_at is None)
        if not judged.verdict.passed or not undecided:
            return None
        return auto_accept_reason(self.config, judged.core_share)

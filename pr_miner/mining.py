"""``mine``: one incremental, idempotent mining run for one repository and one source.

The run reads what the registry holds for the repository (its cursor for this
source, its stored candidates), asks the source for the window's merged PRs
and the surrounding history, judges every PR (filters, ranking, reverts,
follow-ups) and stores them oldest first in batches of whole PRs with the
cursor (:mod:`pr_miner.store`). Stored candidates that the new history touches
(a later revert, a reapply, a follow-up) are judged again, so a PR reverted
after it was mined does not stay a survivor. Without ``since`` the run starts
at the cursor; re-mining a window writes nothing that has not changed.
``mine_pull`` does the same for one PR a webhook reported, without moving the cursor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from functools import partial

from sqlalchemy.engine import Engine

from pr_miner.config import MiningConfig
from pr_miner.errors import SourceError
from pr_miner.records import (
    files_from_row,
    history_entry_from_row,
    keep_better_description,
    pr_from_row,
    row_ref,
)
from pr_miner.report import MiningReport, QuotaReport, funnel, summarise
from pr_miner.selection.judge import Judged, judge
from pr_miner.selection.layout import ProgramSource, UnchangedPrograms
from pr_miner.selection.reverts import RevertIndex
from pr_miner.sources.base import PRSource, PullSource, Scan, ScanRequest
from pr_miner.store import BatchProgress, CandidateWriter
from pr_miner.types import FileChange, HistoryEntry, MergedPR, PRRef
from task_registry.candidates import list_candidates
from task_registry.db import session_scope
from task_registry.models import CandidatePR, RepoCreate
from task_registry.repos import find_repo, get_cursor

DEFAULT_BATCH_SIZE = 100


@dataclass(frozen=True, slots=True)
class _Registry:
    """What the registry holds for the repository before the run (None: never mined)."""

    repo_id: int | None
    cursor: str | None
    stored: dict[PRRef, CandidatePR]

    @property
    def oldest_merge(self) -> datetime | None:
        times = [row.merged_at for row in self.stored.values() if row.merged_at is not None]
        return min(times, default=None)


def mine(
    *,
    engine: Engine,
    repo: str,
    source: PRSource,
    config: MiningConfig,
    since: datetime | None = None,
    until: datetime | None = None,
    default_branch: str = "main",
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_batch: Callable[[BatchProgress], None] | None = None,
) -> MiningReport:
    """Mine ``repo`` from ``source`` over [since, until) (or from the cursor) and store it."""
    registry = _read_registry(engine, repo, source)
    request = ScanRequest(since, until, registry.cursor, history_since=registry.oldest_merge)
    scan = source.scan(request)
    reverts = RevertIndex(_history(scan, registry))
    writer = CandidateWriter(
        engine=engine,
        repo=RepoCreate(full_name=repo, default_branch=default_branch),
        repo_id=registry.repo_id,
        cursor_source=source.cursor_source,
        config=config,
        stored=dict(registry.stored),
        cursor=registry.cursor,
        batch_size=batch_size,
        on_batch=on_batch,
    )
    judged = _judge_window(scan, source, config, reverts, writer)
    _rejudge_stored(scan, registry, config, reverts, writer, source)
    writer.finish(scan.final_cursor)
    return _report(repo, source, request, scan, config, judged, writer)


def mine_pull(
    *,
    engine: Engine,
    repo: str,
    source: PullSource,
    number: int,
    config: MiningConfig,
    default_branch: str = "main",
) -> Judged:
    """Mine the one merged PR ``number`` (a webhook said it merged) and store it.

    It is judged exactly as a poll judges it: the same conversion, the same revert history
    (the registry's stored PRs), the same auto-accept rule; stored PRs it reverts or follows
    up are judged again. The source's cursor does not move: a later poll lists the PR again,
    finds it stored and writes nothing.
    """
    registry = _read_registry(engine, repo, source)
    scan = source.scan_pull(number)
    reverts = RevertIndex(_history(scan, registry))
    writer = CandidateWriter(
        engine=engine,
        repo=RepoCreate(full_name=repo, default_branch=default_branch),
        repo_id=registry.repo_id,
        cursor_source=source.cursor_source,
        config=config,
        stored=dict(registry.stored),
        cursor=registry.cursor,
    )
    judged = _judge_window(scan, source, config, reverts, writer)
    _rejudge_stored(scan, registry, config, reverts, writer, source)
    writer.finish(None)
    return judged[0]


def _read_registry(engine: Engine, repo: str, source: PRSource) -> _Registry:
    with session_scope(engine) as session:
        row = find_repo(session=session, full_name=repo)
        if row is None or row.id is None:
            return _Registry(None, None, {})
        cursor = get_cursor(session=session, repo_id=row.id, source=source.cursor_source)
        stored = {row_ref(c): c for c in list_candidates(session=session, repo_id=row.id)}
    return _Registry(row.id, cursor, stored)


def _history(scan: Scan, registry: _Registry) -> list[HistoryEntry]:
    """The scan's history, then what only the registry remembers (PRs outside the scan)."""
    seen = {entry.sha for entry in scan.history if entry.sha}
    stored = (
        history_entry_from_row(row)
        for row in registry.stored.values()
        if row.merge_sha is None or row.merge_sha not in seen
    )
    return [*scan.history, *(entry for entry in stored if entry is not None)]


def _latest_per_ref(prs: Iterable[MergedPR]) -> list[MergedPR]:
    """One PR per reference, the latest merge winning (a reverted and re-merged number)."""
    latest: dict[PRRef, MergedPR] = {}
    for pr in prs:
        latest.pop(pr.ref, None)
        latest[pr.ref] = pr
    return list(latest.values())


def _judge_window(
    scan: Scan,
    source: PRSource,
    config: MiningConfig,
    reverts: RevertIndex,
    writer: CandidateWriter,
) -> list[Judged]:
    """Judge and queue the window's PRs, oldest first; on a source failure keep whole PRs."""
    judged: list[Judged] = []
    try:
        for pr in _latest_per_ref(scan.prs):
            row = writer.stored.get(pr.ref)
            pr = keep_better_description(pr, row)
            item = judge(pr, _files(pr, row, source), config, reverts, _programs(source, pr))
            writer.add(item, cursor=pr.cursor)
            judged.append(item)
    except SourceError:
        writer.flush()
        raise
    return judged


def _programs(source: PRSource, pr: MergedPR) -> UnchangedPrograms | None:
    """The source's reader of module contents for ``pr`` (formatting-only check), if it has one."""
    if isinstance(source, ProgramSource):
        return partial(source.unchanged_programs, pr)
    return None


def _files(pr: MergedPR, row: CandidatePR | None, source: PRSource) -> tuple[FileChange, ...]:
    """A merged PR's files never change: reuse the stored ones (no request on GitHub)."""
    if row is not None and row.files and row.merge_sha == pr.merge_sha:
        return files_from_row(row)
    return source.files(pr)


def _rejudge_stored(
    scan: Scan,
    registry: _Registry,
    config: MiningConfig,
    reverts: RevertIndex,
    writer: CandidateWriter,
    source: PRSource,
) -> None:
    """Judge again stored PRs outside the window that the new history may have changed."""
    in_window = {pr.ref for pr in scan.prs}
    seen_shas = {entry.sha for entry in scan.history if entry.sha}
    for ref, row in registry.stored.items():
        if ref in in_window or row.merged_at is None:
            continue
        pr = pr_from_row(row)
        follow_ups = [item.as_record() for item in reverts.follow_ups(pr)]
        if row.merge_sha in seen_shas or follow_ups != row.follow_ups:
            writer.add(judge(pr, files_from_row(row), config, reverts, _programs(source, pr)))


def _report(
    repo: str,
    source: PRSource,
    request: ScanRequest,
    scan: Scan,
    config: MiningConfig,
    judged: list[Judged],
    writer: CandidateWriter,
) -> MiningReport:
    ranked = sorted(judged, key=lambda item: item.rank_score, reverse=True)
    quota = source.quota()
    return MiningReport(
        repo=repo,
        source=source.location,
        since=request.since,
        until=request.until,
        funnel=funnel(config, scan.scanned, scan.scanned_label, judged),
        survivors=[summarise(item) for item in ranked if item.verdict.passed],
        rejects=[summarise(item) for item in judged if not item.verdict.passed],
        created=writer.created,
        updated=writer.updated,
        unchanged=writer.unchanged,
        auto_accepted=writer.auto_accepted,
        cursor_before=request.cursor,
        cursor_after=writer.cursor,
        not_modified=scan.not_modified,
        quota=QuotaReport(**asdict(quota)) if quota is not None else None,
        notes=scan.notes,
    )

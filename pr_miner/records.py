"""Between judged PRs and registry rows: build rows, read them back, tell whether one changed.

Rows store each file as ``{path, old_path, additions, deletions, binary}``, so a
stored PR can be judged again (a later revert, a new follow-up, a changed
watch file) without asking its source. A description from the GitHub API
outranks one from a squash commit, which outranks none: mining the same PR
from git after the API never loses the PR's real description.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pr_miner.selection.judge import Judged
from pr_miner.types import FileChange, HistoryEntry, MergedPR, PRRef, PRStyle
from task_registry.models import CandidatePR, CandidatePRCreate
from task_registry.types import DescriptionSource, FilterVerdict, PRKind

DESCRIPTION_RANK = {
    DescriptionSource.none: 0,
    DescriptionSource.commit: 1,
    DescriptionSource.api: 2,
}


def file_record(change: FileChange) -> dict[str, Any]:
    return {
        "path": change.path,
        "old_path": change.old_path,
        "additions": change.additions,
        "deletions": change.deletions,
        "binary": change.binary,
    }


def file_from_record(record: dict[str, Any]) -> FileChange:
    return FileChange(
        path=str(record["path"]),
        additions=int(record.get("additions", 0)),
        deletions=int(record.get("deletions", 0)),
        binary=bool(record.get("binary", False)),
        old_path=record.get("old_path"),
    )


def to_create(judged: Judged, repo_id: int) -> CandidatePRCreate:
    pr, counts, verdict = judged.pr, judged.measure, judged.verdict
    return CandidatePRCreate(
        repo_id=repo_id,
        number=pr.ref.number,
        kind=pr.ref.kind,
        title=pr.title,
        body=pr.body,
        description_source=pr.description_source,
        author=pr.author,
        merged_at=pr.merged_at,
        base_sha=pr.base_sha,
        merge_sha=pr.merge_sha,
        additions=counts.additions,
        deletions=counts.deletions,
        changed_files=counts.changed_files,
        test_lines_added=counts.test_lines_added,
        core_share=judged.core_share,
        rank_score=judged.rank_score,
        files=[file_record(change) for change in judged.files],
        labels=list(pr.labels),
        follow_ups=[follow_up.as_record() for follow_up in judged.follow_ups],
        filter_verdict=FilterVerdict.passed if verdict.passed else FilterVerdict.rejected,
        failed_filter=verdict.failed_filter.value if verdict.failed_filter else None,
        filter_reason=verdict.reason,
    )


def row_ref(row: CandidatePR) -> PRRef:
    return PRRef(PRKind(row.kind), row.number)


def pr_from_row(row: CandidatePR) -> MergedPR:
    """The merged PR a stored row describes (its merge time is required to be set)."""
    assert row.merged_at is not None, f"candidate {row.id} has no merge time"
    ref = row_ref(row)
    return MergedPR(
        ref=ref,
        title=row.title,
        body=row.body,
        description_source=DescriptionSource(row.description_source),
        merged_at=row.merged_at,
        merge_sha=row.merge_sha,
        base_sha=row.base_sha,
        author=row.author,
        labels=tuple(row.labels),
        subject=f"{row.title} ({ref})",
        style=PRStyle.stored,
    )


def files_from_row(row: CandidatePR) -> tuple[FileChange, ...]:
    return tuple(file_from_record(record) for record in row.files)


def history_entry_from_row(row: CandidatePR) -> HistoryEntry | None:
    if row.merged_at is None:
        return None
    ref = row_ref(row)
    return HistoryEntry(
        at=row.merged_at,
        subject=f"{row.title} ({ref})",
        title=row.title,
        body=row.body,
        sha=row.merge_sha,
        ref=ref,
    )


def keep_better_description(pr: MergedPR, row: CandidatePR | None) -> MergedPR:
    """``pr`` with the stored title and description when those came from a better source."""
    if row is None:
        return pr
    stored_source = DescriptionSource(row.description_source)
    changes: dict[str, Any] = {}
    if DESCRIPTION_RANK[stored_source] > DESCRIPTION_RANK[pr.description_source]:
        changes.update(title=row.title, body=row.body, description_source=stored_source)
    if not pr.labels and row.labels:
        changes["labels"] = tuple(row.labels)
    if pr.author is None and row.author:
        changes["author"] = row.author
    return replace(pr, **changes) if changes else pr


def is_unchanged(row: CandidatePR, candidate_in: CandidatePRCreate) -> bool:
    """True when storing ``candidate_in`` would leave ``row``'s mined fields as they are."""
    return all(getattr(row, name) == value for name, value in candidate_in.model_dump().items())

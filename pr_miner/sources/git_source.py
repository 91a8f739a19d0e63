"""Merged PRs from a local clone or bare mirror: the first-parent line of one branch.

One ``git log --first-parent -z --numstat`` pass over the window gives every
mainline commit with its per-file line counts (diffs against the first
parent, so merge commits count what they brought in); commits in one of the
PR styles of :mod:`pr_miner.sources.styles` become merged PRs. A second, message-only
pass reads the history around the window (later reverts, and back to the
oldest PR the registry holds) unless the first pass already covered it. The
cursor is the sha of the newest mainline commit mined; an incremental run
walks ``cursor..branch``. Bad input (not a repository, unknown branch, a
window without commits, a shallow clone that ends inside the window, a
cursor no longer on the branch) raises before anything is returned.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pr_miner.errors import CursorLost, EmptyRange, NotAGitRepository, ShallowHistory, UnknownBranch
from pr_miner.selection.layout import same_program
from pr_miner.sources.base import QuotaState, Scan, ScanRequest
from pr_miner.sources.gitlog import RawCommit, log_commits, read_blobs
from pr_miner.sources.styles import Recognised, recognise, split_message
from pr_miner.types import FileChange, HistoryEntry, MergedPR
from probewatch.git import run_git
from task_registry.types import CursorSource

REMOTE_PREFIXES = ("", "refs/heads/", "refs/remotes/origin/")


@dataclass(frozen=True, slots=True)
class _Mainline:
    """A mainline commit with what its message says, worked out while git still streams."""

    commit: RawCommit
    found: Recognised | None
    entry: HistoryEntry

    @property
    def sha(self) -> str:
        return self.commit.sha


@dataclass(frozen=True, slots=True)
class _Walk:
    """The window's mainline commits, newest first, and how they were selected."""

    commits: list[_Mainline]
    incremental: bool


def check_repository(path: Path) -> None:
    """Refuse a folder git does not read as a repository (a clone or a bare mirror)."""
    if not path.exists():
        raise NotAGitRepository(f"{path}: no such folder")
    result = run_git(path, "rev-parse", "--git-dir", check=False)
    if result.returncode != 0:
        raise NotAGitRepository(f"{path} is not a git repository (nor a bare mirror)")


class GitSource:
    """A ``PRSource`` over a local repository (work tree or bare) and one branch."""

    def __init__(self, path: Path | str, branch: str = "main") -> None:
        self.path = Path(path).expanduser()
        self.branch = branch
        self._files: dict[str, tuple[FileChange, ...]] = {}

    @property
    def cursor_source(self) -> CursorSource:
        return CursorSource.git

    @property
    def location(self) -> str:
        return f"{self.path} ({self.branch})"

    def quota(self) -> QuotaState | None:
        return None

    def files(self, pr: MergedPR) -> tuple[FileChange, ...]:
        return self._files.get(pr.merge_sha or "", ())

    def unchanged_programs(self, pr: MergedPR, paths: Sequence[str]) -> Iterator[tuple[str, bool]]:
        """For each of ``paths``: whether its module is the same program at base and merge.

        One ``git cat-file --batch`` reads every version up front (cheap); parsing, the
        costly part, happens as the caller asks. A path missing on either side (added,
        deleted) or not parsing is not unchanged.
        """
        if not pr.base_sha or not pr.merge_sha:
            yield from ((path, False) for path in paths)
            return
        names = [f"{sha}:{path}" for path in paths for sha in (pr.base_sha, pr.merge_sha)]
        blobs = read_blobs(self.path, names)
        for path in paths:
            before = blobs.get(f"{pr.base_sha}:{path}")
            after = blobs.get(f"{pr.merge_sha}:{path}")
            yield path, before is not None and after is not None and same_program(before, after)

    # --- scan ------------------------------------------------------------------------

    def scan(self, request: ScanRequest) -> Scan:
        self._check_repository()
        tip = self._resolve_branch()
        walk = self._walk(request, tip)
        self._check_shallow(walk.commits, request.since)
        prs = self._merged_prs(walk, request.cursor)
        history = self._history(walk, request, tip)
        newest = walk.commits[0].sha if walk.commits else None
        advance = walk.incremental or _cursor_reachable(walk.commits, request.cursor)
        notes = [] if advance else [_stays(request.cursor)]
        return Scan(
            prs=prs,
            history=history,
            scanned=len(walk.commits),
            scanned_label=f"commits on {self.branch}",
            final_cursor=newest if advance and newest else None,
            notes=notes,
        )

    def _check_repository(self) -> None:
        check_repository(self.path)

    def _resolve_branch(self) -> str:
        for prefix in REMOTE_PREFIXES:
            ref = f"{prefix}{self.branch}^{{commit}}"
            found = run_git(self.path, "rev-parse", "--verify", "--quiet", ref, check=False)
            if found.returncode == 0:
                return found.stdout.strip()
        known = run_git(self.path, "for-each-ref", "--format=%(refname:short)", "refs/heads")
        names = ", ".join(known.stdout.split()[:10]) or "none"
        raise UnknownBranch(f"{self.path} has no branch {self.branch!r} (branches: {names})")

    def _walk(self, request: ScanRequest, tip: str) -> _Walk:
        if request.since is None:
            if request.cursor is None:
                raise EmptyRange("no --since and no cursor: say where mining starts")
            self._check_cursor(request.cursor, tip)
            revisions = [f"{request.cursor}..{tip}"]
            return _Walk(self._read(revisions, numstat=True), incremental=True)
        until = request.until
        revisions = [f"--since=@{_stamp(request.since)}", tip]
        if until is not None:
            revisions.insert(1, f"--until=@{_stamp(until) - 1}")  # git's --until is inclusive
        commits = [
            seen
            for seen in self._read(revisions, numstat=True)
            if _in_window(seen.commit.committed_at, request.since, until)
        ]
        if not commits:
            raise EmptyRange(self._empty_message(request.since, until, tip))
        return _Walk(commits, incremental=False)

    def _read(self, revisions: list[str], *, numstat: bool) -> list[_Mainline]:
        return [_mainline(commit) for commit in log_commits(self.path, revisions, numstat=numstat)]

    def _empty_message(self, since: datetime, until: datetime | None, tip: str) -> str:
        newest = run_git(self.path, "log", "-1", "--format=%cI", tip).stdout.strip()
        end = until.date().isoformat() if until else "now"
        return (
            f"no commits on {self.branch} between {since.date().isoformat()} and {end} "
            f"in {self.path} (newest commit: {newest})"
        )

    def _check_cursor(self, cursor: str, tip: str) -> None:
        result = run_git(self.path, "merge-base", "--is-ancestor", cursor, tip, check=False)
        if result.returncode != 0:
            raise CursorLost(
                f"the stored cursor {cursor[:12]} is not on {self.branch} in {self.path} "
                "(history rewritten, or another clone?): run again with --since"
            )

    def _check_shallow(self, commits: list[_Mainline], since: datetime | None) -> None:
        shallow = self._shallow_commits()
        if not shallow or not commits:
            return
        oldest = commits[-1].commit
        if oldest.sha in shallow and (since is None or oldest.committed_at > since):
            raise ShallowHistory(
                f"{self.path} is a shallow clone whose history ends at {oldest.sha[:12]} "
                f"({oldest.committed_at.date().isoformat()}), inside the window: "
                "run `git fetch --unshallow` (or --shallow-since) first"
            )

    def _shallow_commits(self) -> set[str]:
        relative = run_git(self.path, "rev-parse", "--git-path", "shallow").stdout.strip()
        shallow_file = Path(relative) if Path(relative).is_absolute() else self.path / relative
        if not shallow_file.exists():
            return set()
        return set(shallow_file.read_text().split())

    # --- PRs and history ---------------------------------------------------------------

    def _merged_prs(self, walk: _Walk, cursor: str | None) -> list[MergedPR]:
        """Recognised PRs, oldest first; only those after the stored cursor move it."""
        reachable = walk.incremental or _cursor_reachable(walk.commits, cursor)
        past_cursor = walk.incremental or cursor is None
        prs: list[MergedPR] = []
        for seen in reversed(walk.commits):
            if seen.found is not None:
                self._files[seen.sha] = seen.commit.files
                moves = reachable and past_cursor
                prs.append(_merged_pr(seen, seen.found, seen.sha if moves else None))
            past_cursor = past_cursor or seen.sha == cursor
        return prs

    def _history(self, walk: _Walk, request: ScanRequest, tip: str) -> list[HistoryEntry]:
        """Mainline commits, oldest first, from the older of window start and oldest stored PR
        to the tip."""
        covered = _covered_from(walk, request)
        start = _earliest(request.history_since, covered)
        reaches_tip = not walk.commits or walk.commits[0].sha == tip
        if start is None or (reaches_tip and covered is not None and start >= covered):
            # Nothing to read beyond what the numstat pass already read.
            return [seen.entry for seen in reversed(walk.commits)]
        commits = self._read([f"--since=@{_stamp(start)}", tip], numstat=False)
        return [seen.entry for seen in reversed(commits)]


def _mainline(commit: RawCommit) -> _Mainline:
    found = recognise(commit.message)
    subject, body = split_message(commit.message)
    entry = HistoryEntry(
        at=commit.committed_at,
        subject=subject,
        title=found.title if found else subject,
        body=body,
        sha=commit.sha,
        ref=found.ref if found else None,
    )
    return _Mainline(commit, found, entry)


def _merged_pr(seen: _Mainline, found: Recognised, cursor: str | None) -> MergedPR:
    commit = seen.commit
    return MergedPR(
        ref=found.ref,
        title=found.title,
        body=found.description,
        description_source=found.description_source,
        merged_at=commit.committed_at,
        merge_sha=commit.sha,
        base_sha=commit.parents[0] if commit.parents else None,
        author=commit.author or None,
        subject=seen.entry.subject,
        style=found.style,
        cursor=cursor,
    )


def _covered_from(walk: _Walk, request: ScanRequest) -> datetime | None:
    """Start of the span the numstat pass read in full (None: it read nothing)."""
    if not walk.incremental:
        return request.since
    return walk.commits[-1].commit.committed_at if walk.commits else None


def _stays(cursor: str | None) -> str:
    return (
        f"cursor left at {(cursor or '')[:12]}: this window does not reach it, so moving it "
        "would skip the commits in between"
    )


def _cursor_reachable(commits: list[_Mainline], cursor: str | None) -> bool:
    """True when the window is contiguous with the stored cursor (or there is none yet)."""
    return cursor is None or any(commit.sha == cursor for commit in commits)


def _in_window(moment: datetime, since: datetime, until: datetime | None) -> bool:
    return moment >= since and (until is None or moment < until)


def _earliest(*moments: datetime | None) -> datetime | None:
    known: Iterable[datetime] = (moment for moment in moments if moment is not None)
    return min(known, default=None)


def _stamp(moment: datetime) -> int:
    return int(moment.astimezone(UTC).timestamp())

"""Shared helpers of the real-history benchmarks: qualifying PRs of one month of a mirror.

A repository whose default branch is a line of squash commits (verl) has one
commit per merged PR, so a PR's diff is ``commit^..commit``. A PR qualifies
when it changes at least ``min_lines`` lines (binary files not counted),
touches at least one test file and at least one non-test Python file.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from probewatch.git import run_git
from probewatch.paths import PathMatcher

VERL_TEST_GLOBS = ("tests/**", "**/test_*.py", "**/*_test.py")


@dataclass(frozen=True)
class HistoricalPR:
    sha: str
    base: str
    subject: str
    changed_lines: int
    test_files: int
    python_files: int


def _numstat(repo: Path, base: str, head: str) -> list[tuple[int, int, str]]:
    out = run_git(repo, "diff", "--numstat", "--no-renames", base, head).stdout
    rows = []
    for line in out.splitlines():
        added, removed, path = line.split("\t", 2)
        if added != "-":
            rows.append((int(added), int(removed), path))
        else:
            rows.append((0, 0, path))
    return rows


def month_commits(repo: Path, month: str) -> list[tuple[str, str, str]]:
    """(sha, parent, subject) of the single-parent commits of ``YYYY-MM`` on HEAD."""
    year, mon = (int(x) for x in month.split("-"))
    until = f"{year + mon // 12:04d}-{mon % 12 + 1:02d}-01"
    out = run_git(
        repo,
        "log",
        "--first-parent",
        f"--since={month}-01T00:00:00",
        f"--until={until}T00:00:00",
        "--format=%H%x00%P%x00%s",
        "HEAD",
    ).stdout
    commits = []
    for line in out.splitlines():
        sha, parents, subject = line.split("\x00", 2)
        if len(parents.split()) == 1:
            commits.append((sha, parents, subject))
    return commits


def qualifying_prs(
    repo: Path, month: str, *, min_lines: int, test_globs: Sequence[str] = VERL_TEST_GLOBS
) -> list[HistoricalPR]:
    prs = []
    is_test = PathMatcher(test_globs).matches
    for sha, base, subject in month_commits(repo, month):
        rows = _numstat(repo, base, sha)
        lines = sum(a + r for a, r, _ in rows)
        tests = [p for _, _, p in rows if is_test(p)]
        python = [p for _, _, p in rows if p.endswith(".py") and not is_test(p)]
        if lines >= min_lines and tests and python:
            prs.append(HistoricalPR(sha, base, subject, lines, len(tests), len(python)))
    return prs


@contextlib.contextmanager
def scratch_worktree(repo: Path, commit: str) -> Iterator[Path]:
    """A detached work tree of ``repo`` at ``commit``, removed (and pruned) afterwards."""
    parent = Path(tempfile.mkdtemp(prefix="probewatch-bench-"))
    tree = parent / "tree"
    try:
        run_git(repo, "worktree", "add", "--detach", "--quiet", str(tree), commit)
        yield tree
    finally:
        with contextlib.suppress(Exception):
            run_git(repo, "worktree", "remove", "--force", str(tree))
        shutil.rmtree(parent, ignore_errors=True)
        with contextlib.suppress(Exception):
            run_git(repo, "worktree", "prune")


def reset_worktree(tree: Path, commit: str) -> None:
    run_git(tree, "checkout", "--quiet", "--force", "--detach", commit)
    run_git(tree, "clean", "-fdq")

"""Shared helpers of the real-history benchmarks: qualifying PRs of one month of a mirror.

A repository whose default branch is a line of squash commits (verl) has one
commit per merged PR, so a PR's diff is ``commit^..commit``. A PR qualifies
when it changes at least ``min_lines`` lines (binary files not counted),
touches at least one test file and at least one non-test Python file. Test
files are verl's as the shipped example watch file configures them, so the
benchmarks split a PR as the application would.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from bot.watchfile import example_watch_file, load_watch_file
from probewatch.git import run_git
from probewatch.testfiles import TestFiles

VERL = "volcengine/verl"


@cache
def verl_test_globs() -> tuple[str, ...]:
    """verl's ``tests.globs`` from the example watch file."""
    return tuple(load_watch_file(example_watch_file()).get(VERL).tests.globs)


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
    repo: Path, month: str, *, min_lines: int, test_globs: Sequence[str] | None = None
) -> list[HistoricalPR]:
    """The month's PRs that qualify; ``test_globs`` default to verl's."""
    prs = []
    test_files = TestFiles(verl_test_globs() if test_globs is None else test_globs)
    for sha, base, subject in month_commits(repo, month):
        rows = _numstat(repo, base, sha)
        lines = sum(a + r for a, r, _ in rows)
        others, tests = test_files.split(p for _, _, p in rows)
        python = [p for p in others if p.endswith(".py")]
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

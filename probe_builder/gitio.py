"""Reading a repository at a commit through the git command line (``probewatch.git``).

probe_builder reads the pre- and post-change trees of a PR without checking
anything out: file text via ``git cat-file``, diffs via ``git diff``. A
:class:`TreeReader` is the one thing the analysers need, so tests and callers
can also hand in files that live in memory (probes a curator wrote).
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from probewatch.git import ENCODING_ERRORS, run_git


def diff_commits(repo: Path, base: str, head: str) -> str:
    """The PR's diff ``base..head``: renames as delete plus add, binary hunks included."""
    return run_git(
        repo, "diff", "--no-color", "--no-ext-diff", "--no-renames", "--binary", base, head
    ).stdout


class TreeReader(Protocol):
    """Text of files in one tree; ``None`` for a path that is not there."""

    def read(self, path: str) -> str | None: ...


@dataclass
class GitTree:
    """The tree of ``commit`` in ``repo``, read lazily and cached."""

    repo: Path
    commit: str
    _cache: dict[str, str | None] = field(default_factory=dict, repr=False)

    def read(self, path: str) -> str | None:
        if path not in self._cache:
            self._cache[path] = self._load(path)
        return self._cache[path]

    def _load(self, path: str) -> str | None:
        proc = subprocess.run(
            ["git", "-C", str(self.repo), "cat-file", "blob", f"{self.commit}:{path}"],
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0:
            return None
        return proc.stdout.decode("utf-8", ENCODING_ERRORS)


@dataclass(frozen=True)
class MemoryTree:
    """Files held in memory (probe files, test fixtures), optionally over another tree."""

    files: Mapping[str, str]
    below: TreeReader | None = None

    def read(self, path: str) -> str | None:
        if path in self.files:
            return self.files[path]
        return self.below.read(path) if self.below is not None else None

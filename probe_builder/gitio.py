"""Reading a repository at a commit through the git command line (``probewatch.git``).

probe_builder reads the pre- and post-change trees of a PR without checking
anything out: file text via ``git cat-file``, diffs via ``git diff``. A
:class:`TreeReader` is the one thing the analysers need, so tests and callers
can also hand in files that live in memory (probes a curator wrote).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from probewatch.git import ENCODING_ERRORS, run_git


def diff_commits(repo: Path, base: str, head: str) -> str:
    """The PR's diff ``base..head``: renames as delete plus add, binary hunks included."""
    return run_git(
        repo, "diff", "--no-color", "--no-ext-diff", "--no-renames", "--binary", base, head
    ).stdout


class TreeReader(Protocol):
    """Text of files in one tree; ``None`` for a path that is not there."""

    def read(self, path: str) -> str | None: ...


@runtime_checkable
class SearchableTree(Protocol):
    """A tree that can say which of its files use a name (as ``git grep -w`` does)."""

    def files_naming(self, names: Collection[str], suffix: str) -> dict[str, set[str]]: ...


def files_naming(
    tree: TreeReader, names: Collection[str], suffix: str = ".py"
) -> dict[str, set[str]]:
    """For each of ``names`` that a file of ``tree`` ending in ``suffix`` uses as a whole
    word, those files; nothing when the tree cannot be searched (it is read path by path)."""
    if not names or not isinstance(tree, SearchableTree):
        return {}
    return tree.files_naming(names, suffix)


@dataclass
class GitTree:
    """The tree of ``commit`` in ``repo``, read lazily and cached.

    The tree's file names are listed once, at the first read: a path that is not there
    (most of what resolving an import tries) is answered without starting git.
    """

    repo: Path
    commit: str
    _cache: dict[str, str | None] = field(default_factory=dict, repr=False)
    _paths: frozenset[str] | None = field(default=None, repr=False)
    _listed: bool = field(default=False, repr=False)

    def read(self, path: str) -> str | None:
        if path not in self._cache:
            paths = self._listing()
            present = paths is None or path in paths
            self._cache[path] = self._load(path) if present else None
        return self._cache[path]

    def files_naming(self, names: Collection[str], suffix: str) -> dict[str, set[str]]:
        patterns = [arg for name in sorted(names) for arg in ("-e", name)]
        files = ("--", f"*{suffix}")
        proc = run_git(
            self.repo, "grep", "-o", "-w", "-I", "-F", *patterns, self.commit, *files, check=False
        )
        found: dict[str, set[str]] = {}
        for line in proc.stdout.splitlines():  # <commit>:<path>:<name>, once a use
            path, _, name = line.removeprefix(f"{self.commit}:").rpartition(":")
            found.setdefault(name, set()).add(path)
        return found

    def _listing(self) -> frozenset[str] | None:
        """Every file name of the tree; None when git cannot list it (each read then asks)."""
        if not self._listed:
            self._listed = True
            proc = subprocess.run(
                ["git", "-C", str(self.repo), "ls-tree", "-r", "-z", "--name-only", self.commit],
                capture_output=True,
                check=False,
            )
            if proc.returncode == 0:
                names = proc.stdout.decode("utf-8", ENCODING_ERRORS).split("\0")
                self._paths = frozenset(n for n in names if n)
        return self._paths

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

    def files_naming(self, names: Collection[str], suffix: str) -> dict[str, set[str]]:
        word = re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b")
        found = files_naming(self.below, names, suffix) if self.below is not None else {}
        for path, text in self.files.items():
            for name in {m.group(0) for m in word.finditer(text)} if path.endswith(suffix) else ():
                found.setdefault(name, set()).add(path)
        return found

"""Small real git repositories for the probe_builder tests: a base commit and a PR commit."""

from __future__ import annotations

import subprocess
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from probe_builder.gitio import GitTree, diff_commits
from probe_builder.material.contract import extract_contract
from probe_builder.material.split import PatchSplit, split_patch
from probe_builder.promises.linking import CodeUnderTest, code_under_test

TEST_GLOBS = ("tests/**", "**/test_*.py", "**/*_test.py")


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, f"git {args}: {proc.stderr}"
    return proc.stdout


def _write(repo: Path, files: Mapping[str, str | None]) -> None:
    for path, text in files.items():
        target = repo / path
        if text is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


@dataclass(frozen=True)
class FixturePR:
    repo: Path
    base: str
    head: str
    diff: str
    split: PatchSplit

    @property
    def base_tree(self) -> GitTree:
        return GitTree(self.repo, self.base)

    @property
    def head_tree(self) -> GitTree:
        return GitTree(self.repo, self.head)

    def code_under_test(self) -> CodeUnderTest:
        """What the verdicts read of this PR: its test patch's profile, its changed symbols
        and flags, its launch scripts."""
        head = self.head_tree
        contract = extract_contract(
            self.split.golden_files, base=self.base_tree, head=head, sources={}
        )
        return code_under_test(self.split, head=head, contract=contract)

    def apply_check(self, patch: str) -> None:
        """``git apply --check`` of ``patch`` on a fresh checkout of the base."""
        worktree = self.repo.parent / f"check-{abs(hash(patch))}"
        git(self.repo, "worktree", "add", "--detach", "--quiet", str(worktree), self.base)
        try:
            git(worktree, "apply", "--check", stdin=patch)
        finally:
            git(self.repo, "worktree", "remove", "--force", str(worktree))

    def apply(self, patch: str, where: Path) -> Path:
        """A work tree of the base at ``where`` with ``patch`` applied."""
        git(self.repo, "worktree", "add", "--detach", "--quiet", str(where), self.base)
        git(where, "apply", stdin=patch)
        return where


def make_pr(
    tmp_path: Path, base: Mapping[str, str], change: Mapping[str, str | None], name: str = "repo"
) -> FixturePR:
    """A repository with ``base`` committed, then ``change`` (None deletes) on top."""
    repo = tmp_path / name
    repo.mkdir(parents=True)
    git(repo, "init", "--quiet", "--initial-branch=main")
    _write(repo, base)
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "base")
    base_sha = git(repo, "rev-parse", "HEAD").strip()
    _write(repo, change)
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "pr")
    head_sha = git(repo, "rev-parse", "HEAD").strip()
    diff = diff_commits(repo, base_sha, head_sha)
    return FixturePR(repo, base_sha, head_sha, diff, split_patch(diff, test_globs=TEST_GLOBS))


# A small project and a PR that adds a counting cache and changes gradient averaging;
# several test modules build their fixture repository from it.
CACHE_BASE = {
    "pkg/__init__.py": "",
    "pkg/cache.py": '''
        """Caches."""


        class Store:
            def __init__(self):
                self.data = {}

            def get(self, key):
                return self.data.get(key)
        ''',
    "pkg/grads.py": """
        def average(grads, world_size):
            return [g for g in grads]


        def untouched(x):
            return x
        """,
    "tests/test_store.py": """
        from pkg.cache import Store


        def test_store_empty():
            assert Store().get("a") is None
        """,
}
CACHE_CHANGE = {
    "pkg/cache.py": '''
        """Caches."""
        import functools
        import logging

        logger = logging.getLogger(__name__)
        DEFAULT_CAPACITY = 64


        class Store:
            def __init__(self):
                self.data = {}

            def get(self, key):
                return self.data.get(key)


        class KVCache:
            """A cache that counts hits."""

            capacity: int = DEFAULT_CAPACITY

            def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
                self.capacity = capacity
                self._entries = {}
                self.hits = 0

            def lookup(self, key: str, compute=None):
                """Return the cached value, computing it on a miss."""
                logger.debug("lookup %s", key)
                if key in self._entries:
                    self.hits += 1
                    return self._entries[key]
                value = compute(key) if compute is not None else None
                self._entries[key] = value
                return value

            def reset(self) -> None:
                self._entries.clear()
                self.hits = 0

            def __repr__(self) -> str:
                return f"KVCache({len(self._entries)})"


        @functools.lru_cache(maxsize=None)
        def scale_for(world_size: int) -> float:
            return 1.0 / world_size
        ''',
    "pkg/grads.py": """
        def average(grads, world_size, *, inplace: bool = False):
            total = sum(grads)
            return total / world_size


        def untouched(x):
            return x
        """,
    "tests/test_cache.py": """
        from pkg.cache import KVCache
        from pkg.grads import average


        def test_lookup_counts_hits():
            cache = KVCache(capacity=4)
            assert cache.lookup("a", compute=str.upper) == "A"
            assert cache.lookup("a") == "A"
            assert cache.hits == 1


        def test_average():
            assert average([2.0, 6.0], 2) == 4.0
        """,
}


def cache_pr(tmp_path: Path) -> FixturePR:
    return make_pr(tmp_path, CACHE_BASE, CACHE_CHANGE)

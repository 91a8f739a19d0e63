"""What the verdict bench reads at each labelled commit, read in parallel and kept between runs.

Reading a commit (its diff split into golden and test patches, the test patch profiled,
the contract and the code under test derived: :func:`code_at`) is most of the verdict
bench's time: over a quarter of an hour for the whole set one commit at a time, where
judging what was read takes seconds. ``--jobs N`` reads N commits at once; ``--cache
DIR`` keeps each reading in DIR, so that a change to the verdict rules alone is measured
again in seconds.

A kept reading is reused only while the source of every module that reads it
(:data:`READING_MODULES`) is byte for byte what wrote it, under the same Python and test
globs: any change to the profile, the linking or the patch split reads again. A file in
DIR that cannot be loaded (cut short, or written by another version) is read again and
replaced; files are written whole or not at all. Only this bench writes DIR: loading a
reading runs what it holds, as loading any pickle does.
"""

from __future__ import annotations

import hashlib
import importlib.util
import pickle
import sys
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from probe_builder.gitio import GitTree, diff_commits
from probe_builder.material.contract import extract_contract, sources_of_test_patch
from probe_builder.material.split import split_patch
from probe_builder.promises.linking import CodeUnderTest, code_under_test
from probewatch.disk import write_atomic
from probewatch.testfiles import TestFiles

# Both repositories' tests.globs in the watch file (bot/watch.example.toml).
TEST_GLOBS = ("tests/**", "**/test_*.py", "**/*_test.py")

# Every project module importing the readers loads (tests/bench/test_bench_readings.py
# holds the list to what a fresh interpreter loads): their source is a reading's version.
READING_MODULES = (
    "probe_builder",
    "probe_builder.gitio",
    "probe_builder.material",
    "probe_builder.material.config_flags",
    "probe_builder.material.contract",
    "probe_builder.material.diffs",
    "probe_builder.material.pysource",
    "probe_builder.material.signatures",
    "probe_builder.material.split",
    "probe_builder.promises",
    "probe_builder.promises.assertions",
    "probe_builder.promises.launches",
    "probe_builder.promises.linking",
    "probe_builder.promises.settings",
    "probe_builder.promises.shared_helpers",
    "probewatch",
    "probewatch.disk",
    "probewatch.errors",
    "probewatch.git",
    "probewatch.paths",
    "probewatch.syntax",
    "probewatch.testfiles",
)
CACHE_UNUSABLE = (
    "--cache {path}: cannot keep readings there ({reason}); pass a folder you can write"
)


def code_at(repo: Path, commit: str, test_globs: Sequence[str] = TEST_GLOBS) -> CodeUnderTest:
    """What build_material derives for verdicts, for ``commit`` against its first parent."""
    base_sha = f"{commit}^1"
    base, head = GitTree(repo, base_sha), GitTree(repo, commit)
    split = split_patch(diff_commits(repo, base_sha, commit), test_globs=test_globs)
    sources = sources_of_test_patch(split.test_files, head=head)
    contract = extract_contract(split.golden_files, base=base, head=head, sources=sources)
    return code_under_test(split, head=head, contract=contract, test_files=TestFiles(test_globs))


def readers_version() -> str:
    """A digest of the readers' source and the Python that runs them."""
    digest = hashlib.sha256(f"{sys.version_info[:2]}\n".encode())
    for name in READING_MODULES:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        digest.update(name.encode() + b"\0")
        digest.update(Path(origin).read_bytes() if origin else b"")
    return digest.hexdigest()[:16]


def _short_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


class CacheError(ValueError):
    """A cache folder the bench cannot keep readings in."""


@dataclass(frozen=True)
class ReadingCache:
    """Readings kept in ``folder``: one file per mirror, commit, test globs and readers'
    version, and only the newest version of each (an older one is removed when a newer
    one is written)."""

    folder: Path

    def __post_init__(self) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=self.folder):
                pass  # a file can be written there
        except OSError as error:
            reason = error.strerror or type(error).__name__
            raise CacheError(CACHE_UNUSABLE.format(path=self.folder, reason=reason)) from error

    @cached_property
    def version(self) -> str:
        return readers_version()

    def _stem(self, repo: Path, commit: str, test_globs: Sequence[str]) -> str:
        where, globs = _short_digest(str(repo.resolve())), _short_digest("\n".join(test_globs))
        return f"{where}-{commit}-{globs}"

    def path(self, repo: Path, commit: str, test_globs: Sequence[str] = TEST_GLOBS) -> Path:
        return self.folder / f"{self._stem(repo, commit, test_globs)}-{self.version}.pickle"

    def get(
        self, repo: Path, commit: str, test_globs: Sequence[str] = TEST_GLOBS
    ) -> CodeUnderTest | None:
        """The kept reading, or None when there is none or it cannot be loaded."""
        try:
            found = pickle.loads(self.path(repo, commit, test_globs).read_bytes())
        except Exception:  # none kept, or cut short, or not a reading: read it again
            return None
        return found if isinstance(found, CodeUnderTest) else None

    def put(
        self,
        repo: Path,
        commit: str,
        code: CodeUnderTest,
        test_globs: Sequence[str] = TEST_GLOBS,
    ) -> None:
        """Keep ``code``: written to a file beside it, then moved into place whole."""
        target = self.path(repo, commit, test_globs)
        write_atomic(target, pickle.dumps(code, protocol=pickle.HIGHEST_PROTOCOL))
        for older in self.folder.glob(f"{self._stem(repo, commit, test_globs)}-*.pickle"):
            if older != target:
                older.unlink(missing_ok=True)


def _read(job: tuple[Path, str, tuple[str, ...]]) -> CodeUnderTest:
    repo, commit, test_globs = job
    return code_at(repo, commit, test_globs)


def read_commits(
    commits: Sequence[tuple[Path, str]],
    test_globs: Sequence[str] = TEST_GLOBS,
    *,
    jobs: int = 1,
    cache: ReadingCache | None = None,
) -> Iterator[tuple[tuple[Path, str], CodeUnderTest]]:
    """Each distinct (mirror, commit) with its reading, as it comes: those ``cache`` holds
    first, then the others, read ``jobs`` at a time and kept in ``cache`` as each arrives
    (a run cut short keeps what it read). A caller that judges each reading as it comes
    holds one at a time, not the whole set."""
    globs = tuple(test_globs)
    missing: list[tuple[Path, str]] = []
    for key in dict.fromkeys(commits):
        kept = cache.get(*key, globs) if cache is not None else None
        if kept is None:
            missing.append(key)
        else:
            yield key, kept
    for key, code in zip(missing, _read_all(missing, globs, jobs), strict=True):
        if cache is not None:
            cache.put(*key, code, globs)
        yield key, code


def _read_all(
    commits: Sequence[tuple[Path, str]], test_globs: tuple[str, ...], jobs: int
) -> Iterator[CodeUnderTest]:
    work = [(repo, commit, test_globs) for repo, commit in commits]
    if jobs < 2 or len(work) < 2:
        yield from map(_read, work)
        return
    with ProcessPoolExecutor(max_workers=min(jobs, len(work))) as pool:
        yield from pool.map(_read, work)

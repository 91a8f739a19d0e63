"""Patch split: a PR's diff into the golden patch (non-test files) and the test patch.

Which file is a test is the repository's convention (the watch file's
``tests.globs``), decided by :class:`probewatch.testfiles.TestFiles` as the
miner, the runners and grading decide it, so a file the split calls code is
code an agent may change; a file counts by its new path, or its old path when
the PR deletes it. Each file's diff text is kept verbatim, so golden + test
re-joined is the PR's diff but for the submodule pointers it moves (left out, named).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from probe_builder.material.diffs import FileDiff, join_diffs, parse_diff
from probewatch.testfiles import TestFiles


@dataclass(frozen=True)
class PatchSplit:
    golden: str
    test: str
    golden_files: tuple[FileDiff, ...]
    test_files: tuple[FileDiff, ...]
    submodules: tuple[str, ...] = ()  # submodule pointers the PR moves: left out of both

    @property
    def golden_paths(self) -> tuple[str, ...]:
        return tuple(f.path for f in self.golden_files)

    @property
    def test_paths(self) -> tuple[str, ...]:
        return tuple(f.path for f in self.test_files)

    @property
    def golden_python(self) -> tuple[FileDiff, ...]:
        return tuple(f for f in self.golden_files if f.is_python and not f.is_deleted)

    @property
    def test_python(self) -> tuple[FileDiff, ...]:
        return tuple(f for f in self.test_files if f.is_python and not f.is_deleted)


def split_files(
    files: Sequence[FileDiff], *, test_globs: Sequence[str]
) -> tuple[tuple[FileDiff, ...], tuple[FileDiff, ...]]:
    """(golden, test) file diffs, order kept; empty ``test_globs``: the default list."""
    test_files = TestFiles(test_globs)
    tests = tuple(f for f in files if f.path in test_files)
    golden = tuple(f for f in files if f.path not in test_files)
    return golden, tests


def split_patch(diff: str, *, test_globs: Sequence[str]) -> PatchSplit:
    """Split a PR's ``git diff`` with the repository's test globs. A submodule's pointer is
    left out of both: a run's tree has no submodule checkout to move, and a patch that
    moves one would be refused."""
    files = parse_diff(diff)
    submodules = tuple(f.path for f in files if f.is_submodule)
    golden, tests = split_files([f for f in files if not f.is_submodule], test_globs=test_globs)
    return PatchSplit(join_diffs(golden), join_diffs(tests), golden, tests, submodules)

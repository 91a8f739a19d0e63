"""Count a PR's changed lines by kind of file under a repository's globs.

Excluded files (lock files, golden values) are dropped before anything is
counted, so they neither make a PR big nor count as its tests. A file is a
test when a test glob matches it; every other counted file is checked
against the code, core and docs/CI globs. Binary files count zero lines. With
no core paths configured, all non-test code counts as core.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pr_miner.config import MiningConfig
from pr_miner.types import FileChange


@dataclass(frozen=True, slots=True)
class Measure:
    additions: int
    deletions: int
    changed_files: int
    counted_files: int
    counted_lines: int
    excluded_files: int
    excluded_lines: int
    test_lines_added: int
    code_lines: int
    core_lines: int
    non_test_files: int
    docs_ci_files: int
    required_files: int

    @property
    def core_share(self) -> float:
        return self.core_lines / self.counted_lines if self.counted_lines else 0.0

    @property
    def docs_ci_only(self) -> bool:
        return self.non_test_files > 0 and self.docs_ci_files == self.non_test_files


class _Tally:
    """Running sums while walking a PR's files once."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(Measure.__dataclass_fields__, 0)

    def add(self, **amounts: int) -> None:
        for key, amount in amounts.items():
            self.counts[key] += amount


def measure(files: Sequence[FileChange], config: MiningConfig) -> Measure:
    """The line counts of ``files`` that filters and ranking read."""
    tally = _Tally()
    for change in files:
        tally.add(additions=_added(change), deletions=0 if change.binary else change.deletions)
        kind = config.classify(change.path)
        if kind.excluded:
            tally.add(excluded_files=1, excluded_lines=change.lines)
            continue
        tally.add(counted_files=1, counted_lines=change.lines, required_files=int(kind.required))
        if kind.test:
            tally.add(test_lines_added=_added(change))
            continue
        tally.add(non_test_files=1, docs_ci_files=int(kind.docs_ci))
        tally.add(code_lines=change.lines * kind.code, core_lines=change.lines * kind.core)
    return Measure(changed_files=len(files), **_without(tally.counts, "changed_files"))


def _added(change: FileChange) -> int:
    return 0 if change.binary else change.additions


def _without(counts: dict[str, int], key: str) -> dict[str, int]:
    return {name: value for name, value in counts.items() if name != key}

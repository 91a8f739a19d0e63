"""The disk a run fills: bytes added under its own writable folders, and the host's free space.

No per-process limit bounds the disk: ``RLIMIT_FSIZE`` caps one file, and a test that
writes a few large files per case (model checkpoints into TMPDIR) fills the host however
small each file is. Quotas need privileges and a filesystem that has them, and a
size-capped tmpfs would charge the files to memory. So the harness watches instead:
while the run's command lives, :class:`DiskWatch` sums the space its folders take (the
work tree, scratch, TMPDIR, HOME, an agent's layer; not the operator's shared folders)
and the host's free space, and says when either crosses its line; the harness then stops
the run and the note it writes becomes the fault (runners/testrun/faults.py). Checks are
spaced by how long the last walk took, so a large tree costs a few percent of one core
at most.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path

from probewatch.disk import file_stats
from runners.sandbox.limits import LIMIT_NOTE, breach_note, describe_bytes

CHECK_EVERY_S = 2.0  # the shortest gap between two walks
WALK_SHARE = 0.05  # a walk that took t seconds is not repeated before t / WALK_SHARE
FLOOR_NOTE = f"{LIMIT_NOTE}the host's free disk space fell below "


def used_bytes(folders: Iterable[Path]) -> int:
    """Space the files under ``folders`` take on disk (allocated blocks; a sparse file counts
    what it really holds). Each file is counted once, however many folders or links show it."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for info in file_stats(_outermost(folders)):
        if (info.st_dev, info.st_ino) not in seen:
            seen.add((info.st_dev, info.st_ino))
            total += info.st_blocks * 512
    return total


def free_bytes(folder: Path) -> int | None:
    """Space an unprivileged writer may still use on ``folder``'s filesystem."""
    try:
        stats = os.statvfs(folder)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize


def floor_note(floor: int) -> str:
    """The log line saying the host's disk fell below its free-space floor during the run."""
    return f"{FLOOR_NOTE}{describe_bytes(floor)}: the run was stopped"


class DiskWatch:
    """Growth of ``folders`` since the watch began, against ``limit`` (None: no limit), and
    the host's free space against ``floor`` (None: not watched)."""

    def __init__(self, folders: Iterable[Path], *, limit: int | None, floor: int | None) -> None:
        self.folders = tuple(folders)  # made by the run, some of them: resolved at each walk
        self.limit = limit
        self.floor = floor
        started = time.monotonic()
        self._baseline = used_bytes(self.folders) if limit is not None else 0
        self._next = started + self._gap(time.monotonic() - started)

    def breach(self, *, now: float | None = None) -> str | None:
        """The note to log when the run has crossed a line, else None. Cheap between checks."""
        now = time.monotonic() if now is None else now
        if now < self._next:
            return None
        if self.floor is not None:
            free = [f for f in map(free_bytes, _outermost(self.folders)) if f is not None]
            if free and min(free) < self.floor:
                return floor_note(self.floor)
        if self.limit is not None:
            walked = time.monotonic()
            grown = used_bytes(self.folders) - self._baseline
            self._next = now + self._gap(time.monotonic() - walked)
            if grown > self.limit:
                return breach_note("disk", describe_bytes(self.limit))
        else:
            self._next = now + CHECK_EVERY_S
        return None

    @staticmethod
    def _gap(walk_s: float) -> float:
        return max(CHECK_EVERY_S, walk_s / WALK_SHARE)


def _outermost(folders: Iterable[Path]) -> list[Path]:
    """Existing folders, none inside another of them."""
    real = sorted({Path(os.path.realpath(f)) for f in folders if Path(f).exists()})
    return [f for f in real if not any(p in real for p in f.parents)]

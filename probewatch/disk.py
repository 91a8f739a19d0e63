"""The files under a set of folders, walked once: the one walker behind every measure of
disk use (the space a run fills, the storage environments take).

Links are not followed and not counted: a link's target is counted where it lies, if it
lies under one of the folders. A folder removed or unreadable while it is walked is
passed over; what cannot be read cannot be measured, and the caller measures again.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path


def file_stats(roots: Iterable[Path]) -> Iterator[os.stat_result]:
    """The ``lstat`` of every regular file under ``roots``, once per path."""
    pending = [str(root) for root in roots]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                    continue
                yield entry.stat(follow_symlinks=False)
            except OSError:
                continue

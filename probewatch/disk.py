"""The files under a set of folders, walked once: the one walker behind every measure of
disk use (the space a run fills, the storage environments take); and a file replaced
whole, the one way a file another process may read at any moment is written.

Links are not followed and not counted: a link's target is counted where it lies, if it
lies under one of the folders. A folder removed or unreadable while it is walked is
passed over; what cannot be read cannot be measured, and the caller measures again.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
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


def write_atomic(path: Path, data: str | bytes, *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` (text as UTF-8) whole: written to a temporary file
    beside it, then moved into place, so a reader sees the old content or the new one and
    never a part. Whatever stops the write (a full disk, an interrupt) removes the
    temporary file and leaves ``path`` as it was."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise

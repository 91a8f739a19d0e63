"""Folders and files only this user may open: the registry, the mirrors (they hold the
future of every task), the environments and the folders runs work in.

They are made mode 0700 (folders) and 0600 (files) whatever the process's umask, and a
folder of probewatch's own that an older version left open is closed when it is next
used, so no other user on the host can read them. A folder made as a missing parent is
made private too; an existing parent (``/srv``), another user's folder and a sticky one
(``/tmp``) are never touched.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

PRIVATE_FOLDER = 0o700
PRIVATE_FILE = 0o600


def private_folder(path: Path) -> Path:
    """``path`` and its missing parents made mode 0700; ``path`` itself, when it exists
    and is this user's, set to 0700."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(parents=True, exist_ok=True)
    for folder in {path, *missing}:
        _restrict(folder, PRIVATE_FOLDER)
    return path


def private_file(path: Path) -> Path:
    """``path`` made empty with mode 0600 when missing, set to 0600 when it is this user's."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE_FILE))
    _restrict(path, PRIVATE_FILE)
    return path


def _restrict(path: Path, mode: int) -> None:
    # Another user's path (a shared folder an operator named) is theirs to set, and a
    # sticky folder (/tmp) is shared by design.
    with contextlib.suppress(OSError):
        status = path.stat()
        if status.st_uid == os.getuid() and not status.st_mode & stat.S_ISVTX:
            path.chmod(mode)

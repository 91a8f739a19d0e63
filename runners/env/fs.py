"""File-system chores for environment trees: freeze them read-only, and remove them again.

Hard-linked files share their inode (and so their mode) with the uv cache:
freezing an environment freezes those cache files too, which is what we want,
since uv never rewrites a cache entry in place. Removal only needs the
directories made writable again; the files' own modes do not matter to unlink.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

WRITE_BITS = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH


def make_read_only(root: Path) -> None:
    """Drop every write bit under ``root`` (symbolic links are left alone: chmod would follow)."""
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            _drop_write(Path(folder) / name)
    _drop_write(root)


def _drop_write(path: Path) -> None:
    if path.is_symlink():
        return
    mode = path.stat().st_mode
    path.chmod(mode & ~WRITE_BITS)


def remove_tree(root: Path) -> None:
    """Remove a (possibly read-only) tree; a missing one is fine."""
    if not root.exists() and not root.is_symlink():
        return
    for folder, dirs, _files in os.walk(root):
        for name in dirs:
            _owner_write(Path(folder) / name)
    _owner_write(root)
    shutil.rmtree(root)


def _owner_write(path: Path) -> None:
    if not path.is_symlink():
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


@contextlib.contextmanager
def writable_folder(folder: Path) -> Iterator[None]:
    """Open a frozen folder for a rename or a new name in it, then close it again."""
    mode = folder.stat().st_mode
    if mode & stat.S_IWUSR:
        yield
        return
    folder.chmod(mode | stat.S_IWUSR)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            folder.chmod(mode)

"""Identical files stored once across environments: hard links by content.

uv links every environment's files to its cache, so one version of a package is
stored once however many environments hold it. Different versions of a package
still share most of their files (pandas 2.2.1 and 2.2.2 differ in a fraction of
them), and unrelated packages share licences and vendored copies. This pass
finds regular files with the same bytes, mode and owner under the complete
environments and the uv cache's unpacked archives, and makes each such set one
inode, as ``nix-store --optimise`` does for the Nix store.

It is safe on a live home: environments and cache entries are never written
after they are made (environments are read-only to runs), every replacement is
an atomic rename of a new link over the old name, so a reader sees the old
inode or the new one and both hold the same bytes; a file that disappears
meanwhile (``gc``) is skipped. Builds in progress (``.tmp-*`` folders) are not
touched. One pass at a time per home (a file lock).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from runners.env.config import EnvHome
from runners.env.fs import writable_folder
from runners.env.manifest import manifest_path

CHUNK = 1 << 20
TEMPORARY_PREFIX = ".pw-link-"
DEFAULT_LOCK_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class DedupeReport:
    files_seen: int  # regular files walked (each path)
    inodes_hashed: int  # inodes whose size, mode and owner another inode shares
    paths_relinked: int  # names now pointing at another inode with the same bytes
    bytes_freed: int  # inodes whose every name was relinked, so the file system frees them


_Key = tuple[int, int, int, int, int]  # device, size, mode, owner, group


@dataclass
class _Inode:
    paths: list[str]
    nlink: int
    size: int


def deduplicate(
    home: EnvHome,
    *,
    uv_cache: Path | None = None,
    new: Path | None = None,
    lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
) -> DedupeReport:
    """Hard-link identical files under ``home``'s environments and uv cache archives.

    ``uv_cache`` is the cache the environments were linked from (default: the home's).
    ``new``: an environment just built; only files that could equal one of its files are
    read (earlier passes merged the rest). None: every candidate is read.
    """
    home.create()
    with FileLock(str(home.locks / "dedupe.lock"), timeout=lock_timeout_s):
        return deduplicate_trees(dedupe_roots(home, uv_cache or home.uv_cache), new=new)


def dedupe_roots(home: EnvHome, uv_cache: Path) -> list[Path]:
    """The complete environments and the uv cache's unpacked archives (never ``.tmp-`` builds).

    The cache must be included: an environment's file shares its inode with the cache
    entry it was linked from, and relinking only the environment's name would keep both.
    """
    roots = []
    if home.envs.is_dir():
        roots = sorted(
            p for p in home.envs.iterdir() if not p.name.startswith(".") and _complete(p)
        )
    if uv_cache.is_dir():
        roots += sorted(p for p in uv_cache.glob("archive-v*") if p.is_dir())
    return roots


def _complete(env_root: Path) -> bool:
    return manifest_path(env_root).is_file()


def deduplicate_trees(roots: Iterable[Path], *, new: Path | None = None) -> DedupeReport:
    """Make files with equal bytes, mode and owner under ``roots`` share one inode each.

    With ``new`` (one of the roots), only groups holding one of its files are read.
    """
    groups: dict[_Key, dict[int, _Inode]] = defaultdict(dict)
    wanted: set[_Key] = set()
    new_prefix = None if new is None else os.path.join(new, "")
    files_seen = 0
    for path, info in _regular_files(roots):
        if os.path.basename(path).startswith(TEMPORARY_PREFIX):
            _remove_leftover(path)  # a pass killed between link and rename left it
            continue
        files_seen += 1
        if info.st_size == 0:
            continue  # nothing to free
        key = (info.st_dev, info.st_size, info.st_mode, info.st_uid, info.st_gid)
        inode = groups[key].setdefault(info.st_ino, _Inode([], info.st_nlink, info.st_size))
        inode.paths.append(path)
        if new_prefix is None or path.startswith(new_prefix):
            wanted.add(key)
    hashed = relinked = freed = 0
    for group, inodes in groups.items():
        if len(inodes) < 2 or group not in wanted:
            continue
        by_content: dict[bytes, list[_Inode]] = defaultdict(list)
        for inode in inodes.values():
            digest = _digest(inode.paths)
            if digest is not None:
                hashed += 1
                by_content[digest].append(inode)
        for same in by_content.values():
            if len(same) > 1:
                moved, gone = _merge(same)
                relinked += moved
                freed += gone
    return DedupeReport(files_seen, hashed, relinked, freed)


def _regular_files(roots: Iterable[Path]) -> Iterator[tuple[str, os.stat_result]]:
    """(path, lstat) of every regular file under ``roots``; strings, for speed on big trees."""
    stack = [str(root) for root in roots]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    yield entry.path, entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue


def _digest(paths: list[str]) -> bytes | None:
    """The content hash of an inode, read through the first of its names still there."""
    for path in paths:
        try:
            digest = hashlib.blake2b(digest_size=32)
            with open(path, "rb") as handle:
                while chunk := handle.read(CHUNK):
                    digest.update(chunk)
            return digest.digest()
        except (FileNotFoundError, PermissionError):
            continue
    return None


def _merge(same: list[_Inode]) -> tuple[int, int]:
    """Point every name of ``same`` at one inode; (names relinked, bytes freed)."""
    # The inode with the most links stays: fewest renames, and its names elsewhere keep it.
    ordered = sorted(same, key=lambda inode: inode.nlink, reverse=True)
    keeper = ordered[0]
    relinked = freed = 0
    for inode in ordered[1:]:
        moved = 0
        for index, path in enumerate(inode.paths):
            outcome = _relink(keeper, path)
            if outcome == "full":  # the keeper is at the link limit: this inode keeps the rest
                inode.paths = inode.paths[index:]  # the names before now point at the old keeper
                keeper = inode
                break
            moved += outcome == "done"
        relinked += moved
        if moved and moved == inode.nlink:  # every name it had was ours, and all moved
            freed += inode.size
    return relinked, freed


def _relink(keeper: _Inode, path: str) -> str:
    """Replace ``path`` by a new link to ``keeper``: "done", "full" (EMLINK) or "skipped"."""
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f"{TEMPORARY_PREFIX}{os.getpid()}-{name}")
    for source in keeper.paths:
        try:
            with writable_folder(Path(folder)):
                os.link(source, temporary)
                os.replace(temporary, path)
        except FileNotFoundError:
            continue  # that name of the keeper (or ``path``) went away; try another
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            if exc.errno == errno.EMLINK:
                return "full"
            return "skipped"
        keeper.nlink += 1
        return "done"
    return "skipped"


def _remove_leftover(path: str) -> None:
    with contextlib.suppress(OSError), writable_folder(Path(path).parent):
        os.unlink(path)

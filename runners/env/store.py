"""What is on the shared volume: list environments, measure their storage, collect garbage.

``du`` walks the environments and counts every file twice over: apparent
bytes (each path counted, as one image per task would hold them) and actual
bytes (each inode counted once, across all environments and the uv cache they
are linked from). ``gc`` removes environments not used for a while and not
referenced, and never one whose lock is held (a build, or a run in progress).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from probewatch.disk import file_stats
from runners.env.build import EnvironmentBusy, exclusive, is_ready
from runners.env.config import EnvHome
from runners.env.fs import remove_tree
from runners.env.manifest import Manifest, read_manifest

DAY_S = 86400.0


@dataclass(frozen=True)
class EnvironmentInfo:
    lock_hash: str
    root: Path
    manifest: Manifest
    last_used: float  # epoch seconds


@dataclass(frozen=True)
class Usage:
    """Storage of a set of trees: apparent (per path) and actual (per inode) bytes."""

    apparent_bytes: int
    actual_bytes: int
    files: int

    @property
    def saving(self) -> float:
        """Share of the apparent bytes that sharing saves (0.0 when nothing is stored)."""
        if self.apparent_bytes == 0:
            return 0.0
        return 1.0 - self.actual_bytes / self.apparent_bytes


def list_environments(home: EnvHome) -> list[EnvironmentInfo]:
    """Every complete environment under ``home``, most recently used first."""
    found = []
    if not home.envs.is_dir():
        return []
    for root in sorted(home.envs.iterdir()):
        if root.name.startswith(".") or not is_ready(root):
            continue
        found.append(EnvironmentInfo(root.name, root, read_manifest(root), _last_used(home, root)))
    return sorted(found, key=lambda info: info.last_used, reverse=True)


def _last_used(home: EnvHome, root: Path) -> float:
    marker = home.used_marker(root.name)
    return marker.stat().st_mtime if marker.exists() else root.stat().st_mtime


def disk_usage(roots: Iterable[Path], seen: set[tuple[int, int]] | None = None) -> Usage:
    """Bytes under ``roots``: apparent counts every path, actual each inode once.

    Pass the same ``seen`` set to later calls to count inodes already met as shared.
    """
    seen = set() if seen is None else seen
    apparent = actual = files = 0
    for info in file_stats(roots):
        apparent += info.st_size
        files += 1
        key = (info.st_dev, info.st_ino)
        if key not in seen:
            seen.add(key)
            actual += info.st_size
    return Usage(apparent, actual, files)


@dataclass(frozen=True)
class HomeUsage:
    environments: Usage  # apparent: as separate copies; actual: hard links counted once
    cache_only_bytes: int  # uv cache bytes no environment links to (archives, metadata)

    @property
    def on_disk_bytes(self) -> int:
        return self.environments.actual_bytes + self.cache_only_bytes

    @property
    def saving_with_cache(self) -> float:
        """Saving against separate copies, charging sharing for its whole cache too."""
        apparent = self.environments.apparent_bytes
        return 0.0 if apparent == 0 else 1.0 - self.on_disk_bytes / apparent


def home_usage(home: EnvHome) -> HomeUsage:
    """Storage of every environment under ``home``, and what the shared uv cache adds."""
    seen: set[tuple[int, int]] = set()
    envs = disk_usage((info.root for info in list_environments(home)), seen)
    cache = disk_usage([home.uv_cache] if home.uv_cache.is_dir() else [], seen)
    return HomeUsage(envs, cache.actual_bytes)


@dataclass(frozen=True)
class GcReport:
    removed: tuple[str, ...]
    kept_in_use: tuple[str, ...]
    kept_referenced: tuple[str, ...]
    kept_recent: tuple[str, ...]
    removed_partial: tuple[str, ...]  # temporary folders of builds that died


def collect_garbage(
    home: EnvHome,
    *,
    unused_days: float,
    keep: frozenset[str] = frozenset(),
    now: float | None = None,
    dry_run: bool = False,
) -> GcReport:
    """Remove environments unused for ``unused_days`` and not in ``keep``; skip locked ones."""
    now = time.time() if now is None else now
    removed, in_use, referenced, recent = [], [], [], []
    for info in list_environments(home):
        if info.lock_hash in keep:
            referenced.append(info.lock_hash)
        elif now - info.last_used < unused_days * DAY_S:
            recent.append(info.lock_hash)
        elif _remove(home, info, dry_run):
            removed.append(info.lock_hash)
        else:
            in_use.append(info.lock_hash)
    partial = _remove_partial_builds(home, now, dry_run)
    return GcReport(*(tuple(x) for x in (removed, in_use, referenced, recent, partial)))


def _remove(home: EnvHome, info: EnvironmentInfo, dry_run: bool) -> bool:
    try:
        with exclusive(home, info.lock_hash):
            if not dry_run:
                remove_tree(info.root)
                home.used_marker(info.lock_hash).unlink(missing_ok=True)
    except EnvironmentBusy:
        return False
    return True


def _remove_partial_builds(home: EnvHome, now: float, dry_run: bool) -> list[str]:
    # A build that was killed (SIGKILL, power loss) cannot clean up; its folder is
    # old and no lock protects it. Live builds are younger than a day.
    stale = (
        [p for p in home.envs.glob(".tmp-*") if now - p.stat().st_mtime > DAY_S]
        if home.envs.is_dir()
        else []
    )
    if not dry_run:
        for path in stale:
            remove_tree(path)
    return [p.name for p in stale]

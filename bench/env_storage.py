"""Storage benchmark: environments for tasks with overlapping dependencies, separate vs shared.

Eight fixture tasks stand for PRs of two projects at three points in time: the
tasks of one project share most of their stack (numpy, pandas, requests,
pydantic...), nearby PRs resolve to the same versions, later ones move some of
them on. Each set is built twice from one warmed uv cache (no download is
timed): *separate*, every task's environment a full copy of its files (as one
image per task holds them); *shared*, one environment per lock hash under one
home, files hard-linked from the uv cache, and identical files of different
package versions hard-linked together after each build (the content pass);
the shared side is also built once without that pass, to show what each step
saves. Prints bytes, build times and the savings; the shared side is charged
for its whole cache.

    python -m bench.env_storage [--work DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from runners.env import EnvHome, Lock, ensure_environment, resolve
from runners.env.fs import remove_tree
from runners.env.store import disk_usage
from runners.env.uv import Uv

DATA_STACK = ("numpy", "pandas", "pyarrow", "requests", "pyyaml", "tqdm")
SERVICE_STACK = ("pydantic", "fastapi", "httpx", "jinja2", "rich", "click")


@dataclass(frozen=True)
class FixtureTask:
    name: str
    requirements: tuple[str, ...]
    merged_at: datetime


def _day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


TASKS = (
    FixtureTask("data-1", (*DATA_STACK, "scipy"), _day("2024-03-01")),
    FixtureTask("data-2", (*DATA_STACK, "scipy"), _day("2024-03-05")),
    FixtureTask("data-3", (*DATA_STACK, "scipy", "attrs"), _day("2024-03-05")),
    FixtureTask("data-4", (*DATA_STACK, "pillow"), _day("2024-09-01")),
    FixtureTask("data-5", (*DATA_STACK, "scipy"), _day("2024-09-01")),
    FixtureTask("svc-1", (*SERVICE_STACK, "numpy"), _day("2024-03-01")),
    FixtureTask("svc-2", (*SERVICE_STACK, "numpy", "tenacity"), _day("2024-03-05")),
    FixtureTask("svc-3", (*SERVICE_STACK, "numpy"), _day("2024-09-01")),
)


def lock_all(uv: Uv) -> list[Lock]:
    python = Path(sys.executable)
    return [resolve(t.requirements, python=python, uv=uv, exclude_newer=t.merged_at) for t in TASKS]


def build_separate(locks: list[Lock], root: Path, cache: Path) -> tuple[int, float]:
    """Every task its own home and its own copy of every file: (bytes, seconds)."""
    uv = Uv(cache, link_mode="copy")
    started = time.monotonic()
    homes = []
    for index, lock in enumerate(locks):
        home = EnvHome(root / f"task-{index}")
        ensure_environment(lock, home, uv, dedupe=False)
        homes.append(home.envs)
    seconds = time.monotonic() - started
    return sum(disk_usage([envs]).actual_bytes for envs in homes), seconds


def build_shared(
    locks: list[Lock], root: Path, cache: Path, *, dedupe: bool = True
) -> tuple[int, int, float]:
    """One home, one environment per hash, links into the cache: (env bytes, +cache, seconds)."""
    home = EnvHome(root)
    uv = Uv(cache)
    started = time.monotonic()
    for lock in locks:
        ensure_environment(lock, home, uv, dedupe=dedupe)
    seconds = time.monotonic() - started
    seen: set[tuple[int, int]] = set()
    envs = disk_usage([home.envs], seen).actual_bytes
    cache_only = disk_usage([cache], seen).actual_bytes
    return envs, cache_only, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, help="folder for the builds (default: a temp dir)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pw-env-bench-", dir=args.work) as tmp:
        root = Path(tmp)
        cache = root / "uv-cache"
        locks = lock_all(Uv(cache))
        # Fills the cache, so nothing below downloads; no content pass, so the cache's
        # files stay as uv made them for the links-only measurement.
        build_shared(locks, root / "warm-up", cache, dedupe=False)
        remove_tree(root / "warm-up")
        separate, separate_s = build_separate(locks, root / "separate", cache)
        remove_tree(root / "separate")
        links = build_shared(locks, root / "links-only", cache, dedupe=False)
        remove_tree(root / "links-only")
        full = build_shared(locks, root / "shared", cache)
        _report(locks, separate, separate_s, links, full)
    return 0


def _report(
    locks: list[Lock],
    separate: int,
    separate_s: float,
    links: tuple[int, int, float],
    full: tuple[int, int, float],
) -> None:
    mib = 2**20
    print(f"tasks: {len(locks)}, distinct lock hashes: {len({lock.lock_hash for lock in locks})}")
    print(f"separate:              {separate / mib:8.1f} MiB  built in {separate_s:6.1f}s")
    for label, (envs, cache_only, seconds) in (
        ("shared, links only:   ", links),
        ("shared + content pass:", full),
    ):
        shared = envs + cache_only
        print(
            f"{label} {shared / mib:8.1f} MiB  built in {seconds:6.1f}s  "
            f"(environments {envs / mib:.1f} MiB + uv cache {cache_only / mib:.1f} MiB)  "
            f"saving {1 - shared / separate:.1%} storage, {1 - seconds / separate_s:.1%} time"
        )


if __name__ == "__main__":
    sys.exit(main())

"""Storage accounting (hard links counted once) and garbage collection that respects locks."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runners.env import EnvHome, Lock, collect_garbage, ensure_environment, in_use, resolve
from runners.env.store import disk_usage, home_usage, list_environments
from runners.env.uv import Uv
from tests.runners_env_support import ERA

pytest_plugins = ["tests.runners_env_fixtures"]
DAY = 86400.0


def test_du_counts_a_hard_linked_file_once(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "big").write_bytes(b"x" * 1000)
    os.link(tmp_path / "a" / "big", tmp_path / "b" / "big")
    (tmp_path / "b" / "own").write_bytes(b"y" * 10)
    usage = disk_usage([tmp_path / "a", tmp_path / "b"])
    assert (usage.apparent_bytes, usage.actual_bytes, usage.files) == (2010, 1010, 3)
    assert usage.saving == pytest.approx(1 - 1010 / 2010)


def test_du_does_not_follow_symbolic_links(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 100)
    (tmp_path / "link").symlink_to(tmp_path / "f")
    assert disk_usage([tmp_path]).apparent_bytes == 100


@pytest.fixture(scope="module")
def two_envs(env_home: EnvHome, uv: Uv, six_lock: Lock) -> tuple[Lock, Lock]:
    other = resolve(["six", "idna"], python=Path(sys.executable), uv=uv, exclude_newer=ERA)
    ensure_environment(six_lock, env_home, uv)
    ensure_environment(other, env_home, uv)
    return six_lock, other


def test_environments_sharing_packages_take_their_space_once(
    env_home: EnvHome, two_envs: tuple[Lock, Lock]
) -> None:
    usage = home_usage(env_home)
    assert usage.environments.actual_bytes < usage.environments.apparent_bytes
    # six, pytest and pip are in both: the second environment adds little.
    assert usage.environments.saving > 0.3
    hashes = {info.lock_hash for info in list_environments(env_home)}
    assert {lock.lock_hash for lock in two_envs} <= hashes


def test_gc_keeps_recent_referenced_and_in_use_environments(
    env_home: EnvHome, two_envs: tuple[Lock, Lock]
) -> None:
    first, second = two_envs
    later = time.time() + 30 * DAY
    recent = collect_garbage(env_home, unused_days=60, now=later, dry_run=True)
    assert recent.removed == () and first.lock_hash in recent.kept_recent
    with in_use(env_home, first.lock_hash):
        report = collect_garbage(
            env_home, unused_days=7, now=later, dry_run=True, keep=frozenset({second.lock_hash})
        )
    assert first.lock_hash in report.kept_in_use
    assert second.lock_hash in report.kept_referenced
    assert first.lock_hash not in report.removed


def test_gc_removes_an_unused_environment_and_only_it(
    tmp_path: Path, uv: Uv, six_lock: Lock
) -> None:
    home = EnvHome(tmp_path / "home")
    ensure_environment(six_lock, home, uv)
    old = time.time() - 10 * DAY
    os.utime(home.used_marker(six_lock.lock_hash), (old, old))
    stale = home.envs / ".tmp-abandoned"
    stale.mkdir()
    os.utime(stale, (old, old))
    report = collect_garbage(home, unused_days=7)
    assert report.removed == (six_lock.lock_hash,)
    assert report.removed_partial == (".tmp-abandoned",)
    assert not home.env_dir(six_lock.lock_hash).exists() and not stale.exists()


def test_gc_skips_an_environment_whose_build_lock_is_held(
    tmp_path: Path, uv: Uv, six_lock: Lock
) -> None:
    home = EnvHome(tmp_path / "home")
    ensure_environment(six_lock, home, uv)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from filelock import FileLock; l = FileLock(sys.argv[1]); "
            "l.acquire(); print('held', flush=True); time.sleep(60)",
            str(home.lock_file(six_lock.lock_hash)),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        report = collect_garbage(home, unused_days=0, now=time.time() + DAY)
    finally:
        holder.kill()
        holder.wait()
    assert report.kept_in_use == (six_lock.lock_hash,)
    assert home.env_dir(six_lock.lock_hash).exists()

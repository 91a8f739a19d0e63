"""The content pass: identical files across environments and the uv cache become one inode."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import sys
from pathlib import Path

import pytest

from runners.env import EnvHome, dedupe, ensure_environment, resolve
from runners.env.dedupe import deduplicate, deduplicate_trees
from runners.env.fs import make_read_only
from runners.env.store import disk_usage
from runners.env.uv import Uv
from tests.runners_env_support import ERA, OLD_ERA

pytest_plugins = ["tests.runners_env_fixtures"]

LICENCE = "Permission is hereby granted, free of charge, to any person...\n" * 40


def write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def inode(path: Path) -> int:
    return path.stat().st_ino


def test_equal_files_become_one_inode_and_different_ones_stay_apart(tmp_path: Path) -> None:
    a = write(tmp_path / "a" / "LICENSE", LICENCE)
    b = write(tmp_path / "b" / "LICENSE", LICENCE)
    same_size = write(tmp_path / "b" / "OTHER", LICENCE.replace("P", "Q"))  # same length
    script = write(tmp_path / "b" / "run", LICENCE, mode=0o755)  # same bytes, other mode
    before = disk_usage([tmp_path]).actual_bytes
    report = deduplicate_trees([tmp_path / "a", tmp_path / "b"])
    assert inode(a) == inode(b)
    assert inode(same_size) != inode(a) and same_size.read_text() != LICENCE
    assert inode(script) != inode(a) and os.access(script, os.X_OK)
    assert not os.access(a, os.X_OK)
    assert report.paths_relinked == 1 and report.bytes_freed == len(LICENCE)
    assert disk_usage([tmp_path]).actual_bytes == before - len(LICENCE)


def test_a_frozen_environment_is_relinked_and_stays_frozen(tmp_path: Path) -> None:
    cache_file = write(tmp_path / "cache" / "archive-v0" / "x" / "pkg" / "data.txt", LICENCE)
    env_file = tmp_path / "env" / "site" / "pkg" / "data.txt"
    env_file.parent.mkdir(parents=True)
    os.link(cache_file, env_file)  # as uv links an environment to its cache
    other = write(tmp_path / "env2" / "site" / "pkg" / "data.txt", LICENCE)
    make_read_only(tmp_path / "env")  # freezing drops the write bits of the cache's inode too
    make_read_only(tmp_path / "env2")
    deduplicate_trees([tmp_path / "env", tmp_path / "env2", tmp_path / "cache"])
    assert inode(other) == inode(env_file) == inode(cache_file)
    assert not other.parent.stat().st_mode & stat.S_IWUSR  # its folder is read-only again
    assert not list(other.parent.glob(".pw-link-*"))


def test_a_link_left_by_a_killed_pass_is_removed_by_the_next(tmp_path: Path) -> None:
    kept = write(tmp_path / "env" / "pkg" / "mod.py", LICENCE)
    leftover = tmp_path / "env" / "pkg" / ".pw-link-4242-mod.py"
    os.link(kept, leftover)
    make_read_only(tmp_path / "env")
    report = deduplicate_trees([tmp_path / "env"])
    assert not leftover.exists() and kept.read_text() == LICENCE
    assert report.files_seen == 1


def test_both_names_of_an_inode_move_so_its_bytes_are_freed(tmp_path: Path) -> None:
    """An environment's file shares its inode with the cache: relinking only the
    environment's name would keep the bytes alive under the cache's name."""
    old = write(tmp_path / "cache" / "archive-v0" / "old" / "f", LICENCE)
    new = write(tmp_path / "cache" / "archive-v0" / "new" / "f", LICENCE)
    (tmp_path / "envs" / "a").mkdir(parents=True)
    (tmp_path / "envs" / "b").mkdir(parents=True)
    os.link(old, tmp_path / "envs" / "a" / "f")
    os.link(new, tmp_path / "envs" / "b" / "f")
    before = disk_usage([tmp_path]).actual_bytes
    report = deduplicate_trees([tmp_path / "envs", tmp_path / "cache"])
    assert len({inode(p) for p in (old, new, tmp_path / "envs" / "a" / "f")}) == 1
    assert inode(tmp_path / "envs" / "b" / "f") == inode(old)
    assert report.paths_relinked == 2 and report.bytes_freed == len(LICENCE)
    assert disk_usage([tmp_path]).actual_bytes == before - len(LICENCE)


def test_with_a_new_root_only_groups_touching_it_are_read(tmp_path: Path) -> None:
    a = write(tmp_path / "old1" / "LICENSE", LICENCE)
    b = write(tmp_path / "old2" / "LICENSE", LICENCE)
    c = write(tmp_path / "new" / "README", "hello " * 50)
    d = write(tmp_path / "old1" / "README", "hello " * 50)
    roots = [tmp_path / "old1", tmp_path / "old2", tmp_path / "new"]
    report = deduplicate_trees(roots, new=tmp_path / "new")
    assert inode(c) == inode(d)
    assert inode(a) != inode(b)  # not the new environment's business
    assert report.inodes_hashed == 2


def _content_index(roots: list[Path]) -> dict[tuple[str, int], set[int]]:
    """(sha256, mode) -> inodes holding those bytes, over every regular file under roots."""
    found: dict[tuple[str, int], set[int]] = {}
    for root in roots:
        for folder, _dirs, names in os.walk(root):
            for name in names:
                path = Path(folder) / name
                info = path.lstat()
                if stat.S_ISREG(info.st_mode) and info.st_size:
                    digest = hashlib.sha256(path.read_bytes()).hexdigest()
                    found.setdefault((digest, info.st_mode), set()).add(info.st_ino)
    return found


def test_building_environments_of_two_eras_leaves_no_bytes_stored_twice(
    tmp_path: Path, uv: Uv
) -> None:
    home = EnvHome(tmp_path / "home")
    python = Path(sys.executable)
    locks = [
        resolve(["six", "packaging"], python=python, uv=uv, exclude_newer=era)
        for era in (OLD_ERA, ERA)
    ]
    assert locks[0].pins != locks[1].pins
    roots = [ensure_environment(lock, home, uv).ref.root for lock in locks]
    archives = sorted(uv.cache.glob("archive-v*"))
    index = _content_index([*roots, *archives])
    assert all(len(inodes) == 1 for inodes in index.values())
    # Different versions of packaging still ship some identical files: those are shared now.
    site = [next(root.glob("lib/python*/site-packages")) for root in roots]
    shared = [
        rel
        for path in site[0].rglob("*")
        if path.is_file()
        and (rel := path.relative_to(site[0])).parts[0] != "__pycache__"
        and (site[1] / rel).is_file()
        and inode(path) == inode(site[1] / rel)
    ]
    assert shared


def test_the_home_pass_is_the_same_when_nothing_changed(tmp_path: Path, uv: Uv) -> None:
    home = EnvHome(tmp_path / "home")
    lock = resolve(["six"], python=Path(sys.executable), uv=uv, exclude_newer=ERA)
    ensure_environment(lock, home, uv)
    again = deduplicate(home, uv_cache=uv.cache)
    assert again.paths_relinked == 0 and again.bytes_freed == 0


def test_a_keeper_at_the_link_limit_hands_over_to_the_next_inode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ext4 allows 65,000 names per inode; past that, the next inode keeps the rest."""
    a = write(tmp_path / "x" / "a", LICENCE)
    for extra in ("a2", "a3"):
        os.link(a, tmp_path / "x" / extra)
    b = write(tmp_path / "y" / "b", LICENCE)
    b2 = tmp_path / "y" / "b2"
    os.link(b, b2)
    c = write(tmp_path / "z" / "c", LICENCE)
    full, room = inode(a), [1]  # the keeper takes one more name, then it is full
    real_link = os.link

    def link(source: str, target: str) -> None:
        if os.stat(source).st_ino == full:
            if not room[0]:
                raise OSError(errno.EMLINK, "Too many links")
            room[0] -= 1
        real_link(source, target)

    monkeypatch.setattr(dedupe.os, "link", link)
    dedupe.deduplicate_trees([tmp_path])
    assert inode(b) == inode(a)  # moved before the limit
    assert inode(c) == inode(b2) != inode(a)  # the rest share b2's inode, the new keeper
    assert all(p.read_text() == LICENCE for p in (a, b, b2, c))
    assert not list(tmp_path.rglob(".pw-link-*"))

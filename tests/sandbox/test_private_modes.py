"""What the service keeps is its user's alone: the registry file 0600 in a 0700 folder, the
mirrors, the environments and the runs' roots 0700, whatever the umask; a registry an older
version left 0644 is closed when next opened; a shared folder (``/tmp``) is never touched."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from probewatch.private import private_folder
from runners.env.config import EnvHome
from runners.mirrors import ensure_mirror
from runners.workspace import workspace
from task_registry.db import make_engine
from tests.runner_repos import FixtureRepo


@pytest.fixture(autouse=True)
def open_umask() -> Iterator[None]:
    """The usual umask: without explicit modes everything below would be world-readable."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_registry_is_0600_in_a_0700_home_and_so_are_its_wal_files(tmp_path: Path) -> None:
    home = tmp_path / "probewatch" / "home"
    engine = make_engine(f"sqlite:///{home / 'probewatch.db'}")
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE t (x INTEGER)"))
        connection.execute(text("INSERT INTO t VALUES (1)"))
        files = sorted(home.iterdir())
        assert [p.name for p in files] == [
            "probewatch.db",
            "probewatch.db-shm",
            "probewatch.db-wal",
        ]
        assert {p.name: mode(p) for p in files} == dict.fromkeys((p.name for p in files), 0o600)
    engine.dispose()
    assert mode(home) == 0o700 and mode(home.parent) == 0o700  # a missing parent, made here


def test_a_registry_left_world_readable_is_closed_when_next_opened(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    make_engine(f"sqlite:///{home / 'probewatch.db'}").dispose()
    (home / "probewatch.db").chmod(0o644)
    make_engine(f"sqlite:///{home / 'probewatch.db'}").dispose()
    assert mode(home / "probewatch.db") == 0o600


def test_mirrors_the_service_clones_are_0700(tmp_path: Path) -> None:
    upstream, _ = FixtureRepo.create(tmp_path / "upstream", {"pkg/a.py": "A = 1\n"})
    home = tmp_path / "home"
    mirror = ensure_mirror(f"file://{upstream.path}", home, "owner/name")
    assert (mirror / "HEAD").is_file()
    assert mode(home / "mirrors") == 0o700 and mode(mirror) == 0o700


def test_environment_and_run_roots_are_0700(tmp_path: Path) -> None:
    envs = EnvHome(tmp_path / "env-home")
    envs.create()
    for folder in (envs.envs, envs.uv_cache, envs.assets, envs.locks):
        assert mode(folder) == 0o700, folder
    repo, base = FixtureRepo.create(tmp_path / "upstream", {"pkg/a.py": "A = 1\n"})
    root = tmp_path / "home" / "runs"
    root.mkdir(parents=True)  # an older version's root, left open
    with workspace(repo.path, base, root=root):
        assert mode(root) == 0o700


def test_a_shared_sticky_folder_is_never_closed(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    private_folder(shared)
    assert mode(shared) == 0o1777
    assert mode(private_folder(shared / "mine")) == 0o700

"""A bad home, watch file, disk or repository name is one line on stderr naming the problem and
the fix, never a traceback; reads work on a read-only home; no output shows a password.

Regression tests for issue 16, point 5: ``PROBEWATCH_HOME=/etc/passwd/home`` and a non-UTF-8
watch file printed 46-55-line tracebacks, a read-only home made even ``candidates list`` fail,
``config check`` printed the database URL with its password, and ``mine --repo 'a/b; rm -rf /'``
was accepted and stored. Each case runs the real command line in a process of its own; the
read-only and full disks are mounts in a user namespace of their own (``unshare``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sqlmodel import select

from task_registry.db import make_engine, session_scope
from task_registry.models import Repo
from tests.cli.cli_support import add_candidate, migrated_home


def probewatch(
    home: Path, *args: str, env: dict[str, str] | None = None, mount: str = ""
) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own; ``mount`` (shell) runs first in a private namespace."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PROBEWATCH_")}
    clean.update(PROBEWATCH_HOME=str(home), COLUMNS="200", **(env or {}))
    command = [sys.executable, "-m", "bot.cli.main", *args]
    if mount:
        command = ["unshare", "-rm", "sh", "-c", f'{mount} && exec "$@"', "sh", *command]
    return subprocess.run(command, capture_output=True, text=True, env=clean, timeout=120)


def one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> str:
    assert done.returncode in (1, 2), done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ")
    for word in words:
        assert word in lines[0]
    return lines[0]


def can_mount() -> bool:
    if shutil.which("unshare") is None:
        return False
    done = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    return done.returncode == 0


needs_mounts = pytest.mark.skipif(not can_mount(), reason="no user namespaces for mounts here")


def test_a_home_under_a_file_is_one_line_naming_the_fix(tmp_path: Path) -> None:
    a_file = tmp_path / "passwd"
    a_file.write_text("root:x:0:0\n")
    done = probewatch(a_file / "home", "candidates", "list")
    one_line_error(done, f"under {a_file}", "which is a file", "set PROBEWATCH_HOME to a folder")


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"\xff\xfe[[repo]]\n", ("is not UTF-8 text", "byte 0xff at offset 0", "save it as UTF-8")),
        (None, ("cannot be read", "Is a directory", "check PROBEWATCH_WATCH_FILE")),
    ],
    ids=["not utf-8", "a folder"],
)
def test_an_unreadable_watch_file_is_one_line(
    tmp_path: Path, content: bytes | None, words: tuple[str, ...]
) -> None:
    watch = tmp_path / "watch.toml"
    if content is None:
        watch.mkdir()
    else:
        watch.write_bytes(content)
    done = probewatch(tmp_path, "config", "check", env={"PROBEWATCH_WATCH_FILE": str(watch)})
    one_line_error(done, str(watch), *words)


def test_config_check_masks_the_database_password(tmp_path: Path) -> None:
    url = "postgresql://probe:s3cret-pw@127.0.0.1:1/registry"
    done = probewatch(tmp_path, "config", "check", env={"PROBEWATCH_DATABASE_URL": url})
    assert done.returncode == 0, done.stderr
    assert "s3cret-pw" not in done.stdout + done.stderr
    assert "postgresql://probe:***@127.0.0.1:1/registry" in done.stdout


def test_a_repository_that_is_not_owner_name_is_refused_and_nothing_stored(
    tmp_path: Path,
) -> None:
    migrated_home(tmp_path).dispose()
    hostile = "a/b; rm -rf /"
    done = probewatch(tmp_path, "mine", "--repo", hostile, "--git", str(tmp_path))
    one_line_error(done, repr(hostile), "is not owner/name")
    engine = make_engine(f"sqlite:///{tmp_path / 'probewatch.db'}")
    with session_scope(engine) as session:
        assert session.exec(select(Repo)).all() == []
    engine.dispose()


@needs_mounts
def test_reads_work_on_a_read_only_home_and_a_write_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    engine = migrated_home(home)
    candidate = add_candidate(engine, 41, title="Make weight sync incremental")
    engine.dispose()
    read_only = f"mount --bind -o ro {home} {home}"

    listed = probewatch(home, "candidates", "list", mount=read_only)
    rejected = probewatch(home, "candidates", "reject", str(candidate), mount=read_only)
    elsewhere = probewatch(home / "new", "candidates", "list", mount=read_only)

    assert listed.returncode == 0, listed.stderr
    assert "Make weight sync incremental" in listed.stdout
    one_line_error(rejected, "read-only", "writable PROBEWATCH_HOME")
    one_line_error(elsewhere, "Read-only file system", "set PROBEWATCH_HOME to a writable folder")


@needs_mounts
def test_a_full_disk_is_one_line_naming_the_fix(tmp_path: Path) -> None:
    home = tmp_path / "home"
    engine = migrated_home(home)
    candidate = add_candidate(engine, 41)
    engine.dispose()
    disk = tmp_path / "disk"
    disk.mkdir()
    fill = (
        f"mount -t tmpfs -o size=2m tmpfs {disk} && cp -r {home} {disk}/home && "
        f"(dd if=/dev/zero of={disk}/fill bs=4k 2>/dev/null; true)"
    )
    done = probewatch(disk / "home", "candidates", "reject", str(candidate), mount=fill)
    one_line_error(done, "free space on it")

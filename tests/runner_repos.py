"""Small git repositories for the runner tests: real commits, real bare mirrors, real diffs."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# Commits made here never depend on the machine's git identity or configuration.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Fixture",
    "GIT_AUTHOR_EMAIL": "fixture@example.invalid",
    "GIT_COMMITTER_NAME": "Fixture",
    "GIT_COMMITTER_EMAIL": "fixture@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@dataclass(frozen=True)
class Symlink:
    target: str


Content = str | bytes | Symlink | None  # None deletes the file


def git(cwd: Path, *args: str, stdin: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ENV
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, input=stdin, capture_output=True, text=True, check=True
    )
    return done.stdout


@dataclass(frozen=True)
class FixtureRepo:
    path: Path

    @classmethod
    def create(cls, path: Path, files: Mapping[str, Content]) -> tuple[FixtureRepo, str]:
        path.mkdir(parents=True)
        git(path, "init", "--quiet", "--initial-branch=main")
        repo = cls(path)
        return repo, repo.commit(files, "initial")

    def commit(self, files: Mapping[str, Content], message: str = "change") -> str:
        for name, content in files.items():
            write(self.path / name, content)
        git(self.path, "add", "--all")
        git(self.path, "commit", "--quiet", "--allow-empty", "-m", message)
        return git(self.path, "rev-parse", "HEAD").strip()

    def diff(self, old: str, new: str) -> str:
        return git(self.path, "diff", "--binary", old, new)

    def mirror(self, dest: Path) -> Path:
        git(dest.parent, "clone", "--quiet", "--mirror", str(self.path), str(dest))
        return dest


def write(path: Path, content: Content) -> None:
    if content is None:
        path.unlink()
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():
        path.unlink()
    if isinstance(content, Symlink):
        path.symlink_to(content.target)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)


def worktrees(repo: Path) -> list[str]:
    """Paths `git worktree list` shows for ``repo``, the main entry included."""
    out = git(repo, "worktree", "list", "--porcelain")
    return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("worktree ")]


def processes_running(marker: str) -> list[int]:
    """Host process ids whose command line holds ``marker`` (a run's own process ids are
    those of its PID namespace, not the host's)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if marker in cmdline:
                found.append(int(entry.name))
    return found


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie awaiting its reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def tree_listing(root: Path) -> dict[str, str]:
    """Every path under ``root`` (``.git`` included) with its content or link target."""
    listing = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            listing[key] = "-> " + os.readlink(path)
        elif path.is_file():
            listing[key] = path.read_bytes().decode("latin-1")
        else:
            listing[key] = "<dir>"
    return listing


# A test module with every outcome pytest has, for the JUnit and run tests.
OUTCOMES_MODULE = """
import pytest


def test_passes():
    pass


def test_fails():
    assert 1 == 2, "one is not two"


@pytest.fixture
def broken():
    raise RuntimeError("setup broke")


def test_errors_in_setup(broken):
    pass


def test_skips():
    pytest.skip("needs a GPU")


@pytest.mark.xfail(reason="known bug")
def test_xfails():
    assert False


@pytest.mark.xfail(reason="maybe fixed")
def test_xpasses():
    pass


@pytest.mark.xfail(reason="must fail", strict=True)
def test_xpasses_strictly():
    pass


@pytest.fixture
def bad_teardown():
    yield
    raise ValueError("teardown broke")


def test_fails_then_errors_in_teardown(bad_teardown):
    assert False


class TestOuter:
    class TestInner:
        @pytest.mark.parametrize("value", ["a::b", "c/d.e", "[x]"])
        def test_param(self, value):
            pass
"""

OUTCOME_IDS = {
    "test_passes": "passed",
    "test_fails": "failed",
    "test_errors_in_setup": "error",
    "test_skips": "skipped",
    "test_xfails": "xfailed",
    "test_xpasses_strictly": "failed",
    "test_fails_then_errors_in_teardown": "failed",
    "TestOuter::TestInner::test_param[a::b]": "passed",
    "TestOuter::TestInner::test_param[c/d.e]": "passed",
    "TestOuter::TestInner::test_param[[x]]": "passed",
}


# Source of a function a run's code defines to read every environment it can: its own and
# each /proc/PID/environ it may open (a process's environment as it started).
READ_ENVIRONS = """
def read_environs():
    import os
    from pathlib import Path
    blobs = ["\\0".join(f"{k}={v}" for k, v in os.environ.items()).encode()]
    for path in Path("/proc").glob("[0-9]*/environ"):
        try:
            blobs.append(path.read_bytes())
        except OSError:
            pass
    return blobs
"""

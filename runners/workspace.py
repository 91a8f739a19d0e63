"""Work trees for one run: (repository, base commit) materialised cheaply, removed afterwards.

A run gets its own folder under a caller-given root holding ``tree/`` (the
checkout at the base commit) and ``scratch/`` (report files, HOME: things the
run writes that must not land in the tree), and a TMPDIR of its own with a
short path (under ``/tmp``): a Unix socket path must fit in 107 bytes, and Ray
or torch.distributed make theirs several levels below TMPDIR, which a deep
workspace root would push past that. The tree comes from a
local clone or bare mirror without copying history: ``git worktree add
--detach`` (the default) or a fresh repository that borrows the mirror's
objects through ``objects/info/alternates`` and copies no refs (``shared``: the
mirror is never written, so it may be read-only). The folder is removed when
the context exits, whether by return, error, Ctrl-C or SIGTERM, and the
mirror's worktree list is pruned.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import FrameType

from filelock import FileLock

from probewatch.errors import RunnerError
from probewatch.private import private_folder
from runners.run_registry import recorded

# Variables that would point git at another repository than the one we name.
_GIT_LOCATION_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR")
# Never run a mirror's or a tree's hooks: both may hold code we did not write.
_NO_HOOKS = ("-c", "core.hooksPath=/dev/null")


class WorkspaceError(RunnerError):
    """The repository or commit cannot give a work tree."""


class WorkspaceMode(StrEnum):
    worktree = "worktree"  # git worktree add --detach on the mirror
    shared = "shared"  # new repository borrowing the mirror's objects; mirror untouched


@dataclass(frozen=True)
class Workspace:
    tree: Path  # the checkout at ``commit``
    scratch: Path  # per-run files kept out of the tree
    commit: str  # full hash of the base commit
    tmp: Path | None = None  # the run's TMPDIR, short; None: scratch/tmp


def git(
    args: Sequence[str], *, cwd: Path, stdin: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run git in ``cwd`` with hooks off and no inherited repository location."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS}
    done = subprocess.run(
        ["git", *_NO_HOOKS, *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if check and done.returncode != 0:
        raise WorkspaceError(f"git {' '.join(args)} failed in {cwd}: {done.stderr.strip()}")
    return done


def resolve_commit(repo: Path, commit: str) -> str:
    """The full hash of ``commit`` in ``repo``, or WorkspaceError naming what is missing."""
    if not repo.is_dir() or git(["rev-parse", "--git-dir"], cwd=repo, check=False).returncode:
        raise WorkspaceError(f"{repo} is not a git repository")
    done = git(["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"], cwd=repo, check=False)
    if done.returncode != 0:
        raise WorkspaceError(f"commit {commit!r} is not in {repo} (fetch it into the mirror)")
    return done.stdout.strip()


@contextmanager
def workspace(
    repo: Path,
    commit: str,
    *,
    root: Path,
    label: str = "",
    mode: WorkspaceMode = WorkspaceMode.worktree,
) -> Iterator[Workspace]:
    """A fresh work tree of ``repo`` at ``commit`` in its own folder under ``root``."""
    repo = repo.resolve()
    sha = resolve_commit(repo, commit)
    private_folder(root)
    with _sigterm_raises_interrupt():
        folder = Path(tempfile.mkdtemp(prefix=_folder_prefix(label), dir=root))
        tmp: Path | None = None
        try:
            tmp = Path(tempfile.mkdtemp(prefix="pw-", dir=_short_tmp_root()))
            ws = Workspace(tree=folder / "tree", scratch=folder / "scratch", commit=sha, tmp=tmp)
            # Recorded while it lives: a process that starts after this one was killed
            # stops the run's tests and removes its folders (runners.run_registry.reap).
            with recorded(root, (folder, tmp), repo if mode is WorkspaceMode.worktree else None):
                ws.scratch.mkdir()
                _MATERIALISE[mode](repo, sha, ws.tree)
                yield ws
        finally:
            if tmp is not None:
                force_rmtree(tmp)
            _remove(repo, folder, mode)


def _short_tmp_root() -> str:
    """``/tmp`` where it is usable (the shortest common temporary folder), else the default."""
    if os.path.isdir("/tmp") and os.access("/tmp", os.W_OK | os.X_OK):
        return "/tmp"
    return tempfile.gettempdir()


def _folder_prefix(label: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-.")[:40]
    return f"run-{safe}-" if safe else "run-"


def _worktree_lock(repo: Path) -> FileLock:
    """One lock per mirror: concurrent ``git worktree add``/``prune`` race on the mirror's
    ``worktrees/`` admin folder (every tree is named "tree"), so they take turns."""
    digest = hashlib.sha256(str(repo).encode()).hexdigest()[:16]
    return FileLock(Path(tempfile.gettempdir()) / f"probewatch-worktrees-{digest}.lock")


def _add_worktree(repo: Path, sha: str, tree: Path) -> None:
    with _worktree_lock(repo):
        git(["worktree", "add", "--detach", "--quiet", str(tree), sha], cwd=repo)


def _shared_checkout(repo: Path, sha: str, tree: Path) -> None:
    common = git(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=repo)
    git(["init", "--quiet", str(tree)], cwd=tree.parent)
    alternates = tree / ".git" / "objects" / "info" / "alternates"
    alternates.write_text(str(Path(common.stdout.strip()) / "objects") + "\n")
    git(["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", sha], cwd=tree)


_MATERIALISE = {WorkspaceMode.worktree: _add_worktree, WorkspaceMode.shared: _shared_checkout}


def _remove(repo: Path, folder: Path, mode: WorkspaceMode) -> None:
    force_rmtree(folder)
    if mode is WorkspaceMode.worktree:
        # The admin entry of a tree that is gone; entries still being created are
        # locked by git ("initializing") and left alone.
        with _worktree_lock(repo):
            git(["worktree", "prune"], cwd=repo, check=False)


def force_rmtree(path: Path) -> None:
    """Remove ``path`` even where a run made files or folders read-only."""

    def retry_writable(func: object, name: str, _exc: object) -> None:
        parent = os.path.dirname(name)
        os.chmod(parent, os.stat(parent).st_mode | stat.S_IWUSR | stat.S_IXUSR)
        if os.path.isdir(name) and not os.path.islink(name):
            os.chmod(name, stat.S_IRWXU)
            shutil.rmtree(name, onerror=retry_writable)
        else:
            os.unlink(name)

    if path.exists() or path.is_symlink():
        shutil.rmtree(path, onerror=retry_writable)


@contextmanager
def _sigterm_raises_interrupt() -> Iterator[None]:
    """Let SIGTERM unwind like Ctrl-C, so ``finally`` blocks remove the work tree.

    Only in the main thread and only over the default handler: an application
    (a web server, a scheduler) that installed its own keeps it.
    """
    in_main = threading.current_thread() is threading.main_thread()
    if not in_main or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _raise_interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")

"""A record of every live run on this host, so the runs of a killed process can be stopped.

A run's folders (its work folder under a runs root and its short TMPDIR under ``/tmp``) are
recorded beside it (``<root>/.<folder>.live``) while it lives, with the process that owns it
(host, PID and the PID's start time, so a reused PID is not taken for the owner). A worker
killed with SIGKILL removes nothing: its tests keep running in their own process groups, and
its folders stay. :func:`reap` finds the records whose owner is gone, kills every process
that belongs to such a run (its working directory or its TMPDIR lies in the run's folders, or
its command line names them: this finds the run's process groups, a sandbox's launcher, and
a child that left its group with ``setsid`` too), waits until they have exited, and removes
the folders. Records of live owners, and of other hosts sharing the folder, are left alone.
The cgroups such runs were in are removed too, once empty (runners/sandbox/cgroups.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from runners.sandbox.cgroups import remove_stale
from runners.testrun.gpu_usage import process_status

RECORD_SUFFIX = ".live"  # a hidden file beside the run's folder: ``.<folder>.live``
REAPING_SUFFIX = ".reaping"  # a record one reaper has taken (renamed: only one wins)
KILL_WAIT_S = 10.0  # how long the killed processes of a run get to exit before its folders go


class RunOwner(BaseModel):
    """The process that started a run: it, and nothing else, removes the run when it ends."""

    model_config = ConfigDict(frozen=True)

    host: str
    pid: int
    started: int  # the PID's start time in clock ticks since boot (/proc/PID/stat field 22)

    @classmethod
    def this_process(cls) -> RunOwner:
        return cls(host=socket.gethostname(), pid=os.getpid(), started=_start_ticks(os.getpid()))

    def gone(self) -> bool:
        """The owner has exited (on this host; an owner elsewhere cannot be judged here)."""
        return self.host == socket.gethostname() and _start_ticks(self.pid) != self.started


class RunRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    owner: RunOwner
    folders: tuple[Path, ...]  # the run's work folder first, then its TMPDIR
    repo: Path | None = None  # the mirror a work tree was added to (its worktree list)


@contextmanager
def recorded(root: Path, folders: Sequence[Path], repo: Path | None = None) -> Iterator[Path]:
    """Record a run whose folders are ``folders`` as live for the duration of the block."""
    record = RunRecord(owner=RunOwner.this_process(), folders=tuple(folders), repo=repo)
    path = record_path(root, folders[0])
    partial = path.with_suffix(".partial")
    partial.write_text(record.model_dump_json(), encoding="utf-8")
    partial.replace(path)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def record_path(root: Path, folder: Path) -> Path:
    return root / f".{folder.name}{RECORD_SUFFIX}"


def orphans(root: Path) -> list[Path]:
    """The records under ``root`` whose owner is gone."""
    if not root.is_dir():
        return []
    found = []
    for path in sorted(root.glob(f".*{RECORD_SUFFIX}")):
        record = _read(path)
        if record is None or record.owner.gone():
            found.append(path)
    return found


def reap(root: Path) -> list[RunRecord]:
    """Stop the runs under ``root`` whose owner is gone and remove their folders; what was
    reaped. Each record is taken by renaming it, so two reapers never share one."""
    reaped = []
    for path in orphans(root):
        taken = path.with_name(f"{path.name}.{os.getpid()}{REAPING_SUFFIX}")
        try:
            path.rename(taken)
        except FileNotFoundError:
            continue  # another reaper took it, or its owner ended it after all
        record = _read(taken)
        if record is not None:
            stop_processes(record.folders)
            _remove(record)
        taken.unlink(missing_ok=True)
        reaped.extend([record] if record is not None else [])
    remove_stale()
    return reaped


def processes_in(folders: Sequence[Path]) -> list[int]:
    """Live processes (zombies excluded) whose working directory or TMPDIR lies in
    ``folders``."""
    proc = Path("/proc")
    if not (proc / "self").exists():
        return []
    roots = [str(f) for f in folders]
    mine = {os.getpid(), os.getppid()}
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        pid = int(entry.name)
        status = process_status(pid)
        if status is not None and status[1] != "Z" and _belongs(pid, roots):
            found.append(pid)
    return found


def stop_processes(folders: Sequence[Path]) -> list[int]:
    """SIGKILL every process of the run (its whole process group) and wait until they are
    gone; the PIDs that were found."""
    found = processes_in(folders)
    own_group = os.getpgid(0)
    for pid in found:
        status = process_status(pid)
        if status is not None and status[0] not in (0, own_group):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(status[0], signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    give_up = time.monotonic() + KILL_WAIT_S
    while processes_in(folders) and time.monotonic() < give_up:
        time.sleep(0.05)
    return found


def _belongs(pid: int, roots: Sequence[str]) -> bool:
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        cwd = ""
    if any(_within(cwd, root) for root in roots):
        return True
    try:  # a sandbox's launcher names the run's folders in its arguments
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        argv = []
    if any(root.encode() in arg for arg in argv for root in roots):
        return True
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    for item in environ.split(b"\0"):
        if item.startswith(b"TMPDIR="):
            value = item[len(b"TMPDIR=") :].decode("utf-8", "replace")
            return any(_within(value, root) for root in roots)
    return False


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _remove(record: RunRecord) -> None:
    # Imported here: the work-tree module records its runs through this one.
    from runners.workspace import force_rmtree, git

    for folder in record.folders:
        with contextlib.suppress(FileNotFoundError):
            force_rmtree(folder)
    if record.repo is not None and record.repo.is_dir():
        git(["worktree", "prune"], cwd=record.repo, check=False)


def _read(path: Path) -> RunRecord | None:
    try:
        return RunRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _start_ticks(pid: int) -> int:
    """The start time of ``pid`` (field 22 of /proc/PID/stat), or -1 when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return -1
    return int(stat.rpartition(")")[2].split()[19])

"""Commands run in a process group of their own, stopped as a whole, measured with ``wait4``.

A test run's processes are not only pytest: tests start servers, workers,
``torchrun`` ranks, shells that start more. Each command therefore starts a
new session (``start_new_session``), so its whole tree shares one process
group: at the deadline the group gets SIGTERM, then SIGKILL after a grace
period; after every command whatever is left of the group is killed, and we
wait until it has really exited (a GPU is only free once its processes are
gone). Resources come from ``wait4`` on the command itself: its CPU time and
peak RSS, including the children it waited for. Unlike deltas of
``RUSAGE_CHILDREN`` this stays right when several runs share one process.
Processes that leave the group (``setsid``) would escape it; a command given a
:class:`~runners.sandbox.enter.Confinement` runs in its sandbox, whose PID namespace
ends them all with the command (runners/sandbox/), and the disk it fills is watched
while it runs: past its limit, or when the host runs low, the group is stopped as at the
deadline and the log says why (runners/sandbox/disk.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

from runners.sandbox.disk import DiskWatch
from runners.sandbox.enter import Confinement, sandboxed
from runners.testrun.gpu_usage import process_status
from runners.types import Sandboxing

STOP_GRACE_S = 5.0  # between SIGTERM and SIGKILL
CANNOT_START_EXIT = 127  # as a shell reports a command it cannot run
NOTE_PREFIX = "[probewatch] "  # lines the harness itself writes into a run's log
_POLL_S = (0.005, 0.1)  # first and longest wait between checks on a running command


@dataclass(frozen=True)
class CommandEnd:
    """How a command ended and what it used."""

    exit_code: int
    cpu_s: float
    max_rss_bytes: int
    timed_out: bool
    sandbox: Sandboxing | None = None  # None: run without a confinement


def run_in_group(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    log: IO[bytes],
    deadline: float,
    on_start: Callable[[int], None] | None = None,
    confinement: Confinement | None = None,
) -> CommandEnd:
    """Run ``argv`` in a new process group, output to ``log``; stop the group at ``deadline``
    (a ``time.monotonic()`` value). ``on_start`` gets the group id (a GPU sampler's).
    With ``confinement`` the command runs in its sandbox."""
    if confinement is not None and not _findable(argv[0], env):
        # Inside the sandbox bubblewrap would fail to start it, and say so with status 1.
        log.write(f"\n{NOTE_PREFIX}cannot start {argv[0]}: no such command\n".encode())
        log.flush()
        return CommandEnd(exit_code=CANNOT_START_EXIT, cpu_s=0.0, max_rss_bytes=0, timed_out=False)
    watch = _disk_watch(confinement)
    with sandboxed(argv, confinement, cwd=cwd, log=log) as entered:
        end = _run_in_group(
            entered.argv, cwd, {**entered.env_additions, **env}, log, deadline, on_start, watch
        )
    if entered.sandbox is not None and entered.sandbox.confined:
        end = replace(end, exit_code=_signal_status(end.exit_code))
    if entered.usage is not None:
        cpu_s, peak = entered.usage
        end = replace(end, cpu_s=max(end.cpu_s, cpu_s), max_rss_bytes=max(end.max_rss_bytes, peak))
    return replace(end, sandbox=entered.sandbox)


def _disk_watch(confinement: Confinement | None) -> DiskWatch | None:
    if confinement is None:
        return None
    limits = confinement.limits
    if limits.disk_bytes is None and limits.disk_floor_bytes is None:
        return None
    return DiskWatch(confinement.writable, limit=limits.disk_bytes, floor=limits.disk_floor_bytes)


def _findable(command: str, env: Mapping[str, str]) -> bool:
    return shutil.which(command, path=env.get("PATH", os.defpath)) is not None


def _signal_status(exit_code: int) -> int:
    """bubblewrap reports a command that died of signal N as status 128 + N; the harness
    reads a death by signal as ``-N``, as ``wait`` gives it for a command run directly."""
    number = exit_code - 128
    return -number if exit_code > 128 and number in signal.valid_signals() else exit_code


def _run_in_group(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    log: IO[bytes],
    deadline: float,
    on_start: Callable[[int], None] | None,
    watch: DiskWatch | None = None,
) -> CommandEnd:
    log.flush()
    try:
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        log.write(f"\n{NOTE_PREFIX}cannot start {argv[0]}: {exc}\n".encode())
        log.flush()
        return CommandEnd(exit_code=CANNOT_START_EXIT, cpu_s=0.0, max_rss_bytes=0, timed_out=False)
    if on_start is not None:
        on_start(process.pid)
    end: CommandEnd | None = None
    try:
        end = _wait(process.pid, deadline, watch, log)
    except BaseException:
        # Ctrl-C or an error while waiting: never leave the run's processes behind.
        end = _stop(process.pid)
        raise
    finally:
        _kill_leftovers(process.pid)
        process.returncode = end.exit_code if end is not None else -signal.SIGKILL
    return end


def _wait(pid: int, deadline: float, watch: DiskWatch | None, log: IO[bytes]) -> CommandEnd:
    pause = _POLL_S[0]
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return _end(status, usage, timed_out=False)
        if time.monotonic() >= deadline:
            return _stop(pid)
        breach = watch.breach() if watch is not None else None
        if breach is not None:
            log.write(f"\n{breach}\n".encode())
            log.flush()
            return replace(_stop(pid), timed_out=False)
        time.sleep(pause)
        pause = min(pause * 2, _POLL_S[1])


def _stop(pid: int) -> CommandEnd:
    """SIGTERM to the group, SIGKILL after the grace period; reap the leader."""
    _signal_group(pid, signal.SIGTERM)
    grace_end = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < grace_end:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return _end(status, usage, timed_out=True)
        time.sleep(_POLL_S[0] * 4)
    _signal_group(pid, signal.SIGKILL)
    _, status, usage = os.wait4(pid, 0)
    return _end(status, usage, timed_out=True)


def _kill_leftovers(group: int) -> None:
    """Kill what is left of the group and wait until it is gone: a GPU run's memory is only
    free, and its slot only safe to hand on, once its processes have exited."""
    _signal_group(group, signal.SIGKILL)
    give_up = time.monotonic() + STOP_GRACE_S
    while live_members(group) and time.monotonic() < give_up:
        time.sleep(_POLL_S[0])


def live_members(group: int) -> list[int]:
    """Processes of ``group`` that have not exited (zombies excluded), from /proc."""
    proc = Path("/proc")
    if not (proc / "self").exists():
        return []
    pids = (int(entry.name) for entry in proc.iterdir() if entry.name.isdigit())
    return [pid for pid in pids if _alive_in(pid, group)]


def _alive_in(pid: int, group: int) -> bool:
    status = process_status(pid)
    return status is not None and status[0] == group and status[1] != "Z"


def _signal_group(group: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is empty
        os.killpg(group, signum)


def _end(status: int, usage: object, *, timed_out: bool) -> CommandEnd:
    return CommandEnd(
        exit_code=os.waitstatus_to_exitcode(status),
        cpu_s=usage.ru_utime + usage.ru_stime,  # type: ignore[attr-defined]
        max_rss_bytes=usage.ru_maxrss * 1024,  # type: ignore[attr-defined]  # kB on Linux
        timed_out=timed_out,
    )

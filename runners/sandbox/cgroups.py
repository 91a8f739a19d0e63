"""A cgroup of its own for one run, where the host lets us make one: the run's total
memory and process count, the evidence that it reached them, and a sure way to kill it.

Detected, never assumed: the unified hierarchy (cgroup v2) when our own cgroup may have
children with the ``memory`` and ``pids`` controllers, else the v1 ``memory`` and ``pids``
hierarchies where they are mounted and writable. A host offering neither (a container
with a read-only ``/sys/fs/cgroup``) gets rlimits only (runners/sandbox/limits.py).
A run joins its cgroup before anything of it starts (the first process writes itself
into ``cgroup.procs`` and then ``exec``s the run), so no child escapes it. A run's
cgroup is named after the process that made it (``probewatch-run-<pid>-<n>``): one
left by a harness killed before it could remove it is removed by the next reaper
(:func:`remove_stale`) once it is empty and that process is gone.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from runners.sandbox.limits import Limits, breach_note, describe_bytes

CGROUP_ROOT = Path("/sys/fs/cgroup")
_PREFIX = "probewatch-run-"
_KILL_WAIT_S = 5.0
_numbers = itertools.count()


@dataclass(frozen=True)
class RunCgroup:
    """The cgroup folders of one run: one on cgroup v2, one per controller on v1."""

    memory: Path | None
    pids: Path | None
    limits: Limits
    cpu: Path | None = None  # where the run's CPU time is counted

    @property
    def folders(self) -> tuple[Path, ...]:
        chosen = (self.memory, self.pids, self.cpu)
        return tuple(dict.fromkeys(f for f in chosen if f is not None))

    def usage(self) -> tuple[float, int]:
        """CPU seconds and peak memory of everything the run started (0 where not counted):
        bubblewrap does not wait for the processes it runs, so ``wait4`` never sees them."""
        cpu_s = 0.0
        if self.cpu is not None:
            nanoseconds = _number(self.cpu / "cpuacct.usage")
            cpu_s = (
                nanoseconds / 1e9
                if nanoseconds
                else _counter(self.cpu / "cpu.stat", "usage_usec") / 1e6
            )
        peak = 0
        if self.memory is not None:
            peak = _number(self.memory / "memory.peak") or _number(
                self.memory / "memory.max_usage_in_bytes"
            )
        return cpu_s, peak

    def breaches(self) -> list[str]:
        """Log lines for each limit the run reached: a process killed for memory, a fork
        refused for the process count."""
        notes = []
        if self.memory is not None and _oom_kills(self.memory) > 0:
            notes.append(breach_note("memory", describe_bytes(self.limits.memory)))
        if self.pids is not None and _counter(self.pids / "pids.events", "max") > 0:
            notes.append(breach_note("process", str(self.limits.processes)))
        return notes

    def remove(self) -> None:
        """Kill whatever is left in the cgroup, then remove it."""
        for folder in self.folders:
            _kill_members(folder)
            with contextlib.suppress(OSError):
                folder.rmdir()


def run_cgroup(limits: Limits) -> RunCgroup | None:
    """A new cgroup holding ``limits``' memory and process count; None where the host offers
    no cgroup we may make."""
    name = f"{_PREFIX}{os.getpid()}-{next(_numbers)}"
    unified = _own_folder("")
    if unified is not None and (CGROUP_ROOT / "cgroup.controllers").is_file():
        return _make(unified / name, unified / name, unified / name, limits)
    memory, pids, cpu = (_own_folder(c) for c in ("memory", "pids", "cpuacct"))
    return _make(
        memory / name if memory else None,
        pids / name if pids else None,
        cpu / name if cpu else None,
        limits,
        version=1,
    )


def remove_stale() -> list[Path]:
    """Remove the empty run cgroups, under this process's own cgroups, whose maker is gone;
    the folders removed. A cgroup still holding processes is left to the reaper that stops
    them first (runners.run_registry.reap)."""
    removed = []
    for folder in _stale():
        if members(folder):
            continue
        with contextlib.suppress(OSError):
            folder.rmdir()
            removed.append(folder)
    return removed


def _stale() -> list[Path]:
    owned = (_own_folder(c) for c in ("", "memory", "pids", "cpuacct"))
    found = []
    for parent in dict.fromkeys(p for p in owned if p is not None):
        for folder in sorted(parent.glob(f"{_PREFIX}*")):
            maker = folder.name.removeprefix(_PREFIX).split("-")[0]
            if maker.isdigit() and not _alive(int(maker)):
                found.append(folder)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: alive
    return True


def _make(
    memory: Path | None, pids: Path | None, cpu: Path | None, limits: Limits, *, version: int = 2
) -> RunCgroup | None:
    process_limit = limits.processes if limits.processes is not None else "max"
    made = RunCgroup(
        memory=_limited(memory, _memory_file(version), limits.memory),
        pids=_limited(pids, "pids.max", process_limit),
        limits=limits,
    )
    if not made.folders:
        return None
    counted = cpu if cpu in made.folders else _counting(cpu)
    return RunCgroup(made.memory, made.pids, limits, cpu=counted)


def _counting(folder: Path | None) -> Path | None:
    """A v1 ``cpuacct`` folder of the run's own (no limit is set there)."""
    if folder is None:
        return None
    try:
        folder.mkdir(exist_ok=True)
    except OSError:
        return None
    return folder


def _memory_file(version: int) -> str:
    return "memory.max" if version == 2 else "memory.limit_in_bytes"


def _limited(folder: Path | None, limit_file: str, value: int | str) -> Path | None:
    """``folder`` made with ``value`` written into its ``limit_file``; None where either
    fails (the controller is not offered there, or not to us)."""
    folder = _counting(folder)
    if folder is None:
        return None
    try:
        (folder / limit_file).write_text(str(value))
        if limit_file == "memory.max":  # v2: no swapping around the limit
            with contextlib.suppress(OSError):
                (folder / "memory.swap.max").write_text("0")
    except OSError:
        with contextlib.suppress(OSError):
            folder.rmdir()
        return None
    return folder


def _own_folder(controller: str) -> Path | None:
    """Where this process's cgroup of ``controller`` lives ("": the unified hierarchy)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers.split(",") == ([controller] if controller else [""]):
            mount = CGROUP_ROOT / controller if controller else CGROUP_ROOT
            folder = mount / path.lstrip("/")
            return folder if os.access(folder, os.W_OK) else None
    return None


def _oom_kills(folder: Path) -> int:
    kills = _counter(folder / "memory.events", "oom_kill")
    kills = kills or _counter(folder / "memory.oom_control", "oom_kill")
    return kills


def _number(path: Path) -> int:
    try:
        text = path.read_text().strip()
    except OSError:
        return 0
    return int(text) if text.isdigit() else 0


def _counter(path: Path, key: str) -> int:
    """The value of ``key`` in a cgroup's ``key value`` lines; 0 when absent."""
    try:
        text = path.read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def members(folder: Path) -> list[int]:
    try:
        return [int(pid) for pid in (folder / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def _kill_members(folder: Path) -> None:
    give_up = time.monotonic() + _KILL_WAIT_S
    while (pids := members(folder)) and time.monotonic() < give_up:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)

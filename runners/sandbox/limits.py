"""Resource limits of a sandboxed run: memory, processes, file size and CPU time.

Limits are set two ways. ``rlimit``s (through ``prlimit``, inherited by every process of
the run) bound one process each: its address space, the size of a file it writes and
its CPU time. The process count and the run's total memory need a cgroup
(runners/sandbox/cgroups.py), used where the host lets us make one. Where it does not,
``RLIMIT_NPROC`` stands in for the process limit; it counts every process of the user
on the host, and the kernel does not apply it to root. The address-space limit is left
off for GPU runs: CUDA maps far more address space than it ever uses.

The disk the run fills, all files together, is watched while it runs
(runners/sandbox/disk.py).

A breach ends in a signal or an error the run's own output shows (SIGXCPU, ``File too
large``, ``MemoryError``, ``fork`` refused), or, for a cgroup's limits and the disk, in a
line the sandbox adds to the log: the fault signatures read both
(runners/testrun/faults.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

GIB = 1024**3
LIMIT_NOTE = "[probewatch sandbox] "  # lines the sandbox adds to a run's log; kept for faults
CPU_GRACE_S = 5  # SIGXCPU at the soft limit, SIGKILL this much later


def _half_the_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError):
        return 16 * GIB


@dataclass(frozen=True)
class Limits:
    """What one run may use; None: no limit of that kind."""

    memory_bytes: int | None = None  # default: half of this host's memory
    processes: int | None = 4096  # processes and threads of the run, all together
    file_bytes: int | None = 64 * GIB  # the largest file one process may write
    cpu_s: int | None = 8 * 3600  # CPU time of one process; the run's time limit is wall time
    disk_bytes: int | None = 16 * GIB  # what the run may add under its own folders, all files
    disk_floor_bytes: int | None = 2 * GIB  # the run stops when the host has less free than this

    @property
    def memory(self) -> int:
        return self.memory_bytes if self.memory_bytes is not None else _half_the_memory()


DEFAULT_LIMITS = Limits()


def prlimit_argv(limits: Limits, *, address_space: bool, nproc: bool) -> list[str]:
    """``prlimit`` and its options for ``limits``: the rlimits every process of the run
    inherits. ``address_space``: bound virtual memory too; ``nproc``: bound the process
    count by ``RLIMIT_NPROC`` (no cgroup does it)."""
    options = []
    if address_space:
        options.append(f"--as={limits.memory}")
    if nproc and limits.processes is not None:
        options.append(f"--nproc={limits.processes}")
    if limits.file_bytes is not None:
        options.append(f"--fsize={limits.file_bytes}")
    if limits.cpu_s is not None:
        options.append(f"--cpu={limits.cpu_s}:{limits.cpu_s + CPU_GRACE_S}")
    return ["prlimit", *options, "--"] if options else []


def breach_note(kind: str, limit: str) -> str:
    """The log line saying the run reached one of its cgroup's limits."""
    return f"{LIMIT_NOTE}the run reached its {kind} limit ({limit})"


def describe_bytes(size: int) -> str:
    return f"{size / GIB:g} GiB" if size >= GIB else f"{size // 1024**2} MiB"

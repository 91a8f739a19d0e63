"""The one way a command enters its sandbox: :func:`sandboxed` turns a command line into
the confined one, and after the command has ended notes the limits it reached and removes
its cgroup.

Layers, outermost first: a shell line that moves the command into its cgroup (memory and
process count, where the host offers cgroups), ``prlimit`` (per-process rlimits), then
bubblewrap (namespaces: what the run sees, and a PID namespace whose end is the end of
every process in it). Where bubblewrap cannot run, the limits still apply and the run
is recorded as unsandboxed, with the reason.

Git metadata: a work tree's ``.git`` points into the mirror (a worktree's admin folder, a
shared checkout's alternates), and the mirror holds the future, so it is not shown: git
inside a test run finds no repository. Setup commands that read a version from git
(``setuptools_scm`` in ``pip install -e .``) are given ``SETUPTOOLS_SCM_PRETEND_VERSION``
unless the run sets it. An agent's tree is a repository of its own, and git works there.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from runners.sandbox.bwrap import bwrap_argv, bwrap_refusal
from runners.sandbox.cgroups import RunCgroup, run_cgroup
from runners.sandbox.limits import DEFAULT_LIMITS, Limits, prlimit_argv
from runners.types import Sandboxing, SandboxKind

SCM_VERSION_VARIABLE = "SETUPTOOLS_SCM_PRETEND_VERSION"
SCM_VERSION = "0.0.0"  # a tree seen without its git history has no version of its own
# The first process writes itself into each cgroup named before "--", then becomes the run.
_JOIN_CGROUPS = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'


@dataclass(frozen=True)
class Confinement:
    """What one run may see and use. Paths keep their host paths inside."""

    writable: tuple[Path, ...]  # the work tree, scratch folder, HOME, TMPDIR
    readable: tuple[Path, ...] = ()  # the environment, the asset cache, the agent program
    network: bool = False  # test runs get loopback only; agents reach their model
    gpus: bool = False  # the NVIDIA devices are shown (and no address-space limit is set)
    limits: Limits = field(default_factory=lambda: DEFAULT_LIMITS)
    # Writable too, but the operator's (where runs report), not the run's: not counted
    # against its disk limit.
    shared: tuple[Path, ...] = ()


@dataclass
class Entered:
    argv: list[str]
    sandbox: Sandboxing | None  # None: the command was not confined at all
    env_additions: dict[str, str] = field(default_factory=dict)
    # Set on leaving, where the run's cgroup counted them: its CPU seconds and peak memory.
    usage: tuple[float, int] | None = None


def sandbox_of(confinement: Confinement | None) -> Sandboxing | None:
    """What a run under ``confinement`` is recorded as, before it starts."""
    if confinement is None:
        return None
    refusal = bwrap_refusal()
    if refusal is not None:
        return Sandboxing(SandboxKind.none, refusal)
    return Sandboxing(SandboxKind.namespaces)


@contextmanager
def sandboxed(
    argv: Sequence[str], confinement: Confinement | None, *, cwd: Path, log: IO[bytes]
) -> Iterator[Entered]:
    """``argv`` as it runs under ``confinement`` (unchanged for None). On leaving, the limits
    the run reached are written to ``log`` and its cgroup is emptied and removed."""
    if confinement is None:
        yield Entered(list(argv), None)
        return
    sandbox = sandbox_of(confinement)
    cgroup = run_cgroup(confinement.limits)
    entered = Entered(_wrapped(argv, confinement, cgroup, cwd), sandbox, _env_additions())
    try:
        yield entered
    finally:
        if cgroup is not None:
            entered.usage = cgroup.usage()
            _note(log, cgroup.breaches())
            cgroup.remove()


def _wrapped(
    argv: Sequence[str], confinement: Confinement, cgroup: RunCgroup | None, cwd: Path
) -> list[str]:
    limits = confinement.limits
    memory_cgroup = cgroup is not None and cgroup.memory is not None
    pids_cgroup = cgroup is not None and cgroup.pids is not None
    rlimits = prlimit_argv(
        limits, address_space=not (memory_cgroup or confinement.gpus), nproc=not pids_cgroup
    )
    if rlimits and shutil.which(rlimits[0]) is None:
        rlimits = []  # util-linux is essential on Debian; elsewhere the cgroup limits stand
    wrapped = [*rlimits, *_namespaces(confinement, cwd), *argv]
    if cgroup is None:
        return wrapped
    files = [str(folder / "cgroup.procs") for folder in cgroup.folders]
    return ["/bin/sh", "-c", _JOIN_CGROUPS, "sh", *files, "--", *wrapped]


def _namespaces(confinement: Confinement, cwd: Path) -> list[str]:
    if bwrap_refusal() is not None:
        return []
    return bwrap_argv(
        writable=(*confinement.writable, *confinement.shared),
        readable=confinement.readable,
        cwd=cwd,
        network=confinement.network,
        gpus=confinement.gpus,
    )


def _env_additions() -> dict[str, str]:
    return {SCM_VERSION_VARIABLE: SCM_VERSION} if bwrap_refusal() is None else {}


def _note(log: IO[bytes], lines: list[str]) -> None:
    for line in lines:
        log.write(f"\n{line}\n".encode())
    if lines:
        log.flush()

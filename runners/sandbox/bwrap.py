"""The bubblewrap command line of a confined run, and whether bubblewrap works here.

The run gets a new root of its own: the system's read-only basics (``/usr`` and the
links or folders beside it, ``/etc``, ``/sys``), a fresh ``/proc`` of a new PID
namespace, a minimal ``/dev`` (plus the NVIDIA devices for GPU runs), a private
``/tmp``, and then each of the run's folders at the path it has on the host (so HOME,
TMPDIR and VIRTUAL_ENV keep their values), read-only or writable as given. Nothing else
of the host exists in it. The PID namespace makes bubblewrap's first process its init:
when the run's command ends, or that process is killed, the kernel kills every process
left in the namespace, ``setsid`` children and double-forked daemons included.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

BWRAP = "bwrap"
_SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_READ_ONLY_SYSTEM = ("/usr", "/etc", "/sys")
_NAMESPACES = ("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")
_TRIAL_TIMEOUT_S = 10


@functools.cache
def bwrap_refusal() -> str | None:
    """Why bubblewrap cannot confine runs on this host; None when it can."""
    if shutil.which(BWRAP) is None:
        return "bubblewrap (bwrap) is not installed"
    trial = [BWRAP, "--ro-bind", "/", "/", "--proc", "/proc", *_NAMESPACES, "--unshare-net"]
    try:
        done = subprocess.run(
            [*trial, "--", "true"], capture_output=True, text=True, timeout=_TRIAL_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap cannot start: {exc}"
    if done.returncode != 0:
        return f"bwrap cannot make namespaces here: {done.stderr.strip()[:200]}"
    return None


def bwrap_argv(
    *,
    writable: Iterable[Path],
    readable: Iterable[Path],
    cwd: Path,
    network: bool,
    gpus: bool,
) -> list[str]:
    """bwrap and its options; the command follows."""
    argv = [BWRAP, *_system(), "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm"]
    if gpus:
        argv += [a for dev in sorted(glob.glob("/dev/nvidia*")) for a in ("--dev-bind", dev, dev)]
    argv += ["--tmpfs", "/tmp", *_binds(writable, readable)]
    argv += [*_NAMESPACES, *(() if network else ("--unshare-net",)), "--die-with-parent"]
    return [*argv, "--chdir", str(cwd), "--"]


def _system() -> list[str]:
    argv = []
    for path in _SYSTEM_LINKS:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    for path in _READ_ONLY_SYSTEM:
        argv += ["--ro-bind-try", path, path]
    return argv


def _binds(writable: Iterable[Path], readable: Iterable[Path]) -> list[str]:
    """Bind options, a folder before anything inside it; a path inside a folder already
    bound is shown as that folder shows it (a run's own layer inside its writable scratch
    folder stays writable; nothing can be mounted inside a read-only bind)."""
    modes = {str(p): "--ro-bind-try" for p in readable}
    modes.update({str(p): "--bind-try" for p in writable})
    argv = []
    for path in sorted(modes, key=lambda p: (p.count("/"), p)):
        if not any(str(parent) in modes for parent in Path(path).parents):
            argv += [modes[path], os.path.realpath(path), path]
    return argv

"""Stale cgroups: a harness killed before it removed its run's cgroup leaves
``probewatch-run-<pid>-<n>`` behind; the next reap removes it once it is empty and that
harness is gone, and leaves a live harness's cgroup alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runners.run_registry import reap
from runners.sandbox.cgroups import RunCgroup, run_cgroup
from runners.sandbox.limits import Limits

ROOT = Path(__file__).parents[2]
KILLED = """
import sys, time
from runners.sandbox.cgroups import run_cgroup
from runners.sandbox.limits import Limits
made = run_cgroup(Limits(processes=64))
print(" ".join(str(f) for f in made.folders), flush=True)
time.sleep(600)
"""


def _probe() -> str | None:
    made = run_cgroup(Limits(processes=64))
    if made is None:
        return "this host lets no process make a cgroup (read-only /sys/fs/cgroup)"
    made.remove()
    return None


pytestmark = pytest.mark.skipif(_probe() is not None, reason=str(_probe()))


def test_a_killed_harness_cgroup_is_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    harness = subprocess.Popen(
        [sys.executable, "-c", KILLED], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert harness.stdout is not None
    left = [Path(f) for f in harness.stdout.readline().split()]
    harness.kill()
    harness.wait(10)
    live: RunCgroup | None = run_cgroup(Limits(processes=64))
    assert live is not None
    try:
        assert left and all(folder.is_dir() for folder in left)  # nobody removed it

        reap(tmp_path / "runs")  # no run records: the cgroups alone

        assert [folder for folder in left if folder.exists()] == []
        assert all(folder.is_dir() for folder in live.folders)
    finally:
        live.remove()

"""Hostile tests run for real in the local backend's sandbox: each is contained, reported as
the right fault, and leaves nothing behind.

Each probe is also what an unconfined run would let through (a readable registry, a
secret in the parent's environment, a daemon that outlives the run, no limits): without
the sandbox every assertion below fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runners.backends.local import LocalBackend
from runners.execute import execute
from runners.sandbox import bwrap
from runners.sandbox.limits import Limits
from runners.types import FaultKind, Outcome, RunRequest, RunResult, SandboxKind, TestOverlay
from tests.runner_repos import FixtureRepo, pid_alive, processes_running

pytestmark = pytest.mark.skipif(
    bwrap.bwrap_refusal() is not None, reason=f"no sandbox here: {bwrap.bwrap_refusal()}"
)
SECRET = "pw-secret-7c1d"
MIB = 1024**2


@pytest.fixture
def repo(tmp_path: Path) -> dict[str, Path | str]:
    fixture, base = FixtureRepo.create(tmp_path / "upstream", {"pkg/__init__.py": ""})
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "probewatch.db").write_text("golden patches and probes")
    return {"mirror": fixture.mirror(tmp_path / "mirror.git"), "base": base, "home": home}


def run(repo: dict, tmp_path: Path, tests: str, limits: Limits | None = None) -> RunResult:
    request = RunRequest(
        repo=repo["mirror"],
        base_commit=repo["base"],
        overlay=TestOverlay(files={"tests/test_hostile.py": tests}),
        env={"REGISTRY": str(repo["home"] / "probewatch.db"), "OUTSIDE": str(tmp_path)},
        timeout_run_s=120.0,
        timeout_per_test_s=60.0,
    )
    backend = LocalBackend(
        workspace_root=tmp_path / "runs", gpu_indices=(), limits=limits or Limits()
    )
    return execute(request, backend, workspace_root=tmp_path / "runs", retries=0)


def outcomes(result: RunResult) -> dict[str, str]:
    return {t.node_id.rpartition("::")[2]: t.status.value for t in result.tests}


CONTAINED = """
import os, subprocess, sys
from pathlib import Path

def test_the_parents_environment_holds_no_secret():
    environ = Path(f"/proc/{os.getppid()}/environ").read_bytes()
    every = b"".join(p.read_bytes() for p in Path("/proc").glob("[0-9]*/environ"))
    assert b"SECRET_MARK" not in environ and b"SECRET_MARK" not in every

def test_the_registry_is_not_there():
    assert not Path(os.environ["REGISTRY"]).exists()
    assert not Path(os.environ["REGISTRY"]).parent.exists()

def test_a_write_outside_the_tree_never_reaches_the_host():
    target = Path(os.environ["OUTSIDE"]) / "escaped.txt"
    try:
        target.write_text("out")
    except OSError:
        pass

def test_a_setsid_daemon_is_started():
    code = "import time; time.sleep(300)"
    subprocess.Popen(["setsid", sys.executable, "-c", code, "pw-daemon-mark"],
                     start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
"""


def test_secrets_registry_writes_and_daemons_are_contained(repo: dict, tmp_path: Path) -> None:
    """The harness runs in a process whose environment holds a secret, as `serve` did."""
    code = (
        "import json, sys\nfrom pathlib import Path\n"
        "from tests.sandbox.test_sandbox_contains_runs import run, outcomes\n"
        "repo = json.loads(sys.argv[1])\nrepo = {k: (v if k == 'base' else Path(v)) for k, v in repo.items()}\n"
        "result = run(repo, Path(sys.argv[2]), sys.argv[3])\n"
        "print(json.dumps({'tests': outcomes(result), 'sandbox': result.sandbox.kind}))\n"
    )
    tests = CONTAINED.replace("SECRET_MARK", SECRET)
    env = {**os.environ, "PROBEWATCH_GITHUB_TOKEN": SECRET, "PROBEWATCH_WEBHOOK_SECRET": SECRET}
    args = [json.dumps({k: str(v) for k, v in repo.items()}), str(tmp_path), tests]
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["sandbox"] == SandboxKind.namespaces
    assert set(seen["tests"].values()) == {"passed"}, seen
    assert not (tmp_path / "escaped.txt").exists()
    assert not [pid for pid in processes_running("pw-daemon-mark") if pid_alive(pid)]


MEMORY = """
def test_allocates_past_the_limit():
    block = bytearray(512 * 1024 * 1024)
    assert block
"""

FORKS = """
import os, time

def test_forks_a_thousand_processes():
    children = []
    for _ in range(1000):
        pid = os.fork()
        if pid == 0:
            os.execvp("sleep", ["sleep", "123.5"])
        children.append(pid)
"""

FILE_SIZE = """
def test_writes_a_file_past_the_limit():
    with open("big.bin", "wb") as out:
        out.write(b"x" * (4 * 1024 * 1024))
"""

CPU = """
def test_spins_past_the_cpu_limit():
    while True:
        pass
"""


@pytest.mark.parametrize(
    ("tests", "limits", "kind"),
    [
        (MEMORY, Limits(memory_bytes=256 * MIB), FaultKind.memory_limit),
        (FORKS, Limits(processes=64), FaultKind.process_limit),
        (FILE_SIZE, Limits(file_bytes=1 * MIB), FaultKind.file_limit),
        (CPU, Limits(cpu_s=2), FaultKind.cpu_limit),
    ],
    ids=["memory", "processes", "file_size", "cpu_time"],
)
def test_a_breached_limit_is_a_fault_of_its_own_kind(
    repo: dict, tmp_path: Path, tests: str, limits: Limits, kind: FaultKind
) -> None:
    result = run(repo, tmp_path, tests, limits)
    faults = [t.fault.kind for t in result.tests if t.fault] + (
        [result.fault.kind] if result.fault else []
    )
    assert kind in faults, (result.outcome, result.fault, result.tests, result.log[-2000:])
    assert not [pid for pid in processes_running("sleep 123.5") if pid_alive(pid)]
    assert not list((tmp_path / "runs").glob("run-*"))  # the run's folder is gone


def test_within_its_limits_a_run_passes_and_is_recorded_as_sandboxed(
    repo: dict, tmp_path: Path
) -> None:
    tests = "def test_small():\n    assert bytearray(16 * 1024 * 1024)\n"
    result = run(repo, tmp_path, tests, Limits(memory_bytes=256 * MIB, processes=64))
    assert result.outcome is Outcome.completed and outcomes(result) == {"test_small": "passed"}
    assert result.sandbox is not None and result.sandbox.kind is SandboxKind.namespaces


def test_without_bubblewrap_a_run_says_it_was_not_sandboxed(
    repo: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-bwrap"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}:{Path(sys.executable).parent}:/usr/bin:/bin")
    monkeypatch.setattr(bwrap, "BWRAP", "bwrap-that-is-not-installed")
    bwrap.bwrap_refusal.cache_clear()
    try:
        result = run(repo, tmp_path, "def test_it():\n    pass\n")
    finally:
        bwrap.bwrap_refusal.cache_clear()
    assert result.outcome is Outcome.completed
    assert result.sandbox is not None and result.sandbox.kind is SandboxKind.none
    assert "not installed" in result.sandbox.reason


DISK = """
import os, time

def test_fills_the_disk_a_file_at_a_time_each_below_the_file_limit():
    for n in range(6):
        with open(os.path.join(os.environ["TMPDIR"], f"ckpt-{n}.bin"), "wb") as out:
            out.write(os.urandom(2 * 1024 * 1024))
    time.sleep(30)  # unwatched, the test passes after this
"""


def test_files_past_the_disk_limit_stop_the_run_as_a_disk_limit_fault(
    repo: dict, tmp_path: Path
) -> None:
    limits = Limits(file_bytes=4 * MIB, disk_bytes=8 * MIB)
    started = time.monotonic()
    result = run(repo, tmp_path, DISK, limits)
    assert time.monotonic() - started < 28  # stopped, not waited out
    faults = [t.fault.kind for t in result.tests if t.fault] + (
        [result.fault.kind] if result.fault else []
    )
    assert FaultKind.disk_limit in faults, (result.outcome, result.tests, result.log[-2000:])
    assert not list((tmp_path / "runs").glob("run-*"))

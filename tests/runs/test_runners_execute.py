"""execute(): work tree → patches → overlay → setup → pytest → faults → retries, end to end."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from runners.backends.local import LocalBackend
from runners.backends.placement import marked_gpus
from runners.execute import execute, required_hardware
from runners.testrun.pytest_run import PytestInvocation, PytestReport
from runners.types import (
    Capacity,
    EnvironmentRef,
    Fault,
    FaultKind,
    Hardware,
    Outcome,
    PatchSpec,
    RunRequest,
    RunResult,
    TestCaseResult,
    TestOverlay,
    TestStatus,
)
from runners.workspace import WorkspaceMode, workspace
from tests.runner_repos import FixtureRepo, git, pid_alive, processes_running, worktrees

BUGGY = "def add(a, b):\n    return a - b\n\n\nclass Counter:\n    def __init__(self):\n        self.calls = 0\n"
FIXED = "def add(a, b):\n    return a + b\n\n\nclass Counter:\n    def __init__(self):\n        self.calls = 0\n"
OLD_TEST = "from pkg.calc import add\n\n\ndef test_add_old():\n    assert add(1, 0) == 1\n"
NEW_TEST = "from pkg.calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PROBE_PATH = "tests/probes/test_probe_calc.py"
PROBE = """
import os, subprocess
from pathlib import Path

from pkg.calc import add


def test_probe_add_twice():
    assert add(add(1, 2), 3) == 6


def test_probe_is_in_no_commit_and_no_index():
    here = Path(__file__).resolve()
    Path(os.environ["RECORD"]).write_text(str(here))
    tracked = subprocess.run(["git", "ls-files", "--error-unmatch", str(here)], capture_output=True)
    assert tracked.returncode != 0
"""


@pytest.fixture
def task(tmp_path: Path) -> dict:
    repo, base = FixtureRepo.create(
        tmp_path / "upstream",
        {"pkg/__init__.py": "", "pkg/calc.py": BUGGY, "tests/test_calc.py": OLD_TEST},
    )
    fixed = repo.commit({"pkg/calc.py": FIXED}, "fix")
    mirror = repo.mirror(tmp_path / "mirror.git")
    return {
        "mirror": mirror,
        "base": base,
        "golden": repo.diff(base, fixed),
        "root": tmp_path / "runs",
        # Runs are sandboxed: what a test reports to the host goes to a folder the backend
        # shares with every run.
        "record": _shared(tmp_path) / "record.txt",
        "overlay": TestOverlay(
            replace_dirs=("tests",),
            files={"tests/test_calc.py": NEW_TEST},
            probes={PROBE_PATH: PROBE},
        ),
    }


def _shared(tmp_path: Path) -> Path:
    folder = tmp_path / "shared"
    folder.mkdir(exist_ok=True)
    return folder


def backend_for(task: dict, **options: object) -> LocalBackend:
    return LocalBackend(
        workspace_root=task["root"],
        gpu_indices=(),
        shared=(task["record"].parent,),
        **options,  # type: ignore[arg-type]
    )


def request_for(task: dict, *patches: PatchSpec, **options: object) -> RunRequest:
    env = {"RECORD": str(task["record"]), **options.pop("env", {})}  # type: ignore[dict-item]
    return RunRequest(
        repo=task["mirror"],
        base_commit=task["base"],
        patches=patches,
        overlay=options.pop("overlay", task["overlay"]),  # type: ignore[arg-type]
        env=env,
        timeout_run_s=options.pop("timeout_run_s", 120.0),  # type: ignore[arg-type]
        **options,  # type: ignore[arg-type]
    )


def run(task: dict, request: RunRequest, **options: object) -> RunResult:
    backend = backend_for(task, cpu_slots=2)
    result = execute(request, backend, workspace_root=task["root"], **options)  # type: ignore[arg-type]
    assert leftovers(task["root"]) == []  # every attempt's tree removed
    assert worktrees(task["mirror"]) == [str(task["mirror"])]
    return result


def leftovers(root: Path) -> list[Path]:
    return list(root.iterdir()) if root.exists() else []


def outcome_map(result: RunResult) -> dict[str, str]:
    return {t.node_id: t.status.value for t in result.tests}


def test_the_golden_patch_passes_the_post_change_tests_and_the_probes(task: dict) -> None:
    result = run(task, request_for(task, PatchSpec(name="golden", diff=task["golden"])))
    assert result.outcome is Outcome.completed and result.attempts == 1
    assert outcome_map(result) == {
        "tests/test_calc.py::test_add": "passed",
        f"{PROBE_PATH}::test_probe_add_twice": "passed",
        f"{PROBE_PATH}::test_probe_is_in_no_commit_and_no_index": "passed",
    }
    assert {t.node_id for t in result.tests if t.is_probe} == {
        f"{PROBE_PATH}::test_probe_add_twice",
        f"{PROBE_PATH}::test_probe_is_in_no_commit_and_no_index",
    }
    assert result.resources.wall_s > 0 and result.resources.peak_rss_bytes > 0


def test_the_pre_change_snapshot_fails_them(task: dict) -> None:
    result = run(task, request_for(task))
    assert result.outcome is Outcome.completed
    assert outcome_map(result)["tests/test_calc.py::test_add"] == "failed"
    assert outcome_map(result)[f"{PROBE_PATH}::test_probe_add_twice"] == "failed"
    assert result.passed == {f"{PROBE_PATH}::test_probe_is_in_no_commit_and_no_index"}


@pytest.mark.parametrize("mode", list(WorkspaceMode))
def test_probes_exist_only_in_the_grading_run(task: dict, mode: WorkspaceMode) -> None:
    # The agent's tree: the base commit plus its patch. No probe, no test overlay.
    with workspace(task["mirror"], task["base"], root=task["root"], mode=mode) as ws:
        assert not (ws.tree / PROBE_PATH).exists()
        assert (ws.tree / "tests/test_calc.py").read_text() == OLD_TEST
    history = git(task["mirror"], "log", "--all", "-p")
    assert "test_probe_add_twice" not in history
    # The grading run sees the probe, from a tree that is gone afterwards.
    result = run(task, request_for(task, PatchSpec(name="golden", diff=task["golden"])), mode=mode)
    assert result.outcome is Outcome.completed and len(result.passed) == 3
    probe_file = Path(task["record"].read_text())
    assert probe_file.name == "test_probe_calc.py" and not probe_file.exists()
    assert "test_probe_add_twice" not in git(task["mirror"], "log", "--all", "-p")


def test_a_submission_touching_tests_is_refused_and_nothing_runs(
    task: dict, tmp_path: Path
) -> None:
    cheat = (
        "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n"
        "+++ b/tests/test_calc.py\n@@ -2,4 +2,4 @@ from pkg.calc import add\n \n \n"
        " def test_add_old():\n-    assert add(1, 0) == 1\n+    assert True\n"
    )
    spec = PatchSpec(name="submission", diff=cheat, forbid_test_changes=True)
    result = run(task, request_for(task, spec))
    assert result.outcome is Outcome.refused and result.tests == ()
    assert "changes the test file tests/test_calc.py" in result.detail
    assert not task["record"].exists()


def test_a_patch_that_does_not_apply_is_unappliable_with_gits_reason(task: dict) -> None:
    stale = task["golden"].replace("return a - b", "return a * b")
    result = run(task, request_for(task, PatchSpec(name="adversarial-1", diff=stale)))
    assert result.outcome is Outcome.unappliable
    assert "adversarial-1" in result.detail and "patch does not apply" in result.detail


def test_a_failing_setup_command_is_an_environment_fault_not_retried(task: dict) -> None:
    result = run(task, request_for(task, setup_commands=("exit 7",)))
    assert result.outcome is Outcome.fault and result.attempts == 1
    assert result.fault is not None and result.fault.kind is FaultKind.environment_build
    assert "exit 7" in result.fault.detail and "status 7" in result.fault.detail


def test_a_setup_command_quoting_a_fault_is_judged_by_its_output_not_its_text(task: dict) -> None:
    result = run(
        task, request_for(task, setup_commands=("true || echo 'No space left on device'; exit 2",))
    )
    assert result.outcome is Outcome.fault and result.attempts == 1
    assert result.fault is not None and result.fault.kind is FaultKind.environment_build


def test_a_transient_system_fault_is_retried_in_a_fresh_tree(task: dict, tmp_path: Path) -> None:
    flag = task["record"].parent / "failed-once"
    once = f"if [ ! -e {flag} ]; then touch {flag}; echo 'No space left on device' >&2; exit 1; fi"
    result = run(
        task,
        request_for(task, PatchSpec(name="golden", diff=task["golden"]), setup_commands=(once,)),
    )
    assert result.outcome is Outcome.completed and result.attempts == 2
    assert len(result.passed) == 3


def test_a_lasting_system_fault_is_returned_after_the_retries(task: dict) -> None:
    full = "echo 'OSError: [Errno 28] No space left on device' >&2; exit 1"
    result = run(task, request_for(task, setup_commands=(full,)), retries=2)
    assert result.outcome is Outcome.fault and result.attempts == 3
    assert result.fault is not None and result.fault.kind is FaultKind.disk_full


def test_a_missing_asset_in_a_test_is_a_fault_naming_it(task: dict) -> None:
    offline = (
        "def test_loads_the_tokenizer():\n"
        "    raise OSError(\"We couldn't connect to 'https://huggingface.co' to load this file, "
        "couldn't find it in the cached files and it looks like Qwen/Qwen2.5-0.5B is not the path "
        'to a directory containing a file named tokenizer.json.")\n'
    )
    overlay = TestOverlay(files={"tests/test_tok.py": offline})
    result = run(task, request_for(task, overlay=overlay))
    assert result.outcome is Outcome.fault and result.attempts == 1
    assert result.fault is not None and result.fault.kind is FaultKind.missing_asset
    assert "Qwen/Qwen2.5-0.5B" in result.fault.detail
    assert result.status_of("tests/test_tok.py::test_loads_the_tokenizer") == "failed"


def test_a_missing_model_under_home_is_named_as_the_curator_would_add_it(task: dict) -> None:
    local = (
        "import os\n\n"
        "def test_loads_the_local_model():\n"
        "    path = os.path.expanduser('~/models/Qwen/tiny')\n"
        "    raise OSError(f\"Incorrect path_or_model_id: '{path}'. Please provide either the "
        'path to a local folder or the repo_id of a model on the Hub.")\n'
    )
    overlay = TestOverlay(files={"tests/test_local.py": local})
    result = run(task, request_for(task, overlay=overlay))
    assert result.fault is not None and result.fault.kind is FaultKind.missing_asset
    assert "offline mode): ~/models/Qwen/tiny" in result.fault.detail


@pytest.mark.parametrize("known", [True, False])
def test_a_module_the_environment_cannot_provide_is_its_fault_not_the_patchs(
    task: dict, known: bool
) -> None:
    needs = "import gpu_only_engine.entrypoints\n\ndef test_cli():\n    pass\n"
    unavailable = {"gpu_only_engine": "the repository's environment config excludes vllm"}
    environment = EnvironmentRef(
        lock_hash="abc123",
        root=Path(sys.prefix),
        python=Path(sys.executable),
        unavailable=unavailable if known else {},
    )
    overlay = TestOverlay(files={"tests/test_cli.py": needs})
    result = run(task, request_for(task, overlay=overlay, environment=environment))
    if known:
        assert result.outcome is Outcome.fault and result.fault is not None
        assert result.fault.kind is FaultKind.environment_build and not result.fault.retryable
        assert "cannot provide 'gpu_only_engine'" in result.fault.detail
        assert "excludes vllm" in result.fault.detail
    else:  # an import the environment was never asked for: the patch's own failure
        assert result.outcome is Outcome.completed and result.fault is None
    assert result.status_of("tests/test_cli.py") == "error"


CUDA_GUARD = (
    "import torch\n\n"
    "def test_on_cpu():\n    assert torch.zeros(2).sum().item() == 0\n\n"
    "def test_needs_a_gpu():\n    assert torch.cuda.is_available()\n"
)


def test_a_test_that_needs_a_gpu_carries_the_fault_while_its_neighbours_run(task: dict) -> None:
    overlay = TestOverlay(files={"tests/test_mixed.py": CUDA_GUARD})
    result = run(task, request_for(task, overlay=overlay))

    assert result.outcome is Outcome.completed and result.fault is None
    by_node = {t.node_id: t for t in result.tests}
    cpu, gpu = (
        by_node["tests/test_mixed.py::test_on_cpu"],
        by_node["tests/test_mixed.py::test_needs_a_gpu"],
    )
    assert cpu.status == "passed" and cpu.fault is None
    assert gpu.status == "failed" and gpu.fault is not None
    assert gpu.fault.kind is FaultKind.needs_gpu and not gpu.fault.retryable


def test_a_run_whose_only_tests_need_a_gpu_is_a_needs_gpu_fault(task: dict) -> None:
    only = "import torch\n\ndef test_needs_a_gpu():\n    torch.zeros(1).cuda()\n"
    overlay = TestOverlay(files={"tests/test_gpu.py": only})
    result = run(task, request_for(task, overlay=overlay))

    assert result.outcome is Outcome.fault and result.fault is not None
    assert result.fault.kind is FaultKind.needs_gpu and result.attempts == 1
    assert result.tests[0].fault is not None


def test_a_genuine_failure_beside_a_gpu_test_is_the_patchs(task: dict) -> None:
    genuine = "def test_wrong():\n    assert 1 + 1 == 3\n"
    overlay = TestOverlay(files={"tests/test_mixed.py": CUDA_GUARD, "tests/test_wrong.py": genuine})
    result = run(task, request_for(task, overlay=overlay))

    assert result.outcome is Outcome.completed and result.fault is None
    wrong = next(t for t in result.tests if t.node_id.endswith("test_wrong"))
    assert wrong.status == "failed" and wrong.fault is None


def test_the_run_time_limit_gives_the_timeout_outcome(task: dict) -> None:
    overlay = TestOverlay(
        files={"tests/test_hang.py": "import time\n\ndef test_hang():\n    time.sleep(120)\n"}
    )
    result = run(task, request_for(task, overlay=overlay, timeout_run_s=3.0))
    assert result.outcome is Outcome.timeout and result.attempts == 1
    assert "tests/test_hang.py::test_hang" in result.detail
    assert result.status_of("tests/test_hang.py::test_hang") == "timeout"


def test_named_tests_are_the_only_ones_run(task: dict) -> None:
    result = run(
        task,
        request_for(
            task,
            PatchSpec(name="golden", diff=task["golden"]),
            tests=(f"{PROBE_PATH}::test_probe_add_twice",),
        ),
    )
    assert outcome_map(result) == {f"{PROBE_PATH}::test_probe_add_twice": "passed"}


def test_a_full_suite_run_runs_the_repositorys_tests_and_the_probes(task: dict) -> None:
    result = run(
        task, request_for(task, PatchSpec(name="golden", diff=task["golden"]), full_suite=True)
    )
    assert set(outcome_map(result)) == {
        "tests/test_calc.py::test_add",
        f"{PROBE_PATH}::test_probe_add_twice",
        f"{PROBE_PATH}::test_probe_is_in_no_commit_and_no_index",
    }


def test_a_shared_environment_is_used_and_scrubbed(task: dict) -> None:
    dump = (
        "import json, os, sys\nfrom pathlib import Path\n\n"
        "def test_dump():\n"
        "    Path(os.environ['RECORD']).write_text(json.dumps({'env': dict(os.environ), 'exe': sys.executable}))\n"
    )
    environment = EnvironmentRef(
        lock_hash="abc123",
        root=Path(sys.prefix),
        python=Path(sys.executable),
        env={"HF_HUB_OFFLINE": "1", "HF_HOME": "/cache/hf", "HF_TOKEN": "hf_secret"},
    )
    request = request_for(
        task,
        overlay=TestOverlay(files={"tests/test_env.py": dump}),
        environment=environment,
        env={"GITHUB_TOKEN": "ghs_x", "TASK_FLAG": "on"},
    )
    assert run(task, request).outcome is Outcome.completed
    seen = json.loads(task["record"].read_text())
    assert seen["exe"] == sys.executable
    env = seen["env"]
    assert (
        env["HF_HUB_OFFLINE"] == "1" and env["HF_HOME"] == "/cache/hf" and env["TASK_FLAG"] == "on"
    )
    assert env["VIRTUAL_ENV"] == sys.prefix and env["PATH"].startswith(
        str(Path(sys.executable).parent)
    )
    assert "HF_TOKEN" not in env and "GITHUB_TOKEN" not in env
    assert env["CUDA_VISIBLE_DEVICES"] == ""


def test_probes_needing_more_gpus_than_the_backend_has_are_unschedulable(task: dict) -> None:
    gpu_probe = "import pytest\n\n@pytest.mark.probe_gpu(2)\ndef test_two_ranks():\n    pass\n"
    overlay = TestOverlay(probes={"tests/probes/test_probe_dp.py": gpu_probe})
    result = run(task, request_for(task, overlay=overlay))
    assert result.outcome is Outcome.unschedulable and result.attempts == 0
    assert "2 GPU(s)" in result.detail and result.tests == ()
    assert not task["root"].exists()  # no tree was even made


class _Interrupting(LocalBackend):
    """A local backend whose test run is interrupted (Ctrl-C) or fails mid-way."""

    def __init__(self, error: BaseException, **options: object) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        self.error = error
        self.trees: list[Path] = []

    def run_tests(self, invocation: PytestInvocation, hardware: Hardware) -> PytestReport:
        self.trees.append(invocation.tree)
        assert (invocation.tree / PROBE_PATH).is_file()
        raise self.error


@pytest.mark.parametrize("error", [KeyboardInterrupt(), RuntimeError("harness bug")])
def test_the_tree_is_removed_when_the_run_is_interrupted(task: dict, error: BaseException) -> None:
    backend = _Interrupting(error, workspace_root=task["root"], gpu_indices=())
    with pytest.raises(type(error)):
        execute(request_for(task), backend, workspace_root=task["root"])
    assert backend.trees and not backend.trees[0].exists()
    assert leftovers(task["root"]) == []
    assert worktrees(task["mirror"]) == [str(task["mirror"])]


def test_ctrl_c_during_a_real_run_stops_its_processes_and_removes_its_tree(task: dict) -> None:
    hang = (
        "import os, subprocess, time\nfrom pathlib import Path\n\n"
        "def test_hangs():\n"
        "    child = subprocess.Popen(['sleep', '299.25'])\n"
        "    Path(os.environ['RECORD']).write_text(f'{os.getpid()} {child.pid}')\n"
        "    time.sleep(300)\n"
    )
    request = request_for(task, overlay=TestOverlay(files={"tests/test_hang.py": hang}))
    backend = backend_for(task)
    running = threading.Event()

    def press_ctrl_c_once_the_test_runs() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not running.is_set():
            record = task["record"]
            if record.exists() and len(record.read_text().split()) == 2:
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.05)

    # Ctrl-C as a terminal delivers it, whatever the process running this test did with SIGINT.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupt = threading.Thread(target=press_ctrl_c_once_the_test_runs, daemon=True)
    interrupt.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            execute(request, backend, workspace_root=task["root"])
    finally:
        running.set()
        interrupt.join(5)
        signal.signal(signal.SIGINT, previous)
    # Process ids inside the run's PID namespace are not the host's: look for the child itself.
    assert len(task["record"].read_text().split()) == 2
    assert not [pid for pid in processes_running("sleep 299.25") if pid_alive(pid)]
    assert leftovers(task["root"]) == []
    assert worktrees(task["mirror"]) == [str(task["mirror"])]


class _Remote:
    """A backend that runs elsewhere (as the Docker and Actions backends do): no run_tests."""

    name = "remote"

    def __init__(self, results: list[RunResult]) -> None:
        self.results = results
        self.requests: list[RunRequest] = []

    def capacity(self) -> Capacity:
        return Capacity(cpu_slots=1, gpus=8, gpu_type="H100")

    def run(self, request: RunRequest) -> RunResult:
        self.requests.append(request)
        return self.results[len(self.requests) - 1]


def test_a_remote_backend_gets_the_request_with_its_hardware_and_bounded_retries(
    task: dict,
) -> None:
    lost = RunResult(outcome=Outcome.fault, fault=Fault(FaultKind.runner_lost, "gone", True))
    remote = _Remote([lost, RunResult(outcome=Outcome.completed)])
    gpu_probe = "import pytest\n\npytestmark = pytest.mark.probe_gpu(n=4)\n"
    request = request_for(task, overlay=TestOverlay(probes={"tests/probes/test_p.py": gpu_probe}))
    result = execute(request, remote, workspace_root=task["root"])
    assert result.outcome is Outcome.completed and result.attempts == 2
    assert [r.hardware.gpus for r in remote.requests] == [4, 4]


@pytest.mark.parametrize(
    ("source", "gpus"),
    [
        ("import pytest\n\n@pytest.mark.probe_gpu(2)\ndef test_a():\n    pass\n", 2),
        ("from pytest import mark\n\n@mark.probe_gpu(n=8)\ndef test_a():\n    pass\n", 8),
        ("import pytest\npytestmark = [pytest.mark.probe_gpu]\n", 1),
        (
            "import pytest\n\n@pytest.mark.probe_gpu(1)\ndef a():\n    pass\n@pytest.mark.probe_gpu(4)\ndef b():\n    pass\n",
            4,
        ),
        ("# pytest.mark.probe_gpu(8) in a comment does not count\ndef test_a():\n    pass\n", 0),
        ("x = 'probe_gpu(8)'\n", 0),
        ("def broken(:\n", 0),
    ],
)
def test_probe_gpu_marks_are_read_without_running_the_code(source: str, gpus: int) -> None:
    assert marked_gpus(source) == gpus


def test_the_request_hardware_is_kept_when_it_asks_for_more() -> None:
    probe = {"p/test_p.py": "import pytest\npytestmark = pytest.mark.probe_gpu(2)\n"}
    request = RunRequest(
        repo=Path("."),
        base_commit="HEAD",
        overlay=TestOverlay(probes=probe),
        hardware=Hardware(gpus=8, gpu_type="H100"),
    )
    assert required_hardware(request) == Hardware(gpus=8, gpu_type="H100")
    smaller = RunRequest(
        repo=Path("."),
        base_commit="HEAD",
        overlay=TestOverlay(probes=probe),
        hardware=Hardware(gpu_type="H100"),
    )
    assert required_hardware(smaller) == Hardware(gpus=2, gpu_type="H100")


def test_concurrent_runs_share_the_mirror_safely(task: dict) -> None:
    results: list[RunResult] = []
    backend = backend_for(task, cpu_slots=2)
    golden = request_for(task, PatchSpec(name="golden", diff=task["golden"]))

    def one() -> None:
        results.append(execute(golden, backend, workspace_root=task["root"]))

    threads = [threading.Thread(target=one) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.outcome for r in results] == [Outcome.completed] * 3
    assert all(len(r.passed) == 3 for r in results)
    assert leftovers(task["root"]) == [] and worktrees(task["mirror"]) == [str(task["mirror"])]


def test_setup_commands_install_into_a_per_run_overlay_not_the_shared_environment(
    task: dict, tmp_path: Path
) -> None:
    """Regression: setup ran the shared environment's interpreter, so `pip install -e .` wrote
    into the environment every other run shares (root ignores its read-only bits)."""
    import subprocess

    shared = tmp_path / "shared-env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(shared)], check=True)
    ref = EnvironmentRef(lock_hash="h", root=shared, python=shared / "bin" / "python")
    where = task["record"].parent / "prefix.txt"
    setup = f"python -c \"import sys; open('{where}', 'w').write(sys.prefix)\""
    run(task, request_for(task, environment=ref, setup_commands=(setup,)), retries=0)
    prefix = Path(where.read_text())
    assert prefix != shared
    assert prefix.name == "venv"
    assert not prefix.is_relative_to(shared)


def test_setup_commands_without_an_environment_never_touch_probewatchs_interpreter(
    task: dict, tmp_path: Path
) -> None:
    """A repository served by the host interpreter (the demo) still installs itself into the
    run's own layer: `pip install -e .` must not land in probewatch's environment."""
    where = task["record"].parent / "prefix.txt"
    setup = f"python -c \"import sys; open('{where}', 'w').write(sys.prefix)\""
    check = (
        "import torch\n\ndef test_sees_the_host_packages():\n    assert torch.zeros(1).sum() == 0\n"
    )
    overlay = TestOverlay(files={"tests/test_host.py": check})
    result = run(task, request_for(task, overlay=overlay, setup_commands=(setup,)), retries=0)
    prefix = Path(where.read_text())
    assert prefix != Path(sys.prefix) and prefix.name == "venv"
    assert result.status_of("tests/test_host.py::test_sees_the_host_packages") == "passed"


SOCKET_AND_HOME_TEST = """
import os, socket
from pathlib import Path


def test_a_socket_deep_under_tmpdir_binds():
    # Ray makes ray/session_<date>_<pid>/sockets/plasma_store under TMPDIR.
    folder = Path(os.environ["TMPDIR"]) / "ray" / "session_2026-11-30_00-52-26_123456_12345" / "sockets"
    folder.mkdir(parents=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "plasma_store"))
    server.close()
    Path(os.environ["RECORD"]).write_text(os.environ["TMPDIR"])


def test_the_asset_caches_home_entries_are_in_home():
    config = Path("~/models/Qwen/tiny/config.json").expanduser()
    assert config.read_text() == "{}"
"""


def test_a_deep_workspace_root_still_gives_runs_a_short_tmpdir_and_the_home_assets(
    task: dict, tmp_path: Path
) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    assets = tmp_path / "assets"
    (assets / "home" / "models" / "Qwen" / "tiny").mkdir(parents=True)
    (assets / "home" / "models" / "Qwen" / "tiny" / "config.json").write_text("{}")
    environment = EnvironmentRef(
        lock_hash="abc123",
        root=Path(sys.prefix),
        python=Path(sys.executable),
        assets=assets,
    )
    request = request_for(
        {**task, "root": deep},
        overlay=TestOverlay(files={"tests/test_sock.py": SOCKET_AND_HOME_TEST}),
        environment=environment,
    )
    result = run({**task, "root": deep}, request)
    assert outcome_map(result) == {
        "tests/test_sock.py::test_a_socket_deep_under_tmpdir_binds": "passed",
        "tests/test_sock.py::test_the_asset_caches_home_entries_are_in_home": "passed",
    }
    tmpdir = Path(task["record"].read_text())
    assert len(str(tmpdir)) < 40 and not tmpdir.exists()  # short, and removed with the run
    assert (assets / "home" / "models" / "Qwen" / "tiny" / "config.json").is_file()


LEAKS_AFTER_A_FAULT = """
import os

STATE = {}


def test_1_the_machine_fails():
    STATE["cluster"] = "up"  # started, and never shut down: the test dies first
    raise RuntimeError("No CUDA GPUs are available")


def test_2_passes_alone():
    assert "cluster" not in STATE, "Maybe you called init twice by accident?"


def test_3_fails_alone_too():
    assert 1 + 1 == 3
"""


def test_a_test_failing_after_a_machine_fault_is_judged_alone(task: dict) -> None:
    overlay = TestOverlay(files={"tests/test_leaks.py": LEAKS_AFTER_A_FAULT})
    result = run(task, request_for(task, overlay=overlay))

    by_node = {t.node_id.rpartition("::")[2]: t for t in result.tests}
    assert by_node["test_1_the_machine_fails"].fault is not None  # needs_gpu: waits elsewhere
    assert by_node["test_2_passes_alone"].status == "passed"  # its neighbour's doing, not its own
    wrong = by_node["test_3_fails_alone_too"]
    assert wrong.status == "failed" and wrong.fault is None  # alone it still fails: the patch's
    assert result.outcome is Outcome.completed and "run again without it" in result.detail


CASCADE_AFTER_A_FAULT = """
from pathlib import Path

STATE = {}
Path({record!r}).open("a").write("session\\n")  # once per pytest session


def test_0_the_machine_fails():
    STATE["cluster"] = "up"
    raise RuntimeError("No CUDA GPUs are available")


def test_1_cascade():
    assert "cluster" not in STATE, "init twice"


def test_2_cascade():
    assert "cluster" not in STATE, "init twice"


def test_3_cascade():
    assert "cluster" not in STATE, "init twice"
"""


def test_tests_failing_after_a_fault_are_run_again_together_in_one_session(
    task: dict, tmp_path: Path
) -> None:
    record = task["record"].parent / "sessions.log"
    code = CASCADE_AFTER_A_FAULT.replace("{record!r}", repr(str(record)))
    result = run(task, request_for(task, overlay=TestOverlay(files={"tests/test_c.py": code})))

    statuses = {t.node_id.rpartition("::")[2]: t.status for t in result.tests}
    assert [statuses[f"test_{i}_cascade"] for i in (1, 2, 3)] == ["passed"] * 3
    # The run and one session for the three together; one per test would make four.
    assert record.read_text().count("session") == 2


MODULE_MISSING_MID_TEST = """
STATE = {}


def test_0_starts_the_rollout():
    STATE["cluster"] = "up"  # started, and never shut down: the import below fails first
    import a_transport_nobody_installed  # noqa: F401


def test_1_cascade():
    assert "cluster" not in STATE, "init twice"
"""


@pytest.mark.parametrize("trusted", [True, False])
def test_a_module_a_golden_test_imports_while_it_runs_is_the_environments_fault(
    task: dict, trusted: bool
) -> None:
    """The golden patch is right by definition: a module its test cannot import mid-run is
    the environment's, and the test that failed after it is run again without it. Any
    other patch (an agent's) owns its imports."""
    overlay = TestOverlay(files={"tests/test_m.py": MODULE_MISSING_MID_TEST})
    result = run(task, replace(request_for(task, overlay=overlay), trusted=trusted))

    by_node = {t.node_id.rpartition("::")[2]: t for t in result.tests}
    fault = by_node["test_0_starts_the_rollout"].fault
    if trusted:
        assert fault is not None and fault.kind is FaultKind.environment_build
        assert "'a_transport_nobody_installed'" in fault.detail
        assert by_node["test_1_cascade"].status == "passed"
    else:
        assert fault is None
        assert by_node["test_1_cascade"].status == "failed"


def test_a_rerun_cut_by_its_time_limit_keeps_what_its_finished_tests_did() -> None:
    from runners.execute import Blame, result_of, retried_alone
    from runners.testrun.pytest_run import PytestReport

    gpu = "RuntimeError: No CUDA GPUs are available"
    first = PytestReport(
        tests=(
            TestCaseResult("t.py::test_0", TestStatus.failed, message=gpu),
            TestCaseResult("t.py::test_1", TestStatus.failed, message="init twice"),
            TestCaseResult("t.py::test_2", TestStatus.failed, message="init twice"),
        ),
        exit_code=1,
    )
    again = PytestReport(
        tests=(
            TestCaseResult("t.py::test_1", TestStatus.passed),
            TestCaseResult("t.py::test_2", TestStatus.timeout, message="stopped by the run's"),
        ),
        exit_code=None,
        timed_out=True,
    )
    result = retried_alone(result_of(first), first, lambda nodes: again, blame=Blame())
    status = {t.node_id: t.status for t in result.tests}
    assert status == {
        "t.py::test_0": TestStatus.failed,
        "t.py::test_1": TestStatus.passed,  # finished in the cut session: its own outcome
        "t.py::test_2": TestStatus.failed,  # in flight when cut: keeps what it had
    }

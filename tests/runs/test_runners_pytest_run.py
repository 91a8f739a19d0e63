"""Real pytest sessions under the harness: outcomes, time limits, killed process groups,
resources, scrubbed environments, setup commands."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path

import pytest

from runners.overlay import AppliedOverlay
from runners.testrun.pytest_run import PytestInvocation, PytestReport, run_pytest, select_tests
from runners.testrun.run_environment import is_hidden_variable, run_environment, scrub_environment
from runners.types import RunRequest, TestStatus
from tests.runner_repos import OUTCOME_IDS, OUTCOMES_MODULE, pid_alive

SPAWN = '''
import os, subprocess, time
from pathlib import Path

def spawn_grandchildren(tag):
    """A sleeping child, and a sleeping grandchild behind a shell; their pids in a file."""
    child = subprocess.Popen(["sleep", "300"])
    shell = subprocess.Popen(["sh", "-c", "sleep 300 & echo $!; wait"], stdout=subprocess.PIPE, text=True)
    grandchild = int(shell.stdout.readline())
    Path(os.environ["PIDS_DIR"], tag).write_text(f"{child.pid} {shell.pid} {grandchild}")
'''


def make(tmp_path: Path, files: dict[str, str], **options: object) -> PytestInvocation:
    tree, scratch = tmp_path / "tree", tmp_path / "scratch"
    scratch.mkdir()
    for name, text in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(textwrap.dedent(text))
    (tmp_path / "pids").mkdir()
    extra = {"PIDS_DIR": str(tmp_path / "pids"), **options.pop("extra", {})}  # type: ignore[dict-item]
    env = run_environment(
        tree=tree,
        scratch=scratch,
        environment=None,
        extra=extra,
        base=options.pop("base", None),  # type: ignore[arg-type]
    )
    return PytestInvocation(
        tree=tree, scratch=scratch, python=Path(sys.executable), env=env, **options
    )  # type: ignore[arg-type]


def statuses(report: PytestReport) -> dict[str, TestStatus]:
    return {t.node_id: t.status for t in report.tests}


def spawned_pids(tmp_path: Path) -> list[int]:
    return [int(p) for f in sorted((tmp_path / "pids").iterdir()) for p in f.read_text().split()]


def test_every_outcome_kind_is_reported_with_exact_node_ids(tmp_path: Path) -> None:
    slow = "import time\n\ndef test_sleeps_past_its_limit():\n    time.sleep(30)\n\ndef test_after():\n    pass\n"
    invocation = make(
        tmp_path,
        {"tests/test_outcomes.py": OUTCOMES_MODULE, "tests/test_slow.py": slow},
        timeout_per_test_s=1.0,
    )
    report = run_pytest(invocation)
    expected = {f"tests/test_outcomes.py::{k}": v for k, v in OUTCOME_IDS.items()}
    expected |= {
        "tests/test_outcomes.py::test_xpasses": TestStatus.xpassed,
        "tests/test_slow.py::test_sleeps_past_its_limit": TestStatus.timeout,
        "tests/test_slow.py::test_after": TestStatus.passed,
    }
    assert statuses(report) == expected
    assert report.exit_code == 1 and not report.timed_out
    timed = next(t for t in report.tests if t.status is TestStatus.timeout)
    assert "time limit of 1s" in (timed.message or "")
    assert 0.9 < timed.duration_s < 10
    assert not any(p.name.startswith(".pytest") for p in invocation.tree.iterdir())


def test_a_test_stuck_beyond_signals_is_abandoned_and_the_rest_still_run(tmp_path: Path) -> None:
    stuck = """
        import signal, time

        def test_a_before():
            pass

        def test_b_stuck():
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # the soft limit cannot land
            time.sleep(30)

        def test_c_after():
            pass
    """
    invocation = make(
        tmp_path, {"tests/test_stuck.py": stuck}, timeout_per_test_s=0.5, hard_grace_s=0.5
    )
    started = time.monotonic()
    report = run_pytest(invocation)
    assert time.monotonic() - started < 20
    assert statuses(report) == {
        "tests/test_stuck.py::test_a_before": TestStatus.passed,
        "tests/test_stuck.py::test_b_stuck": TestStatus.timeout,
        "tests/test_stuck.py::test_c_after": TestStatus.passed,
    }
    assert "pytest session 2" in report.log and "pytest session 3" not in report.log
    resumed = (invocation.scratch / "junit-1.xml").read_text()
    assert "test_c_after" in resumed and "test_a_before" not in resumed  # done tests not rerun


def test_the_run_time_limit_kills_the_whole_process_group(tmp_path: Path) -> None:
    hang = (
        SPAWN
        + """
def test_first():
    pass

def test_hangs_with_grandchildren():
    spawn_grandchildren("hang")
    time.sleep(300)

def test_never_reached():
    pass
"""
    )
    invocation = make(tmp_path, {"tests/test_hang.py": hang}, timeout_run_s=4.0)
    started = time.monotonic()
    report = run_pytest(invocation)
    assert time.monotonic() - started < 15
    assert report.timed_out
    assert "tests/test_hang.py::test_hangs_with_grandchildren" in report.detail
    assert statuses(report) == {
        "tests/test_hang.py::test_first": TestStatus.passed,
        "tests/test_hang.py::test_hangs_with_grandchildren": TestStatus.timeout,
    }
    pids = spawned_pids(tmp_path)
    assert len(pids) == 3
    assert not [pid for pid in pids if pid_alive(pid)]


def test_a_per_test_timeout_leaves_no_grandchild_behind(tmp_path: Path) -> None:
    hang = (
        SPAWN
        + """
def test_hangs():
    spawn_grandchildren("hang")
    time.sleep(300)
"""
    )
    report = run_pytest(make(tmp_path, {"tests/test_hang.py": hang}, timeout_per_test_s=1.0))
    assert statuses(report) == {"tests/test_hang.py::test_hangs": TestStatus.timeout}
    assert not [pid for pid in spawned_pids(tmp_path) if pid_alive(pid)]


def test_processes_a_passing_test_leaves_running_are_killed(tmp_path: Path) -> None:
    daemon = (
        SPAWN
        + """
def test_starts_a_daemon_and_passes():
    spawn_grandchildren("daemon")
"""
    )
    report = run_pytest(make(tmp_path, {"tests/test_daemon.py": daemon}))
    assert statuses(report) == {"tests/test_daemon.py::test_starts_a_daemon_and_passes": "passed"}
    pids = spawned_pids(tmp_path)
    assert len(pids) == 3 and not [pid for pid in pids if pid_alive(pid)]


def test_a_test_that_crashes_the_interpreter_is_an_error_and_the_rest_resume(
    tmp_path: Path,
) -> None:
    crash = """
        import os, signal

        def test_a_fine():
            pass

        def test_b_segfaults():
            os.kill(os.getpid(), signal.SIGSEGV)

        def test_c_fine():
            pass
    """
    report = run_pytest(make(tmp_path, {"tests/test_crash.py": crash}))
    assert statuses(report) == {
        "tests/test_crash.py::test_a_fine": "passed",
        "tests/test_crash.py::test_b_segfaults": "error",
        "tests/test_crash.py::test_c_fine": "passed",
    }
    crashed = next(t for t in report.tests if t.status is TestStatus.error)
    assert "SIGSEGV" in (crashed.message or "")
    assert report.exit_code == -11


def test_resources_count_cpu_time_and_peak_memory_of_the_children(tmp_path: Path) -> None:
    heavy = """
        import time

        def test_burns_cpu_and_memory():
            block = bytearray(300 * 1024 * 1024)
            for i in range(0, len(block), 4096):
                block[i] = 1
            end = time.process_time() + 0.8
            while time.process_time() < end:
                pass
    """
    report = run_pytest(make(tmp_path, {"tests/test_heavy.py": heavy}))
    assert statuses(report) == {"tests/test_heavy.py::test_burns_cpu_and_memory": "passed"}
    used = report.resources
    assert used.cpu_s >= 0.8
    assert used.wall_s >= 0.8
    assert 300 * 1024 * 1024 <= used.peak_rss_bytes < 2 * 1024**3
    assert used.gpu_peak_bytes is None and used.gpu_names == ()  # no NVML on a CPU run


SECRETS = {
    "PROBEWATCH_GITHUB_TOKEN": "ghp_service",
    "PROBEWATCH_WEBHOOK_SECRET": "hook",
    "PROBEWATCH_DATABASE_URL": "sqlite:///x.db",
    "GITHUB_TOKEN": "ghs_actions",
    "GH_TOKEN": "gho_cli",
    "DATABASE_URL": "postgresql://app:pw@db/prod",
    "REDIS_URL": "redis://user:hunter2@cache:6379",
    "HF_TOKEN": "hf_secret",
    "AWS_SECRET_ACCESS_KEY": "aws",
    "OPENAI_API_KEY": "sk-x",
    "PYTEST_ADDOPTS": "--collect-only",
    "PYTHONPATH": "/somewhere/else",
}


def test_tests_see_a_scrubbed_environment(tmp_path: Path) -> None:
    dump = """
        import json, os
        from pathlib import Path

        def test_dumps_its_environment():
            Path(os.environ["PIDS_DIR"], "..", "env.json").write_text(json.dumps(dict(os.environ)))
    """
    base = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", **SECRETS}
    invocation = make(
        tmp_path, {"tests/test_env.py": dump}, base=base, extra={"EXTRA_TOKEN": "x", "MODE": "1"}
    )
    report = run_pytest(invocation)
    assert statuses(report) == {"tests/test_env.py::test_dumps_its_environment": "passed"}
    seen = json.loads((tmp_path / "env.json").read_text())
    assert not set(SECRETS) & {k for k in seen if k != "PYTHONPATH"}
    assert "/somewhere/else" not in seen["PYTHONPATH"]
    assert "EXTRA_TOKEN" not in seen and seen["MODE"] == "1"
    assert seen["LANG"] == "C.UTF-8" and seen["PATH"] == "/usr/bin:/bin"
    assert seen["HOME"].startswith(str(invocation.scratch))
    assert seen["TMPDIR"].startswith(str(invocation.scratch))
    assert not any(v for v in seen.values() if "hunter2" in v or "ghp_" in v)


@pytest.mark.parametrize(
    ("name", "value", "hidden"),
    [
        ("GITHUB_TOKEN", "x", True),
        ("PROBEWATCH_HOME", "/srv", True),
        ("MY_DSN", "postgresql://u:p@h/db", True),
        ("SERVICE_PASSWORD", "x", True),
        ("PYTEST_XDIST_WORKER", "gw0", True),
        ("GIT_DIR", "/repo/.git", True),
        ("HF_HOME", "/cache/hf", False),
        ("CUDA_HOME", "/usr/local/cuda", False),
        ("PUBLIC_URL", "https://example.org/x", False),
    ],
)
def test_which_variables_are_hidden(name: str, value: str, hidden: bool) -> None:
    assert is_hidden_variable(name, value) is hidden
    assert (name in scrub_environment({name: value})) is not hidden


def test_setup_commands_run_in_the_tree_before_pytest(tmp_path: Path) -> None:
    check = """
        from pathlib import Path

        def test_sees_the_setup():
            assert Path("built.txt").read_text() == "built\\n"
    """
    invocation = make(
        tmp_path, {"tests/test_setup.py": check}, setup_commands=("echo built > built.txt",)
    )
    report = run_pytest(invocation)
    assert statuses(report) == {"tests/test_setup.py::test_sees_the_setup": "passed"}
    assert "$ echo built > built.txt" in report.log


def test_a_failing_setup_command_stops_the_run_before_pytest(tmp_path: Path) -> None:
    invocation = make(
        tmp_path,
        {"tests/test_x.py": "def test_x():\n    pass\n"},
        setup_commands=("echo going", "echo 'No space left on device' >&2; exit 3", "echo never"),
    )
    report = run_pytest(invocation)
    assert report.setup_failed == "echo 'No space left on device' >&2; exit 3"
    assert report.exit_code == 3 and report.tests == ()
    assert "No space left on device" in report.full_log
    assert "never" not in report.log.replace("echo never", "")
    assert "pytest session" not in report.log


def test_a_full_suite_run_also_collects_probes_outside_the_test_paths(tmp_path: Path) -> None:
    files = {
        "pytest.ini": "[pytest]\ntestpaths = tests\n",
        "tests/test_suite.py": "def test_suite():\n    pass\n",
        "probe_kit/test_probe.py": "def test_probe():\n    pass\n",
        "other/test_not_in_suite.py": "def test_other():\n    pass\n",
    }
    probe = "probe_kit/test_probe.py"
    report = run_pytest(make(tmp_path, files, probes=(probe,)))
    assert statuses(report) == {
        "tests/test_suite.py::test_suite": "passed",
        f"{probe}::test_probe": "passed",
    }
    assert [t.node_id for t in report.tests if t.is_probe] == [f"{probe}::test_probe"]


def test_the_selection_is_the_overlay_tests_and_probes_unless_tests_are_named() -> None:
    overlay = AppliedOverlay(test_files=("tests/test_a.py",), probes=("probes/test_p.py",))
    request = RunRequest(repo=Path("."), base_commit="HEAD")
    assert select_tests(request, overlay) == ("tests/test_a.py", "probes/test_p.py")
    named = RunRequest(repo=Path("."), base_commit="HEAD", tests=("tests/test_b.py::test_x",))
    assert select_tests(named, overlay) == ("tests/test_b.py::test_x",)
    full = RunRequest(repo=Path("."), base_commit="HEAD", full_suite=True)
    assert select_tests(full, overlay) == ()
    with pytest.raises(ValueError, match="look like options"):
        select_tests(RunRequest(repo=Path("."), base_commit="HEAD", tests=("--co",)), overlay)


def test_an_interpreter_that_cannot_start_is_reported(tmp_path: Path) -> None:
    invocation = make(tmp_path, {"tests/test_x.py": "def test_x():\n    pass\n"})
    report = run_pytest(
        PytestInvocation(**{**invocation.__dict__, "python": tmp_path / "no-python"})
    )
    assert report.exit_code == 127 and report.tests == ()
    assert "cannot start" in report.log


WAITS_FOR_GPUS = """
    import signal, sys, time

    def test_waits_for_a_placement_group():
        {block}
        print("\x1b[33m(autoscaler +5s)\x1b[0m Warning: The following resource request cannot be scheduled "
              "right now: {{'CPU': 1.0, 'GPU': 1.0}}. This is likely due to all cluster "
              "resources being claimed by actors.", file=sys.stderr, flush=True)
        time.sleep(30)

    def test_hangs_quietly():
        print("loading the weights", flush=True)
        {block}
        time.sleep(30)
"""


@pytest.mark.parametrize("hard", [False, True], ids=["soft-limit", "hard-limit"])
def test_a_timed_out_test_carries_what_it_printed_and_a_gpu_wait_is_the_machines(
    tmp_path: Path, hard: bool
) -> None:
    """A cluster that waits for GPUs forever says so before the limit stops it: the test is
    the machine's (needs_gpu); a test that hangs saying nothing of GPUs stays a timeout."""
    from runners.execute import result_of
    from runners.types import FaultKind

    block = "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})" if hard else "pass"
    module = textwrap.dedent(WAITS_FOR_GPUS).replace("{block}", block)
    module = module.replace("{{", "{").replace("}}", "}")
    invocation = make(
        tmp_path, {"tests/test_wait.py": module}, timeout_per_test_s=1.0, hard_grace_s=0.5
    )
    tests = {t.node_id.rpartition("::")[2]: t for t in result_of(run_pytest(invocation)).tests}

    waiting, quiet = tests["test_waits_for_a_placement_group"], tests["test_hangs_quietly"]
    assert waiting.status is TestStatus.timeout and quiet.status is TestStatus.timeout
    assert waiting.fault is not None and waiting.fault.kind is FaultKind.needs_gpu
    assert "'GPU': 1.0" in (waiting.message or "") and "\x1b[" not in (waiting.message or "")
    assert quiet.fault is None and "loading the weights" in (quiet.message or "")

"""One judgement's pytest run: setup commands, then pytest sessions, under time limits.

Every command runs in a process group of its own (runners/testrun/process_group.py),
in the scrubbed environment the caller built (runners/testrun/run_environment.py),
with output to a log file in the run's scratch folder. The run's time limit
covers setup and pytest together; when it passes, the whole group is stopped
and the test in flight is marked ``timeout``. Per-test limits come from the
injected plugin (runners/testrun/pytest_plugin.py); when a test is stuck beyond them,
or pytest dies of a signal inside a test, that test is marked and a new
session runs the tests not yet done, a bounded number of times. Outcomes come
from pytest's JUnit report, resources from ``wait4``, GPU figures from NVML
when present.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from runners.overlay import AppliedOverlay
from runners.sandbox.enter import Confinement, sandbox_of
from runners.testrun.gpu_usage import GpuSampler
from runners.testrun.junit import JunitError, parse_junit_file, with_output
from runners.testrun.process_group import NOTE_PREFIX, CommandEnd, run_in_group
from runners.testrun.run_environment import PLUGIN_FOLDER
from runners.types import Resources, RunRequest, Sandboxing, TestCaseResult, TestStatus

PLUGIN_MODULE = "probewatch_pytest_plugin"
PLUGIN_SOURCE = Path(__file__).with_name("pytest_plugin.py")
# Shared with runners/testrun/pytest_plugin.py (a test keeps them equal).
HARD_TIMEOUT_EXIT = 86
IN_FLIGHT_PREFIX = "in-flight-"
HARD_TIMEOUTS_FILE = "hard-timeouts"
HARD_OUTPUT_PREFIX = "hard-output-"

MAX_SESSIONS = 4  # the first pytest session and up to three resumes after stuck tests
LOG_FILE = "run.log"
LOG_TAIL_CHARS = 20_000
CLASSIFY_TAIL_CHARS = 2_000_000


@dataclass(frozen=True)
class PytestInvocation:
    """Everything a backend needs to run one judgement's tests in a prepared tree."""

    tree: Path
    scratch: Path
    python: Path
    env: Mapping[str, str]  # the complete, scrubbed environment
    selection: tuple[str, ...] = ()  # files or node ids; empty: pytest's own discovery
    probes: tuple[str, ...] = ()  # probe files; collected even in a full-suite run
    setup_commands: tuple[str, ...] = ()
    timeout_per_test_s: float | None = None
    timeout_run_s: float = 3600.0
    gpu_indices: tuple[int, ...] = ()
    hard_grace_s: float = 5.0  # after a test's limit, before a stuck session is abandoned
    confinement: Confinement | None = None  # the sandbox every command runs in; None: none


@dataclass(frozen=True)
class PytestReport:
    """What the run did, before fault classification."""

    tests: tuple[TestCaseResult, ...] = ()
    resources: Resources = field(default_factory=Resources)
    log: str = ""  # the tail of the run's output
    exit_code: int | None = None  # of the last command run
    timed_out: bool = False  # the run's time limit stopped it
    setup_failed: str | None = None  # the setup command that failed
    detail: str = ""
    full_log: str = ""  # the larger tail fault classification reads, without harness notes
    sandbox: Sandboxing | None = None


@dataclass
class _Meter:
    started: float = field(default_factory=time.monotonic)
    cpu_s: float = 0.0
    max_rss_bytes: int = 0

    def add(self, end: CommandEnd) -> None:
        self.cpu_s += end.cpu_s
        self.max_rss_bytes = max(self.max_rss_bytes, end.max_rss_bytes)

    def resources(self, gpu: GpuSampler) -> Resources:
        return Resources(
            wall_s=time.monotonic() - self.started,
            cpu_s=self.cpu_s,
            peak_rss_bytes=self.max_rss_bytes,
            gpu_peak_bytes=gpu.peak_bytes,
            gpu_names=gpu.names,
        )


# --- selection ---------------------------------------------------------------------------


def select_tests(request: RunRequest, overlay: AppliedOverlay) -> tuple[str, ...]:
    """What pytest is asked to run; empty means pytest's own discovery (the full suite)."""
    if request.full_suite:
        return ()
    chosen = request.tests or overlay.selection
    bad = [t for t in chosen if t.startswith("-")]
    if bad:
        raise ValueError(f"test selection entries may not look like options: {bad}")
    return tuple(chosen)


# --- running --------------------------------------------------------------------------


def run_pytest(invocation: PytestInvocation) -> PytestReport:
    """Run the setup commands and pytest under the invocation's limits."""
    deadline = time.monotonic() + invocation.timeout_run_s
    _install_plugin(invocation.scratch)
    state = invocation.scratch / "state"
    state.mkdir(exist_ok=True)
    meter = _Meter()
    log_path = invocation.scratch / LOG_FILE
    with open(log_path, "ab") as log, GpuSampler(invocation.gpu_indices) as gpu:
        report = _setup(invocation, log, deadline, meter, gpu)
        if report is None:
            report = _sessions(invocation, state, log, deadline, meter, gpu)
    full = _tail(log_path, CLASSIFY_TAIL_CHARS)
    report = replace(report, sandbox=sandbox_of(invocation.confinement))
    return _finish(report, meter.resources(gpu), full)


def _finish(report: PytestReport, resources: Resources, full: str) -> PytestReport:
    return PytestReport(
        tests=report.tests,
        resources=resources,
        log=full[-LOG_TAIL_CHARS:],
        exit_code=report.exit_code,
        timed_out=report.timed_out,
        setup_failed=report.setup_failed,
        detail=report.detail,
        full_log=_without_notes(full),
        sandbox=report.sandbox,
    )


def _install_plugin(scratch: Path) -> None:
    folder = scratch / PLUGIN_FOLDER
    folder.mkdir(exist_ok=True)
    shutil.copyfile(PLUGIN_SOURCE, folder / f"{PLUGIN_MODULE}.py")


def _setup(
    invocation: PytestInvocation, log: IO[bytes], deadline: float, meter: _Meter, gpu: GpuSampler
) -> PytestReport | None:
    """Run the setup commands; a report when one failed or ran out of time, else None."""
    shell = shutil.which("bash", path=invocation.env.get("PATH")) or "/bin/sh"
    for command in invocation.setup_commands:
        _note(log, f"$ {command}")
        end = _run(invocation, [shell, "-c", command], log, deadline, gpu)
        meter.add(end)
        if end.timed_out:
            return PytestReport(
                exit_code=end.exit_code,
                timed_out=True,
                detail=f"the run's time limit passed during setup command {command!r}",
            )
        if end.exit_code != 0:
            return PytestReport(
                exit_code=end.exit_code,
                setup_failed=command,
                detail=f"setup command {command!r} exited with status {end.exit_code}",
            )
    return None


def _sessions(
    invocation: PytestInvocation,
    state: Path,
    log: IO[bytes],
    deadline: float,
    meter: _Meter,
    gpu: GpuSampler,
) -> PytestReport:
    """pytest sessions until one ends by itself. A session that ended on a stuck test (the
    plugin gave up) or died of a signal in a test is resumed without the tests done."""
    results: dict[str, TestCaseResult] = {}
    signalled: int | None = None  # kept for classification: -9 is the OOM killer's mark
    end = None
    for number in range(MAX_SESSIONS):
        junit = invocation.scratch / f"junit-{number}.xml"
        argv = pytest_argv(invocation, junit, state, deselect=tuple(results))
        _note(log, f"pytest session {number + 1}")
        end = _run(invocation, argv, log, deadline, gpu)
        meter.add(end)
        results.update(_read_junit(junit, invocation))
        in_flight = _take_in_flight(state)
        if end.timed_out:
            return _timed_out(results, in_flight, invocation, end)
        cut_short = _cut_short(state, in_flight, invocation, end.exit_code)
        results.update(cut_short)
        if end.exit_code < 0:
            signalled = signalled if signalled is not None else end.exit_code
        if not cut_short:
            break
    exit_code = signalled if signalled is not None else (end.exit_code if end else None)
    return PytestReport(tests=tuple(results.values()), exit_code=exit_code)


def _run(
    invocation: PytestInvocation,
    argv: Sequence[str],
    log: IO[bytes],
    deadline: float,
    gpu: GpuSampler,
) -> CommandEnd:
    return run_in_group(
        argv,
        cwd=invocation.tree,
        env=invocation.env,
        log=log,
        deadline=deadline,
        on_start=gpu.watch,
        confinement=invocation.confinement,
    )


def _cut_short(
    state: Path, in_flight: Sequence[str], invocation: PytestInvocation, exit_code: int
) -> dict[str, TestCaseResult]:
    """The tests that ended their session: stuck past the hard limit, or killed by a signal."""
    if exit_code == HARD_TIMEOUT_EXIT:
        stuck = _read_lines(state / HARD_TIMEOUTS_FILE)
        (state / HARD_TIMEOUTS_FILE).unlink(missing_ok=True)
        return _timeouts(stuck, invocation, "its hard time limit", _take_outputs(state))
    if exit_code < 0:
        return _crashed(in_flight, invocation, exit_code)
    return {}


def pytest_argv(
    invocation: PytestInvocation, junit: Path, state: Path, *, deselect: Sequence[str] = ()
) -> list[str]:
    """The pytest command line: node ids relative to the tree, reports outside it."""
    argv = [
        str(invocation.python),
        "-m",
        "pytest",
        "-p",
        PLUGIN_MODULE,
        f"--rootdir={invocation.tree}",
        f"--junitxml={junit}",
        "-o",
        "junit_family=xunit1",
        "-o",
        "junit_logging=no",
        "-o",
        f"cache_dir={invocation.scratch / 'pytest-cache'}",
        "--continue-on-collection-errors",
        "--tb=short",
        f"--pw-state={state}",
        f"--pw-timeout={invocation.timeout_per_test_s or 0}",
        f"--pw-grace={invocation.hard_grace_s}",
    ]
    if not invocation.selection:
        argv += [f"--pw-also={p}" for p in invocation.probes]
    argv += [f"--deselect={node}" for node in deselect]
    return argv + list(invocation.selection)


# --- reading what the run left ----------------------------------------------------------


def _read_junit(junit: Path, invocation: PytestInvocation) -> dict[str, TestCaseResult]:
    if not junit.is_file():
        return {}
    try:
        tests = parse_junit_file(junit, root=invocation.tree, probes=invocation.probes)
    except JunitError:
        return {}  # a report cut short by a kill: the log and the exit status still tell
    return {t.node_id: t for t in tests}


def _timed_out(
    results: dict[str, TestCaseResult],
    in_flight: Sequence[str],
    invocation: PytestInvocation,
    end: CommandEnd,
) -> PytestReport:
    results.update(_timeouts(in_flight, invocation, "the run's time limit"))
    running = ", ".join(in_flight) or "no test (collection or setup)"
    detail = f"the run's time limit of {invocation.timeout_run_s:g}s passed while running {running}"
    return PytestReport(
        tests=tuple(results.values()), exit_code=end.exit_code, timed_out=True, detail=detail
    )


def _crashed(
    node_ids: Sequence[str], invocation: PytestInvocation, exit_code: int
) -> dict[str, TestCaseResult]:
    """Tests in flight when pytest died of a signal (a crash in native code, a kill)."""
    name = signal.Signals(-exit_code).name if -exit_code in signal.valid_signals() else exit_code
    return {
        node: TestCaseResult(
            node_id=node,
            status=TestStatus.error,
            message=f"the test process died of signal {name} during this test",
            is_probe=node.split("::", 1)[0] in invocation.probes,
        )
        for node in node_ids
    }


def _timeouts(
    node_ids: Sequence[str],
    invocation: PytestInvocation,
    limit: str,
    outputs: Mapping[str, str] | None = None,
) -> dict[str, TestCaseResult]:
    outputs = outputs or {}
    return {
        node: TestCaseResult(
            node_id=node,
            status=TestStatus.timeout,
            message=with_output(f"stopped by {limit}", outputs[node])
            if node in outputs
            else f"stopped by {limit}",
            is_probe=node.split("::", 1)[0] in invocation.probes,
        )
        for node in node_ids
    }


def _take_outputs(state: Path) -> dict[str, str]:
    """What each test stuck past its hard limit had printed, by node id (the plugin's
    notes, removed as read)."""
    found = {}
    for note in sorted(state.glob(f"{HARD_OUTPUT_PREFIX}*")):
        node, _, tail = note.read_text(encoding="utf-8", errors="replace").partition("\n")
        note.unlink()
        if node:
            found[node] = tail
    return found


def _take_in_flight(state: Path) -> list[str]:
    """The tests the plugin noted as running when the session ended; the notes are removed
    (a process that died leaves its note behind)."""
    found = []
    for note in sorted(state.glob(f"{IN_FLIGHT_PREFIX}*")):
        text = note.read_text(encoding="utf-8").strip()
        note.unlink()
        if text:
            found.append(text)
    return found


def _read_lines(path: Path) -> list[str]:
    if not path.is_file():
        return []
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line]


def _tail(path: Path, chars: int) -> str:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        handle.seek(max(0, handle.tell() - chars))
        return handle.read().decode("utf-8", "replace")


def _note(log: IO[bytes], line: str) -> None:
    log.write(f"\n{NOTE_PREFIX}{line}\n".encode())
    log.flush()


def _without_notes(text: str) -> str:
    """The log as the commands wrote it: a setup command quoted in a note is not its output."""
    return "\n".join(line for line in text.split("\n") if not line.startswith(NOTE_PREFIX))

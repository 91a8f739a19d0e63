"""The typed border of ``runners``: what a caller asks for and what a run returns.

Every judgement probewatch makes (probe acceptance, mutant survival, agent
scores) is a :class:`RunRequest` turned into a :class:`RunResult` by a
:class:`Backend`. ``runners`` knows nothing of the registry: callers map these
records to and from their own tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Protocol, runtime_checkable

PROBE_GPU_MARKER = "probe_gpu"  # ``@pytest.mark.probe_gpu(n)``: the probe needs n GPUs
# The largest diff a run applies unless its runner is set otherwise: a golden patch of a very
# large PR is a few MiB; tens of MiB is not a code change to judge.
MAX_PATCH_BYTES = 8 * 1024 * 1024


class Outcome(StrEnum):
    """How a whole run ended."""

    completed = "completed"  # pytest ran; per-test outcomes say the rest
    unappliable = "unappliable"  # a patch did not apply (git's reason in detail)
    refused = "refused"  # a patch was refused before touching disk (unsafe path, test edit)
    timeout = "timeout"  # the run's time limit killed the process group
    fault = "fault"  # a system fault: not the candidate's doing
    unschedulable = "unschedulable"  # no runner offers the hardware the run needs


class TestStatus(StrEnum):
    __test__ = False  # not a pytest class, despite the name
    passed = "passed"
    failed = "failed"
    error = "error"
    skipped = "skipped"
    xfailed = "xfailed"
    xpassed = "xpassed"
    timeout = "timeout"


class FaultKind(StrEnum):
    """System faults: excluded from scores, counted, retried a bounded number of times."""

    environment_build = "environment_build"
    missing_asset = "missing_asset"
    runner_lost = "runner_lost"
    harness_oom = "harness_oom"
    docker = "docker"
    harness_timeout = "harness_timeout"
    gpus_absent = "gpus_absent"  # a run asked for GPUs its runner turned out not to have
    needs_gpu = "needs_gpu"  # a test needs CUDA GPUs and this runner offers none
    unset_variable = "unset_variable"  # a test reads an environment variable the run lacks
    disk_full = "disk_full"
    network = "network"
    internal = "internal"
    # The run went past one of its sandbox's limits (runners/sandbox/limits.py).
    memory_limit = "memory_limit"
    process_limit = "process_limit"
    file_limit = "file_limit"
    cpu_limit = "cpu_limit"
    disk_limit = "disk_limit"  # the files the run wrote, all together


class SandboxKind(StrEnum):
    """What kept a run from the rest of its host."""

    namespaces = "namespaces"  # bubblewrap: its own mount, PID (and network) namespaces
    none = "none"  # nothing: the run saw the host as the service does


@dataclass(frozen=True)
class PatchSpec:
    """One patch to apply on top of the base commit, in order."""

    name: str  # e.g. "golden", "hollow", "adversarial-3", "submission"
    diff: str
    # The task's own patches (golden, hollow, adversarials made from the golden) carry the
    # PR's binary files (figures, test data); a submission may not.
    allow_binary: bool = False
    forbid_test_changes: bool = False  # agent submissions may not touch tests
    test_globs: tuple[str, ...] = ()  # the repository's test globs; empty: the default list


@dataclass(frozen=True)
class TestOverlay:
    """Grading-time test files: never present in a tree an agent sees.

    ``replace_dirs`` are removed from the work tree and ``files`` written in
    their place (the post-change tests); ``probes`` are added as well.
    """

    __test__ = False
    replace_dirs: tuple[str, ...] = ()
    files: Mapping[str, str] = field(default_factory=dict)
    probes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EnvironmentSpec:
    """What a shared environment was resolved from: enough for another runner to build its own.

    The pins are not carried: a runner applies its own overrides (its CUDA build of torch)
    and resolves the same requirements in the same era, which gives its own lock hash.
    """

    requirements: tuple[str, ...]  # after exclusions and repairs, harness included
    exclude_newer: str | None = None  # the era, "2025-11-03T08:12:00Z"
    python_version: str = ""  # "3.11.7": a runner uses its interpreter of the same minor


@dataclass(frozen=True)
class EnvironmentRef:
    """A built, read-only shared environment (one per lock hash)."""

    lock_hash: str
    root: Path  # the virtual environment folder
    python: Path  # root / "bin" / "python"
    env: Mapping[str, str] = field(default_factory=dict)  # HF_HOME, HF_HUB_OFFLINE=1, ...
    assets: Path | None = None  # the shared asset cache; its home/ entries appear in run HOMEs
    spec: EnvironmentSpec | None = None  # how to build it elsewhere (remote runners)
    # Modules the environment cannot provide, with why (a GPU-only distribution the repo's
    # config excludes, one no resolution in the era admits): a test that needs one fails
    # because of the runner, not the patch.
    unavailable: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Hardware:
    gpus: int = 0
    gpu_type: str | None = None


@dataclass(frozen=True)
class HardwareRules:
    """A repository's conventions for where its tests run (the watch file's ``[repo.tests]``).

    Test files matching ``cpu_globs`` run on CPU; files under ``gpu_paths``, and files
    without the ``cpu_marker`` when the repository marks its CPU tests, need ``gpus`` GPUs;
    a probe's ``probe_gpu(n)`` or ``probe_cpu_ok`` mark speaks for itself. Where nothing
    decides, a test is tried on CPU, and a failure that shows it needed a GPU sends it to a
    GPU runner instead of counting against the patch.
    """

    cpu_globs: tuple[str, ...] = ()
    cpu_marker: str | None = None
    gpu_paths: tuple[str, ...] = ()
    gpus: int = 1  # what a test that needs GPUs is given
    gpu_type: str | None = None


@dataclass(frozen=True)
class RunRequest:
    repo: Path  # local clone or bare mirror holding base_commit
    base_commit: str
    patches: tuple[PatchSpec, ...] = ()
    overlay: TestOverlay | None = None
    tests: tuple[str, ...] = ()  # files or node ids; empty = the overlay's tests and probes
    environment: EnvironmentRef | None = None  # None: the current interpreter
    setup_commands: tuple[str, ...] = ()  # run in the work tree, not the environment
    hardware: Hardware = field(default_factory=Hardware)
    timeout_per_test_s: float | None = 300.0
    timeout_run_s: float = 3600.0
    env: Mapping[str, str] = field(default_factory=dict)
    label: str = ""  # free text for logs: "golden#2", "adversarial-7"
    full_suite: bool = False  # run the whole suite (plus probes) instead of the selection
    # Host folders the run may write besides its own, for what the caller collects from it
    # (coverage data): the sandbox shows nothing else of the host.
    outputs: tuple[Path, ...] = ()
    # The patches are right by definition (the golden patch): a module a test cannot import
    # while it runs is the environment's fault, found before tests after it are run again.
    trusted: bool = False


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    detail: str
    retryable: bool = True


@dataclass(frozen=True)
class TestCaseResult:
    __test__ = False
    node_id: str
    status: TestStatus
    duration_s: float = 0.0
    message: str | None = None  # skip reason, failure summary
    is_probe: bool = False
    # A failing test the machine failed, not the patch (needs a GPU, an asset, a module the
    # environment cannot provide): excluded from every judgement, and said why.
    fault: Fault | None = None


@dataclass(frozen=True)
class Resources:
    wall_s: float = 0.0
    cpu_s: float = 0.0
    peak_rss_bytes: int = 0
    gpu_peak_bytes: int | None = None
    gpu_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Sandboxing:
    """How a run was kept apart from its host, recorded with its result."""

    kind: SandboxKind
    reason: str = ""  # why there was none

    @property
    def confined(self) -> bool:
        return self.kind is not SandboxKind.none


def sandbox_columns(sandbox: Sandboxing | None) -> tuple[str | None, str | None]:
    """A run's sandbox as a record stores it: its kind and why there was none; (None, None)
    when the backend did not say."""
    if sandbox is None:
        return None, None
    return str(sandbox.kind), sandbox.reason or None


def unconfined(sandbox: Sandboxing | None) -> bool:
    """Whether a run is known to have had no sandbox (a backend that did not say counts as
    sandboxed: Docker's container, an Actions runner)."""
    return sandbox is not None and not sandbox.confined


@dataclass(frozen=True)
class RunResult:
    outcome: Outcome
    tests: tuple[TestCaseResult, ...] = ()
    resources: Resources = field(default_factory=Resources)
    fault: Fault | None = None
    detail: str = ""  # git's reason for unappliable, the refusal reason, the timeout
    log: str = ""  # tail of pytest's output
    attempts: int = 1
    sandbox: Sandboxing | None = None  # None: the backend did not say

    @property
    def collected(self) -> frozenset[str]:
        return frozenset(t.node_id for t in self.tests)

    @property
    def passed(self) -> frozenset[str]:
        return frozenset(t.node_id for t in self.tests if t.status is TestStatus.passed)

    def status_of(self, node_id: str) -> TestStatus | None:
        return next((t.status for t in self.tests if t.node_id == node_id), None)


@dataclass(frozen=True)
class Capacity:
    cpu_slots: int
    gpus: int
    gpu_type: str | None = None
    labels: tuple[str, ...] = ()


@runtime_checkable
class Backend(Protocol):
    """Somewhere test runs happen: this host, a Docker engine, a self-hosted Actions runner."""

    name: str

    def capacity(self) -> Capacity: ...

    def run(self, request: RunRequest) -> RunResult: ...

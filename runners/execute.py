"""The one function callers use for a test run: ``execute(request, backend, workspace_root=...)``.

It works out the hardware the run needs (the request's, raised by the
``probe_gpu(n)`` marks of its probes), answers *unschedulable* when the
backend cannot offer it, and retries system faults a bounded number of
times. A backend that runs pytest on this host (:class:`TreeRunner`, the
local backend) gets a prepared tree: work tree at the base commit → patches
(refused or unappliable ends the run) → test overlay → setup commands and
pytest → fault classification. Any other backend (Docker, a self-hosted
Actions runner) gets the request and prepares the tree where it runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Protocol, runtime_checkable

from runners.backends.placement import (
    describe_capacity,
    describe_hardware,
    fits,
    marked_gpus,
    unschedulable,
)
from runners.overlay import apply_overlay
from runners.patches import PatchRefused, PatchUnappliable, apply_patches
from runners.sandbox.enter import Confinement
from runners.sandbox.paths import interpreter_paths
from runners.testrun.faults import (
    DEFAULT_RETRIES,
    SIGNATURES,
    classify,
    message_fault,
    with_retries,
)
from runners.testrun.pytest_run import (
    HARD_TIMEOUT_EXIT,
    PytestInvocation,
    PytestReport,
    select_tests,
)
from runners.testrun.run_environment import python_of, run_environment
from runners.types import (
    Backend,
    EnvironmentRef,
    Fault,
    FaultKind,
    Hardware,
    Outcome,
    RunRequest,
    RunResult,
    TestCaseResult,
    TestStatus,
)
from runners.workspace import Workspace, WorkspaceMode, workspace

# pytest exit statuses after which its per-test outcomes are the whole story:
# tests passed or failed, the session was interrupted, nothing was collected,
# or the plugin gave up on stuck tests (they are marked timeout).
COMPLETED_EXITS = frozenset({0, 1, 2, 5, HARD_TIMEOUT_EXIT})
# Tests that failed after a machine fault in their session are run again alone: at most
# this many per run, each within its per-test limit (or ALONE_LIMIT_S) plus a grace.
MAX_ALONE = 8
ALONE_LIMIT_S = 300.0
# Session start-up, the per-test hard grace and teardown: a Ray cluster alone takes a
# minute to start and stop on a busy host.
ALONE_GRACE_S = 180.0
_FAILING = frozenset({TestStatus.failed, TestStatus.error, TestStatus.timeout})


@runtime_checkable
class TreeRunner(Protocol):
    """A backend that runs pytest in a tree on this host's file system."""

    # The largest diff a run of this runner applies; a larger one is refused unread.
    max_patch_bytes: int

    def run_tests(self, invocation: PytestInvocation, hardware: Hardware) -> PytestReport: ...


def execute(
    request: RunRequest,
    backend: Backend,
    *,
    workspace_root: Path,
    retries: int = DEFAULT_RETRIES,
    mode: WorkspaceMode = WorkspaceMode.worktree,
) -> RunResult:
    """Run ``request`` on ``backend``; system faults are retried up to ``retries`` times."""
    request = replace(request, hardware=required_hardware(request))
    capacity = backend.capacity()
    if not fits(capacity, request.hardware):
        return unschedulable(
            f"needs {describe_hardware(request.hardware)}; "
            f"{backend.name} offers {describe_capacity(capacity)}"
        )
    if isinstance(backend, TreeRunner):
        attempt = partial(run_once, request, backend, workspace_root=workspace_root, mode=mode)
    else:
        attempt = partial(backend.run, request)
    return with_retries(attempt, retries=retries)


def run_once(
    request: RunRequest,
    runner: TreeRunner,
    *,
    workspace_root: Path,
    mode: WorkspaceMode = WorkspaceMode.worktree,
) -> RunResult:
    """One attempt in a fresh work tree, removed afterwards whatever happens."""
    with workspace(
        request.repo, request.base_commit, root=workspace_root, label=request.label, mode=mode
    ) as ws:
        try:
            apply_patches(ws.tree, request.patches, max_bytes=runner.max_patch_bytes)
        except PatchRefused as exc:
            return RunResult(outcome=Outcome.refused, detail=str(exc))
        except PatchUnappliable as exc:
            return RunResult(outcome=Outcome.unappliable, detail=str(exc))
        invocation = invocation_for(request, ws)
        report = runner.run_tests(invocation, request.hardware)
        unavailable = request.environment.unavailable if request.environment else {}
        home = str(ws.scratch / "home")
        blame = Blame(home, unavailable, any_missing_module=request.trusted)
        result = result_of(report, blame=blame)

        def rerun(nodes: Sequence[str]) -> PytestReport:
            return runner.run_tests(rerun_invocation(invocation, nodes), request.hardware)

        return retried_alone(result, report, rerun, blame=blame)


def rerun_invocation(invocation: PytestInvocation, nodes: Sequence[str]) -> PytestInvocation:
    """``nodes`` by themselves in the same prepared tree: setup has run there already."""
    limit = (invocation.timeout_per_test_s or ALONE_LIMIT_S) * len(nodes) + ALONE_GRACE_S
    return replace(
        invocation,
        selection=tuple(nodes),
        setup_commands=(),
        timeout_run_s=min(invocation.timeout_run_s, limit),
    )


def after_a_fault(tests: Iterable[TestCaseResult]) -> list[str]:
    """Failing tests with no fault of their own that ran after one the machine failed, in
    report (run) order: a test that died mid-way may leave its process behind it broken
    (Ray initialised and never shut down, a port held, a global half set)."""
    found, faulted = [], False
    for test in tests:
        if test.fault is not None:
            faulted = True
        elif faulted and test.status in _FAILING:
            found.append(test.node_id)
    return found


def retried_alone(
    result: RunResult,
    report: PytestReport,
    rerun: Callable[[Sequence[str]], PytestReport],
    *,
    blame: Blame | None = None,
    limit: int = MAX_ALONE,
) -> RunResult:
    """The run with the tests that failed after a machine fault run again without the
    tests the machine failed: first all together in one fresh session, then each that fails
    after a fault there once more by itself (up to ``limit``). What a test does away from
    its broken neighbour is its outcome, so a neighbour's fault is not taken for the patch's
    failure, and its own fault, if any, is found; one session, not one per test."""
    if result.outcome is not Outcome.completed and result.outcome is not Outcome.fault:
        return result
    suspects = after_a_fault(result.tests)
    if not suspects:
        return result
    blame = blame or Blame()
    again = _rerun(suspects, rerun, blame)
    alone = [node for node in suspects if node not in again][:limit]
    for node in alone:
        again.update(_rerun([node], rerun, blame))
    tests = tuple(again.get(t.node_id, t) for t in result.tests)
    fault = fault_of(report, tests, home=blame.home)
    note = f"{len(again)} test(s) that failed after a machine fault were run again without it"
    base = report.detail or (fault.detail if fault else "")
    detail = "; ".join(d for d in (base, note) if d)
    return replace(
        result,
        tests=tests,
        outcome=Outcome.fault if fault else Outcome.completed,
        fault=fault,
        detail=detail,
    )


def _rerun(
    nodes: Sequence[str],
    rerun: Callable[[Sequence[str]], PytestReport],
    blame: Blame,
) -> dict[str, TestCaseResult]:
    """The outcomes a fresh session gives ``nodes``, but for those that fail after a fault
    there again (their outcome is still not their own)."""
    found = rerun(nodes)
    # A session cut by its time limit still tells what the tests it finished did; the one in
    # flight keeps the outcome it had.
    tests = tuple(
        blame.test(t)
        for t in found.tests
        if not (found.timed_out and t.status is TestStatus.timeout)
    )
    unsure = set(after_a_fault(tests)) if len(nodes) > 1 else set()
    return {t.node_id: t for t in tests if t.node_id in nodes and t.node_id not in unsure}


def invocation_for(request: RunRequest, ws: Workspace) -> PytestInvocation:
    """Write the overlay into the tree and describe the pytest run of ``request`` there."""
    applied = apply_overlay(ws.tree, request.overlay)
    environment = _writable_for_setup(request, ws)
    env = run_environment(
        tree=ws.tree, scratch=ws.scratch, environment=environment, extra=request.env, tmp=ws.tmp
    )
    python = python_of(environment)
    return PytestInvocation(
        tree=ws.tree,
        scratch=ws.scratch,
        python=python,
        env=env,
        selection=select_tests(request, applied),
        probes=applied.probes,
        setup_commands=request.setup_commands,
        timeout_per_test_s=request.timeout_per_test_s,
        timeout_run_s=request.timeout_run_s,
        confinement=confinement_of(ws, python, environment, outputs=request.outputs),
    )


def confinement_of(
    ws: Workspace,
    python: Path,
    environment: EnvironmentRef | None,
    *,
    outputs: tuple[Path, ...] = (),
) -> Confinement:
    """What a test run in ``ws`` may see: its tree, scratch folder, TMPDIR and the caller's
    output folders (writable), its interpreter's environments and the asset cache
    (read-only); no network but loopback."""
    assets = (environment.assets,) if environment is not None and environment.assets else ()
    writable = (ws.tree, ws.scratch, ws.tmp or ws.scratch / "tmp", *outputs)
    return Confinement(writable=writable, readable=(*interpreter_paths(python), *assets))


def _writable_for_setup(request: RunRequest, ws: Workspace) -> EnvironmentRef | None:
    """Setup commands (``pip install -e .``) install into a per-run overlay, never into the
    shared environment nor into the interpreter running probewatch: as root, read-only
    permission bits would not stop them."""
    if not request.setup_commands:
        return request.environment
    from runners.env.overlay import host_environment, overlay_environment

    return overlay_environment(request.environment or host_environment(), ws.scratch / "venv")


@dataclass(frozen=True)
class Blame:
    """What a failing test's message may show to be the machine's fault rather than the
    patch's: the signatures every run shares (read with the run's HOME), a module the
    environment is known not to provide, and, for patches right by definition (the golden
    patch), any module a test cannot import while it runs — repairs read only what
    collection imports, and a module imported inside a test (a rollout backend's transport)
    escapes them. An agent's patch that imports a module that does not exist is still its
    own failure."""

    home: str | None = None
    unavailable: Mapping[str, str] = field(default_factory=dict)
    any_missing_module: bool = False

    def test(self, test: TestCaseResult) -> TestCaseResult:
        """``test`` with the fault its message shows, if it failed for the machine's sake."""
        if test.status not in _FAILING:
            return test
        fault = message_fault(test.message, home=self.home) or unavailable_module(
            test.message, self.unavailable, any_module=self.any_missing_module
        )
        return replace(test, fault=fault) if fault is not None else test


def result_of(report: PytestReport, *, blame: Blame | None = None) -> RunResult:
    """The run's outcome: timeout, a classified system fault, or completed; each failing test
    carries the fault its own message shows, if any."""
    blame = blame or Blame()
    tests = tuple(blame.test(t) for t in report.tests)
    if report.timed_out:
        return _result(report, tests, Outcome.timeout, None)
    fault = fault_of(report, tests, home=blame.home)
    return _result(report, tests, Outcome.fault if fault else Outcome.completed, fault)


def _result(
    report: PytestReport, tests: tuple[TestCaseResult, ...], outcome: Outcome, fault: Fault | None
) -> RunResult:
    return RunResult(
        outcome=outcome,
        tests=tests,
        resources=report.resources,
        fault=fault,
        detail=report.detail or (fault.detail if fault else ""),
        log=report.log,
        sandbox=report.sandbox,
    )


def fault_of(
    report: PytestReport, tests: tuple[TestCaseResult, ...] = (), *, home: str | None = None
) -> Fault | None:
    """The system fault behind a run that did not pass, if its log or exit status shows one.

    A run where every failing test failed for the machine's sake and none passed says
    nothing about the patch: the run is a fault. Where some tests passed or failed on their
    merits, the run completed and the machine's failures stay with their tests."""
    if report.setup_failed is not None:
        found = classify(report.full_log, report.exit_code, home=home)
        return found or Fault(FaultKind.environment_build, report.detail, retryable=False)
    tests = tests or report.tests
    failing = [t for t in tests if t.status in _FAILING]
    if report.exit_code == 0 and not failing:
        return None
    found = classify(report.full_log, report.exit_code, home=home)
    if found is not None and not _per_test(found):
        return found
    judged = [t for t in failing if t.fault is None]
    if failing and not judged:
        if any(t.status is TestStatus.passed for t in tests):
            return None
        return failing[0].fault
    if judged and found is not None and all(not t.message for t in judged):
        return found  # the failures say nothing of their own: the log's evidence stands
    if judged or report.exit_code in COMPLETED_EXITS:
        return None
    if report.exit_code is None:
        return found
    if report.exit_code < 0:
        return None  # a crash inside a test (signal) is the test's: it is marked error
    if found is not None:
        return found
    last = report.log.strip().rpartition("\n")[2]
    return Fault(FaultKind.internal, f"pytest ended with status {report.exit_code}: {last}", False)


def _per_test(fault: Fault) -> bool:
    """Whether the signature that found ``fault`` also reads one test's message: a kind may
    have both (a sandbox's note about the whole run, a test's own refused fork)."""
    return any(
        s.kind is fault.kind and s.per_test and fault.detail.startswith(s.explanation[:20])
        for s in SIGNATURES
    )


_NO_MODULE = re.compile(r"No module named '([\w.]+)'")
# How a repository's own guard says an optional package is absent ("vllm version None not
# supported and SGLang also not found", "flash_attn is not installed"); read for a module
# the environment is known not to provide, in the same clause.
_ABSENT = (
    r"(?:(?:is |are |was )?not (?:be )?(?:found|installed|available)|version none"
    r"|(?:is |are )?(?:required|missing))"
)
_ABSENT_AFTER = r"\b(?P<module>{names})\b[^.\n]{{0,60}}?\b" + _ABSENT
_ABSENT_BEFORE = r"\b(?:requires?|install|missing|without)\b[^.\n]{{0,30}}?\b(?P<module>{names})\b"


def unavailable_module(
    message: str | None, unavailable: Mapping[str, str], *, any_module: bool = False
) -> Fault | None:
    """An environment fault when a failing test imports a module the environment is known
    not to provide (its repairs could not add it), or with ``any_module`` any module it
    cannot import; None when its message shows no such import."""
    if not message or not (unavailable or any_module):
        return None
    for match in _NO_MODULE.finditer(message):
        parts = match.group(1).split(".")
        prefixes = (".".join(parts[:n]) for n in range(len(parts), 0, -1))
        module = next((p for p in prefixes if p in unavailable), None)
        if module is not None:
            why = unavailable[module]
            detail = f"the environment cannot provide {module!r}: {why} [{match.group(0)}]"
            return Fault(FaultKind.environment_build, detail, retryable=False)
        if any_module:
            detail = (
                f"the environment lacks {parts[0]!r}, imported while the test ran (repairs "
                f"read collection's imports): the golden patch cannot be blamed [{match.group(0)}]"
            )
            return Fault(FaultKind.environment_build, detail, retryable=False)
    return _absent_package(message, unavailable)


def _absent_package(message: str, unavailable: Mapping[str, str]) -> Fault | None:
    """A test's message that says a module the environment leaves out is absent."""
    names = "|".join(re.escape(m) for m in sorted(unavailable, key=len, reverse=True) if m)
    if not names:
        return None
    for template in (_ABSENT_AFTER, _ABSENT_BEFORE):
        match = re.search(template.format(names=names), message, re.IGNORECASE)
        if match is not None:
            module = next(m for m in unavailable if m.lower() == match.group("module").lower())
            detail = (
                f"the environment cannot provide {module!r}: {unavailable[module]} "
                f"[{match.group(0)}]"
            )
            return Fault(FaultKind.environment_build, detail, retryable=False)
    return None


# --- hardware ----------------------------------------------------------------------------


def required_hardware(request: RunRequest) -> Hardware:
    """The request's hardware, with as many GPUs as its most demanding ``probe_gpu`` mark."""
    sources: Iterable[str] = ()
    if request.overlay is not None:
        sources = (*request.overlay.probes.values(), *request.overlay.files.values())
    marked = max((marked_gpus(source) for source in sources), default=0)
    if marked <= request.hardware.gpus:
        return request.hardware
    return replace(request.hardware, gpus=marked)

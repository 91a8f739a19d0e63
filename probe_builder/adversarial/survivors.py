"""Survivor search: which adversarial patches pass the PR's own tests, at the least cost.

A survivor is a patch that breaks a promise yet passes every original test
(the PR's post-change test files) that the golden patch passes: the evidence
a maintainer report shows. The golden patch runs once with coverage.py
switched on for every Python process of the run (``COVERAGE_PROCESS_START``,
contexts per test function), which maps each line of the post-change tree to
the tests that execute it. Each variant then runs in a fresh pytest process
against only the golden-passing tests that execute its mutated line; a line
run outside any test (at import, in a fixture, in a subprocess) or a variant
without a line falls back to the PR's test files, as does a search without
coverage data; a line no test executes cannot be seen by the original tests,
so the variant survives without a run. Independent runs go in parallel up to
the backend's slots. The search reports its test runs and wall time against
the naive cost of one full-suite run per variant.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from pathlib import Path, PurePosixPath

from probewatch.errors import BuildError
from probewatch.testfiles import is_pytest_module
from runners.execute import TreeRunner, execute
from runners.testrun.faults import DEFAULT_RETRIES
from runners.types import (
    Backend,
    EnvironmentRef,
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
from runners.workspace import WorkspaceMode
from task_registry.types import Control, Suite, utcnow

COVERAGE_ENV = "COVERAGE_PROCESS_START"  # read by coverage.py's .pth hook in every process
NOT_IN_A_TEST = ""  # coverage.py's context for code run outside any test function
FAILING = frozenset({TestStatus.failed, TestStatus.error, TestStatus.timeout})
COVERAGE_CONFIG = """\
[run]
data_file = {data_file}
parallel = true
relative_files = true
dynamic_context = test_function
patch = _exit
"""


class BaselineError(BuildError):
    """The golden patch cannot serve as the baseline: no original tests, or it fails them."""


class NothingRunsHere(BaselineError):
    """No original test can run here: each needs GPUs this runner does not offer, or the
    machine failed it (a GPU, an asset, a module the environment cannot have): they wait."""

    def __init__(self, message: str, waiting: Mapping[str, str]) -> None:
        super().__init__(message)
        self.waiting = dict(waiting)


@dataclass(frozen=True)
class TaskRunSpec:
    """What every control run of one task shares: the repository, the golden patch and
    the original tests (the PR's post-change test files, written as overlay files)."""

    repo: Path
    base_commit: str
    golden_patch: str
    original_tests: Mapping[str, str]
    removed_tests: tuple[str, ...] = ()  # test files the PR deletes: removed from the tree
    setup_commands: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)  # every run's variables (the CI's)
    environment: EnvironmentRef | None = None
    hardware: Hardware = field(default_factory=Hardware)
    timeout_per_test_s: float | None = 300.0
    timeout_run_s: float = 3600.0
    # Original test files (or single tests) not run here, with why: a convention or a mark
    # asks for GPUs this runner lacks, or the golden run showed the machine failed them.
    waiting: Mapping[str, str] = field(default_factory=dict)

    def overlay(self, probes: Mapping[str, str] | None = None) -> TestOverlay:
        return TestOverlay(
            replace_dirs=self.removed_tests, files=dict(self.original_tests), probes=probes or {}
        )

    def request(
        self,
        patches: Sequence[PatchSpec],
        *,
        label: str,
        probes: Mapping[str, str] | None = None,
        tests: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> RunRequest:
        """A run of the original tests (and ``probes``) on the base plus ``patches``; with
        tests waiting elsewhere, "the original tests" are the ones that run here."""
        if not tests and self.waiting:
            tests = (*self.test_modules, *(probes or {}))
        return RunRequest(
            repo=self.repo,
            base_commit=self.base_commit,
            patches=tuple(patches),
            overlay=self.overlay(probes),
            tests=tuple(tests),
            environment=self.environment,
            setup_commands=self.setup_commands,
            hardware=self.hardware,
            timeout_per_test_s=self.timeout_per_test_s,
            timeout_run_s=self.timeout_run_s,
            env={**self.env, **(env or {})},
            label=label,
        )

    def golden(self) -> PatchSpec:
        return PatchSpec(name="golden", diff=self.golden_patch, allow_binary=True)

    @property
    def test_modules(self) -> tuple[str, ...]:
        """The original test files pytest collects here (an empty selection would mean the
        full suite, so a task without any cannot be judged on its own tests)."""
        return tuple(
            p for p in self.original_tests if is_pytest_module(p) and p not in self.waiting
        )


@dataclass(frozen=True)
class ControlJob:
    """One run to make, and what it stands for in the task's records."""

    control: Control
    suite: Suite
    request: RunRequest
    adversarial: str | None = None  # the adversarial patch's id for Control.adversarial
    attempt: int = 1  # golden runs are numbered 1..3


@dataclass(frozen=True)
class ControlRun:
    job: ControlJob
    result: RunResult
    started_at: datetime
    finished_at: datetime

    @property
    def label(self) -> str:
        return self.job.request.label

    def status_of_file(self, path: str) -> tuple[TestStatus, ...]:
        """Statuses of the tests of one test file (a collection error is the file's node)."""
        return tuple(t.status for t in self.result.tests if _in_file(t.node_id, path))

    def rejects_with(self, path: str) -> bool:
        """Whether any test of ``path`` failed, errored or timed out in this run."""
        return any(status in FAILING for status in self.status_of_file(path))


def _in_file(node_id: str, path: str) -> bool:
    return node_id == path or node_id.startswith(path + "::")


RunListener = Callable[[ControlRun], None]


class ControlRunner:
    """Runs jobs through :func:`runners.execute.execute` on one backend, each in a fresh
    process and work tree, in parallel up to the backend's slots for the job's hardware.

    Work trees are ``shared`` checkouts by default: each borrows the mirror's objects
    and writes nothing into it, so runs starting at the same moment cannot race on the
    mirror's worktree list (and a read-only mirror works)."""

    def __init__(
        self,
        backend: Backend,
        *,
        workspace_root: Path,
        retries: int = DEFAULT_RETRIES,
        on_run: RunListener | None = None,
        mode: WorkspaceMode = WorkspaceMode.shared,
    ) -> None:
        self.backend = backend
        self.workspace_root = workspace_root
        self.retries = retries
        self.on_run = on_run
        self.mode = mode
        self._lock = threading.Lock()

    def slots(self, hardware: Hardware) -> int:
        capacity = self.backend.capacity()
        if hardware.gpus > 0:
            return max(1, capacity.gpus // hardware.gpus)
        return max(1, capacity.cpu_slots)

    def run(self, job: ControlJob) -> ControlRun:
        """One job; a golden run is trusted: a module its tests cannot import is the
        environment's fault (see :class:`runners.execute.Blame`)."""
        started = utcnow()
        request = job.request
        if job.control is Control.golden:
            request = replace(request, trusted=True)
        result = execute(
            request,
            self.backend,
            workspace_root=self.workspace_root,
            retries=self.retries,
            mode=self.mode,
        )
        run = ControlRun(job, result, started, utcnow())
        if self.on_run is not None:
            with self._lock:  # listeners print or count: one at a time
                self.on_run(run)
        return run

    def run_all(self, jobs: Sequence[ControlJob]) -> list[ControlRun]:
        """Every job, results in the jobs' order."""
        if not jobs:
            return []
        workers = min(len(jobs), self.slots(jobs[0].request.hardware))
        if workers == 1:
            return [self.run(job) for job in jobs]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="control") as pool:
            return list(pool.map(self.run, jobs))


# --- which tests execute which line ------------------------------------------------------


@dataclass(frozen=True)
class LineCoverage:
    """Per file and line of the post-change tree, the original tests that execute it
    (node ids, or :data:`NOT_IN_A_TEST` when code outside a test function ran it)."""

    lines: Mapping[str, Mapping[int, frozenset[str]]]

    def tests_for(self, path: str, line: int) -> frozenset[str]:
        return self.lines.get(path, {}).get(line, frozenset())


def coverage_config(data_file: Path) -> str:
    return COVERAGE_CONFIG.format(data_file=data_file)


def module_names(path: str) -> list[str]:
    """Every dotted name pytest may give a test file: ``a/b/test_c.py`` → test_c, b.test_c, …"""
    parts = PurePosixPath(path).with_suffix("").parts
    return [".".join(parts[index:]) for index in range(len(parts) - 1, -1, -1)]


def module_index(test_files: Iterable[str]) -> dict[str, str]:
    """Dotted module name → test file; a name two files could have is left out."""
    seen: dict[str, set[str]] = {}
    for path in test_files:
        for name in module_names(path):
            seen.setdefault(name, set()).add(path)
    return {name: next(iter(paths)) for name, paths in seen.items() if len(paths) == 1}


def context_node_id(context: str, modules: Mapping[str, str]) -> str | None:
    """The node id of a ``test_function`` context (``test_c.TestK.test_m``), or None."""
    parts = context.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        path = modules.get(".".join(parts[:cut]))
        if path is not None:
            return path + "::" + "::".join(parts[cut:])
    return None


def read_line_coverage(
    config: Path, data_dir: Path, test_files: Collection[str]
) -> LineCoverage | None:
    """The line → tests map of a finished coverage run; None when it left no data (the
    task's environment lacks coverage.py) or this process cannot read it."""
    if not any(data_dir.glob(".coverage*")):
        return None
    try:
        import coverage  # only a search that measures needs it
    except ImportError:
        return None
    try:
        measured = coverage.Coverage(config_file=str(config))
        measured.combine(data_paths=[str(data_dir)], keep=False)
        data = measured.get_data()
    except coverage.CoverageException:
        return None  # data another coverage.py version wrote: judge on the PR's tests
    data.set_query_contexts(None)
    modules = module_index(test_files)
    return LineCoverage(
        {
            name: {n: _tests_of(ctx, modules) for n, ctx in data.contexts_by_lineno(name).items()}
            for name in data.measured_files()
            if not Path(name).is_absolute()  # outside the work tree: not the repository's
        }
    )


def _tests_of(contexts: Iterable[str], modules: Mapping[str, str]) -> frozenset[str]:
    """Node ids of the contexts; a context outside a test, or unknown, is NOT_IN_A_TEST."""
    found = set()
    for context in contexts:
        node = context_node_id(context, modules) if context else None
        found.add(node if node is not None else NOT_IN_A_TEST)
    return frozenset(found)


# --- the search --------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """A patch to judge against the original tests: the whole golden patch with a change."""

    id: str
    patch: str
    path: str = ""  # the mutated file and line, when known
    line: int | None = None
    operator: str = ""  # the mutation operator's name, for a mechanical mutant


class Selection(StrEnum):
    covering = "covering"  # the golden-passing tests that execute the mutated line
    pr_tests = "pr_tests"  # the PR's test files: no coverage data, or the line runs outside tests
    unexecuted = "unexecuted"  # no original test executes the line: survives without a run


@dataclass(frozen=True)
class GoldenBaseline:
    run: ControlRun
    passed: frozenset[str]  # original tests the golden patch passes
    coverage: LineCoverage | None

    def selection(self, variant: Variant) -> tuple[Selection, tuple[str, ...]]:
        """Which tests judge ``variant``, and why. Without line data the PR's tests judge
        it, and of those only the ones the golden patch passes can tell it apart."""
        if self.coverage is None or variant.line is None or not variant.path:
            return Selection.pr_tests, self.passed_tests
        tests = self.coverage.tests_for(variant.path, variant.line)
        if NOT_IN_A_TEST in tests:
            return Selection.pr_tests, self.passed_tests
        chosen = tuple(sorted(t for t in tests if _covers_a_pass(t, self.passed)))
        return (Selection.covering, chosen) if chosen else (Selection.unexecuted, ())

    @property
    def passed_tests(self) -> tuple[str, ...]:
        return tuple(sorted(self.passed))

    @property
    def blind(self) -> int:
        """Original tests that did not pass here: they might execute a line the others do not."""
        return sum(
            1 for t in self.run.result.tests if not t.is_probe and t.status is not TestStatus.passed
        )


def _covers_a_pass(node: str, passed: Collection[str]) -> bool:
    """A function's node id stands for all its parametrised cases."""
    return any(p == node or p.startswith(node + "[") for p in passed)


@dataclass(frozen=True)
class SurvivorVerdict:
    variant: str
    survives: bool | None  # None: the run could not judge (timeout, system fault)
    selection: Selection
    tests: tuple[str, ...]  # node ids selected; empty with pr_tests means the PR's test files
    failing: tuple[str, ...] = ()  # golden-passing tests the variant does not pass
    reason: str = ""
    run: ControlRun | None = None


@dataclass(frozen=True)
class SearchStats:
    """Cost of the search against one full-suite run per variant."""

    variants: int
    runs: int  # pytest sessions, the golden coverage run included
    test_executions: int  # test cases run, summed over sessions
    wall_s: float
    naive_runs: int  # one full-suite run per variant, and the golden one
    naive_test_executions: int  # naive_runs x the suite's size
    suite_size: int  # tests in the suite the naive count multiplies by
    suite_measured: bool  # True: the full suite was collected; False: the PR's tests only
    coverage_used: bool


@dataclass(frozen=True)
class SurvivorReport:
    golden: GoldenBaseline
    verdicts: tuple[SurvivorVerdict, ...]
    stats: SearchStats
    suite_run: ControlRun | None = None
    waiting: Mapping[str, str] = field(default_factory=dict)  # the spec's, and the baseline's

    def verdict(self, variant_id: str) -> SurvivorVerdict:
        return next(v for v in self.verdicts if v.variant == variant_id)

    @property
    def survivors(self) -> tuple[str, ...]:
        return tuple(v.variant for v in self.verdicts if v.survives)

    @property
    def runs(self) -> tuple[ControlRun, ...]:
        found = [self.golden.run, *(v.run for v in self.verdicts if v.run is not None)]
        return tuple(found + ([self.suite_run] if self.suite_run else []))


def golden_baseline(
    spec: TaskRunSpec, runner: ControlRunner, *, use_coverage: bool = True
) -> GoldenBaseline:
    """One golden run of the original tests, with line coverage when asked for and the
    backend runs on this host (the data file must be readable here)."""
    if not use_coverage or not isinstance(runner.backend, TreeRunner):
        run = runner.run(_golden_job(spec, {}))
        return GoldenBaseline(run, run.result.passed, None)
    runner.workspace_root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="coverage-", dir=runner.workspace_root))
    try:
        config = folder / "coveragerc"
        (folder / "data").mkdir()
        config.write_text(coverage_config(folder / "data" / ".coverage"), encoding="utf-8")
        job = _golden_job(spec, {COVERAGE_ENV: str(config)})
        # The run is sandboxed: the coverage folder is the one host folder it may write.
        job = replace(job, request=replace(job.request, outputs=(folder,)))
        run = runner.run(job)
        found = None
        if run.result.outcome is Outcome.completed:
            found = read_line_coverage(config, folder / "data", spec.original_tests)
        return GoldenBaseline(run, run.result.passed, found)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _golden_job(spec: TaskRunSpec, env: Mapping[str, str]) -> ControlJob:
    request = spec.request([spec.golden()], label="golden-baseline", env=env)
    return ControlJob(Control.golden, Suite.original, request, attempt=0)


def _judge(
    variant: Variant,
    run: ControlRun,
    selection: Selection,
    tests: Sequence[str],
    passed: frozenset[str],
) -> SurvivorVerdict:
    verdict = SurvivorVerdict(variant.id, None, selection, tuple(tests), run=run)
    result = run.result
    if result.outcome in (Outcome.unappliable, Outcome.refused):
        return replace(verdict, survives=False, reason=f"does not apply: {result.detail}")
    if result.outcome is not Outcome.completed:
        return replace(verdict, reason=f"{result.outcome}: {result.detail}")
    relevant = [p for p in passed if not tests or any(_selected(p, t) for t in tests)]
    failing = tuple(sorted(p for p in relevant if p not in result.passed))
    reason = f"fails {len(failing)} original test(s)" if failing else "passes the original tests"
    return replace(verdict, survives=not failing, failing=failing, reason=reason)


def _selected(node: str, selected: str) -> bool:
    return node == selected or node.startswith(selected + "[")


def _variant_job(spec: TaskRunSpec, variant: Variant, tests: Sequence[str]) -> ControlJob:
    request = spec.request(
        [PatchSpec(name=f"adversarial-{variant.id}", diff=variant.patch, allow_binary=True)],
        label=f"adversarial-{variant.id}",
        tests=tests,
    )
    return ControlJob(Control.adversarial, Suite.original, request, adversarial=variant.id)


def search_survivors(
    spec: TaskRunSpec,
    variants: Sequence[Variant],
    runner: ControlRunner,
    *,
    use_coverage: bool = True,
    measure_suite: bool = False,
) -> SurvivorReport:
    """Judge every variant against the original tests the golden patch passes here."""
    started = time.monotonic()
    if not spec.test_modules:
        if spec.waiting:
            raise NothingRunsHere(_none_here(spec.waiting), spec.waiting)
        raise BaselineError("the PR changes no test module: there are no original tests")
    golden = golden_baseline(spec, runner, use_coverage=use_coverage)
    spec = replace(spec, waiting={**spec.waiting, **machine_failures(golden.run.result)})
    _check_baseline(golden, spec.waiting)
    planned = [(v, *golden.selection(v)) for v in variants]
    to_run = [(v, sel, tests) for v, sel, tests in planned if sel is not Selection.unexecuted]
    runs = runner.run_all([_variant_job(spec, v, tests) for v, _, tests in to_run])
    judged = {
        v.id: _judge(v, run, sel, tests, golden.passed)
        for (v, sel, tests), run in zip(to_run, runs, strict=True)
    }
    blind = golden.blind + len(spec.waiting)
    verdicts = tuple(judged.get(v.id) or _unexecuted(v, blind) for v, _, _ in planned)
    suite_run = runner.run(_suite_job(spec)) if measure_suite else None
    stats = _stats(golden, verdicts, time.monotonic() - started, suite_run)
    return SurvivorReport(golden, verdicts, stats, suite_run, dict(spec.waiting))


def machine_failures(result: RunResult) -> dict[str, str]:
    """Test files every test of which the machine failed (a GPU, an asset, a module the
    environment lacks), and single such tests in files that ran: they wait elsewhere."""
    by_file: dict[str, list[TestCaseResult]] = {}
    for test in result.tests:
        if not test.is_probe:
            by_file.setdefault(test.node_id.split("::", 1)[0], []).append(test)
    found = {}
    for path, tests in by_file.items():
        faulted = [t for t in tests if t.fault is not None]
        if faulted and len(faulted) == len(tests):
            found[path] = _fault_reason(faulted[0])
        else:
            found.update({t.node_id: _fault_reason(t) for t in faulted})
    return found


def golden_failures(result: RunResult) -> dict[str, str]:
    """Original tests that fail with the golden patch here, the machine not to blame as far as
    their messages show (a test that needs what its neighbour left behind, a fixture that
    wants the CI's data): no variant is judged on them. Each with its first message line."""
    found = {}
    for test in result.tests:
        if test.status in FAILING and test.fault is None and not test.is_probe:
            lines = (test.message or "").strip().splitlines()
            found[test.node_id] = f"{test.status}: {lines[0] if lines else 'no message'}"
    return found


def _fault_reason(test: TestCaseResult) -> str:
    assert test.fault is not None
    return f"{test.fault.kind}: {test.fault.detail}"


def _check_baseline(golden: GoldenBaseline, waiting: Mapping[str, str]) -> None:
    """The golden run must complete and pass some original test here; else say why, per
    test file. A run whose every failure the machine caused is a fault, not an error."""
    result = golden.run.result
    failing = [t for t in result.tests if t.status in FAILING and not t.is_probe]
    every_failure_faulted = bool(failing) and all(t.fault is not None for t in failing)
    if not golden.passed and every_failure_faulted:
        raise NothingRunsHere(_none_here(waiting), waiting)
    if result.outcome is not Outcome.completed and not (
        result.outcome is Outcome.fault and every_failure_faulted
    ):
        raise BaselineError(f"the golden run did not complete ({result.outcome}): {result.detail}")
    if result.outcome is Outcome.completed and not any(not t.is_probe for t in result.tests):
        raise BaselineError(
            "pytest collects no test from the PR's own test files: files named like tests "
            "that hold none (scripts, launchers), so nothing of the PR's own judges the change"
        )
    if not golden.passed:
        raise BaselineError(
            "the golden patch passes none of the PR's own tests here: " + _why_per_file(result)
        )


def _none_here(waiting: Mapping[str, str]) -> str:
    shown = "; ".join(f"{path}: {why}" for path, why in list(waiting.items())[:3])
    more = f" (and {len(waiting) - 3} more)" if len(waiting) > 3 else ""
    gpu = all(why.startswith((FaultKind.needs_gpu, "needs ")) for why in waiting.values())
    where = "a GPU runner" if gpu else "a runner that can run it"
    return f"no original test can run on this runner, each waits for {where}: {shown}{more}"


def _why_per_file(result: RunResult) -> str:
    """Each test file with the first thing that went wrong in it: a fault, or the first line
    of the first failure."""
    first: dict[str, str] = {}
    for test in result.tests:
        path = test.node_id.split("::", 1)[0]
        if path in first or test.status not in FAILING:
            continue
        if test.fault is not None:
            first[path] = f"{test.fault.kind}: {test.fault.detail}"
        else:
            line = (test.message or "").strip().splitlines()
            first[path] = f"{test.status}: {line[0] if line else 'no message'}"
    if not first:
        return result.detail or "no test ran"
    return "; ".join(f"{path}: {why}" for path, why in first.items())


def _unexecuted(variant: Variant, blind: int) -> SurvivorVerdict:
    """No passing original test executes the mutated line: the PR's tests cannot see the
    variant, unless some of them could not run or pass here, in which case nobody knows."""
    where = f"{variant.path}:{variant.line}"
    if blind:
        return SurvivorVerdict(
            variant=variant.id,
            survives=None,
            selection=Selection.unexecuted,
            tests=(),
            reason=f"no test that passed here executes {where}; {blind} of the PR's tests "
            "did not run or pass here and might",
        )
    return SurvivorVerdict(
        variant=variant.id,
        survives=True,
        selection=Selection.unexecuted,
        tests=(),
        reason=f"no original test executes {where}",
    )


def _suite_job(spec: TaskRunSpec) -> ControlJob:
    request = replace(spec.request([spec.golden()], label="golden-full-suite"), full_suite=True)
    return ControlJob(Control.golden, Suite.all, request, attempt=0)


def _stats(
    golden: GoldenBaseline,
    verdicts: Sequence[SurvivorVerdict],
    wall_s: float,
    suite_run: ControlRun | None,
) -> SearchStats:
    ran = [golden.run, *(v.run for v in verdicts if v.run is not None)]
    suite = suite_run.result if suite_run is not None else golden.run.result
    size = len(suite.tests)
    return SearchStats(
        variants=len(verdicts),
        runs=len(ran),
        test_executions=sum(len(r.result.tests) for r in ran),
        wall_s=round(wall_s, 3),
        naive_runs=len(verdicts) + 1,
        naive_test_executions=(len(verdicts) + 1) * size,
        suite_size=size,
        suite_measured=suite_run is not None,
        coverage_used=golden.coverage is not None,
    )

"""Grading a submission in a clean tree: the golden baseline, the run, and the two scores.

A submission is graded in a fresh work tree of the pre-change snapshot (never
the agent's tree), through ``runners.execute``: its test-file changes are
dropped (an agent's own tests never replace the task's) and what is left is
applied with test changes forbidden; then the post-change test files (the
task's test patch applied to the snapshot, read without a checkout) and the
accepted probes are written over the tree, and pytest runs them. N_p and G_p
come from the task's golden run with the same overlay on this hardware: the
latest completed golden run in the registry that has per-test results for the
original tests and every probe, or, when there is none, one golden run made
here and stored. Each submission gets two scores: original tests only, and
with the probes.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sqlmodel import Session, col, select

from probe_builder.environment import TaskCommits, task_environment
from probe_builder.pipeline import RepoSettings
from probewatch.errors import EvaluationError
from probewatch.testfiles import is_pytest_module
from runners.agents import split_test_changes
from runners.patches import parse_changes
from runners.types import (
    Backend,
    EnvironmentRef,
    FaultKind,
    Hardware,
    Outcome,
    PatchSpec,
    RunRequest,
    RunResult,
    TestOverlay,
    sandbox_columns,
)
from runners.workspace import git
from task_registry.evaluation import record_score
from task_registry.models import (
    Score,
    ScoreCreate,
    Task,
    TestResult,
    TestResultBase,
    ValidationRun,
    ValidationRunCreate,
)
from task_registry.scoring import SubmissionState, TaskOutcome, TaskScore, score_task
from task_registry.tasks import list_probes, record_validation_run
from task_registry.types import Control, ProbeStatus, RunOutcome, ScoreSuite, Suite, TestOutcome

RUN_OUTCOME: dict[Outcome, RunOutcome] = {
    Outcome.completed: RunOutcome.completed,
    Outcome.unappliable: RunOutcome.unappliable,
    Outcome.refused: RunOutcome.unappliable,
    Outcome.timeout: RunOutcome.timeout,
    Outcome.fault: RunOutcome.fault,
    Outcome.unschedulable: RunOutcome.unschedulable,
}
# How a grading run's outcome scores the submission: a run time-out is the candidate's
# (its tests are marked timeout); a fault or missing hardware is the system's.
STATE_OF_RUN: dict[Outcome, SubmissionState] = {
    Outcome.completed: SubmissionState.graded,
    Outcome.timeout: SubmissionState.graded,
    Outcome.unappliable: SubmissionState.unappliable,
    Outcome.refused: SubmissionState.unappliable,
    Outcome.fault: SubmissionState.fault,
    Outcome.unschedulable: SubmissionState.fault,
}
LOG_LIMIT_CHARS = 20_000
# Faults a candidate's own code can cause: past the sandbox's limits (the trusted golden run
# stayed within them), or a machine fault a test the golden run passed on this hardware
# cannot have for the machine's sake (a test made to print "CUDA is not available" would
# otherwise turn a failure into an excluded fault).
CANDIDATE_LIMITS = frozenset(
    {
        FaultKind.memory_limit,
        FaultKind.process_limit,
        FaultKind.file_limit,
        FaultKind.cpu_limit,
        FaultKind.disk_limit,
    }
)
MACHINE_CONSTANTS = frozenset(
    {
        FaultKind.needs_gpu,
        FaultKind.missing_asset,
        FaultKind.unset_variable,
        FaultKind.environment_build,
    }
)


class GradingError(EvaluationError):
    """A task that cannot be graded here (its golden run did not complete, say)."""


@dataclass(frozen=True)
class RepoSetup:
    """How a repository's runs are made on this host: its mirror, and the run settings its
    tasks were built with (``bot.repos.run_settings``): test globs, setup commands, the
    plan of each task's environment, time limits."""

    mirror: Path  # clone or bare mirror holding the tasks' commits
    settings: RepoSettings = field(default_factory=RepoSettings)


@dataclass(frozen=True)
class GradingTask:
    """A task as grading needs it, read once from the registry (no session needed after)."""

    task_id: int
    instance_id: str
    repo: str
    base_commit: str
    merged_at: datetime
    statement: str
    patch: str
    hollow_patch: str
    test_patch: str
    hardware: Hardware
    probes: Mapping[str, str] = field(default_factory=dict)  # accepted probes: path → code
    areas: tuple[str, ...] = ()
    merge_commit: str = ""
    lock_hash: str | None = None  # the environment the task was built with


def grading_task(*, session: Session, task: Task) -> GradingTask:
    assert task.id is not None
    probes = list_probes(session=session, task_id=task.id)
    return GradingTask(
        task_id=task.id,
        instance_id=task.instance_id,
        repo=task.repo,
        base_commit=task.base_commit,
        merged_at=task.created_at,
        statement=task.problem_statement,
        patch=task.patch,
        hollow_patch=task.hollow_patch,
        test_patch=task.test_patch,
        hardware=Hardware(gpus=task.gpus, gpu_type=task.gpu_type),
        probes={p.path: p.content for p in probes if p.status == ProbeStatus.accepted},
        areas=tuple(task.areas),
        merge_commit=task.merge_commit or "",
        lock_hash=task.lock_hash,
    )


# --- the post-change tests ---------------------------------------------------------------


@dataclass(frozen=True)
class PostChangeTests:
    files: Mapping[str, str]  # path → text after the test patch
    deleted: tuple[str, ...] = ()
    unreadable: tuple[str, ...] = ()  # binary or not UTF-8: cannot travel in an overlay


def post_change_tests(mirror: Path, base: str, test_patch: str) -> PostChangeTests:
    """The files the test patch touches, as they are after it: the patch applied to an index of
    ``base`` in a scratch repository borrowing the mirror's objects (no checkout, mirror
    untouched)."""
    if not test_patch.strip():
        return PostChangeTests(files={})
    changes = parse_changes(PatchSpec("test_patch", test_patch))
    with tempfile.TemporaryDirectory(prefix="probewatch-tests-") as scratch:
        index_repo = Path(scratch) / "repo"
        _borrowing_repo(mirror, index_repo)
        git(["read-tree", base], cwd=index_repo)
        text = test_patch if test_patch.endswith("\n") else test_patch + "\n"
        git(["apply", "--cached", "--whitespace=nowarn", "-"], cwd=index_repo, stdin=text)
        targets = [c.target for c in changes if c.target is not None]
        contents = {path: _indexed_text(index_repo, path) for path in targets}
    deleted = tuple(c.source for c in changes if c.target is None and c.source is not None)
    return PostChangeTests(
        files={p: t for p, t in contents.items() if t is not None},
        deleted=deleted,
        unreadable=tuple(p for p, t in contents.items() if t is None),
    )


def _borrowing_repo(mirror: Path, path: Path) -> None:
    git(["init", "--quiet", str(path)], cwd=path.parent)
    common = git(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=mirror)
    alternates = path / ".git" / "objects" / "info" / "alternates"
    alternates.write_text(str(Path(common.stdout.strip()) / "objects") + "\n")


def _indexed_text(repo: Path, path: str) -> str | None:
    done = subprocess.run(
        ["git", "cat-file", "blob", f":{path}"], cwd=repo, capture_output=True, check=True
    )
    try:
        return done.stdout.decode("utf-8")
    except UnicodeDecodeError:
        return None


def grading_overlay(tests: PostChangeTests, probes: Mapping[str, str]) -> TestOverlay:
    return TestOverlay(replace_dirs=tests.deleted, files=dict(tests.files), probes=dict(probes))


# --- runs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Grader:
    """Runs of one task on one backend, all with the same test overlay and environment."""

    backend: Backend
    setup: RepoSetup
    task: GradingTask
    overlay: TestOverlay
    environment: EnvironmentRef | None = None  # None: this interpreter

    def request(self, patches: Sequence[PatchSpec], label: str) -> RunRequest:
        settings = self.setup.settings
        return RunRequest(
            repo=self.setup.mirror,
            base_commit=self.task.base_commit,
            patches=tuple(patches),
            overlay=self.overlay,
            environment=self.environment,
            setup_commands=settings.setup_commands,
            hardware=self.task.hardware,
            timeout_per_test_s=settings.timeout_per_test_s,
            timeout_run_s=settings.timeout_run_s,
            env=dict(settings.env),
            label=label,
        )

    @property
    def has_test_files(self) -> bool:
        """Whether the overlay holds post-change test modules (else only probes are run)."""
        return any(is_pytest_module(path) for path in self.overlay.files)

    def run_golden(self) -> RunResult:
        spec = PatchSpec("golden", self.task.patch, allow_binary=True)
        return self.backend.run(self.request([spec], f"{self.task.instance_id}-golden"))

    def run_submission(self, diff: str, label: str) -> RunResult:
        """Grade ``diff`` (test-file changes already dropped); test changes stay forbidden."""
        globs = self.setup.settings.test_globs
        spec = PatchSpec("submission", diff, forbid_test_changes=True, test_globs=globs)
        return self.backend.run(self.request([spec], label))


def make_grader(backend: Backend, setup: RepoSetup, task: GradingTask) -> Grader:
    tests = post_change_tests(setup.mirror, task.base_commit, task.test_patch)
    overlay = grading_overlay(tests, task.probes)
    return Grader(backend, setup, task, overlay, grading_environment(setup, task, tests))


def grading_environment(
    setup: RepoSetup, task: GradingTask, tests: PostChangeTests
) -> EnvironmentRef | None:
    """The environment the task was built with: every grading run uses it."""
    plan = setup.settings.environment
    if plan is None:
        return None
    modules = tuple(p for p in tests.files if is_pytest_module(p))
    commits = TaskCommits(
        setup.mirror, task.base_commit, task.merge_commit, task.merged_at, modules
    )
    return task_environment(plan, task.lock_hash, commits)[0]


def gradable_part(diff: str, setup: RepoSetup) -> tuple[str, tuple[str, ...]]:
    """The submission without its test-file changes, and the test files it tried to change."""
    return split_test_changes(diff, setup.settings.test_globs)


# --- the golden baseline -------------------------------------------------------------------


@dataclass(frozen=True)
class Baseline:
    """What the golden patch collected and passed on this hardware (N_p, G_p)."""

    run_id: int
    collected: frozenset[str]
    passed: frozenset[str]
    probe_tests: frozenset[str]

    def sets(self, suite: ScoreSuite) -> tuple[frozenset[str], frozenset[str]]:
        """(N_p, G_p) of a suite: the original tests alone, or with the probes."""
        if suite is ScoreSuite.with_probes:
            return self.collected, self.passed
        return self.collected - self.probe_tests, self.passed - self.probe_tests


def stored_baseline(
    *, session: Session, task_id: int, probe_paths: Sequence[str], needs_original: bool = True
) -> Baseline | None:
    """The latest completed golden run with results for every probe and, when the task has
    post-change test files (``needs_original``), for its original tests."""
    query = (
        select(ValidationRun)
        .where(ValidationRun.task_id == task_id, ValidationRun.control == Control.golden)
        .where(ValidationRun.outcome == RunOutcome.completed)
        .order_by(col(ValidationRun.id).desc())
    )
    for run in session.exec(query):
        assert run.id is not None
        results = list(session.exec(select(TestResult).where(TestResult.run_id == run.id)))
        baseline = _baseline(run.id, results)
        if _covers(baseline, probe_paths, needs_original):
            return baseline
    return None


def _baseline(run_id: int, results: Sequence[TestResultBase]) -> Baseline:
    return Baseline(
        run_id=run_id,
        collected=frozenset(r.test_id for r in results),
        passed=frozenset(r.test_id for r in results if r.outcome == TestOutcome.passed),
        probe_tests=frozenset(r.test_id for r in results if r.is_probe),
    )


def _covers(baseline: Baseline, probe_paths: Sequence[str], needs_original: bool) -> bool:
    files = {node.split("::", 1)[0] for node in baseline.probe_tests}
    original = baseline.collected - baseline.probe_tests
    return (bool(original) or not needs_original) and all(p in files for p in probe_paths)


def record_golden(*, session: Session, grader: Grader, result: RunResult) -> Baseline:
    """Store a golden run made here; its baseline, or GradingError when it did not complete."""
    task = grader.task
    run = record_run(
        session=session,
        task_id=task.task_id,
        control=Control.golden,
        result=result,
        runner=grader.backend.name,
    )
    if result.outcome is not Outcome.completed:
        detail = result.detail or (result.fault.detail if result.fault else "")
        raise GradingError(f"{task.instance_id}: the golden run ended {result.outcome}: {detail}")
    assert run.id is not None
    return _baseline(run.id, results_of(result))


# --- storing runs and scores -----------------------------------------------------------------


def results_of(result: RunResult) -> list[TestResultBase]:
    return [
        TestResultBase(
            test_id=t.node_id,
            outcome=TestOutcome(t.status.value),
            duration_s=t.duration_s,
            message=t.message,
            is_probe=t.is_probe,
        )
        for t in result.tests
    ]


def record_run(
    *,
    session: Session,
    task_id: int,
    control: Control,
    result: RunResult,
    runner: str,
    submission_id: int | None = None,
    note: str = "",
) -> ValidationRun:
    """A grading or golden run and its per-test results, stored together."""
    sandbox, sandbox_reason = sandbox_columns(result.sandbox)
    run_in = ValidationRunCreate(
        task_id=task_id,
        submission_id=submission_id,
        control=control,
        suite=Suite.all,
        attempt=result.attempts,
        runner=runner or "local",
        outcome=RUN_OUTCOME[result.outcome],
        fault_kind=result.fault.kind.value if result.fault else None,
        fault_detail=result.fault.detail if result.fault else (result.detail or None),
        n_collected=len(result.collected),
        n_passed=len(result.passed),
        wall_s=result.resources.wall_s,
        cpu_s=result.resources.cpu_s,
        peak_rss_bytes=result.resources.peak_rss_bytes,
        gpu_peak_bytes=result.resources.gpu_peak_bytes,
        sandbox=sandbox,
        sandbox_reason=sandbox_reason,
        log=(note + result.log)[-LOG_LIMIT_CHARS:],
    )
    return record_validation_run(session=session, run_in=run_in, results=results_of(result))


def submission_state(run: RunResult, baseline: Baseline) -> SubmissionState:
    """How a grading run scores the submission. A fault is the system's, excluded from the
    score, unless the candidate's code caused it: a limit of the sandbox, or a fault of a
    kind that does not come and go (no GPU, an uncached asset, an unset variable, a missing
    module) on tests that all passed in the golden run. Those runs are graded, their faulted
    tests failed."""
    state = STATE_OF_RUN[run.outcome]
    if state is not SubmissionState.fault or run.fault is None:
        return state
    if run.fault.kind in CANDIDATE_LIMITS:
        return SubmissionState.graded
    faulted = {t.node_id for t in run.tests if t.fault is not None}
    if run.fault.kind in MACHINE_CONSTANTS and faulted and faulted <= baseline.passed:
        return SubmissionState.graded
    return state


def suite_scores(
    task: GradingTask,
    baseline: Baseline,
    state: SubmissionState,
    passed: frozenset[str] = frozenset(),
) -> dict[ScoreSuite, TaskScore]:
    """The submission's score on each suite: scoring.score_task with that suite's N_p and G_p."""
    scores = {}
    for suite in ScoreSuite:
        collected, golden = baseline.sets(suite)
        outcome = TaskOutcome(
            instance_id=task.instance_id,
            merged_at=task.merged_at,
            collected=collected,
            golden_passed=golden,
            candidate_passed=passed,
            state=state,
            areas=task.areas,
        )
        scores[suite] = score_task(outcome)
    return scores


def record_scores(
    *,
    session: Session,
    submission_id: int,
    scores: Mapping[ScoreSuite, TaskScore],
    baseline: Baseline | None,
    passed: frozenset[str] = frozenset(),
    fault: bool = False,
    unsandboxed: bool = False,
) -> None:
    """One Score row per suite; A_p is stored as the candidate's passes among that N_p.
    ``unsandboxed``: the agent's run or the grading run had no sandbox."""
    for suite in ScoreSuite:
        score = scores.get(suite)
        collected = baseline.sets(suite)[0] if baseline else frozenset()
        record_score(
            session=session,
            score_in=ScoreCreate(
                submission_id=submission_id,
                suite=suite,
                n_collected=score.n if score else len(collected),
                n_passed=score.a if score else 0,
                n_golden_passed=score.g if score else 0,
                passed_fraction=score.passed_fraction if score else 0.0,
                resolved_count=score.resolved_count if score else False,
                resolved_set=score.resolved_set if score else False,
                fault=fault,
                unsandboxed=unsandboxed,
                passed_tests=sorted(passed & collected),
            ),
        )


def task_score_of(row: Score, instance_id: str) -> TaskScore:
    """A stored score as scoring's record (the registry row is the source of truth)."""
    return TaskScore(
        instance_id=instance_id,
        n=row.n_collected,
        a=row.n_passed,
        g=row.n_golden_passed,
        passed_fraction=row.passed_fraction,
        resolved_count=row.resolved_count,
        resolved_set=row.resolved_set,
    )

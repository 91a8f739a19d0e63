"""One task of an evaluation: the golden baseline, the agent's run, the stored submission,
grading in a clean tree, and the two scores; system faults stored as faults.

A task's submission moves pending → submitted (the agent's patch and
transcript stored) → graded (a grading run and two scores stored), or to
fault. A submission already graded is reported, not redone; a submitted one is
graded without running the agent again; a fault is retried, from the agent
only when the agent's side failed (its log starts with ``AGENT_FAULT_NOTE``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session

from bot.evaluate.grading import (
    Baseline,
    Grader,
    GradingError,
    GradingTask,
    RepoSetup,
    gradable_part,
    grading_task,
    make_grader,
    record_golden,
    record_run,
    record_scores,
    stored_baseline,
    submission_state,
    suite_scores,
    task_score_of,
)
from bot.evaluate.reference_agents import TaskPatches, program_for
from bot.evaluate.types import (
    AgentInfo,
    EvalEvent,
    EvalRequest,
    ProgressCallback,
    Stage,
    TaskResult,
)
from runners.agents import (
    AgentError,
    AgentOutcome,
    AgentProgram,
    AgentRequest,
    AgentResult,
    CommandAgent,
    run_agent,
)
from runners.overlay import OverlayError
from runners.patches import PatchError
from runners.sandbox.limits import DEFAULT_LIMITS, Limits
from runners.types import (
    Backend,
    EnvironmentRef,
    RunResult,
    SandboxKind,
    sandbox_columns,
    unconfined,
)
from runners.workspace import WorkspaceError
from task_registry.db import session_scope
from task_registry.evaluation import get_or_create_submission, list_scores, set_submission_status
from task_registry.models import Submission, SubmissionCreate
from task_registry.scoring import SubmissionState
from task_registry.tasks import get_task
from task_registry.types import Control, ScoreSuite, SubmissionStatus

AGENT_FAULT_NOTE = "[probewatch] agent fault: "  # first line of a submission log: rerun the agent
# Errors of one task's run that are the system's, not the candidate's: the task is a fault.
TASK_FAULTS: tuple[type[Exception], ...] = (
    AgentError,
    GradingError,
    WorkspaceError,
    PatchError,
    OverlayError,
)


class Tracker:
    """Counts finished tasks and hands events to the callback, one at a time."""

    def __init__(self, total: int, callback: ProgressCallback | None) -> None:
        self.total, self.done, self._callback = total, 0, callback
        self._lock = threading.Lock()

    def emit(
        self, stage: Stage, instance_id: str, detail: str = "", *, counted: bool = False
    ) -> None:
        with self._lock:
            self.done += 1 if counted else 0
            if self._callback is not None:
                self._callback(EvalEvent(stage, instance_id, self.done, self.total, detail))


@dataclass(frozen=True)
class _Stored:
    submission_id: int
    status: SubmissionStatus
    patch: str
    log: str
    sandbox: str | None = None  # the agent's run: its SandboxKind, None when it did not say

    @property
    def unsandboxed(self) -> bool:
        return self.sandbox == SandboxKind.none


@dataclass(frozen=True)
class _Grading:
    state: SubmissionState
    passed: frozenset[str] = frozenset()
    run: RunResult | None = None
    dropped: tuple[str, ...] = ()

    @property
    def unsandboxed(self) -> bool:
        return self.run is not None and unconfined(self.run.sandbox)


@dataclass
class TaskJob:
    """Evaluates one agent on tasks, one call of :meth:`evaluate` per task (thread-safe)."""

    engine: Engine
    backend: Backend
    agent_root: Path
    agent: AgentInfo
    request: EvalRequest
    repos: Mapping[str, RepoSetup]
    tracker: Tracker
    keep_agent_trees: bool = False
    limits: Limits = DEFAULT_LIMITS  # of each agent's sandbox

    @contextmanager
    def session(self) -> Iterator[Session]:
        with session_scope(self.engine) as session:
            yield session

    def evaluate(self, instance_id: str) -> TaskResult:
        with self.session() as session:
            row = get_task(session=session, instance_id=instance_id)
            task = grading_task(session=session, task=row)
            stored = self._submission(session, task)
            earlier = _stored_result(session, stored, task)
        if earlier is not None:
            self.tracker.emit(Stage.skipped, instance_id, "graded by an earlier run", counted=True)
            return earlier
        try:
            result = self._evaluate(task, stored)
        except TASK_FAULTS as exc:
            result = self._fault(task, stored, str(exc), agent_side=False)
        stage = Stage.fault if result.state is SubmissionState.fault else Stage.graded
        self.tracker.emit(stage, instance_id, _summary(result), counted=True)
        return result

    def _submission(self, session: Session, task: GradingTask) -> _Stored:
        submission_in = SubmissionCreate(
            agent_id=self.agent.agent_id, task_id=task.task_id, run_label=self.request.run_label
        )
        row = get_or_create_submission(session=session, submission_in=submission_in)
        assert row.id is not None
        return _Stored(row.id, SubmissionStatus(row.status), row.patch, row.log, row.sandbox)

    def _evaluate(self, task: GradingTask, stored: _Stored) -> TaskResult:
        setup = self.repos[task.repo]
        grader = make_grader(self.backend, setup, task)
        baseline = self._baseline(grader)
        if _needs_agent(stored):
            self.tracker.emit(Stage.agent, task.instance_id)
            outcome = self._run_agent(task, setup, grader.environment)
            if outcome.outcome in (AgentOutcome.cannot_start, AgentOutcome.unschedulable):
                return self._fault(task, stored, outcome.detail, agent_side=True, agent=outcome)
            stored = self._store_agent(stored, outcome)
            state = _zero_state(outcome)
        else:
            state = SubmissionState.empty
        self.tracker.emit(Stage.grading, task.instance_id)
        return self._grade(grader, baseline, stored, state)

    def _baseline(self, grader: Grader) -> Baseline:
        task = grader.task
        with self.session() as session:
            probes = list(task.probes)
            found = stored_baseline(
                session=session,
                task_id=task.task_id,
                probe_paths=probes,
                needs_original=grader.has_test_files,
            )
        if found is not None:
            return found
        result = grader.run_golden()
        with self.session() as session:
            return record_golden(session=session, grader=grader, result=result)

    def _run_agent(
        self, task: GradingTask, setup: RepoSetup, environment: EnvironmentRef | None
    ) -> AgentResult:
        request = AgentRequest(
            repo=setup.mirror,
            base_commit=task.base_commit,
            statement=task.statement,
            program=self._program(task),
            model=self.agent.model,
            budget_s=self.request.budget_s,
            hardware=task.hardware,
            pass_env=self.request.pass_env,
            label=f"{self.agent.name}-{task.instance_id}",
            environment=environment,
            limits=self.limits,
        )
        return run_agent(request, root=self.agent_root, keep=self.keep_agent_trees)

    def _program(self, task: GradingTask) -> AgentProgram:
        if self.agent.builtin:
            return program_for(self.agent.command, TaskPatches(task.patch, task.hollow_patch))
        return CommandAgent(self.agent.command)

    def _store_agent(self, stored: _Stored, outcome: AgentResult) -> _Stored:
        log = f"{_agent_header(outcome)}\n{outcome.transcript}"
        kind, reason = sandbox_columns(outcome.sandbox)
        with self.session() as session:
            row = session.get(Submission, stored.submission_id)
            assert row is not None
            row.patch, row.log, row.wall_s = outcome.patch, log, outcome.wall_s
            row.sandbox, row.sandbox_reason = kind, reason
            row.status = SubmissionStatus.submitted
            session.add(row)
        return _Stored(stored.submission_id, SubmissionStatus.submitted, outcome.patch, log, kind)

    def _grade(
        self, grader: Grader, baseline: Baseline, stored: _Stored, zero: SubmissionState
    ) -> TaskResult:
        kept, dropped = gradable_part(stored.patch, grader.setup)
        if not kept.strip():
            # Nothing to run: no patch at all, or only test-file changes (dropped).
            state = zero if not stored.patch.strip() else SubmissionState.empty
            return self._store_grade(
                grader.task, baseline, stored, _Grading(state, dropped=dropped)
            )
        label = f"{self.agent.name}-{grader.task.instance_id}-grading"
        run = grader.run_submission(kept, label)
        state = submission_state(run, baseline)
        passed = run.passed if state is SubmissionState.graded else frozenset()
        grading = _Grading(state, passed, run, dropped)
        return self._store_grade(grader.task, baseline, stored, grading)

    def _store_grade(
        self, task: GradingTask, baseline: Baseline, stored: _Stored, grading: _Grading
    ) -> TaskResult:
        fault = grading.state is SubmissionState.fault
        scores = {} if fault else suite_scores(task, baseline, grading.state, grading.passed)
        status = SubmissionStatus.fault if fault else SubmissionStatus.graded
        with self.session() as session:
            if grading.run is not None:
                record_run(
                    session=session,
                    task_id=task.task_id,
                    control=Control.submission,
                    result=grading.run,
                    runner=self.backend.name,
                    submission_id=stored.submission_id,
                    note=_dropped_note(grading.dropped),
                )
            record_scores(
                session=session,
                submission_id=stored.submission_id,
                scores=scores,
                baseline=baseline,
                passed=grading.passed,
                fault=fault,
                unsandboxed=stored.unsandboxed or grading.unsandboxed,
            )
            row = session.get(Submission, stored.submission_id)
            assert row is not None
            set_submission_status(session=session, submission=row, status=status)
        return TaskResult(
            task.instance_id,
            grading.state,
            scores,
            dropped_tests=grading.dropped,
            detail=grading.run.detail if grading.run else "",
        )

    def _fault(
        self,
        task: GradingTask,
        stored: _Stored,
        detail: str,
        *,
        agent_side: bool,
        agent: AgentResult | None = None,
    ) -> TaskResult:
        """A system fault: stored with fault scores (excluded, counted); the next run retries it,
        from the agent when the agent's side failed."""
        with self.session() as session:
            row = session.get(Submission, stored.submission_id)
            assert row is not None
            if agent_side:
                transcript = agent.transcript if agent else ""
                row.log = f"{AGENT_FAULT_NOTE}{detail}\n{transcript}"
            row.status = SubmissionStatus.fault
            session.add(row)
            record_scores(
                session=session,
                submission_id=stored.submission_id,
                scores={},
                baseline=None,
                fault=True,
                unsandboxed=stored.unsandboxed or (agent is not None and unconfined(agent.sandbox)),
            )
        return TaskResult(task.instance_id, SubmissionState.fault, detail=detail)


def _needs_agent(stored: _Stored) -> bool:
    if stored.status is SubmissionStatus.submitted:
        return False
    if stored.status is SubmissionStatus.fault:
        return stored.log.startswith(AGENT_FAULT_NOTE) or not stored.log
    return True


def _zero_state(outcome: AgentResult) -> SubmissionState:
    """How an agent run without a patch scores: it changed nothing, or it ended without one."""
    if outcome.outcome is AgentOutcome.finished:
        return SubmissionState.empty
    return SubmissionState.missing


def _agent_header(outcome: AgentResult) -> str:
    return (
        f"[probewatch] agent {outcome.outcome}: {outcome.detail}; submission from "
        f"{outcome.source}; {outcome.wall_s:.1f}s"
    )


def _dropped_note(dropped: Sequence[str]) -> str:
    if not dropped:
        return ""
    return f"[probewatch] test-file changes dropped from the submission: {', '.join(dropped)}\n"


def _stored_result(session: Session, stored: _Stored, task: GradingTask) -> TaskResult | None:
    """The result of a submission an earlier run graded; None when it is not graded."""
    if stored.status is not SubmissionStatus.graded:
        return None
    rows = list_scores(session=session, submission_id=stored.submission_id)
    scores = {ScoreSuite(r.suite): task_score_of(r, task.instance_id) for r in rows}
    fault = any(r.fault for r in rows)
    state = SubmissionState.fault if fault else SubmissionState.graded
    return TaskResult(task.instance_id, state, scores, skipped=True)


def _summary(result: TaskResult) -> str:
    if result.state is SubmissionState.fault:
        return f"fault: {result.detail}"
    parts = [str(result.state)]
    for suite in ScoreSuite:
        score = result.scores.get(suite)
        if score is not None:
            verdict = "resolved" if score.resolved_set else "not resolved"
            parts.append(f"{suite} {score.a}/{score.n} {verdict}")
    return ", ".join(parts)

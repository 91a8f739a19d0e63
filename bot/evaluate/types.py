"""The typed border of an evaluation: what is asked, what each task gives, what comes back.

``bot.evaluate.harness`` runs evaluations and ``bot.evaluate.task_run`` one task of one; callers
(the CLI, the demo, the service) build an :class:`EvalRequest` and read an
:class:`EvalReport`, with :class:`EvalEvent` progress on the way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from enum import StrEnum

from bot.evaluate.grading import RepoSetup
from probewatch.errors import EvaluationError
from runners.agents import DEFAULT_BUDGET_S
from task_registry.scoring import SubmissionState, TaskScore
from task_registry.types import ScoreSuite


class EvalError(EvaluationError):
    """An evaluation that cannot start: the message names what is wrong."""


@dataclass(frozen=True)
class EvalRequest:
    agent: str
    tasks: tuple[str, ...] = ()  # instance ids; empty: every eligible task
    since: date | None = None  # only tasks merged on or after this day
    parallel: int = 1
    budget_s: float = DEFAULT_BUDGET_S
    run_label: str = "default"
    margin_days: int = 0  # tasks must be merged after cutoff + margin
    pass_env: tuple[str, ...] = ()  # host variables the agent command gets (its API key)


class Stage(StrEnum):
    selected = "selected"
    agent = "agent"
    grading = "grading"
    graded = "graded"
    skipped = "skipped"  # graded by an earlier run
    fault = "fault"


@dataclass(frozen=True)
class EvalEvent:
    stage: Stage
    instance_id: str
    done: int
    total: int
    detail: str = ""


ProgressCallback = Callable[[EvalEvent], None]
RepoResolver = Callable[[str], RepoSetup]


@dataclass(frozen=True)
class TaskResult:
    instance_id: str
    state: SubmissionState
    scores: Mapping[ScoreSuite, TaskScore] = field(default_factory=dict)
    skipped: bool = False
    dropped_tests: tuple[str, ...] = ()
    detail: str = ""

    def resolved(self, suite: ScoreSuite, *, rule: str = "set") -> bool:
        score = self.scores.get(suite)
        if score is None:
            return False
        return score.resolved_set if rule == "set" else score.resolved_count


@dataclass(frozen=True)
class EvalReport:
    agent: str
    run_label: str
    results: tuple[TaskResult, ...]
    excluded_pre_cutoff: tuple[str, ...] = ()
    wall_s: float = 0.0

    @property
    def faults(self) -> tuple[str, ...]:
        return tuple(r.instance_id for r in self.results if r.state is SubmissionState.fault)

    @property
    def skipped(self) -> tuple[str, ...]:
        return tuple(r.instance_id for r in self.results if r.skipped)

    def result(self, instance_id: str) -> TaskResult:
        return next(r for r in self.results if r.instance_id == instance_id)


@dataclass(frozen=True)
class AgentInfo:
    agent_id: int
    name: str
    command: str
    builtin: bool
    model: str = ""
    cutoff: date | None = None

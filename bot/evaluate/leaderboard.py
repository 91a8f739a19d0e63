"""The leaderboard: every agent run's scores, read from the registry, as typed models.

One row per run (an agent and a run label; ``agent@label``, or the agent's
name for the default label). Only graded and faulted submissions count, and
for an agent whose model has a knowledge cutoff only tasks merged after it
(plus an optional margin): contamination-free. Each row carries both suites
side by side (original tests only; with probes), both Resolved rules with
how often they disagree, every rate with its binomial SE and its 95% Wilson
score interval over the tasks it counts (``bot.evaluate.intervals``), the
faults (excluded, counted), the tasks the probes overturn (resolved on the
original tests, not with probes), the same summaries per time window of
merge time and per area, and how many of its scores come from runs without a
sandbox (the agent's or the grading run: such an agent could have read the
registry, so every view marks them). The CLI, the JSON API, the page and the
plot all read this one model. Scores are the stored ``Score`` rows,
summarised with ``task_registry.scoring``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime

from pydantic import BaseModel, Field
from sqlmodel import Session, col, select

from bot.evaluate.grading import task_score_of
from bot.evaluate.intervals import wilson_interval
from bot.evaluate.resemblance import Resemblance, count_by_control, submission_resemblance
from probewatch.errors import EvaluationError
from task_registry.models import Agent, Model, Score, Submission, Task
from task_registry.scoring import (
    Rate,
    Summary,
    TaskScore,
    Window,
    compare_paired,
    cutoff_start,
    summarize_scores,
    window_label,
)
from task_registry.types import ScoreSuite, SubmissionStatus, utcnow

DEFAULT_LABEL = "default"
RUN_SEPARATOR = "@"
COUNTED_STATUSES = (SubmissionStatus.graded, SubmissionStatus.fault)
UNSANDBOXED_MARK = "\N{DAGGER}"
UNSANDBOXED_FOOTNOTE = (
    f"{UNSANDBOXED_MARK} Scores from runs without a sandbox: the host could not confine the "
    "agent's run or its grading run (the run's record says why), so the run saw the host as "
    "the service does, the registry's golden patches and the mirrors' later history included. "
    "Such a score cannot rule out that the agent read the answer."
)


class UnknownRun(EvaluationError, LookupError):
    """A run name that matches no stored submissions."""


RULES = ("count", "set")  # a_p ≥ g_p, or G_p ⊆ A_p


# --- the models that leave this module ------------------------------------------------------


class RateOut(BaseModel):
    value: float  # %
    se: float
    low: float  # 95% Wilson score interval, %
    high: float
    n: int = 0  # the tasks the rate is over

    def label(self) -> str:
        """``67% [21-94]`` (an en dash between the ends): the rate and its interval in whole
        percent; ``—`` when no task counts."""
        if self.n == 0:
            return "—"
        return f"{self.value:.0f}% [{self.low:.0f}\N{EN DASH}{self.high:.0f}]"


class SuiteScores(BaseModel):
    tasks: int  # scored tasks (faults excluded)
    passed: RateOut
    resolved_count: RateOut
    resolved_set: RateOut
    resolved_count_n: int
    resolved_set_n: int
    resolved_count_tasks: list[str]
    resolved_set_tasks: list[str]
    disagreements: int  # tasks where the two Resolved rules differ
    disagreement_tasks: list[str]
    faults: int
    fault_tasks: list[str]


class GroupScores(BaseModel):
    key: str  # a window label ("2026-05", "2026-Q2") or an area
    original: SuiteScores
    with_probes: SuiteScores


class TaskLine(BaseModel):
    instance_id: str
    merged_at: datetime
    fault: bool
    original_passed: int
    with_probes_passed: int
    n_original: int
    n_with_probes: int
    resolved_original: bool  # set rule
    resolved_with_probes: bool
    fails_like: str | None = None  # the control a failed submission resembles
    fails_like_similarity: float | None = None


class RunScores(BaseModel):
    run: str
    agent: str
    run_label: str
    builtin: bool
    model: str | None
    knowledge_cutoff: date | None
    tasks: int  # scored tasks
    faults: int
    excluded_pre_cutoff: int
    unsandboxed: int = Field(
        description="scored tasks whose agent run or grading run had no sandbox: "
        "the agent could have read the registry's golden patches"
    )
    unsandboxed_tasks: list[str]
    original: SuiteScores
    with_probes: SuiteScores
    overturned: list[str]  # resolved (set rule) on the original tests, not with probes
    overturned_count_rule: list[str]
    fails_like: dict[str, int]  # failed submissions per control they resemble ("none": none)
    windows: list[GroupScores]
    areas: list[GroupScores]
    task_lines: list[TaskLine]

    def unsandboxed_label(self) -> str:
        """``† 3 of 40 scores from runs without a sandbox``; empty when every run had one."""
        if not self.unsandboxed:
            return ""
        return (
            f"{UNSANDBOXED_MARK} {self.unsandboxed} of {self.tasks} scores "
            "from runs without a sandbox"
        )


class Leaderboard(BaseModel):
    window: Window
    margin_days: int
    generated_at: datetime
    runs: list[RunScores]


class Comparison(BaseModel):
    run_a: str
    run_b: str
    suite: ScoreSuite
    rule: str
    shared_tasks: int
    fixed: int  # resolved by b, not by a
    broken: int  # resolved by a, not by b
    both: int
    neither: int
    p_value: float  # exact McNemar
    fixed_tasks: list[str]
    broken_tasks: list[str]


# --- reading the registry -------------------------------------------------------------------


@dataclass(frozen=True)
class ScoredTask:
    """One submission's stored scores, with what the grouping needs of its task."""

    instance_id: str
    merged_at: datetime
    areas: tuple[str, ...]
    fault: bool
    scores: dict[ScoreSuite, TaskScore]
    resemblance: Resemblance | None = None
    unsandboxed: bool = False  # the agent's or the grading run had no sandbox

    @property
    def failed(self) -> bool:
        return not self.fault and not _resolved(self, ScoreSuite.with_probes, "set")


@dataclass(frozen=True)
class RunKey:
    agent: str
    run_label: str
    builtin: bool = False
    model_id: int | None = None

    @property
    def name(self) -> str:
        return run_name(self.agent, self.run_label)


def run_name(agent: str, run_label: str) -> str:
    return agent if run_label == DEFAULT_LABEL else f"{agent}{RUN_SEPARATOR}{run_label}"


def parse_run(name: str) -> tuple[str, str]:
    agent, _, label = name.partition(RUN_SEPARATOR)
    return agent, label or DEFAULT_LABEL


def _submissions(session: Session) -> list[tuple[Submission, Agent, Task]]:
    query = (
        select(Submission, Agent, Task)
        .join(Agent, col(Agent.id) == col(Submission.agent_id))
        .join(Task, col(Task.id) == col(Submission.task_id))
        .where(col(Submission.status).in_([str(s) for s in COUNTED_STATUSES]))
        .order_by(col(Agent.name), col(Submission.run_label), col(Task.created_at))
    )
    return [(s, a, t) for s, a, t in session.exec(query)]


def _scores_by_submission(session: Session, ids: Sequence[int]) -> dict[int, list[Score]]:
    found: dict[int, list[Score]] = {}
    for chunk in _chunks(list(ids), 500):
        for score in session.exec(select(Score).where(col(Score.submission_id).in_(chunk))):
            found.setdefault(score.submission_id, []).append(score)
    return found


def _chunks(items: list[int], size: int) -> Iterable[list[int]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _scored(
    session: Session, submission: Submission, task: Task, rows: Sequence[Score]
) -> ScoredTask:
    scored = ScoredTask(
        instance_id=task.instance_id,
        merged_at=task.created_at,
        areas=tuple(task.areas),
        fault=any(r.fault for r in rows),
        unsandboxed=any(r.unsandboxed for r in rows),
        scores={ScoreSuite(r.suite): task_score_of(r, task.instance_id) for r in rows},
    )
    if not scored.failed:
        return scored
    found = submission_resemblance(
        session=session, task_id=task.id or 0, submission_id=submission.id or 0
    )
    return replace(scored, resemblance=found)


def scored_runs(session: Session) -> dict[RunKey, list[ScoredTask]]:
    """Every run's scored submissions (graded or faulted), tasks oldest first."""
    rows = _submissions(session)
    scores = _scores_by_submission(session, [s.id for s, _, _ in rows if s.id is not None])
    runs: dict[RunKey, list[ScoredTask]] = {}
    for submission, agent, task in rows:
        stored = scores.get(submission.id or -1, [])
        if stored:
            key = RunKey(agent.name, submission.run_label, agent.builtin, agent.model_id)
            runs.setdefault(key, []).append(_scored(session, submission, task, stored))
    return runs


# --- summaries ---------------------------------------------------------------------------------


def _rate(rate: Rate, successes: float, n: int) -> RateOut:
    low, high = wilson_interval(min(float(n), successes), n)  # min: a sum of fractions may round up
    return RateOut(value=rate.value, se=rate.se, low=100 * low, high=100 * high, n=n)


def suite_scores(tasks: Sequence[ScoredTask], suite: ScoreSuite) -> SuiteScores:
    scores = [t.scores[suite] for t in tasks if not t.fault and suite in t.scores]
    faults = [t.instance_id for t in tasks if t.fault]
    # No bootstrap: over a handful of tasks it claims [100, 100] from 3 of 3; Wilson does not.
    summary = summarize_scores(scores, fault_tasks=faults, resamples=0)
    return _suite_out(summary)


def _suite_out(summary: Summary) -> SuiteScores:
    n, passed = summary.tasks, sum(s.passed_fraction for s in summary.scores)
    return SuiteScores(
        tasks=n,
        passed=_rate(summary.passed, passed, n),
        resolved_count=_rate(summary.resolved_count, summary.resolved_count_n, n),
        resolved_set=_rate(summary.resolved_set, summary.resolved_set_n, n),
        resolved_count_n=summary.resolved_count_n,
        resolved_set_n=summary.resolved_set_n,
        resolved_count_tasks=[s.instance_id for s in summary.scores if s.resolved_count],
        resolved_set_tasks=[s.instance_id for s in summary.scores if s.resolved_set],
        disagreements=summary.disagreements,
        disagreement_tasks=[s.instance_id for s in summary.scores if s.rules_disagree],
        faults=summary.faults,
        fault_tasks=list(summary.fault_tasks),
    )


def overturned(tasks: Sequence[ScoredTask], *, rule: str = "set") -> list[str]:
    """Tasks resolved on the original tests but not once the probes run."""
    return [
        t.instance_id
        for t in tasks
        if not t.fault
        and _resolved(t, ScoreSuite.original, rule)
        and not _resolved(t, ScoreSuite.with_probes, rule)
    ]


def _resolved(task: ScoredTask, suite: ScoreSuite, rule: str) -> bool:
    score = task.scores.get(suite)
    if score is None:
        return False
    return score.resolved_set if rule == "set" else score.resolved_count


def _groups(
    tasks: Sequence[ScoredTask], keys: Callable[[ScoredTask], Iterable[str]]
) -> list[GroupScores]:
    grouped: dict[str, list[ScoredTask]] = {}
    for task in tasks:
        for key in keys(task):
            grouped.setdefault(key, []).append(task)
    return [
        GroupScores(
            key=key,
            original=suite_scores(grouped[key], ScoreSuite.original),
            with_probes=suite_scores(grouped[key], ScoreSuite.with_probes),
        )
        for key in sorted(grouped)
    ]


def _task_line(task: ScoredTask) -> TaskLine:
    original = task.scores.get(ScoreSuite.original)
    probes = task.scores.get(ScoreSuite.with_probes)
    return TaskLine(
        instance_id=task.instance_id,
        merged_at=task.merged_at,
        fault=task.fault,
        original_passed=original.a if original else 0,
        with_probes_passed=probes.a if probes else 0,
        n_original=original.n if original else 0,
        n_with_probes=probes.n if probes else 0,
        resolved_original=bool(original and original.resolved_set and not task.fault),
        resolved_with_probes=bool(probes and probes.resolved_set and not task.fault),
        fails_like=task.resemblance.control if task.resemblance else None,
        fails_like_similarity=task.resemblance.similarity if task.resemblance else None,
    )


@dataclass(frozen=True)
class Options:
    window: Window = Window.month
    margin_days: int = 0


def run_scores(
    key: RunKey, tasks: Sequence[ScoredTask], model: Model | None, options: Options
) -> RunScores:
    """One run's row: contamination-free tasks only, summarised every way."""
    counted = list(tasks)
    if model is not None:
        start = cutoff_start(model.knowledge_cutoff, margin_days=options.margin_days)
        counted = [t for t in tasks if t.merged_at >= start]
    original = suite_scores(counted, ScoreSuite.original)
    unsandboxed = [t.instance_id for t in counted if t.unsandboxed and not t.fault]
    return RunScores(
        run=key.name,
        agent=key.agent,
        run_label=key.run_label,
        builtin=key.builtin,
        model=model.name if model else None,
        knowledge_cutoff=model.knowledge_cutoff if model else None,
        tasks=original.tasks,
        faults=original.faults,
        excluded_pre_cutoff=len(tasks) - len(counted),
        unsandboxed=len(unsandboxed),
        unsandboxed_tasks=unsandboxed,
        original=original,
        with_probes=suite_scores(counted, ScoreSuite.with_probes),
        overturned=overturned(counted, rule="set"),
        overturned_count_rule=overturned(counted, rule="count"),
        fails_like=count_by_control([t.resemblance for t in counted if t.failed]),
        windows=_groups(counted, lambda t: [window_label(t.merged_at, options.window)]),
        areas=_groups(counted, lambda t: list(t.areas) or ["(none)"]),
        task_lines=[_task_line(t) for t in counted],
    )


def build_leaderboard(
    *,
    session: Session,
    window: Window = Window.month,
    margin_days: int = 0,
) -> Leaderboard:
    """Every run's scores, best first (Resolved by the set rule with probes, then Passed)."""
    options = Options(window=window, margin_days=margin_days)
    models = {m.id: m for m in session.exec(select(Model))}
    rows = [
        run_scores(key, tasks, models.get(key.model_id), options)
        for key, tasks in scored_runs(session).items()
    ]
    rows.sort(key=lambda r: (-r.with_probes.resolved_set.value, -r.with_probes.passed.value, r.run))
    return Leaderboard(window=window, margin_days=margin_days, generated_at=utcnow(), runs=rows)


# --- paired comparison ---------------------------------------------------------------------


def compare_runs(
    *,
    session: Session,
    run_a: str,
    run_b: str,
    suite: ScoreSuite = ScoreSuite.with_probes,
    rule: str = "set",
) -> Comparison:
    """Two runs on the tasks both scored (faults left out): fixed, broken, both, neither."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r} (known: {', '.join(RULES)})")
    runs = {key.name: tasks for key, tasks in scored_runs(session).items()}
    a, b = (_resolved_map(runs, name, suite, rule) for name in (run_a, run_b))
    paired = compare_paired(a, b)
    shared = sorted(set(a) & set(b))
    return Comparison(
        run_a=run_a,
        run_b=run_b,
        suite=suite,
        rule=rule,
        shared_tasks=len(shared),
        fixed=paired.fixed,
        broken=paired.broken,
        both=paired.both,
        neither=paired.neither,
        p_value=paired.p_value,
        fixed_tasks=[t for t in shared if b[t] and not a[t]],
        broken_tasks=[t for t in shared if a[t] and not b[t]],
    )


def _resolved_map(
    runs: dict[str, list[ScoredTask]], name: str, suite: ScoreSuite, rule: str
) -> dict[str, bool]:
    if name not in runs:
        known = ", ".join(sorted(runs)) or "none"
        raise UnknownRun(f"no scored run named {name!r} (scored runs: {known})")
    return {t.instance_id: _resolved(t, suite, rule) for t in runs[name] if not t.fault}

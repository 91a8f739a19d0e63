"""Evaluation runs: an agent on the selected tasks, each submission stored, then graded.

Selection: validated and published tasks (or the ones named), merged on or
after ``since``, and only those merged after the agent's model's knowledge
cutoff (plus an optional margin): the rest are listed as excluded, never run.
Per task (``bot.evaluate.task_run``): the golden baseline (stored, or one golden run
made and stored), the agent in a fresh tree with no future
(``runners.agents``), the submission stored (one per agent, task and run
label), then graded in a separate clean tree (``bot.evaluate.grading``) with two
scores. A rerun skips graded submissions and regrades submitted ones without
running the agent again. Empty, missing and unappliable submissions score 0;
system faults (the agent command cannot start, no GPUs, a grading fault after
its retries, a golden run that cannot complete) are stored as faults,
excluded from scores and counted, and retried by the next run. Tasks run
``parallel`` at a time; progress goes to a callback.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session

from bot.evaluate.grading import RepoSetup
from bot.evaluate.reference_agents import ensure_reference_agents
from bot.evaluate.task_run import TaskJob, Tracker
from bot.evaluate.types import (
    AgentInfo,
    EvalError,
    EvalEvent,
    EvalReport,
    EvalRequest,
    ProgressCallback,
    RepoResolver,
    Stage,
    TaskResult,
)
from bot.repos import AGENT_RUNS, TEST_RUNS, reap_left_runs, run_settings
from bot.settings import Settings
from bot.watchfile import WatchFile
from runners.sandbox.limits import DEFAULT_LIMITS, Limits
from runners.types import Backend
from task_registry.db import session_scope
from task_registry.evaluation import get_agent
from task_registry.models import Model
from task_registry.scoring import cutoff_start
from task_registry.tasks import get_task, list_tasks
from task_registry.types import TaskStatus

__all__ = [
    "EvalError",
    "EvalEvent",
    "EvalReport",
    "EvalRequest",
    "Harness",
    "Stage",
    "TaskResult",
    "local_harness",
    "repo_resolver",
    "select_tasks",
]

ELIGIBLE_STATUSES = (TaskStatus.validated, TaskStatus.published)


@dataclass(frozen=True)
class Selection:
    tasks: tuple[str, ...]
    excluded_pre_cutoff: tuple[str, ...] = ()


# --- selection ----------------------------------------------------------------------------


def agent_info(*, session: Session, name: str) -> AgentInfo:
    """The agent (reference agents are registered on first use) and its model's cutoff."""
    ensure_reference_agents(session=session)
    agent = get_agent(session=session, name=name)
    model = session.get(Model, agent.model_id) if agent.model_id is not None else None
    assert agent.id is not None
    return AgentInfo(
        agent_id=agent.id,
        name=agent.name,
        command=agent.command,
        builtin=agent.builtin,
        model=model.name if model else "",
        cutoff=model.knowledge_cutoff if model else None,
    )


def select_tasks(*, session: Session, request: EvalRequest, cutoff: date | None) -> Selection:
    """The tasks to run, oldest first, and those left out as merged before the cutoff."""
    eligible = {t.instance_id: t for t in list_tasks(session=session, statuses=ELIGIBLE_STATUSES)}
    if request.tasks:
        _check_named(session, request.tasks, eligible)
        chosen = [eligible[i] for i in dict.fromkeys(request.tasks)]
    else:
        chosen = list(eligible.values())
    if request.since is not None:
        since = datetime.combine(request.since, datetime.min.time(), UTC)
        chosen = [t for t in chosen if t.created_at >= since]
    chosen.sort(key=lambda t: (t.created_at, t.instance_id))
    if cutoff is None:
        return Selection(tuple(t.instance_id for t in chosen))
    start = cutoff_start(cutoff, margin_days=request.margin_days)
    return Selection(
        tasks=tuple(t.instance_id for t in chosen if t.created_at >= start),
        excluded_pre_cutoff=tuple(t.instance_id for t in chosen if t.created_at < start),
    )


def _check_named(session: Session, named: Sequence[str], eligible: Mapping[str, object]) -> None:
    missing = [i for i in named if i not in eligible]
    if not missing:
        return
    from task_registry.tasks import find_task

    unknown = [i for i in missing if find_task(session=session, instance_id=i) is None]
    not_ready = [i for i in missing if i not in unknown]
    parts = [f"unknown task(s): {', '.join(unknown)}"] if unknown else []
    if not_ready:
        statuses = "/".join(ELIGIBLE_STATUSES)
        parts.append(f"not {statuses} yet: {', '.join(not_ready)}")
    raise EvalError("; ".join(parts))


# --- the harness ---------------------------------------------------------------------------


@dataclass
class Harness:
    """What an evaluation needs at hand: the registry, a backend, and where repositories are."""

    engine: Engine
    backend: Backend
    repos: RepoResolver
    agent_root: Path
    keep_agent_trees: bool = False
    limits: Limits = DEFAULT_LIMITS  # of each agent's sandbox

    def run(self, request: EvalRequest, progress: ProgressCallback | None = None) -> EvalReport:
        """Evaluate ``request.agent`` on the selected tasks; see the module docstring."""
        if request.parallel < 1:
            raise EvalError(f"--parallel must be at least 1, not {request.parallel}")
        started = time.monotonic()
        with session_scope(self.engine) as session:
            agent = agent_info(session=session, name=request.agent)
            selection = select_tasks(session=session, request=request, cutoff=agent.cutoff)
            repos = {r: self._setup(r) for r in _repos_of(session, selection.tasks)}
        tracker = Tracker(len(selection.tasks), progress)
        for instance_id in selection.tasks:
            tracker.emit(Stage.selected, instance_id, counted=False)
        job = TaskJob(
            engine=self.engine,
            backend=self.backend,
            agent_root=self.agent_root,
            agent=agent,
            request=request,
            repos=repos,
            tracker=tracker,
            keep_agent_trees=self.keep_agent_trees,
            limits=self.limits,
        )
        with ThreadPoolExecutor(max_workers=request.parallel) as pool:
            results = tuple(pool.map(job.evaluate, selection.tasks))
        return EvalReport(
            agent=agent.name,
            run_label=request.run_label,
            results=results,
            excluded_pre_cutoff=selection.excluded_pre_cutoff,
            wall_s=time.monotonic() - started,
        )

    def _setup(self, repo: str) -> RepoSetup:
        try:
            return self.repos(repo)
        except KeyError:
            raise EvalError(
                f"no local clone or mirror of {repo}: set `git` for it in the watch file "
                "or pass --git PATH"
            ) from None


def repo_resolver(watch: WatchFile, settings: Settings, git: Path | None = None) -> RepoResolver:
    """Repository name → how its runs are made: the watch file's clone and the run settings
    ``bot.repos`` makes of its entry; ``git`` replaces every clone and serves repositories
    the watch file does not list (with the default settings)."""
    setups = {}
    for repo in watch.repos:
        mirror = git.expanduser() if git is not None else repo.git
        if mirror is not None:
            setups[repo.name] = RepoSetup(
                mirror, run_settings(repo, settings=settings, watch=watch)
            )

    def resolve(name: str) -> RepoSetup:
        if name in setups:
            return setups[name]
        if git is not None:
            return RepoSetup(git.expanduser(), run_settings(None, settings=settings, watch=watch))
        raise KeyError(name)

    return resolve


def local_harness(
    *, engine: Engine, settings: Settings, watch: WatchFile, git: Path | None = None
) -> Harness:
    """A harness on this host: runs under ``home/runs``, agent trees under ``home/agent-runs``;
    what a killed grading run left there is stopped and removed first."""
    from runners.backends.local import LocalBackend

    reap_left_runs(settings)
    home = settings.home
    return Harness(
        engine=engine,
        backend=LocalBackend(
            workspace_root=home / TEST_RUNS,
            max_patch_bytes=settings.patch_max_bytes,
            limits=settings.run_limits(),
        ),
        repos=repo_resolver(watch, settings, git),
        agent_root=home / AGENT_RUNS,
        limits=settings.run_limits(),
    )


def _repos_of(session: Session, instance_ids: Sequence[str]) -> set[str]:
    return {get_task(session=session, instance_id=i).repo for i in instance_ids}

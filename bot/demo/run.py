"""``probewatch demo``'s orchestration: the whole pipeline on the demo upstream repository.

Each stage is one small function over the registry and the home folder: create
the demo repository (``probe_builder.demo_repo``) unless it is there, mine it
from git, accept the survivors (the demo's watch file auto-accepts them),
build and validate each accepted PR's task with the curator's probes, render
its report in dry run (stored, never posted), and grade the reference agents
through the harness. Every stage is idempotent: an existing repository is
reused, a validated task is neither rebuilt nor revalidated, an unchanged
report is not rewritten and the harness skips graded submissions. Stages
report progress through a callback, so the command line decides how it looks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from sqlalchemy.engine import Engine

from bot.evaluate.harness import local_harness
from bot.evaluate.types import EvalEvent, EvalReport, EvalRequest
from bot.report.store import load_report_input, store_report
from bot.repos import mining_config, run_settings
from bot.settings import Settings
from bot.watchfile import WatchedRepo, WatchFile, load_watch_file
from pr_miner.mining import mine
from pr_miner.report import MiningReport
from pr_miner.sources.git_source import GitSource
from probe_builder.demo_repo import DEMO_REPO_NAME, create_demo_repo
from probe_builder.pipeline import (
    ProgressEvent,
    RepoSettings,
    build_task,
    load_probe_folder,
    validate_task,
)
from runners.backends.local import LocalBackend
from task_registry.candidates import decide_candidate, list_candidates
from task_registry.db import session_scope
from task_registry.repos import find_repo
from task_registry.swebench import instance_id_for
from task_registry.tasks import find_task
from task_registry.types import Decision, FilterVerdict, ReportStatus, TaskStatus

DEMO_FOLDER = "demo"  # under the home folder: the repository, its probes and watch file
REPO_FOLDER = "minirl"
RUNS_FOLDER = "runs"  # validation work trees, as ``probewatch validate`` keeps them
REFERENCE_AGENTS = ("oracle", "empty", "hollow")
DONE_STATUSES = (TaskStatus.validated, TaskStatus.published)  # nothing left to build
DEMO_CURATOR = "probewatch demo"
# The whole history every time: re-mining a window stores nothing new, and the demo is small.
HISTORY_START = datetime(2000, 1, 1, tzinfo=UTC)


class DemoStage(StrEnum):
    repo = "repo"
    mine = "mine"
    accept = "accept"
    build = "build"
    validate = "validate"
    report = "report"
    eval = "eval"


@dataclass(frozen=True)
class DemoEvent:
    stage: DemoStage
    message: str


DemoProgress = Callable[[DemoEvent], None]


def _quiet(_: DemoEvent) -> None:
    """The default progress callback: say nothing."""


@dataclass(frozen=True)
class DemoLayout:
    """Where the demo lives in the home folder (create_demo_repo's default neighbours)."""

    repo: Path
    probes: Path
    watch_file: Path

    @classmethod
    def under(cls, home: Path) -> DemoLayout:
        repo = (home / DEMO_FOLDER / REPO_FOLDER).resolve()
        return cls(
            repo,
            repo.with_name(f"{REPO_FOLDER}-probes"),
            repo.with_name(f"{REPO_FOLDER}-watch.toml"),
        )

    def probe_dir(self, number: int) -> Path:
        return self.probes / f"pr-{number}"

    def exists(self) -> bool:
        return (self.repo / ".git").exists() and self.watch_file.exists()


@dataclass(frozen=True)
class TaskOutcome:
    instance_id: str
    built: str  # the build action, or "skipped" when the task was already validated
    validated: str  # "accepted", "not accepted", or "skipped"
    status: TaskStatus


@dataclass(frozen=True)
class ReportOutcome:
    repo: str
    number: int
    summary: str
    written: bool  # False: the stored body was already this one


@dataclass(frozen=True)
class DemoResult:
    layout: DemoLayout
    created_repo: bool
    mining: MiningReport
    accepted: tuple[int, ...]
    tasks: tuple[TaskOutcome, ...]
    reports: tuple[ReportOutcome, ...]
    evals: tuple[EvalReport, ...] = field(default=())


# --- stages ----------------------------------------------------------------------------------


def ensure_demo_repo(home: Path, progress: DemoProgress = _quiet) -> tuple[DemoLayout, bool]:
    """The demo repository under ``home``: reused when there, else created. True: created."""
    layout = DemoLayout.under(home)
    if layout.exists():
        progress(DemoEvent(DemoStage.repo, f"reusing {DEMO_REPO_NAME} at {layout.repo}"))
        return layout, False
    progress(DemoEvent(DemoStage.repo, f"creating {DEMO_REPO_NAME} at {layout.repo}"))
    create_demo_repo(layout.repo, probes_dir=layout.probes, watch_file=layout.watch_file)
    return layout, True


def demo_watch(layout: DemoLayout) -> tuple[WatchFile, WatchedRepo]:
    watch = load_watch_file(layout.watch_file)
    return watch, watch.get(DEMO_REPO_NAME)


def mine_demo(
    engine: Engine, layout: DemoLayout, watched: WatchedRepo, progress: DemoProgress = _quiet
) -> MiningReport:
    """Mine the demo repository from git (the cursor makes a rerun read nothing new)."""
    progress(DemoEvent(DemoStage.mine, f"mining {watched.name} from {layout.repo}"))
    report = mine(
        engine=engine,
        repo=watched.name,
        source=GitSource(layout.repo, watched.default_branch),
        config=mining_config(watched),
        since=HISTORY_START,
        default_branch=watched.default_branch,
    )
    progress(
        DemoEvent(
            DemoStage.mine,
            f"{len(report.survivors)} survivor(s); stored {report.created} new, "
            f"{report.unchanged} unchanged; auto-accepted {len(report.auto_accepted)}",
        )
    )
    return report


def accept_survivors(engine: Engine, repo: str, progress: DemoProgress = _quiet) -> tuple[int, ...]:
    """Accept every surviving candidate still pending (auto-accept usually did); PR numbers."""
    with session_scope(engine) as session:
        stored = find_repo(session=session, full_name=repo)
        if stored is None:
            return ()
        survivors = list_candidates(
            session=session, repo_id=stored.id, verdict=FilterVerdict.passed
        )
        for candidate in survivors:
            if candidate.decision == Decision.pending and candidate.id is not None:
                decide_candidate(
                    session=session,
                    candidate_id=candidate.id,
                    decision=Decision.accepted,
                    reason="demo: survivor of the filters",
                    decided_by=DEMO_CURATOR,
                )
        accepted = sorted(c.number for c in survivors if c.decision == Decision.accepted)
    progress(DemoEvent(DemoStage.accept, f"accepted PRs: {', '.join(f'#{n}' for n in accepted)}"))
    return tuple(accepted)


def task_status(engine: Engine, instance_id: str) -> TaskStatus | None:
    with session_scope(engine) as session:
        task = find_task(session=session, instance_id=instance_id)
        return task.status if task is not None else None


def build_and_validate_pr(
    engine: Engine,
    layout: DemoLayout,
    watched: WatchedRepo,
    number: int,
    home: Path,
    settings: RepoSettings,
    progress: DemoProgress = _quiet,
) -> TaskOutcome:
    """Build the PR's task and validate it with the curator's probes, unless already done."""
    instance = instance_id_for(watched.name, number)
    status = task_status(engine, instance)
    if status in DONE_STATUSES:
        progress(DemoEvent(DemoStage.build, f"{instance}: already {status}, nothing to rebuild"))
        return TaskOutcome(instance, "skipped", "skipped", status)
    built = build_task(
        engine=engine,
        instance_id=instance,
        mirror=layout.repo,
        settings=settings,
        progress=_relay(DemoStage.build, progress),
    )
    progress(DemoEvent(DemoStage.build, f"{instance}: {built.action}, status {built.status}"))
    verdict = _validate(engine, layout, settings, instance, number, home, progress)
    return TaskOutcome(
        instance, str(built.action), verdict, task_status(engine, instance) or built.status
    )


def _validate(
    engine: Engine,
    layout: DemoLayout,
    settings: RepoSettings,
    instance: str,
    number: int,
    home: Path,
    progress: DemoProgress,
) -> str:
    folder = layout.probe_dir(number)
    if not folder.is_dir():
        progress(DemoEvent(DemoStage.validate, f"{instance}: no curator probes in {folder}"))
        return "skipped"
    root = home / RUNS_FOLDER
    result = validate_task(
        engine=engine,
        instance_id=instance,
        mirror=layout.repo,
        settings=settings,
        backend=LocalBackend(workspace_root=root),
        workspace_root=root,
        probes=load_probe_folder(folder),
        progress=_relay(DemoStage.validate, progress),
    )
    verdict = "accepted" if result.accepted else "not accepted"
    progress(
        DemoEvent(
            DemoStage.validate,
            f"{instance}: probe set {verdict}, {len(result.survivors)} surviving adversarial(s), "
            f"{result.runs} run(s)",
        )
    )
    return verdict


def _relay(stage: DemoStage, progress: DemoProgress) -> Callable[[ProgressEvent], None]:
    """probe_builder's progress events as demo events of ``stage``."""

    def relay(event: ProgressEvent) -> None:
        count = f"[{event.done}] " if event.done is not None else ""
        progress(DemoEvent(stage, f"{count}{event.message}"))

    return relay


def render_dry_run_report(
    engine: Engine, repo: str, number: int, public_url: str, progress: DemoProgress = _quiet
) -> ReportOutcome | None:
    """Render the PR's report and store it as a dry run, as the report job does; never posts."""
    with session_scope(engine) as session:
        report = load_report_input(session=session, repo=repo, number=number)
        if report is None:
            progress(DemoEvent(DemoStage.report, f"{repo}#{number}: no task, no report"))
            return None
        stored = store_report(
            session=session,
            report=report,
            public_url=public_url,
            dry_run=True,
            status=ReportStatus.dry_run,
            skip_reason="dry run (watch file)",
        )
    rendered, written = stored.rendered, stored.written
    action = "written" if written else "unchanged"
    progress(DemoEvent(DemoStage.report, f"{repo}#{number}: report {action}: {rendered.summary}"))
    return ReportOutcome(repo, number, rendered.summary, written)


def run_reference_agents(
    engine: Engine,
    settings: Settings,
    watch: WatchFile,
    progress: Callable[[EvalEvent], None] | None = None,
    agents: Sequence[str] = REFERENCE_AGENTS,
) -> tuple[EvalReport, ...]:
    """Grade each reference agent on every validated task; graded submissions are skipped."""
    harness = local_harness(engine=engine, settings=settings, watch=watch)
    return tuple(harness.run(EvalRequest(agent=name), progress) for name in agents)


# --- the whole demo --------------------------------------------------------------------------


def run_demo(
    *,
    engine: Engine,
    settings: Settings,
    progress: DemoProgress = _quiet,
    eval_progress: Callable[[EvalEvent], None] | None = None,
) -> DemoResult:
    """Every stage in order on the demo repository under the home folder; see the module
    docstring."""
    home, public_url = settings.home, settings.public_url
    layout, created = ensure_demo_repo(home, progress)
    watch, watched = demo_watch(layout)
    mining = mine_demo(engine, layout, watched, progress)
    accepted = accept_survivors(engine, watched.name, progress)
    repo_settings = run_settings(watched, settings=settings, watch=watch)
    tasks = tuple(
        build_and_validate_pr(engine, layout, watched, n, home, repo_settings, progress)
        for n in accepted
    )
    reports = tuple(
        r
        for n in accepted
        if (r := render_dry_run_report(engine, watched.name, n, public_url, progress)) is not None
    )
    progress(DemoEvent(DemoStage.eval, f"grading {', '.join(REFERENCE_AGENTS)}"))
    evals = run_reference_agents(engine, settings, watch, eval_progress)
    return DemoResult(layout, created, mining, accepted, tasks, reports, evals)

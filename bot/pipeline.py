"""The pipeline stages the bot drives, each behind one function.

``mine_one_pr`` mines a single merged PR (a webhook said it merged), ``poll_merged``
mines the PRs merged since the last poll, and ``ensure_task`` builds and validates the
task of an accepted candidate. Jobs call only these, so a stage that lands in its own
package changes one function here and nothing in the worker, the webhook or the
report.

Mining one PR goes through ``pr_miner`` as polling does (same conversion, revert
history and auto-accept rule); ``ensure_task`` builds and validates with probe_builder,
which stores the task's coverage table (the survivors are the report's evidence); the
report reads that stored table (``bot.report.store``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

from sqlmodel import Session

from bot.repos import TEST_RUNS, mining_config, mirror_of, validation_backend
from bot.settings import Settings
from bot.watchfile import WatchedRepo, WatchFile
from task_registry.candidates import find_candidate
from task_registry.models import CandidatePR, Task
from task_registry.repos import find_repo, get_cursor
from task_registry.swebench import instance_id_for
from task_registry.tasks import find_task
from task_registry.types import CursorSource, Decision, PRKind, TaskStatus

if TYPE_CHECKING:
    from github import Github
    from sqlalchemy.engine import Engine

    from probe_builder.pipeline import RepoSettings


@dataclass(frozen=True)
class MinedPR:
    repo: str
    number: int
    merge_sha: str | None
    passed: bool
    reason: str | None = None


def mine_one_pr(*, engine: Engine, client: Github, watched: WatchedRepo, number: int) -> MinedPR:
    """Mine one merged PR (a webhook said it merged) through the miner's GitHub source: judged
    and stored exactly as a poll would, with the registry's revert history."""
    from pr_miner.mining import mine_pull
    from pr_miner.sources.github_source import GitHubSource

    judged = mine_pull(
        engine=engine,
        repo=watched.name,
        source=GitHubSource(client, watched.name, watched.default_branch),
        number=number,
        config=mining_config(watched),
        default_branch=watched.default_branch,
    )
    verdict = judged.verdict
    return MinedPR(watched.name, number, judged.pr.merge_sha, verdict.passed, verdict.reason)


# A repository polled for the first time is mined this far back; later polls start at the cursor.
FIRST_POLL_LOOKBACK = timedelta(days=30)


def poll_merged(*, engine: Engine, client: Github, watched: WatchedRepo) -> list[int]:
    """Numbers of the PRs merged since the last poll that pass the filters, oldest first.

    The miner's incremental GitHub source does the work: it owns the repo's ``github``
    cursor (a conditional re-poll of an unchanged repo costs no quota) and stores every
    merged PR with its verdict, so a poll and ``probewatch mine --github`` never disagree.
    """
    from pr_miner.mining import mine
    from pr_miner.sources.github_source import GitHubSource

    source = GitHubSource(client, watched.name, watched.default_branch)
    report = mine(
        engine=engine,
        repo=watched.name,
        source=source,
        config=mining_config(watched),
        since=None
        if _has_cursor(engine, watched.name)
        else datetime.now(UTC) - FIRST_POLL_LOOKBACK,
        default_branch=watched.default_branch,
    )
    return [s.number for s in report.survivors if s.kind == PRKind.github]


def _has_cursor(engine: Engine, repo: str) -> bool:
    from task_registry.db import session_scope

    with session_scope(engine) as session:
        row = find_repo(session=session, full_name=repo)
        if row is None or row.id is None:
            return False
        return get_cursor(session=session, repo_id=row.id, source=CursorSource.github) is not None


class TaskStep(StrEnum):
    """What an accepted candidate's task still needs, judged by its stored outcome."""

    build = "build"  # no task, or one whose build never finished (still a candidate)
    validate = "validate"  # built, and its validation did not finish (or waits for a runner)
    done = "done"  # validated, published or retired: nothing left to do


def next_step(task: Task | None) -> TaskStep:
    """The step a job redoes after a crash: decided by the task's outcome, never by the mere
    existence of its row (a worker killed mid-validation leaves a task that is only built)."""
    if task is None or task.status == TaskStatus.candidate:
        return TaskStep.build
    if task.status == TaskStatus.built:
        return TaskStep.validate
    return TaskStep.done


def ensure_task(
    *,
    engine: Engine,
    watched: WatchedRepo,
    watch: WatchFile,
    number: int,
    settings: Settings,
    repo_settings: RepoSettings,
) -> str:
    """Build and validate the task of an accepted candidate, as far as its stored outcome
    says it still needs (:func:`next_step`); say what happened.

    A task left built (a worker killed during its validation, or one that waited for a GPU
    runner) is validated again, and one whose build never finished is built again: a report
    never stands on an unvalidated task. The mirror is made or fetched first when the merge
    commit is not in it yet. Probes come later (a curator or an author adds them); this
    validation already runs the adversarial patches against the PR's own tests, and the
    survivors are the report's evidence.
    """
    from probe_builder.pipeline import build_task, validate_task
    from runners.mirrors import ensure_commit
    from runners.types import Hardware
    from task_registry.db import session_scope

    instance = instance_id_for(watched.name, number)
    with session_scope(engine) as session:
        task = find_task(session=session, instance_id=instance)
        step = next_step(task)
        if task is not None and step is TaskStep.done:
            return f"task exists ({task.status})"
        candidate = _candidate(session, watched.name, number)
    if candidate is None or candidate.decision != Decision.accepted:
        state = candidate.decision if candidate else "not mined"
        return f"candidate is {state}: nothing to build"
    mirror = mirror_of(watched, settings)
    if candidate.merge_sha:
        ensure_commit(mirror, candidate.merge_sha)
    if step is TaskStep.build:
        build_task(engine=engine, instance_id=instance, mirror=mirror, settings=repo_settings)
    with session_scope(engine) as session:
        built = find_task(session=session, instance_id=instance)
        assert built is not None
        hardware = Hardware(built.gpus, built.gpu_type)
    backend = validation_backend(settings, watch, watched.name, hardware, cpu_slots=None)
    validate_task(
        engine=engine,
        instance_id=instance,
        mirror=mirror,
        settings=repo_settings,
        backend=backend,
        workspace_root=settings.home / TEST_RUNS,
    )
    return "built and validated" if step is TaskStep.build else "validated"


def _candidate(session: Session, repo: str, number: int) -> CandidatePR | None:
    row = find_repo(session=session, full_name=repo)
    if row is None or row.id is None:
        return None
    return find_candidate(session=session, repo_id=row.id, number=number)

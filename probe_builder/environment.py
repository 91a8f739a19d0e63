"""The task's environment: prepared once when the task is built, found again by its lock hash.

A task's dependencies are resolved for its pre-change commit as the package index was
at its merge time, with the runner's own pins (its torch build), and repaired against
the PR's own test files at the merge commit (``runners.env.prepare_environment``). The
lock hash is stored on the task, so validation, agent runs and grading all run in that
one environment; a runner that lacks it (collected as garbage, or never built here)
prepares it again from the same inputs. A plan of ``None`` means this interpreter: the
demo's small repository needs nothing beyond what probewatch itself has.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from runners.env import (
    EnvHome,
    EnvRequest,
    Prepared,
    RepoEnvConfig,
    RunnerOverrides,
    environment_ref,
    prepare_environment,
)
from runners.env.build import is_ready
from runners.env.repair import modules_of
from runners.types import EnvironmentRef


@dataclass(frozen=True)
class EnvironmentPlan:
    """How this runner builds the environments of one repository's tasks."""

    home: EnvHome
    overrides: RunnerOverrides = field(default_factory=RunnerOverrides)
    config: RepoEnvConfig = field(default_factory=RepoEnvConfig)
    repo_name: str = ""


@dataclass(frozen=True)
class TaskCommits:
    """Where a task's environment is read from: its commits and merge time, its own tests."""

    mirror: Path
    base_commit: str
    merge_commit: str
    merged_at: datetime | None
    tests: tuple[str, ...]  # the PR's test modules, collected at the merge commit for repairs


def prepare_task_environment(plan: EnvironmentPlan, task: TaskCommits) -> Prepared:
    """Build (or reuse) the task's environment, repaired against the PR's own tests."""
    request = EnvRequest(
        repo=task.mirror,
        commit=task.base_commit,
        merge_time=task.merged_at,
        config=plan.config,
        overrides=plan.overrides,
        tests=task.tests,
        tests_commit=task.merge_commit,
        repo_name=plan.repo_name,
    )
    return prepare_environment(request, plan.home)


def task_environment(
    plan: EnvironmentPlan, lock_hash: str | None, task: TaskCommits
) -> tuple[EnvironmentRef, bool]:
    """The environment the task's lock hash names, prepared again when it is not here;
    and whether it had to be (its hash may then differ: a note says so)."""
    if lock_hash and is_ready(plan.home.env_dir(lock_hash)):
        return with_exclusions(environment_ref(plan.home, lock_hash), plan.config), False
    return with_exclusions(prepare_task_environment(plan, task).build.ref, plan.config), True


def with_exclusions(ref: EnvironmentRef, config: RepoEnvConfig) -> EnvironmentRef:
    """``ref`` knowing that the distributions the repository's config leaves out (GPU-only
    builds) are not here: a test that imports one as it runs fails for the machine's sake."""
    excluded = {
        module: f"the repository's environment config excludes {distribution}"
        for distribution in config.exclude
        for module in modules_of(distribution)
    }
    return replace(ref, unavailable={**excluded, **ref.unavailable})

"""What a watched repository means to each stage, in one place.

The watch file says it once (``bot.watchfile``); every command and job asks here: the
miner's configuration (:func:`mining_config`), and the run settings of build,
validation, agent runs and grading (:func:`run_settings`): the test globs the task
is split with, the setup commands, where each test runs (:func:`hardware_rules`),
and how each task's environment is built on this runner, with the runner's own pins
(:func:`runner_pins`: ``PROBEWATCH_RUNNER_OVERRIDES`` and ``_FIND_LINKS``, else the
watch file's ``[runner]`` table); where its history is (:func:`mirror_of`: the
watch file's local clone, else a mirror the service clones and fetches itself); and
where a task is validated (:func:`validation_backend`: this host, or a GPU pool of
self-hosted runners when the task's tests need GPUs this host lacks); and where runs
keep their folders (:data:`RUN_ROOTS`), whose leftovers a killed process's successor
removes (:func:`reap_left_runs`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from bot.settings import Settings
from bot.watchfile import GpuPool, TestConventions, WatchedRepo, WatchFile
from probewatch.testfiles import DEFAULT_TEST_GLOBS
from runners.types import HardwareRules

if TYPE_CHECKING:
    from pr_miner.config import MiningConfig
    from probe_builder.pipeline import RepoSettings
    from runners.env import RunnerOverrides
    from runners.run_registry import RunRecord
    from runners.types import Backend, Hardware

TEST_RUNS, AGENT_RUNS = "runs", "agent-runs"  # under the home: the folders of runs
RUN_ROOTS = (TEST_RUNS, AGENT_RUNS)


def mining_config(watched: WatchedRepo | None) -> MiningConfig:
    """The miner's settings for a repository: its watch-file entry, or the defaults."""
    from pr_miner.config import MiningConfig

    if watched is None:
        return MiningConfig()
    auto = watched.auto_accept.min_core_share if watched.auto_accept else None
    return MiningConfig(
        size_threshold=watched.size_threshold,
        exclude_globs=tuple(watched.exclude_globs),
        test_globs=tuple(watched.tests.globs),
        core_paths=tuple(watched.core_paths),
        reject_formatting_only=watched.reject_formatting_only,
        auto_accept_min_core_share=auto,
    )


def hardware_rules(tests: TestConventions) -> HardwareRules:
    """Where the repository's tests run: its CPU globs and marker, its GPU paths, and the
    GPUs a test that needs them gets (``default_gpus``, at least one)."""
    return HardwareRules(
        cpu_globs=tuple(tests.cpu_globs),
        cpu_marker=tests.cpu_marker,
        gpu_paths=tuple(tests.gpu_paths),
        gpus=max(tests.default_gpus, 1),
    )


def runner_pins(settings: Settings, watch: WatchFile) -> RunnerOverrides:
    """This runner's pins: the settings' (its service variables), else the watch file's."""
    from runners.env import RunnerOverrides

    overrides = settings.runner_overrides.split() or list(watch.runner.overrides)
    folders = [Path(p) for p in settings.runner_find_links.split(os.pathsep) if p]
    links = [p.expanduser() for p in folders] or list(watch.runner.find_links)
    named = [Path(p).expanduser() for p in settings.runner_pythons.split(os.pathsep) if p]
    pythons = named or list(watch.runner.pythons)
    return RunnerOverrides(tuple(overrides), tuple(links), pythons=tuple(pythons))


def run_settings(
    watched: WatchedRepo | None, *, settings: Settings, watch: WatchFile
) -> RepoSettings:
    """How the repository's tasks are built, validated and graded on this runner."""
    from probe_builder.environment import EnvironmentPlan
    from probe_builder.pipeline import RepoSettings
    from runners.env import EnvHome
    from runners.env.config import known_repo_config

    if watched is None:
        return RepoSettings(test_globs=DEFAULT_TEST_GLOBS)
    plan = None
    if watched.environment == "shared":
        plan = EnvironmentPlan(
            home=EnvHome(settings.home),
            overrides=runner_pins(settings, watch),
            config=known_repo_config(watched.name),
            repo_name=watched.name,
        )
    return RepoSettings(
        test_globs=tuple(watched.tests.globs),
        setup_commands=tuple(watched.setup_commands),
        hardware=hardware_rules(watched.tests),
        environment=plan,
        env=dict(watched.tests.env),
    )


GITHUB_CLONE_URL = "https://github.com/{name}.git"


def mirror_of(watched: WatchedRepo, settings: Settings) -> Path:
    """The repository's history on this host: the watch file's ``git`` clone, else a bare
    mirror of its ``url`` (or its GitHub address) that the service keeps under its home."""
    from runners.mirrors import ensure_mirror

    source = (
        str(watched.git)
        if watched.git
        else watched.url or GITHUB_CLONE_URL.format(name=watched.name)
    )
    return ensure_mirror(source, settings.home, watched.name)


def validation_backend(
    settings: Settings, watch: WatchFile, repo: str, hardware: Hardware, *, cpu_slots: int | None
) -> Backend:
    """Where a task needing ``hardware`` is validated: this host when it can run all of it;
    else the smallest GPU pool of the watch file's ``[runner]`` table that can (its runners
    build the task's environment from the request's spec); else this host, where the tests
    needing GPUs wait."""
    from runners.backends.local import LocalBackend
    from runners.backends.placement import fits, place

    local = LocalBackend(
        workspace_root=settings.home / TEST_RUNS,
        cpu_slots=cpu_slots,
        max_patch_bytes=settings.patch_max_bytes,
        limits=settings.run_limits(),
    )
    if fits(local.capacity(), hardware) or not watch.runner.pools:
        return local
    pools = [actions_backend(pool, settings, repo) for pool in watch.runner.pools]
    return place(hardware, pools).backend or local


def actions_backend(pool: GpuPool, settings: Settings, repo: str) -> Backend:
    """The GitHub Actions backend of one pool; its runs check out ``repo`` upstream."""
    from probewatch.github import make_client
    from runners.backends.github_actions import ActionsPool, GitHubActionsBackend

    config = settings.github_client_config().model_copy(update={"long_waits": "cap"})
    actions = ActionsPool(
        workflow_repo=pool.workflow_repo,
        labels=tuple(pool.labels),
        gpus=pool.gpus,
        gpu_type=pool.gpu_type,
        slots=pool.slots,
        ref=pool.ref,
        name=pool.name,
    )
    return GitHubActionsBackend(make_client(config), actions, repository_of=lambda _: repo)


def reap_left_runs(settings: Settings) -> list[RunRecord]:
    """Stop the runs a killed process left on this host (its tests keep running in their
    own process groups) and remove their folders: a worker or a grading run does this as
    it starts and before each job, so a reclaimed job never shares the host with them."""
    from runners.run_registry import reap

    return [record for name in RUN_ROOTS for record in reap(settings.home / name)]

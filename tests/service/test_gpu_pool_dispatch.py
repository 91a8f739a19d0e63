"""A task whose tests need GPUs this host lacks goes to a configured GPU pool of self-hosted
Actions runners; without one, those tests wait. The emulator plays GitHub, and a dispatch
hook plays the pool's runner: it runs the request with the runners' own entry point."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sqlalchemy.engine import Engine

from bot.pipeline import ensure_task
from bot.repos import run_settings
from bot.watchfile import parse_watch_data
from runners.backends.local import LocalBackend
from task_registry.candidates import decide_candidate, upsert_candidate
from task_registry.coverage import stored_coverage
from task_registry.db import session_scope
from task_registry.models import CandidatePRCreate, RepoCreate
from task_registry.repos import get_or_create_repo
from task_registry.tasks import get_task, list_test_results, list_validation_runs
from task_registry.types import Decision, TaskStatus
from tests.bot_support import bot_settings, db_url
from tests.build_fixtures import MEMO_BASE, MEMO_BODY, MEMO_CHANGE, MEMO_TITLE
from tests.github_emulator import GitHubEmulator
from tests.probe_builder_support import make_pr
from tests.runs.test_runners_github_actions import REPO as WORKFLOW_REPO
from tests.runs.test_runners_github_actions import SelfHostedRunner, seed

GPU_TEST = "tests/gpu/test_on_device.py"
ON_DEVICE = "from pkg.cache import Cache\n\n\ndef test_on_the_device():\n    assert Cache().lookup('a', str.upper) == 'A'\n"


def watch_data(repo: Path, *, pools: bool) -> dict:
    data: dict = {
        "repo": [
            {
                "name": "acme/memo",
                "git": str(repo),
                "environment": "host",
                "tests": {"globs": ["tests/**"], "gpu_paths": ["tests/gpu/"], "default_gpus": 1},
            }
        ]
    }
    if pools:
        data["runner"] = {"pools": [{"name": "h100", "workflow_repo": WORKFLOW_REPO, "gpus": 1}]}
    return data


def validate(engine: Engine, tmp_path: Path, github_emulator: GitHubEmulator, *, pools: bool):
    pr = make_pr(tmp_path, MEMO_BASE, {**MEMO_CHANGE, GPU_TEST: ON_DEVICE}, name="memo")
    with session_scope(engine) as session:
        repo = get_or_create_repo(session=session, repo_in=RepoCreate(full_name="acme/memo"))
        row = upsert_candidate(
            session=session,
            candidate_in=CandidatePRCreate(
                repo_id=repo.id or 0, number=7, title=MEMO_TITLE, body=MEMO_BODY, merge_sha=pr.head
            ),
        )
        decide_candidate(session=session, candidate_id=row.id or 0, decision=Decision.accepted)
    watch = parse_watch_data(watch_data(pr.repo, pools=pools), path=tmp_path / "watch.toml")
    watched = watch.get("acme/memo")
    settings = bot_settings(
        home=tmp_path / "home",
        database_url=db_url(engine),
        github_api_url=github_emulator.base_url,
        github_token="t",
    )
    workdir = tmp_path / "runner"
    subprocess.run(["git", "clone", "--quiet", str(pr.repo), str(workdir / "target")], check=True)
    gpu_host = LocalBackend(workspace_root=tmp_path / "gpu-runs", cpu_slots=1, gpu_indices=(0,))
    seed(github_emulator.state)
    github_emulator.state.on_dispatch = SelfHostedRunner(workdir, local=gpu_host.run)
    said = ensure_task(
        engine=engine,
        watched=watched,
        watch=watch,
        number=7,
        settings=settings,
        repo_settings=run_settings(watched, settings=settings, watch=watch),
    )
    with session_scope(engine) as session:
        task = get_task(session=session, instance_id="acme__memo-7")
        runs = list_validation_runs(session=session, task_id=task.id or 0)
        golden = next(r for r in runs if r.control == "golden" and r.attempt == 0)
        passed = {
            r.test_id
            for r in list_test_results(session=session, run_id=golden.id or 0)
            if r.outcome == "passed"
        }
        return said, task.status, task.gpus, stored_coverage(task), passed, runs


def test_a_task_needing_a_gpu_is_validated_on_the_configured_pool(
    sqlite_engine: Engine, tmp_path: Path, github_emulator: GitHubEmulator
) -> None:
    said, status, gpus, table, passed, runs = validate(
        sqlite_engine, tmp_path, github_emulator, pools=True
    )

    assert said == "built and validated" and status == TaskStatus.validated and gpus == 1
    assert f"{GPU_TEST}::test_on_the_device" in passed  # it ran, on the pool's runner
    assert table.waiting == []
    assert {r.runner for r in runs} == {"h100"}
    assert len(github_emulator.state.dispatches) == len(runs)


def test_without_a_pool_the_gpu_tests_wait_and_the_rest_is_validated_here(
    sqlite_engine: Engine, tmp_path: Path, github_emulator: GitHubEmulator
) -> None:
    _, status, _, table, passed, runs = validate(
        sqlite_engine, tmp_path, github_emulator, pools=False
    )

    assert status == TaskStatus.validated and {r.runner for r in runs} == {"local"}
    assert not any(t.startswith(GPU_TEST) for t in passed)
    assert [w.path for w in table.waiting] == [GPU_TEST]
    assert github_emulator.state.dispatches == []

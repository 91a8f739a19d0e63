"""Hardware per test, not per repository: where nothing decides, a test is tried on CPU; one
that shows it needs a GPU waits for a GPU runner, and the table and the report say so."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from bot.report.render import render_report
from bot.report.store import report_input
from probe_builder.pipeline import RepoSettings, build_task, validate_task
from runners.backends.local import LocalBackend
from runners.types import FaultKind, HardwareRules
from task_registry.candidates import decide_candidate, upsert_candidate
from task_registry.coverage import stored_coverage
from task_registry.db import session_scope
from task_registry.models import CandidatePRCreate, RepoCreate
from task_registry.repos import get_or_create_repo
from task_registry.tasks import get_task, list_test_results, list_validation_runs
from task_registry.types import Control, Decision, TaskStatus
from tests.build_fixtures import MEMO_BASE, MEMO_BODY, MEMO_CHANGE, MEMO_TITLE
from tests.probe_builder_support import TEST_GLOBS, FixturePR, make_pr

INSTANCE = "acme__memo-7"
GPU_TEST = "tests/test_cache_on_gpu.py"
NEEDS_A_GPU = """
import torch

from pkg.cache import Cache


def test_lookup_on_the_device():
    assert torch.cuda.is_available()
    assert Cache().lookup("a", str.upper) == "A"
"""


def settings(**rules: object) -> RepoSettings:
    return RepoSettings(
        test_globs=TEST_GLOBS,
        hardware=HardwareRules(**rules),  # type: ignore[arg-type]
        timeout_per_test_s=60.0,
        timeout_run_s=300.0,
    )


def accepted_pr(engine: Engine, tmp_path: Path, change: dict[str, str | None]) -> FixturePR:
    pr = make_pr(tmp_path, MEMO_BASE, {**MEMO_CHANGE, **change}, name="memo")
    with session_scope(engine) as session:
        repo = get_or_create_repo(session=session, repo_in=RepoCreate(full_name="acme/memo"))
        row = upsert_candidate(
            session=session,
            candidate_in=CandidatePRCreate(
                repo_id=repo.id or 0, number=7, title=MEMO_TITLE, body=MEMO_BODY, merge_sha=pr.head
            ),
        )
        decide_candidate(session=session, candidate_id=row.id or 0, decision=Decision.accepted)
    return pr


def build_and_validate(engine: Engine, pr: FixturePR, tmp_path: Path, repo: RepoSettings):
    build_task(engine=engine, instance_id=INSTANCE, mirror=pr.repo, settings=repo)
    root = tmp_path / "runs"
    return validate_task(
        engine=engine,
        instance_id=INSTANCE,
        mirror=pr.repo,
        settings=repo,
        backend=LocalBackend(workspace_root=root, cpu_slots=2, gpu_indices=()),
        workspace_root=root,
    )


def test_a_test_nothing_places_is_tried_on_cpu_and_waits_when_it_needs_a_gpu(
    sqlite_engine: Engine, tmp_path: Path
) -> None:
    pr = accepted_pr(sqlite_engine, tmp_path, {GPU_TEST: NEEDS_A_GPU})
    result = build_and_validate(sqlite_engine, pr, tmp_path, settings())

    with session_scope(sqlite_engine) as session:
        task = get_task(session=session, instance_id=INSTANCE)
        assert task.status == TaskStatus.validated and task.gpus == 0
        golden = next(
            r
            for r in list_validation_runs(session=session, task_id=task.id or 0)
            if r.control == Control.golden and r.attempt == 0
        )
        ran = {r.test_id for r in list_test_results(session=session, run_id=golden.id or 0)}
        rendered = render_report(report_input(session, task), full_url="http://x/r")
    assert any(t.startswith("tests/test_cache.py::") for t in ran)  # the CPU part ran here
    assert f"{GPU_TEST}::test_lookup_on_the_device" in ran  # the other one was tried
    (waiting,) = result.table.waiting
    assert waiting.path == GPU_TEST and waiting.reason.startswith(FaultKind.needs_gpu)
    assert waiting.needs_gpu
    assert "Not run here (1)" in rendered.body and GPU_TEST in rendered.body
    assert rendered.summary.endswith("; 1 test(s) wait for a GPU runner.")


def test_a_task_whose_every_test_needs_a_gpu_waits_and_stays_built(
    sqlite_engine: Engine, tmp_path: Path
) -> None:
    only_gpu = {"tests/test_cache.py": NEEDS_A_GPU}
    pr = accepted_pr(sqlite_engine, tmp_path, only_gpu)
    result = build_and_validate(sqlite_engine, pr, tmp_path, settings())

    assert not result.accepted and result.stats is None
    assert "waits for a GPU runner" in result.notes[0]
    with session_scope(sqlite_engine) as session:
        task = get_task(session=session, instance_id=INSTANCE)
        table = stored_coverage(task)
        assert task.status == TaskStatus.built
    assert [w.path for w in table.waiting] == ["tests/test_cache.py"]
    assert any("waits for a GPU runner" in note for note in table.notes)


@pytest.mark.parametrize(
    ("rules", "why"),
    [
        ({"gpu_paths": ("tests/test_cache_on_gpu.py",)}, "under tests.gpu_paths"),
        ({"cpu_globs": ("tests/test_cache.py",), "cpu_marker": "cpu_test"}, "not marked cpu_test"),
    ],
)
def test_a_convention_that_asks_for_a_gpu_keeps_the_test_off_this_runner(
    sqlite_engine: Engine, tmp_path: Path, rules: dict[str, object], why: str
) -> None:
    pr = accepted_pr(sqlite_engine, tmp_path, {GPU_TEST: NEEDS_A_GPU})
    result = build_and_validate(sqlite_engine, pr, tmp_path, settings(**rules))

    with session_scope(sqlite_engine) as session:
        task = get_task(session=session, instance_id=INSTANCE)
        runs = list_validation_runs(session=session, task_id=task.id or 0)
        ran = {
            r.test_id
            for run in runs
            for r in list_test_results(session=session, run_id=run.id or 0)
        }
        assert task.gpus == 1  # the task needs a GPU for all its tests
    assert not any(t.startswith(GPU_TEST) for t in ran)  # never even tried here
    (waiting,) = result.table.waiting
    assert waiting.path == GPU_TEST and why in waiting.reason and waiting.needs_gpu


CI_TEST = "tests/test_cache_flavour.py"
READS_A_CI_VARIABLE = """
import os

import pytest

from pkg.cache import Cache


@pytest.fixture
def flavour():
    return os.environ["MEMO_CACHE_FLAVOUR"]


def test_lookup_in_the_ci_flavour(flavour):
    assert flavour == "lru"
    assert Cache().lookup("a", str.upper) == "A"


def test_a_missing_key_of_its_own_is_a_failure():
    table = {}
    assert table["MEMO_CACHE_FLAVOUR"]
"""


def test_a_variable_the_ci_sets_is_named_and_the_watch_file_gives_it(
    sqlite_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMO_CACHE_FLAVOUR", raising=False)
    pr = accepted_pr(sqlite_engine, tmp_path, {CI_TEST: READS_A_CI_VARIABLE})
    result = build_and_validate(sqlite_engine, pr, tmp_path / "without", settings())

    (waiting,) = result.table.waiting  # the machine's fault, not the patch's: named
    assert waiting.path == f"{CI_TEST}::test_lookup_in_the_ci_flavour"
    assert waiting.reason.startswith(FaultKind.unset_variable)
    assert "MEMO_CACHE_FLAVOUR" in waiting.reason and "[repo.tests] env" in waiting.reason
    assert not waiting.needs_gpu
    # A KeyError of the test's own dict is a failure on its merits, said in the notes.
    (failing,) = [n for n in result.table.notes if "fail with the golden patch here" in n]
    assert f"{CI_TEST}::test_a_missing_key_of_its_own_is_a_failure" in failing
    assert "test_lookup_in_the_ci_flavour" not in failing

    given = RepoSettings(**{**vars(settings()), "env": {"MEMO_CACHE_FLAVOUR": "lru"}})
    again = validate_task(
        engine=sqlite_engine,
        instance_id=INSTANCE,
        mirror=pr.repo,
        settings=given,
        backend=LocalBackend(workspace_root=tmp_path / "runs", cpu_slots=2, gpu_indices=()),
        workspace_root=tmp_path / "runs",
    )
    assert not again.table.waiting  # the variable reached the run: the test ran and passed
    with session_scope(sqlite_engine) as session:
        task = get_task(session=session, instance_id=INSTANCE)
        golden = max(
            (
                r
                for r in list_validation_runs(session=session, task_id=task.id or 0)
                if r.control == Control.golden and r.attempt == 0
            ),
            key=lambda r: r.id or 0,
        )
        outcomes = {
            r.test_id: r.outcome for r in list_test_results(session=session, run_id=golden.id or 0)
        }
    assert outcomes[f"{CI_TEST}::test_lookup_in_the_ci_flavour"] == "passed"


def test_a_task_whose_every_test_the_machine_fails_waits_and_says_why(
    sqlite_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMO_CACHE_FLAVOUR", raising=False)
    only = {"tests/test_cache.py": READS_A_CI_VARIABLE.split("\n\ndef test_a_missing_key")[0]}
    pr = accepted_pr(sqlite_engine, tmp_path, only)
    result = build_and_validate(sqlite_engine, pr, tmp_path, settings())

    assert not result.accepted and result.stats is None  # not an error: it waits
    assert "waits for a runner that can run it" in result.notes[0]
    assert "MEMO_CACHE_FLAVOUR" in result.notes[0]
    with session_scope(sqlite_engine) as session:
        assert get_task(session=session, instance_id=INSTANCE).status == TaskStatus.built

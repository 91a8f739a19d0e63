"""Which tasks an evaluation runs: validated or published ones, named or since a day, and only
those merged after the agent's model's knowledge cutoff (plus a margin); several at a time."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from bot.evaluate.grading import RepoSetup
from bot.evaluate.harness import (
    EvalError,
    EvalEvent,
    EvalRequest,
    Stage,
    repo_resolver,
    select_tasks,
)
from bot.settings import Settings
from bot.watchfile import parse_watch_data
from probe_builder.pipeline import RepoSettings
from task_registry.db import session_scope
from task_registry.errors import NotFound
from task_registry.evaluation import register_agent, register_model
from task_registry.models import AgentCreate, ModelCreate
from task_registry.swebench import instance_id_for
from task_registry.types import TaskStatus
from tests.harness_support import REPO, MemoRepo, make_harness, make_memo_repo, seed

MAY = datetime(2026, 5, 12, tzinfo=UTC)
JULY = datetime(2026, 7, 3, tzinfo=UTC)


@pytest.fixture(scope="module")
def memo(tmp_path_factory: pytest.TempPathFactory) -> MemoRepo:
    return make_memo_repo(tmp_path_factory.mktemp("upstream"))


@pytest.fixture
def two_tasks(sqlite_engine: Engine, memo: MemoRepo) -> tuple[str, str]:
    return seed(sqlite_engine, memo, number=7, merged_at=MAY), seed(
        sqlite_engine, memo, number=8, merged_at=JULY
    )


def register_lazy(engine: Engine, cutoff: date) -> None:
    """An agent that changes nothing, on a model with a knowledge cutoff."""
    with session_scope(engine) as session:
        model = register_model(
            session=session, model_in=ModelCreate(name="m", knowledge_cutoff=cutoff)
        )
        agent_in = AgentCreate(name="lazy", command="true {workdir}", model_id=model.id)
        register_agent(session=session, agent_in=agent_in)


@pytest.mark.parametrize(
    ("cutoff", "margin", "runs", "excluded"),
    [
        (date(2026, 6, 1), 0, ["8"], ["7"]),
        (date(2026, 5, 11), 0, ["7", "8"], []),
        (date(2026, 5, 12), 0, ["8"], ["7"]),  # merged on the cutoff day: may be in training
        (date(2026, 6, 1), 40, [], ["7", "8"]),
    ],
)
def test_only_tasks_merged_after_the_cutoff_and_margin_are_selected(
    sqlite_engine: Engine,
    two_tasks: tuple[str, str],
    cutoff: date,
    margin: int,
    runs: list[str],
    excluded: list[str],
) -> None:
    request = EvalRequest(agent="lazy", margin_days=margin)
    with session_scope(sqlite_engine) as session:
        selection = select_tasks(session=session, request=request, cutoff=cutoff)
    assert selection.tasks == tuple(instance_id_for(REPO, int(n)) for n in runs)
    assert selection.excluded_pre_cutoff == tuple(instance_id_for(REPO, int(n)) for n in excluded)


def test_an_agent_runs_only_on_tasks_after_its_models_cutoff(
    sqlite_engine: Engine, memo: MemoRepo, two_tasks: tuple[str, str], tmp_path: Path
) -> None:
    may, july = two_tasks
    register_lazy(sqlite_engine, date(2026, 6, 1))
    report = make_harness(sqlite_engine, memo, tmp_path).run(EvalRequest(agent="lazy"))
    assert [r.instance_id for r in report.results] == [july]
    assert report.excluded_pre_cutoff == (may,)


def test_since_and_named_tasks_narrow_the_selection(
    sqlite_engine: Engine, two_tasks: tuple[str, str]
) -> None:
    may, july = two_tasks
    with session_scope(sqlite_engine) as session:
        since = select_tasks(
            session=session, request=EvalRequest(agent="x", since=date(2026, 6, 1)), cutoff=None
        )
        named = select_tasks(
            session=session, request=EvalRequest(agent="x", tasks=(july, may, july)), cutoff=None
        )
    assert since.tasks == (july,)
    assert named.tasks == (may, july)  # oldest first, each once


def test_unknown_and_unvalidated_tasks_are_named_in_the_error(
    sqlite_engine: Engine, memo: MemoRepo, two_tasks: tuple[str, str]
) -> None:
    built = seed(sqlite_engine, memo, number=9, status=TaskStatus.built)
    request = EvalRequest(agent="x", tasks=(two_tasks[0], "acme__memo-404", built))
    with session_scope(sqlite_engine) as session, pytest.raises(EvalError) as error:
        select_tasks(session=session, request=request, cutoff=None)
    assert "unknown task(s): acme__memo-404" in str(error.value)
    assert f"not validated/published yet: {built}" in str(error.value)


def test_built_tasks_are_not_eligible_without_being_named(
    sqlite_engine: Engine, memo: MemoRepo
) -> None:
    seed(sqlite_engine, memo, number=9, status=TaskStatus.built)
    with session_scope(sqlite_engine) as session:
        assert (
            select_tasks(session=session, request=EvalRequest(agent="x"), cutoff=None).tasks == ()
        )


def test_tasks_run_in_parallel_and_progress_counts_each_once(
    sqlite_engine: Engine, memo: MemoRepo, two_tasks: tuple[str, str], tmp_path: Path
) -> None:
    events: list[EvalEvent] = []
    harness = make_harness(sqlite_engine, memo, tmp_path)
    report = harness.run(EvalRequest(agent="oracle", parallel=2), progress=events.append)
    assert {r.instance_id for r in report.results} == set(two_tasks)
    assert all(r.resolved(s) for r in report.results for s in r.scores)
    finished = [e for e in events if e.stage is Stage.graded]
    assert sorted(e.done for e in finished) == [1, 2] and {e.total for e in events} == {2}


def test_an_unknown_agent_or_a_repository_without_a_clone_stops_before_any_run(
    sqlite_engine: Engine, memo: MemoRepo, two_tasks: tuple[str, str], tmp_path: Path
) -> None:
    harness = make_harness(sqlite_engine, memo, tmp_path)
    with pytest.raises(NotFound, match="no agent nobody"):
        harness.run(EvalRequest(agent="nobody"))
    harness.repos = lambda name: {}[name]
    with pytest.raises(EvalError, match=f"no local clone or mirror of {REPO}"):
        harness.run(EvalRequest(agent="oracle"))
    with pytest.raises(EvalError, match="at least 1"):
        harness.run(EvalRequest(agent="oracle", parallel=0))


def test_repositories_resolve_from_the_watch_file_or_the_git_option(tmp_path: Path) -> None:
    watch = parse_watch_data(
        {
            "repo": [
                {
                    "name": "acme/memo",
                    "git": "memo.git",
                    "setup_commands": ["pip install -e ."],
                    "tests": {"globs": ["tests/**"]},
                },
                {"name": "acme/other"},
            ]
        },
        path=tmp_path / "watch.toml",
    )
    settings = Settings(home=tmp_path, runner_overrides="torch==2.13.0+cpu")
    resolve = repo_resolver(watch, settings)
    memo = resolve("acme/memo")
    assert memo.mirror == tmp_path / "memo.git"
    assert memo.settings.setup_commands == ("pip install -e .",)
    assert memo.settings.test_globs == ("tests/**",)
    plan = memo.settings.environment  # each task's own environment, with this runner's pins
    assert plan is not None and plan.repo_name == "acme/memo"
    assert plan.overrides.requirements == ("torch==2.13.0+cpu",)
    with pytest.raises(KeyError):
        resolve("acme/other")  # listed, but no clone
    override = repo_resolver(watch, settings, tmp_path / "elsewhere")
    assert override("acme/memo").mirror == tmp_path / "elsewhere"
    assert override("acme/memo").settings.setup_commands == ("pip install -e .",)
    assert override("acme/unlisted") == RepoSetup(tmp_path / "elsewhere", RepoSettings())

"""Scores from runs without a sandbox are marked on the leaderboard: the run's row on the
page, in the JSON and in ``probewatch leaderboard`` says how many of its scores came from
such runs, and a footnote says what that means; where every run had a sandbox, nothing is.

Everything is real: the memo task evaluated by the harness on the local backend (agent
runs, grading runs, pytest), the registry on SQLite and PostgreSQL, the page and the API
served by the application's router, the command line in this process. Only the host's lack
of bubblewrap is made, by naming a program that is not installed.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from bot.context import AppContext
from bot.evaluate.harness import EvalRequest
from bot.evaluate.leaderboard import UNSANDBOXED_MARK
from bot.service.leaderboard_page import make_leaderboard_router
from bot.settings import Settings
from runners.sandbox import bwrap
from task_registry.db import session_scope
from task_registry.evaluation import register_agent
from task_registry.models import Agent, AgentCreate, Score, Submission, ValidationRun
from task_registry.types import Control
from tests.cli.cli_support import probewatch
from tests.harness_support import ADVERSARIAL_MEMO, MemoRepo, make_harness, make_memo_repo, seed

NOTE = "Scores from runs without a sandbox"


@pytest.fixture(scope="module")
def memo(tmp_path_factory: pytest.TempPathFactory) -> MemoRepo:
    return make_memo_repo(tmp_path_factory.mktemp("upstream"))


@pytest.fixture
def no_bubblewrap(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A host without bubblewrap: every run is made, and recorded, without a sandbox."""
    monkeypatch.setattr(bwrap, "BWRAP", "bwrap-that-is-not-installed")
    bwrap.bwrap_refusal.cache_clear()
    yield
    bwrap.bwrap_refusal.cache_clear()


def register_adversary(engine: Engine, tmp_path: Path) -> None:
    """A command agent, so that an agent's own run is made (and recorded) too."""
    script = tmp_path / "adversary.py"
    script.write_text(
        "import pathlib, sys\n"
        f"pathlib.Path(sys.argv[1], 'cachelib', 'memo.py').write_text({ADVERSARIAL_MEMO!r})\n"
    )
    command = f"{sys.executable} {script} {{workdir}}"
    with session_scope(engine) as session:
        register_agent(session=session, agent_in=AgentCreate(name="adversary", command=command))


def evaluate(engine: Engine, memo: MemoRepo, tmp_path: Path) -> None:
    """oracle (built in: only its grading runs), adversary (its agent run and its grading) and
    empty (nothing to run at all)."""
    seed(engine, memo)
    register_adversary(engine, tmp_path)
    harness = make_harness(engine, memo, tmp_path)
    for agent in ("oracle", "adversary", "empty"):
        harness.run(EvalRequest(agent=agent))


def stored(engine: Engine) -> tuple[dict[str, str | None], set[str | None], set[bool]]:
    """Each agent's submission's sandbox, the grading runs' sandboxes, the scores' flags."""
    with session_scope(engine) as session:
        joined = select(Agent.name, Submission.sandbox).join(
            Agent, col(Agent.id) == col(Submission.agent_id)
        )
        agents = {name: kind for name, kind in session.exec(joined)}
        runs = select(ValidationRun).where(ValidationRun.control == Control.submission)
        grading = {run.sandbox for run in session.exec(runs)}
        flags = {score.unsandboxed for score in session.exec(select(Score))}
    return agents, grading, flags


def views(engine: Engine, home: Path) -> tuple[str, dict[str, dict[str, object]], str]:
    """The page, the JSON rows by run, and the CLI's table, as a user gets them."""
    app = FastAPI()
    app.state.context = AppContext(Settings(), _engine=engine)
    app.include_router(make_leaderboard_router())
    client = TestClient(app)
    page = client.get("/leaderboard").text
    board = client.get("/api/leaderboard").json()
    url = engine.url.render_as_string(hide_password=False)
    printed = probewatch(home, "leaderboard", env={"PROBEWATCH_DATABASE_URL": url})
    assert printed.exit_code == 0, printed.stderr
    return page, {r["run"]: r for r in board["runs"]}, " ".join(printed.stdout.split())


def page_row(page: str, run: str) -> str:
    return page.split(f'<tr data-run="{run}">', 1)[1].split("</tr>", 1)[0]


@pytest.mark.postgres
def test_a_score_from_a_run_without_a_sandbox_is_marked_with_the_count_and_a_footnote(
    engine: Engine, memo: MemoRepo, tmp_path: Path, no_bubblewrap: None
) -> None:
    evaluate(engine, memo, tmp_path)

    agents, grading, flags = stored(engine)
    assert agents == {"oracle": None, "adversary": "none", "empty": None}  # built-ins run nothing
    assert grading == {"none"} and flags == {True, False}
    with session_scope(engine) as session:
        reasons = {r.sandbox_reason for r in session.exec(select(ValidationRun))}
    assert all("not installed" in (reason or "") for reason in reasons)

    page, rows, cli = views(engine, tmp_path / "home")
    label = f"{UNSANDBOXED_MARK} 1 of 1 scores from runs without a sandbox"
    for run in ("oracle", "adversary"):
        assert (rows[run]["unsandboxed"], rows[run]["unsandboxed_tasks"]) == (1, ["acme__memo-7"])
        assert label in page_row(page, run)
    assert (rows["empty"]["unsandboxed"], rows["empty"]["unsandboxed_tasks"]) == (0, [])
    assert UNSANDBOXED_MARK not in page_row(page, "empty")
    assert '<p id="unsandboxed">' in page and NOTE in page.split('id="unsandboxed"')[1]
    assert cli.count(label) == 2 and NOTE in cli
    assert "from runs without a sandbox: acme__memo-7" in cli


@pytest.mark.postgres
@pytest.mark.skipif(
    bwrap.bwrap_refusal() is not None, reason=f"no sandbox here: {bwrap.bwrap_refusal()}"
)
def test_where_every_run_had_a_sandbox_nothing_is_marked(
    engine: Engine, memo: MemoRepo, tmp_path: Path
) -> None:
    evaluate(engine, memo, tmp_path)

    agents, grading, flags = stored(engine)
    assert agents == {"oracle": None, "adversary": "namespaces", "empty": None}
    assert grading == {"namespaces"} and flags == {False}

    page, rows, cli = views(engine, tmp_path / "home")
    assert {run: row["unsandboxed"] for run, row in rows.items()} == dict.fromkeys(rows, 0)
    assert set(rows) == {"oracle", "adversary", "empty"}
    assert UNSANDBOXED_MARK not in page and 'id="unsandboxed"' not in page
    assert UNSANDBOXED_MARK not in cli and "without a sandbox" not in cli

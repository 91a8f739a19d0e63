"""``probewatch report OWNER/NAME#N``: the body the bot would post, from the registry, stored nowhere."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import select
from typer.testing import CliRunner

from bot.cli.main import app
from bot.report.render import full_report_url, render_report
from bot.report.store import load_report_input
from task_registry.db import session_scope
from task_registry.models import PRReport
from task_registry.types import TaskStatus
from tests.bot_support import db_url
from tests.factories import make_task

REPO = "acme/infra-lib"


def probewatch(engine: Engine, home: Path, *args: str) -> object:
    base = ["--home", str(home), "--database-url", db_url(engine)]
    return CliRunner().invoke(app, [*base, *args], env={"COLUMNS": "200"})


def test_the_report_is_the_body_the_bot_would_post_and_nothing_is_stored(
    sqlite_engine: Engine, tmp_path: Path
) -> None:
    with session_scope(sqlite_engine) as session:
        make_task(session, 7, status=TaskStatus.validated)
    shown = probewatch(sqlite_engine, tmp_path, "report", f"{REPO}#7")

    assert shown.exit_code == 0, shown.output
    with session_scope(sqlite_engine) as session:
        found = load_report_input(session=session, repo=REPO, number=7)
        assert found is not None
        assert session.exec(select(PRReport)).all() == []
    url = full_report_url("http://127.0.0.1:8080", REPO, 7)
    assert shown.stdout == render_report(found, full_url=url).body
    assert "#### 1. `pkg/sync.py:" in shown.stdout and "breaks promise" in shown.stdout


def test_the_json_carries_the_body_its_summary_and_what_waits(
    sqlite_engine: Engine, tmp_path: Path
) -> None:
    with session_scope(sqlite_engine) as session:
        make_task(session, 8, status=TaskStatus.validated)
    shown = probewatch(sqlite_engine, tmp_path, "report", f"{REPO}#8", "--json")

    document = json.loads(shown.stdout)
    assert (document["repo"], document["pull_number"], document["actionable"]) == (REPO, 8, True)
    assert document["body"].startswith("<!-- probewatch:report v1 -->")
    assert document["summary"].startswith("probewatch: 1 gap in what #8 promises")
    assert document["waiting"] == []


def test_a_pr_without_a_task_is_one_line_naming_the_fix(
    sqlite_engine: Engine, tmp_path: Path
) -> None:
    shown = probewatch(sqlite_engine, tmp_path, "report", f"{REPO}#99")
    assert shown.exit_code == 1
    assert "no task for acme/infra-lib#99" in shown.output
    assert "probewatch build acme__infra-lib-99" in shown.output


def test_a_malformed_reference_is_a_usage_error(sqlite_engine: Engine, tmp_path: Path) -> None:
    shown = probewatch(sqlite_engine, tmp_path, "report", "acme/infra-lib-7")
    assert shown.exit_code == 2

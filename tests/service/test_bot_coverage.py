"""The stored coverage table the report reads: which survivors are evidence for a promise."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import select
from typer.testing import CliRunner

from bot.cli.main import app
from bot.report.render import render_report
from bot.report.store import load_report_input, report_input
from task_registry.coverage import stored_coverage
from task_registry.db import session_scope
from task_registry.models import Task
from task_registry.types import TaskStatus
from tests.bot_support import NUMBER, REPO, db_url, make_bot
from tests.factories import make_task
from tests.github_emulator import GitHubEmulator


def test_a_survivor_rejected_by_a_promises_probe_is_evidence_for_that_promise(
    sqlite_engine: Engine,
) -> None:
    """Regression: a mechanical mutant of the demo weight sync was tagged ``state`` (its line
    mentions a version), so the traffic promise its probe defends showed no evidence and the
    report said every promise was checked."""
    with session_scope(sqlite_engine) as session:
        task = make_task(session, 41, status=TaskStatus.validated, adversarial_category="state")
        report = report_input(session, task)
    table = report.table
    traffic = next(row for row in table.promises if row.category == "resource.traffic")
    functional = next(row for row in table.promises if row.category == "functional")
    assert [s.operator for s in table.survivors_of(traffic)] == ["force_branch_true"]
    assert traffic.missed
    assert functional.survivors == []
    (survivor,) = table.survivors_of(traffic)
    assert report.patches[survivor.id].startswith("diff --git a/pkg/sync.py")
    assert table.caught_by(survivor) == ["probes/test_probe_sync_traffic.py"]


def test_every_view_renders_the_stored_table_and_none_derives_its_own(
    engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path
) -> None:
    """The registry's rows still say the adversarial survives and the probe rejects it; the
    stored table (what validation decided) says it is no evidence. The show command, the
    API, the dashboard and the report must all say what the stored table says."""
    bot = make_bot(engine, github_emulator, tmp_path)
    instance = f"acme__infra-lib-{NUMBER}"
    with session_scope(engine) as session:
        task = session.exec(select(Task).where(Task.instance_id == instance)).one()
        table = stored_coverage(task)
        for promise in table.promises:
            promise.survivors = []
        task.coverage = table.model_dump(mode="json")
        session.add(task)

    api = bot.client.get(f"/api/tasks/{instance}/coverage").json()
    assert [p["survivors"] for p in api["promises"]] == [[], []]
    page = bot.client.get(f"/tasks/{instance}").text
    coverage = page.split('id="coverage"')[1].split("</table>")[0]
    assert 'data-missed="yes"' not in coverage and "force_branch_true" not in coverage
    # the stored table still says the patch survives: it is listed apart, tied to no promise
    other = page.split('id="other-survivors"')[1].split("</table>")[0]
    assert 'data-place="unlinked"' in other and "force_branch_true" in other
    with session_scope(engine) as session:
        report = load_report_input(session=session, repo=REPO, number=NUMBER)
        assert report is not None
        rendered = render_report(report, full_url="http://dashboard.test/x")
    assert not rendered.actionable and "#### 1." not in rendered.body
    shown = CliRunner().invoke(
        app,
        ["--home", str(tmp_path), "--database-url", db_url(engine), "show", instance, "--json"],
    )
    assert shown.exit_code == 0, shown.output
    assert [p["survivors"] for p in json.loads(shown.stdout)["promises"]] == [[], []]

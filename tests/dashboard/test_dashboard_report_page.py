"""The report page shows the full report rendered as GitHub would (its <details> open and close,
no fence or marker shows), and links to the task."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from tests.dashboard_support import GAPS, REPO, dashboard_app, seed_dashboard


@pytest.fixture
def client(sqlite_engine: Engine) -> TestClient:
    seed_dashboard(sqlite_engine)
    return dashboard_app(sqlite_engine)


def test_the_report_page_renders_the_full_report(client: TestClient) -> None:
    page = client.get(f"/reports/{REPO}/{GAPS}").text
    body = page.split('<article id="report-body"', 1)[1].split("</article>", 1)[0]

    assert "<details><summary>" in body and "</summary>" in body and "<h3>" in body
    assert "```" not in page and "<pre id=" not in page and "probewatch:report" not in page
    assert f'href="/tasks/acme__infra-lib-{GAPS}"' in page


def test_a_report_on_a_task_whose_validation_did_not_finish_shows_the_stored_body(
    sqlite_engine: Engine,
) -> None:
    """A validation cut short leaves a built task: the page shows what was stored, and no
    full report claims checks that never ran."""
    from task_registry.db import session_scope
    from task_registry.reports import get_or_create_report, save_report
    from task_registry.types import TaskStatus
    from tests.factories import make_task

    with session_scope(sqlite_engine) as session:
        make_task(session, 77, repo=REPO, status=TaskStatus.built)
        row = get_or_create_report(session=session, repo=REPO, pull_number=77)
        save_report(session=session, report=row, body="### ⏳ probewatch: validation pending")
    answer = dashboard_app(sqlite_engine).get(f"/reports/{REPO}/77")
    assert answer.status_code == 200
    assert "validation pending" in answer.text

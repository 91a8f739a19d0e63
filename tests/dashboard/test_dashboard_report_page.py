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

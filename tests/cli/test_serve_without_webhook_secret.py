"""``probewatch serve`` without PROBEWATCH_WEBHOOK_SECRET: development serves without the
webhook and says so in one line; production refuses in one line. Both used to end in a
long traceback from the web app's start-up."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from bot.context import AppContext
from bot.service.app import create_app
from bot.service.run import web_context
from bot.service.webhook import WebhookConfigError
from bot.settings import Settings
from tests.cli.cli_support import probewatch


def test_development_serves_without_the_webhook_and_warns_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    context = AppContext(Settings(home=tmp_path, environment="development", webhook_secret=None))

    with caplog.at_level(logging.WARNING):
        served = web_context(context)

    assert served.settings.webhook_enabled is False
    (record,) = caplog.records
    assert "PROBEWATCH_WEBHOOK_SECRET is not set" in record.getMessage()
    assert "\n" not in record.getMessage()
    with TestClient(create_app(served)) as client:  # the start-up no longer refuses
        assert client.post("/webhook", content=b"{}").status_code in (404, 405)


def test_a_webhook_with_its_secret_stays_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    context = AppContext(Settings(home=tmp_path, webhook_secret="s3cret"))

    with caplog.at_level(logging.WARNING):
        served = web_context(context)

    assert served.settings.webhook_enabled is True
    assert caplog.records == []


POSTGRES = "postgresql+psycopg://probewatch@127.0.0.1:1/none"  # never reached


def test_production_refuses_with_one_line_naming_the_fix(tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path,
        environment="production",
        database_url=POSTGRES,
        admin_token="token",
        webhook_secret=None,
    )
    with pytest.raises(WebhookConfigError, match="PROBEWATCH_WEBHOOK_SECRET"):
        web_context(AppContext(settings))

    production: dict[str, str | None] = {
        "PROBEWATCH_ENVIRONMENT": "production",
        "PROBEWATCH_DATABASE_URL": POSTGRES,
        "PROBEWATCH_ADMIN_TOKEN": "token",
        "PROBEWATCH_WEBHOOK_SECRET": None,
    }
    refused = probewatch(tmp_path, "serve", "--no-worker", "--no-scheduler", env=production)

    assert refused.exit_code == 1
    assert refused.stderr.strip().splitlines() == [
        "error: PROBEWATCH_WEBHOOK_SECRET is not set: set it, or disable the webhook with "
        "PROBEWATCH_WEBHOOK_ENABLED=false"
    ]

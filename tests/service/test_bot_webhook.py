"""POST /webhook on its own: every refusal is a 4xx with a reason and stores nothing; ping and
installation events; the app refuses to start with the webhook on and no secret."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import select

from bot.context import AppContext
from bot.service.app import create_app
from bot.service.webhook import Command, WebhookConfigError, parse_command, signature_for
from task_registry.db import session_scope
from task_registry.models import Job, WebhookDelivery
from task_registry.reports import installation_for
from tests.bot_support import (
    REPO,
    SECRET,
    Bot,
    bot_settings,
    db_url,
    make_bot,
    signed_headers,
    with_settings,
)
from tests.github_emulator import GitHubEmulator


@pytest.fixture
def bot(sqlite_engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path) -> Bot:
    return make_bot(sqlite_engine, github_emulator, tmp_path)


def stored(bot: Bot) -> tuple[int, int]:
    with session_scope(bot.context.engine) as session:
        return len(session.exec(select(WebhookDelivery)).all()), len(
            session.exec(select(Job)).all()
        )


def post_raw(bot: Bot, body: bytes, event: str = "pull_request", **headers: str) -> object:
    return bot.client.post(
        "/webhook", content=body, headers={**signed_headers(body, event), **headers}
    )


def test_ping_answers_200_and_stores_nothing(bot: Bot) -> None:
    answer = bot.deliver("ping", {"zen": "Keep it logically awesome.", "hook_id": 1})
    assert (answer.status_code, answer.json()["status"]) == (200, "pong")
    assert stored(bot) == (0, 0)


@pytest.mark.parametrize(
    ("body", "event", "status", "reason"),
    [
        (b"{not json", "pull_request", 400, "not valid JSON"),
        (b"[1, 2]", "pull_request", 400, "JSON object"),
        (b"{}", "deployment_status", 400, "unsupported event 'deployment_status'"),
        (
            b'{"action": "closed", "pull_request": {"merged": true}}',
            "pull_request",
            422,
            "repository",
        ),
    ],
)
def test_bad_deliveries_get_a_4xx_with_a_reason_and_store_nothing(
    bot: Bot, body: bytes, event: str, status: int, reason: str
) -> None:
    answer = post_raw(bot, body, event)
    assert answer.status_code == status  # type: ignore[attr-defined]
    assert reason in answer.json()["detail"]  # type: ignore[attr-defined]
    assert stored(bot) == (0, 0)


def test_a_delivery_without_its_id_is_refused(bot: Bot) -> None:
    body = b'{"zen": "x"}'
    headers = signed_headers(body, "ping")
    del headers["X-GitHub-Delivery"]
    answer = bot.client.post("/webhook", content=body, headers=headers)
    assert answer.status_code == 400 and "X-GitHub-Delivery" in answer.json()["detail"]


def test_oversized_bodies_are_refused_before_reading(
    sqlite_engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path
) -> None:
    bot = make_bot(sqlite_engine, github_emulator, tmp_path)
    app = create_app(with_settings(bot.context, webhook_max_body_bytes=2048))
    client = TestClient(app)
    body = json.dumps({"padding": "x" * 4096}).encode()

    declared = client.post("/webhook", content=body, headers=signed_headers(body, "ping"))
    streamed = client.post(
        "/webhook", content=iter([body[:1500], body[1500:]]), headers=signed_headers(body, "ping")
    )

    assert declared.status_code == 413 and "2048-byte limit" in declared.json()["detail"]
    assert streamed.status_code == 413
    assert stored(bot) == (0, 0)


def test_signature_is_over_the_raw_bytes(bot: Bot) -> None:
    body = b'{"zen":  "spaces matter"}'
    reformatted = json.dumps(json.loads(body)).encode()
    headers = signed_headers(reformatted, "ping")
    assert bot.client.post("/webhook", content=body, headers=headers).status_code == 401
    assert signature_for(SECRET.encode(), body) != signature_for(SECRET.encode(), reformatted)


def test_unmerged_pull_requests_are_recorded_but_queue_nothing(bot: Bot) -> None:
    event = {
        "action": "closed",
        "pull_request": {"number": 3, "merged": False},
        "repository": {"full_name": REPO},
    }
    answer = bot.deliver("pull_request", event)
    assert (answer.status_code, answer.json()["status"]) == (200, "ignored")
    assert stored(bot) == (1, 0)


def test_installation_events_record_which_repositories_have_the_app(bot: Bot) -> None:
    installation = {"id": 77, "account": {"login": "acme"}}
    bot.deliver(
        "installation",
        {"action": "created", "installation": installation, "repositories": [{"full_name": REPO}]},
    )
    bot.deliver(
        "installation_repositories",
        {
            "action": "added",
            "installation": installation,
            "repositories_added": [{"full_name": "acme/other"}],
            "repositories_removed": [{"full_name": REPO}],
        },
    )
    bot.worker.run_until_idle()
    with session_scope(bot.context.engine) as session:
        assert installation_for(session=session, repo=REPO) is None
        assert installation_for(session=session, repo="acme/other") is not None

    bot.deliver("installation", {"action": "deleted", "installation": installation})
    bot.worker.run_until_idle()
    with session_scope(bot.context.engine) as session:
        assert installation_for(session=session, repo="acme/other") is None


@pytest.mark.parametrize(
    ("body", "command"),
    [
        ("/probewatch rerun", Command.rerun),
        ("  /probewatch ignore please", Command.ignore),
        ("/probewatch", None),
        ("/probewatch deploy", None),
        ("please /probewatch rerun", None),
        ("/probewatchrerun", None),
    ],
)
def test_commands_are_read_from_the_start_of_a_comment(body: str, command: Command | None) -> None:
    assert parse_command(body) == command


def test_the_app_refuses_to_start_with_the_webhook_on_and_no_secret(
    sqlite_engine: Engine, tmp_path: Path
) -> None:
    context = AppContext(
        bot_settings(home=tmp_path, database_url=db_url(sqlite_engine)), _engine=sqlite_engine
    )
    app = create_app(context)
    with pytest.raises(WebhookConfigError, match="PROBEWATCH_WEBHOOK_SECRET"), TestClient(app):
        pass
    unstarted = TestClient(app).post("/webhook", content=b"{}", headers={"X-GitHub-Event": "ping"})
    assert unstarted.status_code == 503

    disabled = create_app(with_settings(context, webhook_enabled=False))
    with TestClient(disabled) as client:
        assert client.get("/healthz").status_code == 200
        assert client.post("/webhook", content=b"{}").status_code in (404, 405)

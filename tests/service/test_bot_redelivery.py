"""Redelivery of webhook deliveries that never reached probewatch: chosen from the App's delivery
log (JWT), only failed guids the registry never stored, the latest attempt each, once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from sqlalchemy.engine import Engine

from bot.context import AppContext
from bot.service.github.client import GitHubClients
from bot.service.github.redelivery import HookAttempt, to_redeliver
from bot.service.jobs.handlers import redeliver_failed, route
from bot.service.jobs.kinds import JobKind
from bot.service.jobs.worker import Worker
from task_registry.db import session_scope
from task_registry.deliveries import record_delivery
from task_registry.jobs import enqueue_job
from task_registry.models import JobCreate
from tests.bot_support import bot_settings, db_url
from tests.github_emulator import GitHubEmulator

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


def attempt(id: int, guid: str, status: int, hours_ago: float = 1) -> HookAttempt:
    return HookAttempt(
        id=id, guid=guid, status_code=status, delivered_at=NOW - timedelta(hours=hours_ago)
    )


def test_only_failed_unreceived_recent_deliveries_are_chosen_latest_attempt_first() -> None:
    attempts = [
        attempt(1, "ok", 200),
        attempt(2, "failed", 502, hours_ago=2),
        attempt(3, "failed", 504),
        attempt(4, "recovered", 500),
        attempt(5, "recovered", 202),
        attempt(6, "stored", 502),
        attempt(7, "old", 502, hours_ago=30),
    ]
    chosen = to_redeliver(attempts, lambda guid: guid == "stored", since=NOW - timedelta(hours=24))
    assert [(a.guid, a.id) for a in chosen] == [("failed", 3)]


def test_the_number_redelivered_per_run_is_capped() -> None:
    attempts = [attempt(i, f"g{i}", 502) for i in range(10)]
    chosen = to_redeliver(attempts, lambda guid: False, since=NOW - timedelta(days=1), limit=3)
    assert [a.guid for a in chosen] == ["g0", "g1", "g2"]


def test_the_redeliver_job_asks_github_once_per_lost_delivery(
    sqlite_engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path
) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    state = github_emulator.state
    state.add_app(7, public)
    state.add_hook_delivery("lost", status_code=502)
    state.add_hook_delivery("got-it", status_code=502)
    state.add_hook_delivery("fine", status_code=200)
    with session_scope(sqlite_engine) as session:
        record_delivery(session=session, delivery_id="got-it", event="pull_request", payload=b"{}")
    settings = bot_settings(
        home=tmp_path,
        database_url=db_url(sqlite_engine),
        github_api_url=github_emulator.base_url,
        github_app_id=7,
        github_app_private_key=private,
    )
    worker = Worker(
        AppContext(settings, _engine=sqlite_engine),
        handlers={JobKind.redeliver: route(JobKind.redeliver, redeliver_failed)},
        github=GitHubClients(settings),
    )

    results = []
    for slot in ("1", "2"):
        with session_scope(sqlite_engine) as session:
            enqueue_job(session=session, job_in=JobCreate(kind=JobKind.redeliver, dedupe_key=slot))
        results += [ran.result for ran in worker.run_until_idle()]

    assert results == [{"redelivered": ["lost"]}, {"redelivered": []}]
    redelivered = [d.guid for d in state.list_hook_deliveries() if d.redelivery]
    assert redelivered == ["lost"]

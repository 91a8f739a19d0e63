"""Hostile input at the web edge: every bad webhook delivery and every bad API or dashboard URL
gets a 4xx with a reason and stores nothing, on SQLite and PostgreSQL; an unsigned body is
refused before it is read and only a few bodies are read at once; a Hypothesis run over the
webhook and the API finds no 500.

Regression tests for issue 16, point 4 and 5: a ``pull_request`` given as a string or a payload
nested 100k deep answered 500; PostgreSQL answered 500 to a 101-character delivery id, a
65-character action, a NUL in a repository name and a 300-character SHA (SQLite stored them);
ids and offsets above 2^63 answered 500.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine
from sqlmodel import select

from bot.service.app import create_app
from task_registry.db import session_scope
from task_registry.models import Job, WebhookDelivery
from tests.bot_support import (
    REPO,
    Bot,
    comment_event,
    make_bot,
    merged_event,
    signed_headers,
    with_settings,
)
from tests.browser_support import serve
from tests.github_emulator import GitHubEmulator

ADMIN = {"Authorization": "Bearer admin-token"}
HUGE = str(2**64)


@pytest.fixture
def bot(engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path) -> Bot:
    return make_bot(engine, github_emulator, tmp_path)


def stored(bot: Bot) -> tuple[int, int]:
    with session_scope(bot.context.engine) as session:
        deliveries = session.exec(select(WebhookDelivery)).all()
        return len(deliveries), len(session.exec(select(Job)).all())


def post(bot: Bot, body: bytes, event: str = "pull_request", **headers: str) -> Any:
    sent = {**signed_headers(body, event), **headers}
    return bot.client.post("/webhook", content=body, headers=sent)


def with_pull(**fields: Any) -> dict[str, Any]:
    event = merged_event()
    event["pull_request"].update(fields)
    return event


def nested(depth: int) -> bytes:
    return b'{"zen": ' + b"[" * depth + b"]" * depth + b"}"


BAD_DELIVERIES = [
    # (case, body, headers beyond the signed ones, status, words the reason holds)
    ("pull_request is a string", {**merged_event(), "pull_request": "x"}, {}, 422, "pull_request"),
    ("nested 100k deep", nested(100_000), {}, 400, "nested too deeply"),
    ("delivery id of 101", merged_event(), {"X-GitHub-Delivery": "d" * 101}, 400, "delivery id"),
    ("delivery id of 60 KB", merged_event(), {"X-GitHub-Delivery": "d" * 60_000}, 400, "delivery"),
    ("action of 65", {**merged_event(), "action": "c" * 65}, {}, 422, "action"),
    ("NUL in a repository", merged_event(repo="acme/x\x00y"), {}, 422, "repository.full_name"),
    ("a shell line as repository", merged_event(repo="a/b; rm -rf /"), {}, 422, "not owner/name"),
    ("repository of dots", merged_event(repo="acme/.."), {}, 422, "not owner/name"),
    ("SHA of 300", with_pull(merge_commit_sha="a" * 300), {}, 422, "merge_commit_sha"),
    ("SHA not hex", with_pull(merge_commit_sha="zz"), {}, 422, "merge_commit_sha"),
    ("PR number above 2^63", with_pull(number=2**64), {}, 422, "number"),
    ("PR number as text", with_pull(number="twelve"), {}, 422, "number"),
    ("event name of 65", merged_event(), {"X-GitHub-Event": "e" * 65}, 400, "X-GitHub-Event"),
    ("unsigned", merged_event(), {"X-Hub-Signature-256": ""}, 401, "missing"),
    ("signature not hex", merged_event(), {"X-Hub-Signature-256": "sha256=zz"}, 401, "64 hex"),
]


@pytest.mark.parametrize(
    ("body", "headers", "status", "reason"),
    [case[1:] for case in BAD_DELIVERIES],
    ids=[case[0] for case in BAD_DELIVERIES],
)
def test_a_bad_delivery_is_a_4xx_with_a_reason_and_stores_nothing(
    bot: Bot, body: Any, headers: dict[str, str], status: int, reason: str
) -> None:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    answer = post(bot, raw, **headers)
    assert (answer.status_code, stored(bot)) == (status, (0, 0)), answer.text
    assert reason in answer.json()["detail"]


@pytest.mark.parametrize(
    ("event", "payload", "reason"),
    [
        ("issue_comment", {**comment_event("/probewatch rerun"), "issue": "x"}, "issue"),
        ("issue_comment", comment_event("/probewatch rerun", comment_id=2**64), "comment.id"),
        (
            "installation",
            {"action": "created", "installation": {"id": 7}, "repositories": [{"full_name": 3}]},
            "repositories.0.full_name",
        ),
        ("installation", {"action": "created", "installation": {"id": 2**64}}, "installation.id"),
    ],
)
def test_other_events_with_mistyped_fields_are_a_422(
    bot: Bot, event: str, payload: dict[str, Any], reason: str
) -> None:
    answer = post(bot, json.dumps(payload).encode(), event)
    assert (answer.status_code, stored(bot)) == (422, (0, 0)), answer.text
    assert reason in answer.json()["detail"]


def test_a_good_delivery_still_queues_its_job(bot: Bot) -> None:
    """The control for the table above: the same shapes, well formed, are accepted."""
    answer = post(bot, json.dumps(with_pull(merge_commit_sha="a" * 40)).encode())
    assert (answer.status_code, stored(bot)) == (202, (1, 1))


BAD_URLS = [
    # (method, url, status, words the reason holds)
    ("GET", f"/api/reports/{REPO}/{HUGE}", 422, "less than or equal"),
    ("GET", f"/reports/{REPO}/{HUGE}", 422, "less than or equal"),
    ("GET", f"/api/reports/{REPO}/-1", 422, "greater than or equal"),
    ("GET", "/api/reports?offset=1e20", 422, "valid integer"),
    ("GET", f"/api/reports?offset={HUGE}", 422, "less than or equal"),
    ("GET", f"/api/candidates?offset={HUGE}", 422, "less than or equal"),
    ("GET", f"/api/tasks?offset={HUGE}", 422, "less than or equal"),
    ("GET", f"/api/repos?offset={HUGE}", 422, "less than or equal"),
    ("GET", "/api/reports?repo=acme/x%00y", 400, "control character"),
    ("GET", "/api/candidates?repo=a/b;rm%20-rf%20/", 422, "pattern"),
    ("GET", "/api/tasks/acme__x%00y-1", 400, "control character"),
    ("GET", f"/api/tasks/{'x' * 400}", 422, "at most 300"),
    ("GET", f"/leaderboard?margin_days={HUGE}", 422, "less than or equal"),
    ("POST", f"/api/candidates/{HUGE}/reject", 422, "less than or equal"),
    ("POST", "/api/candidates/abc/accept", 422, "valid integer"),
]


@pytest.mark.parametrize(("method", "url", "status", "reason"), BAD_URLS)
def test_a_bad_id_or_offset_is_a_4xx_with_a_reason(
    bot: Bot, method: str, url: str, status: int, reason: str
) -> None:
    answer = bot.client.request(method, url, headers=ADMIN)
    assert answer.status_code == status, answer.text
    assert reason in json.dumps(answer.json()["detail"])


def test_a_decision_reason_with_a_nul_is_a_422(bot: Bot) -> None:
    answer = bot.client.post("/api/candidates/1/reject", headers=ADMIN, json={"reason": "a\x00"})
    assert answer.status_code == 422


# --- bodies on a real server ------------------------------------------------------------


def request_head(length: int, **headers: str) -> bytes:
    lines = [
        "POST /webhook HTTP/1.1",
        "Host: 127.0.0.1",
        f"Content-Length: {length}",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def status_of(sock: socket.socket) -> int:
    return int(sock.recv(4096).split(b" ", 2)[1])


def answer_of(sock: socket.socket) -> tuple[int, str]:
    head = sock.recv(4096).decode("latin-1")
    return int(head.split(" ", 2)[1]), head.lower()


def connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=5)


def test_an_unsigned_body_is_refused_before_it_is_read(bot: Bot) -> None:
    """The answer comes while the 20 MB the request announces are still unsent."""
    with serve(create_app(bot.context)) as url, connect(url) as sock:
        sock.sendall(request_head(20_000_000, **{"X-GitHub-Event": "ping"}))
        assert status_of(sock) == 401


def test_bodies_past_the_concurrency_cap_are_answered_503(bot: Bot) -> None:
    app = create_app(with_settings(bot.context, webhook_max_concurrent_bodies=1))
    body = json.dumps({"zen": "z"}).encode()
    headers = signed_headers(body, "ping")
    headers.pop("Content-Type")
    with serve(app) as url, connect(url) as slow, connect(url) as second:
        slow.sendall(request_head(len(body), **headers) + body[:3])  # held open, half sent
        second.sendall(request_head(len(body), **headers) + body)
        status, head = answer_of(second)
        assert status == 503 and "retry-after: 5" in head
        slow.sendall(body[3:])
        assert status_of(slow) == 200


# --- fuzz --------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=80),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=20), inner),
    max_leaves=20,
)
PAYLOAD_KEYS = ("action", "pull_request", "repository", "issue", "comment", "installation")
PAYLOADS = st.fixed_dictionaries({}, optional={key: JSON for key in PAYLOAD_KEYS})
EVENTS = st.sampled_from(["pull_request", "issue_comment", "installation", "ping"]) | st.text()
PATHS = st.sampled_from(
    [
        "/api/reports/{a}/{b}/{n}",
        "/reports/{a}/{b}/{n}",
        "/api/tasks/{a}",
        "/tasks/{a}",
        "/api/tasks/{a}/runs",
        "/api/reports?offset={n}&repo={a}",
        "/api/candidates?offset={n}&limit={n}&repo={a}/{b}",
        "/leaderboard?margin_days={n}&window={a}",
    ]
)
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture
def sqlite_bot(sqlite_engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path) -> Bot:
    return make_bot(sqlite_engine, github_emulator, tmp_path)


@FUZZ
@given(event=EVENTS, payload=PAYLOADS, delivery=st.text(max_size=120))
def test_fuzzed_webhook_deliveries_never_get_a_500(
    sqlite_bot: Bot, event: str, payload: dict[str, Any], delivery: str
) -> None:
    client = TestClient(sqlite_bot.client.app, raise_server_exceptions=False)
    body = json.dumps(payload).encode()
    headers = {**signed_headers(body, "ping"), "X-GitHub-Event": event}
    headers["X-GitHub-Delivery"] = delivery
    try:
        answer = client.post("/webhook", content=body, headers=headers)
    except UnicodeEncodeError:  # a header httpx cannot send
        return
    assert answer.status_code < 500, answer.text


@FUZZ
@given(
    template=PATHS,
    a=st.text(max_size=50),
    b=st.text(max_size=50),
    n=st.integers().map(str) | st.text(max_size=30),
)
def test_fuzzed_api_and_dashboard_urls_never_get_a_500(
    sqlite_bot: Bot, template: str, a: str, b: str, n: str
) -> None:
    client = TestClient(sqlite_bot.client.app, raise_server_exceptions=False)
    url = template.format(a=_quoted(a), b=_quoted(b), n=_quoted(n))
    assert client.get(url).status_code < 500


def _quoted(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")

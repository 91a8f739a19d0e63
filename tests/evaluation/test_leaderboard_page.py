"""GET /leaderboard (the table and the inline SVG plot, server-rendered) and GET
/api/leaderboard (the same data as JSON), and the page as headless Chromium draws it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from bot.context import AppContext
from bot.evaluate.leaderboard import Leaderboard, RateOut
from bot.service.leaderboard_page import format_rate, make_leaderboard_router
from bot.settings import Settings
from task_registry.db import session_scope
from tests.leaderboard_support import BOTH, FAULT, NONE, day, scored

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def client(sqlite_engine: Engine) -> TestClient:
    with session_scope(sqlite_engine) as session:
        scored(
            session,
            "alpha",
            [(1, day(1), BOTH, BOTH), (2, day(2), BOTH, NONE), (3, day(4), FAULT, FAULT)],
        )
        scored(session, "beta", [(1, day(1), NONE, NONE)])
    app = FastAPI()
    app.state.context = AppContext(Settings(), _engine=sqlite_engine)
    app.include_router(make_leaderboard_router())
    return TestClient(app)


def test_the_json_is_the_leaderboard_model(client: TestClient) -> None:
    answer = client.get("/api/leaderboard", params={"window": "quarter"})
    assert answer.status_code == 200
    board = Leaderboard.model_validate(answer.json())
    alpha = next(r for r in board.runs if r.run == "alpha")
    assert (alpha.tasks, alpha.faults, alpha.overturned) == (2, 1, ["acme__lib-2"])
    assert [w.key for w in alpha.windows] == ["2026-Q1", "2026-Q2"]
    assert client.get("/api/leaderboard", params={"window": "year"}).status_code == 422


def test_the_page_shows_each_run_its_overturn_count_and_the_plot(client: TestClient) -> None:
    answer = client.get("/leaderboard")
    assert answer.status_code == 200
    page = answer.text
    assert '<tr data-run="alpha">' in page and '<tr data-run="beta">' in page
    assert '<td class="overturned">1 <small>(acme__lib-2)</small></td>' in page
    assert "<svg" in page and "<?xml" not in page
    assert "alpha (with probes)" in page  # the plot's legend, as SVG text


def test_a_rate_reads_value_and_wilson_interval() -> None:
    assert format_rate(RateOut(value=66.7, se=27.2, low=20.8, high=93.9, n=3)) == "67% [21–94]"


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_headless_chromium_draws_the_page(client: TestClient, tmp_path: Path) -> None:
    page = tmp_path / "leaderboard.html"
    page.write_text(client.get("/leaderboard").text, encoding="utf-8")
    shot = tmp_path / "leaderboard.png"
    dom = subprocess.run(
        [
            CHROMIUM or "",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    subprocess.run(
        [
            CHROMIUM or "",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--screenshot={shot}",
            "--window-size=1200,1400",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert "<svg" in dom and 'data-run="alpha"' in dom
    assert shot.read_bytes()[:8] == PNG_MAGIC
    assert shot.stat().st_size > 20_000  # a drawn page, not a blank one

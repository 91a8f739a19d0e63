"""The scores-over-time plot: the series it draws come from the leaderboard's windows, and it
is drawn server-side as a deterministic, self-contained SVG (matplotlib loaded only then)."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from sqlalchemy.engine import Engine

from bot.evaluate.leaderboard import Leaderboard, build_leaderboard
from bot.evaluate.plots import Metric, Point, inline_svg, plot_series, render_svg, windows_of
from task_registry.db import session_scope
from task_registry.types import ScoreSuite
from tests.leaderboard_support import BOTH, DISAGREE, FAULT, NONE, day, scored

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def board(sqlite_engine: Engine) -> Leaderboard:
    with session_scope(sqlite_engine) as session:
        scored(
            session,
            "alpha",
            [
                (1, day(1), BOTH, BOTH),
                (2, day(1), BOTH, NONE),
                (3, day(3), DISAGREE, DISAGREE),
                (4, day(5), FAULT, FAULT),  # a window with faults only: no point
            ],
        )
        scored(session, "beta", [(1, day(1), NONE, NONE), (3, day(3), BOTH, BOTH)])
    with session_scope(sqlite_engine) as session:
        return build_leaderboard(session=session)


def test_the_series_are_the_leaderboards_windows_per_run_and_suite(board: Leaderboard) -> None:
    series = {(s.run, s.suite): s.points for s in plot_series(board)}
    assert set(series) == {(r, s) for r in ("alpha", "beta") for s in ScoreSuite}
    alpha = {w.key: w for w in board.runs[[r.run for r in board.runs].index("alpha")].windows}
    january = alpha["2026-01"].with_probes.resolved_set
    assert series["alpha", ScoreSuite.with_probes][0] == Point(
        "2026-01", january.value, january.low, january.high, 2
    )
    assert [p.value for p in series["alpha", ScoreSuite.with_probes]] == [50.0, 0.0]
    assert [p.value for p in series["alpha", ScoreSuite.original]] == [100.0, 0.0]
    assert [p.window for p in series["alpha", ScoreSuite.original]] == ["2026-01", "2026-03"]
    passed = plot_series(board, metric=Metric.passed, suites=(ScoreSuite.with_probes,))
    assert [s.run for s in passed] == ["beta", "alpha"]  # the leaderboard's order: best first
    assert [p.value for p in passed[0].points] == [0.0, 100.0]  # beta: 0/4, then 4/4
    assert windows_of(plot_series(board)) == ["2026-01", "2026-03"]


def test_every_point_lies_inside_its_interval(board: Leaderboard) -> None:
    for line in plot_series(board):
        for point in line.points:
            assert point.low <= point.value <= point.high


def test_the_svg_is_produced_deterministically_with_its_labels_as_text(board: Leaderboard) -> None:
    series = plot_series(board)
    document = render_svg(series)
    assert document == render_svg(series)
    root = ET.fromstring(document)
    assert root.tag == f"{SVG}svg"
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    for label in ("alpha (with probes)", "beta (original tests)", "2026-01", "2026-03"):
        assert label in texts
    assert inline_svg(document).startswith("<svg") and "<?xml" not in inline_svg(document)


def test_an_empty_leaderboard_still_draws_an_empty_plot() -> None:
    document = render_svg([])
    assert ET.fromstring(document).tag == f"{SVG}svg"


def test_importing_the_plot_module_does_not_load_matplotlib() -> None:
    code = "import sys, bot.evaluate.plots, bot.service.leaderboard_page; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

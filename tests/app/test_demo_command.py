"""``probewatch demo`` end to end: the real command in a subprocess on a fresh home folder.

The first run creates the demo repository, mines, builds, validates, stores the three PR
reports in dry run and grades the reference agents; its printed leaderboard must show the
oracle resolving every task and the empty and hollow agents none. The second run must redo
nothing: no new candidates, tasks, validation runs, reports or submissions.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bot.report.ranking import DEFAULT_MAX_ENTRIES
from task_registry.coverage import CoverageTable

# The whole pipeline on the demo's three tasks takes a few minutes on two shared cores.
DEMO_TIMEOUT_S = 1800
TABLES = ("candidate_pr", "task", "validation_run", "pr_report", "submission", "score")
PLANTED = (12, 15, 19)


def probewatch(home: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROBEWATCH_")}
    env.update(PROBEWATCH_HOME=str(home), COLUMNS="250", NO_COLOR="1")
    proc = subprocess.run(
        [sys.executable, "-m", "bot.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT_S,
    )
    assert proc.returncode == 0, (
        f"probewatch {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    )
    return proc.stdout


def leaderboard_rows(output: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(run, suite) → (Resolved count rule, Resolved set rule) cells of the printed table."""
    rows: dict[tuple[str, str], tuple[str, str]] = {}
    run = ""
    table = output.split("Leaderboard (contamination-free)", 1)[1]
    for line in table.splitlines():
        if line.startswith("└"):
            break
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) < 5 or cells[1] not in ("original", "with probes"):
            continue
        run = cells[0].split()[0] if cells[0] else run
        rows[(run, cells[1])] = (cells[3], cells[4])
    return rows


def counts(database: Path) -> dict[str, int]:
    with sqlite3.connect(database) as db:
        return {t: db.execute(f"select count(*) from {t}").fetchone()[0] for t in TABLES}


def reports(database: Path) -> list[tuple[int, str, bool, int]]:
    with sqlite3.connect(database) as db:
        query = "select pull_number, status, dry_run, length(body) from pr_report order by 1"
        return [(n, s, bool(d), size or 0) for n, s, d, size in db.execute(query)]


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict, str, dict]:
    home = tmp_path_factory.mktemp("home")
    probewatch(home, "db", "upgrade")
    first = probewatch(home, "demo")
    after_first = counts(home / "probewatch.db")
    second = probewatch(home, "demo")
    return home, first, after_first, second, counts(home / "probewatch.db")


def test_demo_leaderboard_shows_oracle_resolving_all_and_empty_and_hollow_none(demo_runs):
    _, first, _, second, _ = demo_runs
    for output in (first, second):
        rows = leaderboard_rows(output)
        for suite in ("original", "with probes"):
            assert rows[("oracle", suite)][0].startswith("3/3:"), rows
            assert rows[("oracle", suite)][1].startswith("3/3:"), rows
            for agent in ("empty", "hollow"):
                assert rows[(agent, suite)][0].startswith("0/3:"), rows
                assert rows[(agent, suite)][1].startswith("0/3:"), rows


def test_demo_stores_the_three_reports_as_dry_runs_and_says_where_to_serve_them(demo_runs):
    home, first, _, _, _ = demo_runs
    stored = reports(home / "probewatch.db")
    assert [n for n, *_ in stored] == list(PLANTED)
    assert all(status == "dry_run" and dry and size > 0 for _, status, dry, size in stored)
    assert first.count("report written") == len(PLANTED)
    assert "probewatch serve" in first and "http://127.0.0.1:8080/leaderboard" in first
    for number in PLANTED:
        assert f"/reports/probewatch-demo/minirl/{number}" in first
        assert f"/tasks/probewatch-demo__minirl-{number}" in first


def test_demo_rerun_rebuilds_nothing_and_adds_no_rows(demo_runs):
    _, first, after_first, second, after_second = demo_runs
    assert "creating probewatch-demo/minirl" in first
    assert "reusing probewatch-demo/minirl" in second
    assert after_second == after_first
    assert after_first["task"] == len(PLANTED) and after_first["submission"] == 3 * len(PLANTED)
    assert "stored 0 new" in second
    assert second.count("nothing to rebuild") == len(PLANTED)
    assert second.count("report unchanged") == len(PLANTED)
    assert second.count("graded by an earlier run") == 3 * len(PLANTED)


def stored(database: Path, number: int) -> tuple[str, dict]:
    import json

    with sqlite3.connect(database) as db:
        body = db.execute("select body from pr_report where pull_number = ?", (number,)).fetchone()
        table = db.execute("select coverage from task where pull_number = ?", (number,)).fetchone()
    return body[0], json.loads(table[0])


def visible_lines(body: str) -> int:
    shown, depth = 0, 0
    for line in body.splitlines():
        opens = line.count("<details")
        shown += depth == 0 and bool(line.strip()) and not opens
        depth += opens - line.count("</details>")
    return shown


@pytest.mark.parametrize("number", PLANTED)
def test_demo_reports_show_each_surviving_patch_once_within_budget_naming_no_probe(
    demo_runs, number: int
) -> None:
    home = demo_runs[0]
    body, table = stored(home / "probewatch.db", number)
    missed = CoverageTable.model_validate(table).problems
    distinct = {i for p in missed for i in p.survivors}
    entries = [line for line in body.splitlines() if line.startswith("#### ")]
    # One entry per patch, never per promise; past the budget the rest are counted.
    assert len(entries) == min(len(distinct), DEFAULT_MAX_ENTRIES)
    rest = len(distinct) - len(entries)
    assert not rest or f"…and {rest} more gap{'s' if rest != 1 else ''} on the [task page]" in body
    noun = "gap" if len(distinct) == 1 else "gaps"
    assert f"probewatch: {len(distinct)} {noun} in what #{number} promises" in body
    assert visible_lines(body) <= 60
    for probe in table["probes"]:
        assert probe["path"] not in body and probe["path"].rsplit("/", 1)[-1] not in body
    # The same verdict for a patch wherever it appears: show says an accepted probe rejects
    # each of these, so no entry may say that none does.
    caught = all(
        any(p["path"] in a["rejected_by"] and p["status"] == "accepted" for p in table["probes"])
        for a in table["adversarials"]
        if a["id"] in distinct
    )
    assert not caught or "no validated probe tests it yet" not in body

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fastapi.testclient import TestClient

from bot.context import AppContext
from bot.service.app import create_app
from bot.settings import Settings
from task_registry.db import head_revision, make_engine, upgrade

DATA = Path(__file__).parents[1] / "data"


def probewatch(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROBEWATCH_")}
    env.update(PROBEWATCH_HOME=str(home), COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "bot.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_help_lists_the_stage_commands_and_imports_nothing_heavy() -> None:
    code = (
        "import sys; from typer.testing import CliRunner; from bot.cli.main import app;"
        "r = CliRunner().invoke(app, ['--help']); print(r.output);"
        "heavy = [m for m in ('sqlalchemy', 'sqlmodel', 'fastapi', 'github', 'torch', 'alembic',"
        " 'matplotlib', 'docker')"
        " if m in sys.modules]; print('HEAVY', heavy)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "HEAVY []" in out
    for command in ("db", "config", "export", "import", "serve", "mine", "candidates", "eval"):
        assert f" {command} " in out
    for command in (
        "leaderboard",
        "agents",
        "build",
        "validate",
        "show",
        "envs",
        "runners",
        "demo",
    ):
        assert f" {command} " in out


def test_db_upgrade_creates_then_does_nothing(tmp_path: Path) -> None:
    first = probewatch(tmp_path, "db", "upgrade")
    second = probewatch(tmp_path, "db", "upgrade")
    assert first.returncode == 0, first.stderr
    assert f"upgraded empty database → {head_revision()}" in first.stdout
    assert f"already at {head_revision()}, nothing to do" in second.stdout
    assert (tmp_path / "probewatch.db").exists()


def test_commands_refuse_a_database_without_schema(tmp_path: Path) -> None:
    result = probewatch(tmp_path, "export", str(tmp_path / "out.jsonl"))
    assert result.returncode == 1
    assert "run `probewatch db upgrade`" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_import_then_export_round_trips_the_fixture(tmp_path: Path) -> None:
    probewatch(tmp_path, "db", "upgrade")
    imported = probewatch(tmp_path, "import", str(DATA / "tasks.swebench.jsonl"))
    assert "3 created, 0 replaced, 0 skipped" in imported.stdout, imported.stderr
    exported = probewatch(tmp_path, "export", "--include-hidden", str(tmp_path / "out.jsonl"))
    assert exported.returncode == 0, exported.stderr
    assert (tmp_path / "out.jsonl").read_bytes() == (DATA / "tasks.swebench.jsonl").read_bytes()


def test_import_of_a_bad_file_names_the_line(tmp_path: Path) -> None:
    probewatch(tmp_path, "db", "upgrade")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n", encoding="utf-8")
    result = probewatch(tmp_path, "import", str(bad))
    assert result.returncode == 1
    assert f"{bad}:1: field instance_id: missing" in result.stderr


def test_bad_flags_are_usage_errors(tmp_path: Path) -> None:
    probewatch(tmp_path, "db", "upgrade")
    result = probewatch(tmp_path, "export", "--format", "csv", str(tmp_path / "x"))
    assert result.returncode == 2
    assert "'csv' is not one of 'swebench'" in result.stderr
    both = probewatch(
        tmp_path, "import", "--skip-existing", "--replace", str(DATA / "tasks.swebench.jsonl")
    )
    assert both.returncode == 2


def test_config_check_reports_a_bad_watch_file(tmp_path: Path) -> None:
    watch = tmp_path / "watch.toml"
    watch.write_text('[[repo]]\nname = "a/b"\nsize_threshold = -1\n', encoding="utf-8")
    result = probewatch(tmp_path, "--watch-file", str(watch), "config", "check")
    assert result.returncode == 1
    assert 'repo[0] ("a/b").size_threshold' in result.stderr


def test_config_check_lists_the_example_as_json(tmp_path: Path) -> None:
    example = Path(__file__).parents[2] / "bot" / "watch.example.toml"
    result = probewatch(tmp_path, "--watch-file", str(example), "config", "check", "--json")
    assert result.returncode == 0, result.stderr
    assert '"name": "volcengine/verl"' in result.stdout


def test_healthz_answers_503_until_the_schema_is_current(tmp_path: Path) -> None:
    context = AppContext(Settings(home=tmp_path))
    client = TestClient(create_app(context))
    assert client.get("/healthz").status_code == 503
    upgrade(make_engine(context.settings.resolved_database_url))
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "schema": head_revision()}

"""``probewatch envs build|list|du|dedupe|gc`` end to end, as a person would type them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runners_env_support import REPO_ROOT, make_repo


def probewatch(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROBEWATCH_")}
    env.update(PROBEWATCH_HOME=str(home), COLUMNS="200", PYTHONPATH=str(REPO_ROOT))
    return subprocess.run(
        [sys.executable, "-m", "bot.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    home = tmp_path_factory.mktemp("clihome")
    repo, commit = make_repo(
        tmp_path_factory.mktemp("clirepo"),
        {
            "requirements.txt": "six\n",
            "tests/test_a.py": "import attr\n\ndef test_a():\n    pass\n",
        },
    )
    done = probewatch(
        home, "envs", "build", str(repo), commit, "--merge-time", "2023-06-01", "--test", "tests"
    )
    assert done.returncode == 0, done.stderr
    return home, done.stdout


def test_build_reports_the_environment_and_its_repairs(built: tuple[Path, str]) -> None:
    home, out = built
    assert out.startswith("built ")
    assert "repair round 1: attr -> attrs: added" in out
    lock_hash = out.split()[1]
    assert (home / "envs" / lock_hash / "bin" / "python").exists()


def test_list_shows_the_environment_with_its_era(built: tuple[Path, str]) -> None:
    home, out = built
    listed = json.loads(probewatch(home, "envs", "list", "--json").stdout)
    hashes = {row["lock_hash"] for row in listed}
    assert out.split()[1] in hashes
    assert {row["manifest"]["exclude_newer"] for row in listed} == {"2023-06-01T00:00:00Z"}
    table = probewatch(home, "envs", "list").stdout
    assert "2023-06-01" in table and "environment(s)" in table


def test_du_reports_apparent_actual_and_saving(built: tuple[Path, str]) -> None:
    home, _ = built
    report = json.loads(probewatch(home, "envs", "du", "--json").stdout)
    # Two environments (before and after the repair) share six, pytest and pip.
    assert 0 < report["actual_bytes"] < report["apparent_bytes"]
    assert report["saving"] == pytest.approx(
        1 - report["actual_bytes"] / report["apparent_bytes"], abs=1e-3
    )
    text = probewatch(home, "envs", "du").stdout
    assert "apparent" in text and "hard links counted once" in text and "saving" in text


def test_dedupe_after_builds_finds_nothing_left_and_says_so(built: tuple[Path, str]) -> None:
    home, _ = built
    report = json.loads(probewatch(home, "envs", "dedupe", "--json").stdout)
    # Every build already ran the pass for its own files.
    assert report["files_seen"] > 0 and report["paths_relinked"] == 0
    assert report["on_disk"] == report["on_disk_before"]
    text = probewatch(home, "envs", "dedupe").stdout
    assert "relinked" in text and "on disk" in text


def test_gc_keeps_recent_environments_and_refuses_a_negative_age(built: tuple[Path, str]) -> None:
    home, _ = built
    kept = probewatch(home, "envs", "gc", "--unused-days", "1", "--no-registry")
    assert kept.returncode == 0, kept.stderr
    assert "removed 0" in kept.stdout and "2 recent" in kept.stdout
    bad = probewatch(home, "envs", "gc", "--unused-days", "-1", "--no-registry")
    assert bad.returncode == 2


def test_build_of_a_bad_commit_is_one_line_and_exit_1(tmp_path: Path) -> None:
    repo, _ = make_repo(tmp_path / "r", {"requirements.txt": "six\n"})
    done = probewatch(tmp_path / "home", "envs", "build", str(repo), "0" * 40)
    assert done.returncode == 1
    assert done.stderr.startswith("error: git") and "Traceback" not in done.stderr


def test_gc_dry_run_then_real_run_removes_unused_environments(tmp_path: Path) -> None:
    repo, commit = make_repo(tmp_path / "r", {"requirements.txt": "six\n"})
    home = tmp_path / "home"
    assert (
        probewatch(
            home, "envs", "build", str(repo), commit, "--merge-time", "2023-06-01"
        ).returncode
        == 0
    )
    dry = probewatch(home, "envs", "gc", "--unused-days", "0", "--no-registry", "--dry-run")
    assert "would remove 1" in dry.stdout
    assert len([p for p in (home / "envs").iterdir() if not p.name.startswith(".")]) == 1
    real = probewatch(home, "envs", "gc", "--unused-days", "0", "--no-registry")
    assert "removed 1" in real.stdout
    assert [p for p in (home / "envs").iterdir() if not p.name.startswith(".")] == []


def test_gc_keeps_an_environment_a_registry_task_names(tmp_path: Path) -> None:
    repo, commit = make_repo(tmp_path / "r", {"requirements.txt": "six\n"})
    home = tmp_path / "home"
    out = probewatch(home, "envs", "build", str(repo), commit, "--merge-time", "2023-06-01")
    lock_hash = out.stdout.split()[1]
    row = json.loads(
        (REPO_ROOT / "tests" / "data" / "tasks.swebench.jsonl").read_text().splitlines()[0]
    )
    row["environment"] = json.dumps({"lock_hash": f"sha256:{lock_hash}", "gpus": 0})
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(row) + "\n")
    assert probewatch(home, "db", "upgrade").returncode == 0
    assert probewatch(home, "import", str(tasks)).returncode == 0
    kept = probewatch(home, "envs", "gc", "--unused-days", "0")
    assert "removed 0" in kept.stdout and "1 referenced" in kept.stdout, kept.stderr
    assert (home / "envs" / lock_hash).exists()

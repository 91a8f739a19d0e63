"""``probewatch mine`` and ``probewatch candidates`` end to end, as a curator runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli.main import app
from bot.cli.mine import parse_moment
from bot.repos import mining_config
from bot.watchfile import load_watch_file
from task_registry.db import make_engine, upgrade
from tests.github_emulator import GitHubEmulator, PullFile
from tests.miner_repos import SURVIVORS, Scenario, build_scenario


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    return build_scenario(tmp_path_factory.mktemp("scenario"))


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str


def probewatch(home: Path, *args: str, env: dict[str, str] | None = None) -> Outcome:
    """The CLI in this process (fast); ``probewatch_process`` runs the real console script."""
    env = {"COLUMNS": "200", "PROBEWATCH_GITHUB_TOKEN": "", **(env or {})}
    result = CliRunner().invoke(app, ["--home", str(home), *args], env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Outcome(result.exit_code, result.stdout, result.stderr)


def probewatch_process(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PROBEWATCH_")}
    clean.update(PROBEWATCH_HOME=str(home), COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "bot.cli.main", *args],
        capture_output=True,
        text=True,
        env=clean,
        timeout=120,
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    engine = make_engine(f"sqlite:///{tmp_path / 'probewatch.db'}")
    upgrade(engine)
    engine.dispose()
    return tmp_path


def window(s: Scenario) -> list[str]:
    return ["--since", s.since.date().isoformat(), "--until", s.until.date().isoformat()]


def test_mine_prints_the_funnel_and_a_second_run_stores_nothing(
    tmp_path: Path, scenario: Scenario
) -> None:
    assert probewatch_process(tmp_path, "db", "upgrade").returncode == 0
    args = [
        "mine",
        "--git",
        str(scenario.bare),
        "--repo",
        "acme/widgets",
        *window(scenario),
        "--funnel",
    ]
    first = probewatch_process(tmp_path, *args)
    second = probewatch(tmp_path, *args)

    assert first.returncode == 0, first.stderr
    assert "19 commits on main, 17 merged PRs, 5 survivors" in first.stdout
    for label, left in (
        ("merged PRs", 17),
        ("≥ 1,000 changed lines", 13),
        ("adds tests", 10),
        ("changes non-test code", 8),
        ("not reverted", 6),
        ("not docs/CI only", 5),
    ):
        assert f"{label}" in first.stdout and f" {left} " in first.stdout
    assert "stored: 17 new, 0 updated, 0 unchanged" in first.stdout
    assert "stored: 0 new, 0 updated, 17 unchanged" in second.stdout


def test_mine_json_lists_survivors_and_rejects_with_reasons(home: Path, scenario: Scenario) -> None:
    result = probewatch(
        home,
        "mine",
        "--git",
        str(scenario.path),
        "--repo",
        "acme/widgets",
        *window(scenario),
        "--json",
    )
    report = json.loads(result.stdout)

    assert {item["ref"] for item in report["survivors"]} == SURVIVORS
    rejects = {item["ref"]: (item["failed_filter"], item["reason"]) for item in report["rejects"]}
    assert rejects["#7"] == ("size", "50 changed lines < 1,000")
    assert rejects["#10"][0] == "not_reverted" and "Revert" in rejects["#10"][1]
    assert [step["count"] for step in report["funnel"]] == [19, 17, 13, 10, 8, 6, 5]


def test_the_watch_file_supplies_the_clone_and_the_filters(
    home: Path, scenario: Scenario, tmp_path: Path
) -> None:
    watch = tmp_path / "watch.toml"
    watch.write_text(
        f'[[repo]]\nname = "acme/widgets"\ngit = "{scenario.path}"\nsize_threshold = 1250\n'
        'core_paths = ["widgets/core/"]\n[repo.auto_accept]\nmin_core_share = 0.9\n',
        encoding="utf-8",
    )
    result = probewatch(
        home,
        "--watch-file",
        str(watch),
        "mine",
        "--repo",
        "acme/widgets",
        *window(scenario),
        "--json",
    )
    report = json.loads(result.stdout)

    assert {item["ref"] for item in report["survivors"]} == {"#12"}  # 1,400 lines; #1 has 1,200
    assert report["auto_accepted"] == ["#12"]


def test_candidates_are_listed_shown_and_decided(home: Path, scenario: Scenario) -> None:
    probewatch(
        home, "mine", "--git", str(scenario.path), "--repo", "acme/widgets", *window(scenario)
    )
    listed = json.loads(probewatch(home, "candidates", "list", "--json").stdout)
    shown = probewatch(home, "candidates", "show", "acme/widgets#1")
    accepted = probewatch(
        home, "candidates", "accept", "acme/widgets#1", "--reason", "core engine", "--by", "ada"
    )
    refused = probewatch(home, "candidates", "accept", "acme/widgets#7")
    rejected = probewatch(home, "candidates", "reject", "acme/widgets!2", "--reason", "vendored")
    decided = json.loads(
        probewatch(
            home, "candidates", "list", "--verdict", "all", "--decision", "accepted", "--json"
        ).stdout
    )

    assert {row["ref"] for row in listed} == {f"acme/widgets{ref}" for ref in SURVIVORS}
    assert listed[0]["rank_score"] >= listed[-1]["rank_score"]
    assert "[core] feat: fused engine" in shown.stdout and "follow-up (mention)" in shown.stdout
    assert (
        "tests/test_engine.py" in shown.stdout
        and "promise hints: resource.memory, state" in shown.stdout
    )
    assert accepted.returncode == 0 and "acme/widgets#1: accepted" in accepted.stdout
    assert refused.returncode == 1 and "rejected by the size filter" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert rejected.returncode == 0
    assert [(row["ref"], row["decision_reason"]) for row in decided] == [
        ("acme/widgets#1", "core engine")
    ]


def test_re_mining_after_a_decision_keeps_it(home: Path, scenario: Scenario) -> None:
    args = ["mine", "--git", str(scenario.path), "--repo", "acme/widgets", *window(scenario)]
    probewatch(home, *args)
    probewatch(home, "candidates", "reject", "acme/widgets#2", "--reason", "too broad")
    probewatch(home, *args, "--until", "2030-01-01")
    shown = probewatch(home, "candidates", "show", "acme/widgets#2")
    assert "decision: rejected by" in shown.stdout and "(too broad)" in shown.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--git", "{tmp}"], "is not a git repository"),
        (["--git", "{repo}", "--branch", "trunk"], "has no branch 'trunk'"),
        (
            ["--git", "{repo}", "--since", "2031-01-01"],
            "no commits on main between 2031-01-01 and now",
        ),
        (["--git", "{repo}"], "no --since and no cursor"),
        (["--github", "--since", "2025-01-01"], "no GitHub token: set PROBEWATCH_GITHUB_TOKEN"),
    ],
)
def test_bad_input_is_one_line_and_exit_one_with_nothing_stored(
    home: Path, scenario: Scenario, tmp_path: Path, args: list[str], message: str
) -> None:
    filled = [a.format(tmp=tmp_path / "empty", repo=scenario.path) for a in args]
    (tmp_path / "empty").mkdir()
    result = probewatch(home, "mine", "--repo", "acme/widgets", *filled)
    listed = probewatch(home, "candidates", "list", "--verdict", "all", "--json")

    assert result.returncode == 1, result.stdout
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert json.loads(listed.stdout) == []


def test_flag_mistakes_are_usage_errors(home: Path, scenario: Scenario) -> None:
    both = probewatch(home, "mine", "--repo", "a/b", "--git", str(scenario.path), "--github")
    backwards = probewatch(
        home,
        "mine",
        "--repo",
        "a/b",
        "--git",
        ".",
        "--since",
        "2025-02-01",
        "--until",
        "2025-01-01",
    )
    baddate = probewatch(home, "mine", "--repo", "a/b", "--git", ".", "--since", "yesterday")
    nowhere = probewatch(home, "mine", "--repo", "a/b", "--since", "2025-01-01")

    assert [r.returncode for r in (both, backwards, baddate, nowhere)] == [2, 2, 2, 2]
    assert "choose one of --git PATH and --github" in both.stderr
    assert "--since must be before --until" in backwards.stderr
    assert "is not a date" in baddate.stderr
    assert "--git PATH or --github" in nowhere.stderr


def test_an_unknown_candidate_is_named(home: Path) -> None:
    result = probewatch_process(home, "candidates", "show", "acme/widgets#99")
    assert result.returncode == 1 and "no repo acme/widgets" in result.stderr


def test_the_miner_settings_come_from_the_watch_file_or_the_defaults() -> None:
    watch = load_watch_file(Path(__file__).parents[2] / "bot" / "watch.example.toml")
    megatron = mining_config(watch.get("NVIDIA/Megatron-LM"))
    default = mining_config(None)

    assert megatron.core_paths == ("megatron/core/", "megatron/training/")
    assert "tests/functional_tests/**/golden_values*.json" in megatron.exclude_globs
    assert megatron.tests.matches("tests/unit_tests/test_a.py")
    assert (default.size_threshold, default.core_paths, default.auto_accept_min_core_share) == (
        1000,
        (),
        None,
    )


def test_dates_are_midnight_utc_and_times_keep_their_zone() -> None:
    assert parse_moment("2025-01-01", "--since").isoformat() == "2025-01-01T00:00:00+00:00"  # type: ignore[union-attr]
    assert (
        parse_moment("2025-01-01T08:00:00+08:00", "--since").isoformat()
        == "2025-01-01T08:00:00+08:00"
    )  # type: ignore[union-attr]
    assert parse_moment(None, "--since") is None


def test_github_mode_mines_through_the_api_and_names_its_failures(
    home: Path, github_emulator: GitHubEmulator
) -> None:
    github_emulator.state.add_repo("acme/widgets")
    at = datetime(2025, 6, 1, tzinfo=UTC)
    files = [PullFile("widgets/a.py", additions=1000), PullFile("tests/test_a.py", additions=50)]
    github_emulator.state.add_pull("acme/widgets", 1, merged=True, merged_at=at, files=files)
    env = {"PROBEWATCH_GITHUB_API_URL": github_emulator.base_url, "PROBEWATCH_GITHUB_TOKEN": "t"}
    args = ["mine", "--github", "--since", "2025-05-01"]

    mined = probewatch(home, *args, "--repo", "acme/widgets", env=env)
    unknown = probewatch(home, *args, "--repo", "acme/nothing", env=env)
    github_emulator.state.set_quota(remaining=0, reset_in_s=900)
    exhausted = probewatch(home, *args, "--repo", "acme/widgets", env=env)

    assert mined.returncode == 0, mined.stderr
    assert "1 closed PRs, 1 merged PRs, 1 survivors" in mined.stdout
    assert "GitHub quota left: 4,998 of 5,000" in mined.stdout
    assert (unknown.returncode, exhausted.returncode) == (1, 1)
    assert "GitHub has no repository acme/nothing" in unknown.stderr
    assert "GitHub quota exhausted (0 of 5000 requests left" in exhausted.stderr

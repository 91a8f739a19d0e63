"""``probewatch agents``, ``eval``, ``leaderboard`` and ``compare`` as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli.main import app
from task_registry.db import make_engine, upgrade
from tests.harness_support import ADVERSARIAL_MEMO, MemoRepo, make_memo_repo, seed

INSTANCE = "acme__memo-7"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("home")
    memo: MemoRepo = make_memo_repo(root / "upstream")
    engine = make_engine(f"sqlite:///{root / 'probewatch.db'}")
    upgrade(engine)
    seed(engine, memo)
    engine.dispose()
    (root / "watch.toml").write_text(f'[[repo]]\nname = "acme/memo"\ngit = "{memo.mirror}"\n')
    adversary = root / "adversary.py"
    adversary.write_text(
        f"import pathlib, sys\npathlib.Path(sys.argv[1], 'cachelib', 'memo.py').write_text({ADVERSARIAL_MEMO!r})\n"
    )
    return root


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def flat(text: str) -> str:
    """Output with rich's line wrapping undone."""
    return " ".join(text.split())


def environment(home: Path) -> dict[str, str]:
    return {"PROBEWATCH_HOME": str(home), "PROBEWATCH_WATCH_FILE": str(home / "watch.toml")}


def probewatch(home: Path, *args: str) -> Ran:
    """The command in this process (typer's runner): fast, and the same code paths."""
    result = CliRunner().invoke(app, list(args), env=environment(home))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Ran(result.exit_code, result.stdout, result.stderr)


def probewatch_process(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The console script's entry point, where domain errors become one line and status 1."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROBEWATCH_")}
    return subprocess.run(
        [sys.executable, "-c", "from bot.cli.main import main; main()", *args],
        capture_output=True,
        text=True,
        env=env | environment(home),
        timeout=300,
    )


def test_agents_add_checks_the_template_and_refuses_reference_names(home: Path) -> None:
    bad = probewatch(
        home,
        "agents",
        "add",
        "x",
        "--command",
        "run {repo}",
        "--model",
        "m",
        "--cutoff",
        "2026-01-01",
    )
    assert bad.returncode == 2 and "unknown placeholder" in bad.stderr
    reserved = probewatch(
        home, "agents", "add", "oracle", "--command", "a", "--model", "m", "--cutoff", "2026-01-01"
    )
    assert reserved.returncode == 2 and "built-in reference agent" in reserved.stderr
    date = probewatch(
        home, "agents", "add", "x", "--command", "a {statement_file}", "--model", "m",
        "--cutoff", "Jan 2026",
    )  # fmt: skip
    assert date.returncode == 2 and "not a date" in date.stderr


def test_eval_leaderboard_and_compare_end_to_end(home: Path) -> None:
    command = f"{sys.executable} {home / 'adversary.py'} {{workdir}} {{statement_file}}"
    added = probewatch(
        home, "agents", "add", "adversary", "--command", command, "--model", "model-x",
        "--cutoff", "2026-01-31",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    listed = json.loads(probewatch(home, "agents", "list", "--json").stdout)
    assert {a["name"]: (a["builtin"], a["knowledge_cutoff"]) for a in listed} == {
        "adversary": (False, "2026-01-31"),
        "empty": (True, None),
        "hollow": (True, None),
        "oracle": (True, None),
    }
    both = probewatch(
        home, "eval", "--agent", "oracle", "--tasks", INSTANCE, "--since", "2026-01-01"
    )
    assert both.returncode == 2 and "choose one of --tasks and --since" in both.stderr

    for agent in ("oracle", "empty", "adversary"):
        run = probewatch(home, "eval", "--agent", agent)
        assert run.returncode == 0, run.stderr
        assert f"graded {INSTANCE}" in run.stdout
    assert "overturned by probes" in flat(run.stdout)
    assert "1/1 on the original tests, 0/1 with probes (1 overturned)" in flat(run.stdout)
    again = probewatch(home, "eval", "--agent", "oracle", "--json")
    assert json.loads(again.stdout)["results"][0]["skipped"] is True

    board = probewatch(home, "leaderboard")
    assert board.returncode == 0, board.stderr
    assert "overturned by probes: acme__memo-7" in flat(board.stdout)
    runs = {
        r["run"]: r for r in json.loads(probewatch(home, "leaderboard", "--json").stdout)["runs"]
    }
    assert len(runs["adversary"]["overturned"]) == 1
    assert runs["oracle"]["with_probes"]["resolved_set_n"] == 1
    svg = home / "plot.svg"
    assert probewatch(home, "leaderboard", "--svg", str(svg)).returncode == 0
    assert svg.read_text().lstrip().startswith("<?xml")

    compared = probewatch(home, "compare", "empty", "oracle")
    assert compared.returncode == 0, compared.stderr
    assert "fixed: 1" in compared.stdout and "p = 1" in compared.stdout
    unknown = probewatch(home, "compare", "oracle", "ghost")
    assert unknown.returncode == 1 and "no scored run named 'ghost'" in unknown.stderr
    nobody = probewatch_process(home, "eval", "--agent", "nobody")
    assert nobody.returncode == 1 and "no agent nobody" in nobody.stderr

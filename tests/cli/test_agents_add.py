"""``agents add`` overwrites a registered agent only with ``--replace`` (it used to overwrite
silently), and refuses a command that never passes the agent its statement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.cli_support import migrated_home, probewatch

FIRST = "my-agent --repo {workdir} --task-file {statement_file}"
SECOND = "my-agent --repo {workdir} --prompt {statement}"


def add(home: Path, name: str, command: str, *more: str) -> tuple[int, str]:
    ran = probewatch(
        home, "agents", "add", name, "--command", command, "--model", "m", "--cutoff",
        "2026-01-31", *more,
    )  # fmt: skip
    return ran.exit_code, ran.stderr


def commands(home: Path) -> dict[str, str]:
    listed = json.loads(probewatch(home, "agents", "list", "--json").stdout)
    return {row["name"]: row["command"] for row in listed if not row["builtin"]}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    migrated_home(tmp_path).dispose()
    return tmp_path


def test_a_registered_agent_is_overwritten_only_with_replace(home: Path) -> None:
    assert add(home, "mine", FIRST) == (0, "")

    code, stderr = add(home, "mine", SECOND)

    assert code == 1
    assert stderr.strip().splitlines() == [
        f"error: agent mine is already registered (command {FIRST!r}): "
        "pass --replace to overwrite it"
    ]
    assert commands(home) == {"mine": FIRST}
    assert add(home, "mine", SECOND, "--replace") == (0, "")
    assert commands(home) == {"mine": SECOND}


@pytest.mark.parametrize("command", ["my-agent --repo {workdir}", "true"])
def test_a_command_without_the_statement_is_refused_with_the_fix(home: Path, command: str) -> None:
    code, stderr = add(home, "blind", command)

    assert code == 2
    (line,) = stderr.strip().splitlines()
    assert "never gives the agent the task" in line
    assert "add {statement} (the text) or {statement_file} (its path)" in line
    assert commands(home) == {}

"""Help shows what a user types: ``TASK``, ``--since YYYY-MM-DD``, ``--window [month|quarter]``;
never a Python type (``<bool>``, ``<str>``, ``<int range>``) or a braced argument
(``{instance}``), as Typer printed for every command."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import typer
from typer.testing import CliRunner

from bot.cli import choices
from bot.cli.main import app
from task_registry.scoring import Window
from task_registry.types import Decision, FilterVerdict, ScoreSuite, TaskStatus

TYPE_LABEL = re.compile(r"<[^<>\s][^<>]*>")


def command_paths(command: object, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from command_paths(sub, (*path, name))


ALL_COMMANDS = list(command_paths(typer.main.get_command(app)))


def help_of(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.stdout


def test_every_command_is_walked() -> None:
    assert len(ALL_COMMANDS) > 25
    assert {("show",), ("candidates", "accept"), ("agents", "add"), ("db", "current")} <= set(
        ALL_COMMANDS
    )


@pytest.mark.parametrize("path", ALL_COMMANDS, ids=lambda p: " ".join(p) or "probewatch")
def test_help_names_parameters_as_they_are_typed(path: tuple[str, ...]) -> None:
    text = help_of(path)

    assert TYPE_LABEL.findall(text) == []
    (usage,) = [line for line in text.splitlines() if "Usage:" in line]
    assert "{" not in usage and "}" not in usage


def test_arguments_and_choices_read_as_typed() -> None:
    assert "Usage: probewatch show [OPTIONS] TASK" in help_of(("show",))
    assert "Usage: probewatch report [OPTIONS] PR" in help_of(("report",))
    listed = help_of(("candidates", "list"))
    assert "[passed|rejected|all]" in listed and "[pending|accepted|rejected]" in listed
    assert "[month|quarter]" in help_of(("leaderboard",))
    compare = help_of(("compare",))
    assert "[with_probes|original]" in compare and "[set|count]" in compare
    assert "YYYY-MM-DD" in help_of(("mine",))


def test_a_choice_outside_the_list_is_one_line_naming_the_choices() -> None:
    result = CliRunner().invoke(app, ["leaderboard", "--window", "week"])

    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "error: Invalid value for '--window': 'week' is not one of 'month', 'quarter'."
    ]


def test_the_choices_are_the_registry_vocabularies() -> None:
    assert (*FilterVerdict, "all") == choices.VERDICTS
    assert tuple(Decision) == choices.DECISIONS
    assert tuple(Window) == choices.WINDOWS
    assert set(choices.SUITES) == set(ScoreSuite)
    assert tuple(TaskStatus) == choices.STATUSES


def test_export_shows_its_formats_and_statuses() -> None:
    shown = help_of(("export",))
    assert "[swebench]" in shown and "[candidate|built|validated|published|retired]" in shown

"""Every command that takes a task or a PR takes ``OWNER__NAME-N`` and ``OWNER/NAME#N``; any
other value is one line naming it and both forms (``show`` said "not found", ``report`` and
``candidates`` knew one form each)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli.refs import PullRef, parse_pull_ref
from task_registry.db import session_scope
from task_registry.types import TaskStatus
from tests.cli.cli_support import add_candidate, migrated_home, probewatch
from tests.factories import make_task

FORMS = "OWNER__NAME-N (the instance id) or OWNER/NAME#N"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    engine = migrated_home(tmp_path)
    with session_scope(engine) as session:
        make_task(session, 7, status=TaskStatus.validated)  # a report stands on it
    add_candidate(engine, 7)
    add_candidate(engine, 8)
    engine.dispose()
    return tmp_path


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("acme__infra-lib-7", PullRef("acme/infra-lib", 7)),
        ("acme/infra-lib#7", PullRef("acme/infra-lib", 7)),
        ("volcengine__verl-5031", PullRef("volcengine/verl", 5031)),
        ("my_group__flash-attention-2-12", PullRef("my_group/flash-attention-2", 12)),
        ("acme/infra-lib-7", None),
        ("acme__infra-lib", None),
        ("acme/infra-lib#x", None),
        ("7", None),
    ],
)
def test_both_forms_name_the_same_pull_request(value: str, expected: PullRef | None) -> None:
    assert parse_pull_ref(value) == expected


def test_show_and_report_take_either_form(home: Path) -> None:
    for command in (["show", "--json"], ["report", "--json"]):
        by_id = probewatch(home, *command, "acme__infra-lib-7")
        by_pr = probewatch(home, *command, "acme/infra-lib#7")
        assert (by_id.exit_code, by_pr.exit_code) == (0, 0), by_id.stderr + by_pr.stderr
        assert json.loads(by_id.stdout) == json.loads(by_pr.stdout)


def test_candidates_take_either_form(home: Path) -> None:
    by_id = probewatch(home, "candidates", "show", "--json", "acme__infra-lib-7")
    by_pr = probewatch(home, "candidates", "show", "--json", "acme/infra-lib#7")
    assert json.loads(by_id.stdout)["ref"] == json.loads(by_pr.stdout)["ref"] == "acme/infra-lib#7"

    accepted = probewatch(home, "candidates", "accept", "acme__infra-lib-8")
    rejected = probewatch(home, "candidates", "reject", "acme/infra-lib#7")

    assert (accepted.exit_code, rejected.exit_code) == (0, 0), accepted.stderr + rejected.stderr
    listed = json.loads(probewatch(home, "candidates", "list", "--json").stdout)
    assert {row["number"]: row["decision"] for row in listed} == {7: "rejected", 8: "accepted"}


@pytest.mark.parametrize(
    "command",
    [
        ["show"],
        ["report"],
        ["build"],
        ["validate"],
        ["candidates", "show"],
        ["candidates", "accept"],
        ["eval", "--agent", "oracle", "--tasks"],
    ],
)
def test_anything_else_is_one_line_naming_the_value_and_both_forms(
    home: Path, command: list[str]
) -> None:
    refused = probewatch(home, *command, "acme/infra-lib-7")

    assert refused.exit_code == 2
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith("error: ")
    assert "'acme/infra-lib-7'" in line and FORMS in line

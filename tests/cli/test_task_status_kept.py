"""A validated task's status is never lowered silently: an unchanged rebuild keeps it
validated, a changed one says it is back to built and must be validated again (it used to
print only "status built"), and an import keeps the status the file gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from task_registry.db import session_scope
from task_registry.tasks import get_task, set_task_status
from task_registry.types import TaskStatus
from tests.build_fixtures import MEMO_BODY, MEMO_TITLE, memo_pr
from tests.cli.cli_support import add_candidate, migrated_home, probewatch
from tests.factories import make_task
from tests.probe_builder_support import FixturePR

INSTANCE = "acme__memo-7"
CHANGED_BODY = MEMO_BODY.replace(
    "### Checklist", "The hit counter goes back to zero on reset.\n\n### Checklist"
)


@pytest.fixture(scope="module")
def memo(tmp_path_factory: pytest.TempPathFactory) -> FixturePR:
    return memo_pr(tmp_path_factory.mktemp("memo"))


def validated_task(home: Path, memo: FixturePR) -> None:
    """The memo PR built from the command line, then marked validated as ``validate`` does."""
    engine = migrated_home(home)
    add_candidate(
        engine, 7, repo="acme/memo", title=MEMO_TITLE, body=MEMO_BODY, merge_sha=memo.head
    )
    assert probewatch(home, "candidates", "accept", "acme/memo#7").exit_code == 0
    built = probewatch(home, "build", INSTANCE, "--git", str(memo.repo))
    assert built.exit_code == 0, built.stderr
    with session_scope(engine) as session:
        task = get_task(session=session, instance_id=INSTANCE)
        set_task_status(session=session, task=task, status=TaskStatus.validated)
    engine.dispose()


def test_an_unchanged_rebuild_keeps_the_task_validated(tmp_path: Path, memo: FixturePR) -> None:
    validated_task(tmp_path, memo)

    again = probewatch(tmp_path, "build", "acme/memo#7", "--git", str(memo.repo), "--json")

    summary = json.loads(again.stdout)
    assert (summary["action"], summary["status"]) == ("unchanged", "validated")
    assert summary["previous_status"] == "validated" and summary["status_change"] is None


def test_a_changed_rebuild_says_the_task_must_be_validated_again(
    tmp_path: Path, memo: FixturePR
) -> None:
    validated_task(tmp_path, memo)
    engine = migrated_home(tmp_path)
    add_candidate(
        engine, 7, repo="acme/memo", title=MEMO_TITLE, body=CHANGED_BODY, merge_sha=memo.head
    )
    engine.dispose()

    rebuilt = probewatch(tmp_path, "build", INSTANCE, "--git", str(memo.repo))

    assert rebuilt.exit_code == 0, rebuilt.stderr
    assert f"{INSTANCE}: replaced, status built" in rebuilt.stdout
    assert (
        f"{INSTANCE} was validated; its material changed, so it is built again: "
        f"run `probewatch validate {INSTANCE}` to validate it again"
    ) in rebuilt.stdout


@pytest.mark.parametrize("hidden", [["--include-hidden"], []])
def test_an_import_keeps_a_validated_task_validated(tmp_path: Path, hidden: list[str]) -> None:
    source, target = tmp_path / "a", tmp_path / "b"
    engine = migrated_home(source)
    with session_scope(engine) as session:
        make_task(session, 7, status=TaskStatus.validated)
    engine.dispose()
    migrated_home(target).dispose()
    rows = tmp_path / "tasks.jsonl"
    assert probewatch(source, "export", str(rows), *hidden).exit_code == 0

    imported = probewatch(target, "import", str(rows))

    assert imported.exit_code == 0, imported.stderr
    shown = json.loads(probewatch(target, "show", "--json", "acme/infra-lib#7").stdout)
    assert shown["status"] == "validated"

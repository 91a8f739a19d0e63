"""A validated task with an empty FAIL_TO_PASS lends its accepted probes to a hidden export.

Without ``include_hidden`` the row keeps its empty FAIL_TO_PASS and the export
warns; with it, the accepted probes' files join the test patch and the tests
the golden run passed join FAIL_TO_PASS, marked in ``probes_as_tests`` so an
import restores the task's own lists and test patch and keeps the probes hidden.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from task_registry.db import session_scope
from task_registry.models import ProbeCreate, TestResultBase, ValidationRunCreate
from task_registry.swebench import (
    PROBES_AS_TESTS,
    ImportError_,
    ProbeGap,
    export_gaps,
    export_rows,
    export_warnings,
    import_jsonl,
    new_file_diff,
    write_jsonl,
)
from task_registry.tasks import add_probe, get_task, list_probes, record_validation_run
from task_registry.types import Control, ProbeStatus, RunOutcome, TaskStatus
from task_registry.types import TestOutcome as Outcome  # a Test* name pytest would collect
from tests.factories import TEST_PATCH, make_task

PROBE = "probes/test_probe_sync_traffic.py"
PROBE_TEST = f"{PROBE}::test_sends_only_changed"
REJECTED = "probes/test_probe_rejected.py"
INSTANCE = "acme__infra-lib-42"


def seed(
    engine: Engine,
    *,
    status: TaskStatus = TaskStatus.validated,
    own_tests: bool = False,
    golden: RunOutcome | None = RunOutcome.completed,
) -> None:
    """Task 42 with one accepted and one rejected probe, and a golden run that passed both."""
    with session_scope(engine) as session:
        task = make_task(session, 42, status=status)
        assert task.id is not None
        if not own_tests:
            task.fail_to_pass = []
        session.add(task)
        rejected = add_probe(
            session=session,
            probe_in=ProbeCreate(task_id=task.id, path=REJECTED, content="def test_x(): pass\n"),
        )
        rejected.status = ProbeStatus.rejected
        session.add(rejected)
        if golden is None:
            return
        results = [
            TestResultBase(
                test_id="tests/test_sync.py::test_sync_final_weights", outcome=Outcome.passed
            ),
            TestResultBase(test_id=PROBE_TEST, outcome=Outcome.passed, is_probe=True),
            TestResultBase(test_id=f"{REJECTED}::test_x", outcome=Outcome.passed, is_probe=True),
        ]
        run_in = ValidationRunCreate(task_id=task.id, control=Control.golden, outcome=golden)
        record_validation_run(session=session, run_in=run_in, results=results)


def export(engine: Engine, path: Path, *, include_hidden: bool) -> dict[str, object]:
    with session_scope(engine) as session:
        write_jsonl(export_rows(session=session, include_hidden=include_hidden), path)
    row: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return row


def warnings(engine: Engine, *, include_hidden: bool) -> list[str]:
    with session_scope(engine) as session:
        return export_warnings(session=session, statuses=None, include_hidden=include_hidden)


def test_a_hidden_export_lends_the_accepted_probes_as_fail_to_pass(
    engine: Engine, tmp_path: Path
) -> None:
    seed(engine)
    row = export(engine, tmp_path / "hidden.jsonl", include_hidden=True)
    assert json.loads(str(row["FAIL_TO_PASS"])) == [PROBE_TEST]
    assert json.loads(str(row[PROBES_AS_TESTS])) == {"files": [PROBE], "tests": [PROBE_TEST]}
    probe_code = (
        "def test_sends_only_changed(comm_ledger):\n    assert comm_ledger.count('send') == 1\n"
    )
    assert row["test_patch"] == TEST_PATCH + new_file_diff(PROBE, probe_code)
    assert REJECTED not in str(row["test_patch"])
    assert warnings(engine, include_hidden=True) == []


def test_the_lent_test_patch_applies_as_a_harness_applies_it(
    engine: Engine, tmp_path: Path
) -> None:
    seed(engine)
    row = export(engine, tmp_path / "hidden.jsonl", include_hidden=True)
    tree = tmp_path / "tree"
    subprocess.run(["git", "init", "--quiet", str(tree)], check=True)
    subprocess.run(
        ["git", "apply", "-"], cwd=tree, input=str(row["test_patch"]), text=True, check=True
    )
    assert (tree / PROBE).read_text().startswith("def test_sends_only_changed(comm_ledger):")
    assert (tree / "tests" / "test_sync.py").exists()


def test_a_public_export_keeps_fail_to_pass_empty_and_warns_with_the_fix(
    engine: Engine, tmp_path: Path
) -> None:
    seed(engine)
    row = export(engine, tmp_path / "public.jsonl", include_hidden=False)
    assert row["FAIL_TO_PASS"] == "[]"
    assert row["test_patch"] == TEST_PATCH
    assert PROBES_AS_TESTS not in row
    (line,) = warnings(engine, include_hidden=False)
    assert line.startswith(f"{INSTANCE}: empty FAIL_TO_PASS")
    assert "--include-hidden" in line


@pytest.mark.parametrize(
    ("options", "gap"),
    [
        ({"status": TaskStatus.built}, None),  # probes not accepted by a validation
        ({"own_tests": True}, None),  # its own FAIL_TO_PASS: nothing to lend
        ({"golden": None}, ProbeGap.no_golden_run),
        ({"golden": RunOutcome.fault}, ProbeGap.no_golden_run),
    ],
    ids=["built", "own-tests", "no-golden-run", "golden-run-fault"],
)
def test_only_a_validated_task_without_its_own_tests_and_with_a_golden_run_lends(
    engine: Engine, tmp_path: Path, options: dict[str, object], gap: ProbeGap | None
) -> None:
    seed(engine, **options)  # type: ignore[arg-type]
    row = export(engine, tmp_path / "hidden.jsonl", include_hidden=True)
    assert PROBES_AS_TESTS not in row
    assert row["test_patch"] == TEST_PATCH
    with session_scope(engine) as session:
        gaps = export_gaps(session=session, statuses=None, include_hidden=True)
    assert gaps == ({gap: [INSTANCE]} if gap else {})


def test_a_reimport_restores_the_probes_as_hidden_probes(
    engine: Engine, sqlite_engine: Engine, tmp_path: Path
) -> None:
    seed(engine)
    export(engine, tmp_path / "hidden.jsonl", include_hidden=True)
    with session_scope(sqlite_engine) as session:
        import_jsonl(session=session, path=tmp_path / "hidden.jsonl")
    with session_scope(sqlite_engine) as session:
        task = get_task(session=session, instance_id=INSTANCE)
        assert (task.fail_to_pass, task.test_patch) == ([], TEST_PATCH)
        probes = {p.path: p for p in list_probes(session=session, task_id=task.id or 0)}
        assert probes[PROBE].status == ProbeStatus.accepted
        assert "comm_ledger" in probes[PROBE].content
    public = [
        export(e, tmp_path / f"public-{i}.jsonl", include_hidden=False)
        for i, e in enumerate((engine, sqlite_engine))
    ]
    assert public[0] == public[1]
    # The new registry has no golden run to name the probes' tests: it says so, lends nothing.
    again = export(sqlite_engine, tmp_path / "again.jsonl", include_hidden=True)
    assert PROBES_AS_TESTS not in again
    (line,) = warnings(sqlite_engine, include_hidden=True)
    assert line.startswith(f"{INSTANCE}: empty FAIL_TO_PASS, and no completed golden run")


@pytest.mark.parametrize(
    ("marks", "reason"),
    [
        ({"files": [PROBE], "tests": ["probes/x.py::test_y"]}, "is not in FAIL_TO_PASS"),
        ({"files": [REJECTED], "tests": [PROBE_TEST]}, "test_patch writes no file"),
        ({"files": ["tests/test_sync.py"], "tests": []}, "is not one of the row's probes"),
        ({"files": PROBE, "tests": []}, 'expected {"files": [...], "tests": [...]}'),
    ],
)
def test_an_import_refuses_marks_that_do_not_match_the_row(
    engine: Engine, sqlite_engine: Engine, tmp_path: Path, marks: object, reason: str
) -> None:
    seed(engine)
    row = export(engine, tmp_path / "hidden.jsonl", include_hidden=True)
    row[PROBES_AS_TESTS] = json.dumps(marks)
    path = tmp_path / "edited.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    expected = f":1: field {PROBES_AS_TESTS}: .*{re.escape(reason)}"
    with pytest.raises(ImportError_, match=expected), session_scope(sqlite_engine) as session:
        import_jsonl(session=session, path=path)

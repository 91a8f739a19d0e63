from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from task_registry.db import session_scope
from task_registry.swebench import (
    SWEBENCH_FIELDS,
    ImportError_,
    OnConflict,
    export_rows,
    import_jsonl,
    write_jsonl,
)
from task_registry.tasks import get_task, list_probes, list_tasks
from tests.factories import make_task

DATA = Path(__file__).parents[1] / "data"


def export(engine: Engine, path: Path, *, include_hidden: bool) -> bytes:
    with session_scope(engine) as session:
        write_jsonl(export_rows(session=session, include_hidden=include_hidden), path)
    return path.read_bytes()


def seed(engine: Engine, numbers: tuple[int, ...] = (101, 7, 42)) -> None:
    with session_scope(engine) as session:
        for number in numbers:
            make_task(session, number)


@pytest.mark.parametrize("include_hidden", [False, True])
def test_export_import_export_is_byte_identical(
    engine: Engine, sqlite_engine: Engine, tmp_path: Path, include_hidden: bool
) -> None:
    seed(engine)
    first = export(engine, tmp_path / "a.jsonl", include_hidden=include_hidden)
    with session_scope(sqlite_engine) as session:
        import_jsonl(session=session, path=tmp_path / "a.jsonl")
    second = export(sqlite_engine, tmp_path / "b.jsonl", include_hidden=include_hidden)
    assert first == second
    assert len(first.splitlines()) == 3


def test_rows_use_swebench_names_and_encodings_first(engine: Engine, tmp_path: Path) -> None:
    seed(engine, (42,))
    export(engine, tmp_path / "out.jsonl", include_hidden=False)
    row = json.loads((tmp_path / "out.jsonl").read_text(encoding="utf-8"))
    assert tuple(row)[: len(SWEBENCH_FIELDS)] == SWEBENCH_FIELDS
    assert row["instance_id"] == "acme__infra-lib-42"
    assert row["created_at"] == "2026-03-15T12:30:05Z"
    assert json.loads(row["FAIL_TO_PASS"]) == ["tests/test_sync.py::test_sync_final_weights"]
    assert isinstance(row["PASS_TO_PASS"], str)
    assert json.loads(row["PASS_TO_PASS"])[1] == "tests/test_core.py::test_ünïcode[α]"
    assert row["environment_setup_commit"] == row["base_commit"]
    assert json.loads(row["environment"]) == {
        "gpu_type": None,
        "gpus": 0,
        "lock_hash": f"sha256:{42:064x}",
    }


def test_probe_code_leaves_only_with_include_hidden(engine: Engine, tmp_path: Path) -> None:
    seed(engine, (42,))
    public = export(engine, tmp_path / "public.jsonl", include_hidden=False).decode()
    hidden = export(engine, tmp_path / "hidden.jsonl", include_hidden=True).decode()
    assert "comm_ledger" not in public
    assert "adversarial_patches" not in public
    assert "hollow_patch" not in public
    assert "probes/test_probe_sync_traffic.py" in public  # the probe's name is not secret
    assert "comm_ledger" in hidden
    probes = json.loads(json.loads(hidden)["probes"])
    assert probes[0]["promise_index"] == 0


def test_export_loads_as_a_dataset(engine: Engine, tmp_path: Path) -> None:
    seed(engine)
    path = tmp_path / "tasks.jsonl"
    export(engine, path, include_hidden=True)
    try:
        import datasets
    except ImportError:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    else:
        rows = list(datasets.load_dataset("json", data_files=str(path), split="train"))
    assert sorted(r["instance_id"] for r in rows) == [
        "acme__infra-lib-101",
        "acme__infra-lib-42",
        "acme__infra-lib-7",
    ]
    assert all(isinstance(r["FAIL_TO_PASS"], str) for r in rows)


def test_shipped_fixture_imports_and_reexports_unchanged(
    sqlite_engine: Engine, tmp_path: Path
) -> None:
    source = DATA / "tasks.swebench.jsonl"
    with session_scope(sqlite_engine) as session:
        report = import_jsonl(session=session, path=source)
    assert len(report.created) == 3
    assert (
        export(sqlite_engine, tmp_path / "again.jsonl", include_hidden=True) == source.read_bytes()
    )


def test_a_real_swebench_row_imports(sqlite_engine: Engine, tmp_path: Path) -> None:
    """Rows from SWE-bench itself: no probewatch fields, numeric-looking version."""
    row = {
        "repo": "astropy/astropy",
        "instance_id": "astropy__astropy-12907",
        "base_commit": "d16bfe05a744909de4b27f5875fe0d4ed41ce607",
        "patch": "diff --git a/x b/x\n",
        "test_patch": "diff --git a/t b/t\n",
        "problem_statement": "Modeling's separability_matrix ...",
        "hints_text": "",
        "created_at": "2022-03-03T15:14:54Z",
        "version": "4.3",
        "FAIL_TO_PASS": '["astropy/modeling/tests/test_separable.py::test_separable[compound_model6]"]',
        "PASS_TO_PASS": "[]",
        "environment_setup_commit": "298ccb478e6bf092953bca67a3d29dc6c35f6752",
    }
    path = tmp_path / "swe.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with session_scope(sqlite_engine) as session:
        import_jsonl(session=session, path=path)
    with session_scope(sqlite_engine) as session:
        task = get_task(session=session, instance_id="astropy__astropy-12907")
        assert (task.pull_number, task.status, task.version) == (12907, "candidate", "4.3")
        assert task.environment_setup_commit == "298ccb478e6bf092953bca67a3d29dc6c35f6752"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("not json", ":2: not JSON"),
        ('{"repo": "a/b", "instance_id": "a__b-1"}', ":2: field base_commit: missing"),
        (
            '{"repo": "a/b", "instance_id": "ab1", "base_commit": "c"}',
            ":2: field instance_id: 'ab1'",
        ),
        (
            '{"repo": "a/b", "instance_id": "a__b-1", "base_commit": "c"}',
            ":2: field created_at: missing",
        ),
        (
            '{"repo": "a/b", "instance_id": "a__b-2", "base_commit": "c", "created_at": "2026-01-01",'
            ' "FAIL_TO_PASS": "[1]"}',
            ":2: field FAIL_TO_PASS: expected a list of test ids",
        ),
    ],
)
def test_a_bad_line_stores_nothing_and_names_the_line(
    sqlite_engine: Engine, tmp_path: Path, line: str, reason: str
) -> None:
    good = (DATA / "tasks.swebench.jsonl").read_text(encoding="utf-8").splitlines()[0]
    path = tmp_path / "bad.jsonl"
    path.write_text(f"{good}\n{line}\n", encoding="utf-8")
    with pytest.raises(ImportError_, match=reason), session_scope(sqlite_engine) as session:
        import_jsonl(session=session, path=path)
    with session_scope(sqlite_engine) as session:
        assert list_tasks(session=session) == []


def test_existing_tasks_fail_skip_or_replace(sqlite_engine: Engine) -> None:
    source = DATA / "tasks.swebench.jsonl"
    with session_scope(sqlite_engine) as session:
        import_jsonl(session=session, path=source)
    with (
        pytest.raises(ImportError_, match="already exists"),
        session_scope(sqlite_engine) as session,
    ):
        import_jsonl(session=session, path=source)
    with session_scope(sqlite_engine) as session:
        assert (
            len(import_jsonl(session=session, path=source, on_conflict=OnConflict.skip).skipped)
            == 3
        )
    with session_scope(sqlite_engine) as session:
        assert (
            len(
                import_jsonl(
                    session=session, path=source, on_conflict=OnConflict.replace_existing
                ).replaced
            )
            == 3
        )
    with session_scope(sqlite_engine) as session:
        tasks = list_tasks(session=session)
        assert len(tasks) == 3
        assert all(len(list_probes(session=session, task_id=t.id or 0)) == 1 for t in tasks)

"""``--json`` on the status commands that lacked it: stdout is one JSON document and nothing
else, for scripts."""

from __future__ import annotations

import json
from pathlib import Path

from task_registry.db import head_revision
from tests.cli.cli_support import add_candidate, migrated_home, probewatch


def test_db_current(tmp_path: Path) -> None:
    empty = probewatch(tmp_path, "db", "current", "--json")
    migrated_home(tmp_path).dispose()
    current = probewatch(tmp_path, "db", "current", "--json")

    assert json.loads(empty.stdout) == {"database": None, "code": head_revision(), "current": False}
    assert json.loads(current.stdout) == {
        "database": head_revision(),
        "code": head_revision(),
        "current": True,
    }


def test_candidates_show(tmp_path: Path) -> None:
    engine = migrated_home(tmp_path)
    files = [{"path": "pkg/a.py", "additions": 900, "deletions": 3}]
    add_candidate(
        engine, 7, title="Sync weights incrementally", body="Only changed ones.", files=files
    )
    engine.dispose()

    shown = probewatch(tmp_path, "candidates", "show", "acme/infra-lib#7", "--json")

    document = json.loads(shown.stdout)
    assert (document["ref"], document["title"], document["decision"]) == (
        "acme/infra-lib#7",
        "Sync weights incrementally",
        "pending",
    )
    assert (document["body"], document["files"]) == ("Only changed ones.", files)


def test_envs_gc(tmp_path: Path) -> None:
    migrated_home(tmp_path).dispose()

    collected = probewatch(tmp_path, "envs", "gc", "--dry-run", "--json")

    assert collected.exit_code == 0, collected.stderr
    assert json.loads(collected.stdout) == {
        "dry_run": True,
        "removed": [],
        "kept_in_use": [],
        "kept_referenced": [],
        "kept_recent": [],
        "removed_partial": [],
    }

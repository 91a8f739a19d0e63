"""The command line in this process, on a home folder with a migrated registry and candidates."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from bot.cli.main import app
from task_registry.candidates import upsert_candidate
from task_registry.db import make_engine, session_scope, upgrade
from task_registry.models import CandidatePRCreate, RepoCreate
from task_registry.repos import get_or_create_repo

REPO = "acme/infra-lib"


@dataclass(frozen=True)
class Ran:
    exit_code: int
    stdout: str
    stderr: str


def probewatch(home: Path, *args: str, env: dict[str, str | None] | None = None) -> Ran:
    """``probewatch --home HOME ARGS``; stdout is not a terminal, as in a pipe. COLUMNS is
    unset unless ``env`` sets it, so nothing depends on the caller's terminal."""
    settings = {"COLUMNS": None, "PROBEWATCH_DATABASE_URL": None, "PROBEWATCH_WATCH_FILE": None}
    result = CliRunner().invoke(app, ["--home", str(home), *args], env=settings | (env or {}))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Ran(result.exit_code, result.stdout, result.stderr)


def migrated_home(home: Path) -> Engine:
    """The home's registry (``probewatch.db``), migrated; the caller disposes of it."""
    home.mkdir(parents=True, exist_ok=True)
    engine = make_engine(f"sqlite:///{home / 'probewatch.db'}")
    upgrade(engine)
    return engine


def add_candidate(engine: Engine, number: int, *, repo: str = REPO, **fields: Any) -> int:
    """A mined candidate that passed the filters, merged on 2026-03-01."""
    with session_scope(engine) as session:
        row = get_or_create_repo(session=session, repo_in=RepoCreate(full_name=repo))
        assert row.id is not None
        values: dict[str, Any] = {
            "title": f"PR {number}",
            "merged_at": datetime(2026, 3, 1, tzinfo=UTC),
            "merge_sha": f"{number:040x}",
            "additions": 1200,
            "rank_score": 0.5,
            **fields,
        }
        candidate = upsert_candidate(
            session=session,
            candidate_in=CandidatePRCreate(repo_id=row.id, number=number, **values),
        )
        assert candidate.id is not None
        return candidate.id

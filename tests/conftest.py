"""Shared fixtures: registry databases on SQLite and, when configured, PostgreSQL.

``PROBEWATCH_TEST_DATABASE_URL`` names a PostgreSQL database; every test that
asks for a database then also runs there, in a schema of its own (created
before, dropped after), so parallel runs cannot collide. When the variable is
set the server must answer: an unreachable PostgreSQL fails the run instead of
skipping it quietly.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine

from task_registry.db import make_engine, upgrade

PG_ENV = "PROBEWATCH_TEST_DATABASE_URL"
BACKENDS = ["sqlite", "postgresql"]

pytest_plugins = ["tests.github_emulator.fixtures"]


def _pg_url_with_schema(base: str, schema: str) -> str:
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}options={quote(f'-csearch_path={schema}')}"


@pytest.fixture(params=BACKENDS)
def empty_db_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The URL of a new, empty database on each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'probewatch.db'}"
        return
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(f"{PG_ENV} is not set: PostgreSQL variant not run")
    schema = f"pw_{uuid.uuid4().hex[:16]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield _pg_url_with_schema(base, schema)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def engine(empty_db_url: str) -> Iterator[Engine]:
    """A migrated registry database on each backend."""
    engine = make_engine(empty_db_url)
    upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def sqlite_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """A migrated SQLite registry, for tests whose subject is not the database."""
    engine = make_engine(f"sqlite:///{tmp_path_factory.mktemp('db') / 'probewatch.db'}")
    upgrade(engine)
    yield engine
    engine.dispose()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say how the PostgreSQL variants went, so a CI log shows they ran rather than skipped."""
    counts: dict[str, int] = {}
    for outcome in ("passed", "failed", "error", "skipped"):
        reports = terminalreporter.stats.get(outcome, [])
        hits = {r.nodeid for r in reports if "[postgresql" in getattr(r, "nodeid", "")}
        if hits:
            counts[outcome] = len(hits)
    summary = ", ".join(f"{n} {outcome}" for outcome, n in counts.items()) or "none collected"
    terminalreporter.write_line(f"registry tests on PostgreSQL: {summary}")

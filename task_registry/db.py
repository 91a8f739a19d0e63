"""Engines, sessions and schema migrations.

SQLite (a file in the home folder) is the embedded default; any SQLAlchemy URL
for PostgreSQL works too. The schema is owned by Alembic: ``upgrade`` brings a
database to the head revision, and ``check_schema`` refuses a database that is
behind, naming the command that fixes it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, create_engine

from probewatch.errors import RegistryError
from probewatch.private import private_file, private_folder

MIGRATIONS = Path(__file__).with_name("migrations")
UPGRADE_COMMAND = "probewatch db upgrade"


class SchemaOutOfDate(RegistryError):
    """The database schema is not at the revision this code expects."""


class RegistryUnavailable(RegistryError):
    """The database cannot be reached or refused the connection; the message names it."""


# What an unreachable or failing database most likely needs, by the driver's words; the
# first match names the fix. Anything else is most likely the URL or the server.
FIXES = (
    (
        "readonly database",
        "the registry is read-only here: reads work, writes need a writable PROBEWATCH_HOME",
    ),
    ("disk is full", "the disk is full: free space on it, or set PROBEWATCH_HOME to another disk"),
    (
        "disk I/O error",
        "the disk failed or is full: free space on it, or set PROBEWATCH_HOME to another disk",
    ),
    (
        "unable to open database file",
        "the database's folder is missing or not writable: check PROBEWATCH_HOME",
    ),
)
DEFAULT_FIX = "check PROBEWATCH_DATABASE_URL and that the server is up"


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine for ``url``; SQLite gets its parent folder, foreign keys and WAL.

    A SQLite file in a folder this process cannot write (a read-only home) is opened
    read-only and immutable: WAL needs its ``-shm`` file beside the database, so without
    this not even a read works there. A write then fails with a one-line reason."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True, **kwargs)
    path = Path(parsed.database).expanduser() if parsed.database else None
    if path is not None and parsed.database != ":memory:":
        if path.is_file() and not os.access(path.parent, os.W_OK):
            return _read_only_sqlite(path, **kwargs)
        if not path.parent.exists():
            private_folder(path.parent)
        # Every golden patch and probe is in it: 0600, and SQLite gives its -wal and -shm
        # files the database's own mode.
        private_file(path)
    engine = create_engine(url, connect_args={"timeout": 30}, **kwargs)
    event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _read_only_sqlite(path: Path, **kwargs: Any) -> Engine:
    url = f"sqlite:///file:{path}?mode=ro&immutable=1&uri=true"
    engine = create_engine(url, connect_args={"timeout": 30}, **kwargs)
    event.listen(engine, "connect", _foreign_keys)
    return engine


def _foreign_keys(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    # In WAL mode NORMAL never corrupts the file; it only skips an fsync per commit.
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """A session that commits on success and rolls back on any error."""
    with Session(engine, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except OperationalError as exc:
            session.rollback()
            raise _unavailable(engine, exc) from exc
        except BaseException:
            session.rollback()
            raise


def _unavailable(engine: Engine, exc: OperationalError) -> RegistryUnavailable:
    where = engine.url.render_as_string(hide_password=True)
    reason = str(exc.orig or exc).strip().splitlines()[0]
    fix = next((fix for words, fix in FIXES if words in reason), DEFAULT_FIX)
    return RegistryUnavailable(f"database {where}: {reason} ({fix})")


def _alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(_alembic_config()).get_current_head()
    assert head is not None, "the migrations folder has no revisions"
    return head


def current_revision(engine: Engine) -> str | None:
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    except OperationalError as exc:
        raise _unavailable(engine, exc) from exc


def upgrade(engine: Engine, revision: str = "head") -> tuple[str | None, str | None]:
    """Migrate to ``revision``; returns (before, after). A database at head is left alone."""
    before = current_revision(engine)
    config = _alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
    return before, current_revision(engine)


def check_schema(engine: Engine) -> str:
    """Return the current revision, or raise ``SchemaOutOfDate`` naming the fix."""
    current, head = current_revision(engine), head_revision()
    if current == head:
        return current
    where = engine.url.render_as_string(hide_password=True)
    found = "no schema" if current is None else f"schema revision {current}"
    raise SchemaOutOfDate(
        f"database {where} has {found}, this probewatch needs {head}: run `{UPGRADE_COMMAND}`"
    )

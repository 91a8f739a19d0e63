from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect
from sqlmodel import SQLModel

import task_registry.models  # noqa: F401
from task_registry.db import (
    SchemaOutOfDate,
    check_schema,
    current_revision,
    head_revision,
    make_engine,
    upgrade,
)


def test_upgrade_creates_the_schema_and_a_second_run_is_a_no_op(empty_db_url: str) -> None:
    engine = make_engine(empty_db_url)
    assert current_revision(engine) is None
    assert upgrade(engine) == (None, head_revision())
    tables = set(inspect(engine).get_table_names())
    assert set(SQLModel.metadata.tables) <= tables
    assert upgrade(engine) == (head_revision(), head_revision())
    assert check_schema(engine) == head_revision()


def test_empty_database_is_refused_with_the_fixing_command(empty_db_url: str) -> None:
    with pytest.raises(SchemaOutOfDate, match="run `probewatch db upgrade`"):
        check_schema(make_engine(empty_db_url))


def test_database_behind_head_is_refused(empty_db_url: str) -> None:
    engine = make_engine(empty_db_url)
    upgrade(engine)
    with engine.begin() as connection:
        connection.exec_driver_sql("UPDATE alembic_version SET version_num = 'old0'")
    with pytest.raises(SchemaOutOfDate, match="schema revision old0, this probewatch needs"):
        check_schema(engine)


def test_migrations_match_the_models(empty_db_url: str) -> None:
    """A model change without a migration would make this diff non-empty."""
    engine = make_engine(empty_db_url)
    upgrade(engine)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        diff = compare_metadata(context, SQLModel.metadata)
    assert diff == []

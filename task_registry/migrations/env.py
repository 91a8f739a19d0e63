"""Alembic environment: runs on the connection handed over by ``task_registry.db``."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import task_registry.models  # noqa: F401  (registers the tables on the metadata)

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through task_registry.db.upgrade (probewatch db upgrade)")

context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()

"""author exchanges and promise evidence

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

import task_registry.types

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "author_exchange",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=True),
        sa.Column("author", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("purpose", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("endpoint", sa.Text(), nullable=False),
        sa.Column("model", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("request", sa.Text(), nullable=False),
        sa.Column("response", sa.Text(), nullable=True),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("prompt_tokens", sa.Integer(), nullable=True),
        sa.Column("completion_tokens", sa.Integer(), nullable=True),
        sa.Column("started_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("duration_s", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["task_id"], ["task.id"], name=op.f("fk_author_exchange_task_id_task")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_author_exchange")),
    )
    with op.batch_alter_table("author_exchange", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_author_exchange_task_id"), ["task_id"], unique=False)
    with op.batch_alter_table("promise", schema=None) as batch_op:
        batch_op.add_column(sa.Column("evidence", sa.Text(), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("promise", schema=None) as batch_op:
        batch_op.drop_column("evidence")
    with op.batch_alter_table("author_exchange", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_author_exchange_task_id"))
    op.drop_table("author_exchange")

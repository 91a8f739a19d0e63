"""maintainers' feedback on report entries

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

import task_registry.types

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "entry_feedback",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repo", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("pull_number", sa.Integer(), nullable=False),
        sa.Column("adversarial_id", sa.Integer(), nullable=False),
        sa.Column("operator", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("useful", sa.Boolean(), nullable=False),
        sa.Column("author", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("created_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_entry_feedback")),
        sa.UniqueConstraint(
            "repo",
            "pull_number",
            "adversarial_id",
            "author",
            name=op.f("uq_entry_feedback_repo_pull_number_adversarial_id_author"),
        ),
    )
    with op.batch_alter_table("entry_feedback", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_entry_feedback_repo"), ["repo"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_entry_feedback_created_at"), ["created_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("entry_feedback", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_entry_feedback_created_at"))
        batch_op.drop_index(batch_op.f("ix_entry_feedback_repo"))
    op.drop_table("entry_feedback")

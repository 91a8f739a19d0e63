"""PR reports and GitHub App installations

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

import task_registry.types

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "app_installation",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("installation_id", sa.BigInteger(), nullable=False),
        sa.Column("account", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("repositories", sa.JSON(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("updated_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_app_installation")),
    )
    with op.batch_alter_table("app_installation", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_app_installation_installation_id"), ["installation_id"], unique=True
        )

    op.create_table(
        "pr_report",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repo", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("pull_number", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=True),
        sa.Column("merge_sha", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("body_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("actionable", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("skip_reason", sa.Text(), nullable=True),
        sa.Column("dry_run", sa.Boolean(), nullable=False),
        sa.Column("ignored", sa.Boolean(), nullable=False),
        sa.Column("comment_id", sa.BigInteger(), nullable=True),
        sa.Column("posted_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("check_run_id", sa.BigInteger(), nullable=True),
        sa.Column("check_run_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("posted_at", task_registry.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("lock_owner", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column("lock_expires_at", task_registry.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["task.id"], name=op.f("fk_pr_report_task_id_task")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pr_report")),
        sa.UniqueConstraint("repo", "pull_number", name=op.f("uq_pr_report_repo_pull_number")),
    )
    with op.batch_alter_table("pr_report", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_pr_report_repo"), ["repo"], unique=False)
        batch_op.create_index(batch_op.f("ix_pr_report_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_pr_report_task_id"), ["task_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("pr_report", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_pr_report_task_id"))
        batch_op.drop_index(batch_op.f("ix_pr_report_status"))
        batch_op.drop_index(batch_op.f("ix_pr_report_repo"))
    op.drop_table("pr_report")
    with op.batch_alter_table("app_installation", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_app_installation_installation_id"))
    op.drop_table("app_installation")

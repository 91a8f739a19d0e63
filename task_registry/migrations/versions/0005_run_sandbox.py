"""how each run was kept from its host, and scores from runs that were not

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-08
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

RUN_TABLES = ("validation_run", "submission")


def upgrade() -> None:
    for table in RUN_TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(
                sa.Column("sandbox", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True)
            )
            batch_op.add_column(sa.Column("sandbox_reason", sa.Text(), nullable=True))
    with op.batch_alter_table("score", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("unsandboxed", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("score", schema=None) as batch_op:
        batch_op.drop_column("unsandboxed")
    for table in reversed(RUN_TABLES):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("sandbox_reason")
            batch_op.drop_column("sandbox")

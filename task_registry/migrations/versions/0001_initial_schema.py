"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

import task_registry.types

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job",
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("dedupe_key", sqlmodel.sql.sqltypes.AutoString(length=300), nullable=True),
        sa.Column("max_attempts", sa.Integer(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column(
            "lease_expires_at", task_registry.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("run_after", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("result", sa.JSON(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job")),
        sa.UniqueConstraint("dedupe_key", name=op.f("uq_job_dedupe_key")),
    )
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_job_kind"), ["kind"], unique=False)
        batch_op.create_index(batch_op.f("ix_job_status"), ["status"], unique=False)

    op.create_table(
        "model",
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("provider", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column("knowledge_cutoff", sa.Date(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("created_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model")),
    )
    with op.batch_alter_table("model", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_model_name"), ["name"], unique=True)

    op.create_table(
        "repo",
        sa.Column("full_name", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("default_branch", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("created_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_repo")),
    )
    with op.batch_alter_table("repo", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_repo_full_name"), ["full_name"], unique=True)

    op.create_table(
        "webhook_delivery",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("delivery_id", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("event", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("action", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("repo", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column("payload_sha256", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("received_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_delivery")),
    )
    with op.batch_alter_table("webhook_delivery", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_webhook_delivery_delivery_id"), ["delivery_id"], unique=True
        )
        batch_op.create_index(batch_op.f("ix_webhook_delivery_status"), ["status"], unique=False)

    op.create_table(
        "agent",
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("command", sa.Text(), nullable=False),
        sa.Column("builtin", sa.Boolean(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=True),
        sa.Column("created_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["model_id"], ["model.id"], name=op.f("fk_agent_model_id_model")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agent")),
    )
    with op.batch_alter_table("agent", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_agent_name"), ["name"], unique=True)

    op.create_table(
        "candidate_pr",
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("description_source", sa.String(length=16), nullable=False),
        sa.Column("author", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column("merged_at", task_registry.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("base_sha", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("merge_sha", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("additions", sa.Integer(), nullable=False),
        sa.Column("deletions", sa.Integer(), nullable=False),
        sa.Column("changed_files", sa.Integer(), nullable=False),
        sa.Column("test_lines_added", sa.Integer(), nullable=False),
        sa.Column("core_share", sa.Float(), nullable=False),
        sa.Column("rank_score", sa.Float(), nullable=False),
        sa.Column("files", sa.JSON(), nullable=False),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("follow_ups", sa.JSON(), nullable=False),
        sa.Column("filter_verdict", sa.String(length=16), nullable=False),
        sa.Column("failed_filter", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("filter_reason", sa.Text(), nullable=True),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repo_id", sa.Integer(), nullable=False),
        sa.Column("decision", sa.String(length=16), nullable=False),
        sa.Column("decision_reason", sa.Text(), nullable=True),
        sa.Column("decided_by", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column("decided_at", task_registry.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["repo_id"], ["repo.id"], name=op.f("fk_candidate_pr_repo_id_repo")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_candidate_pr")),
        sa.UniqueConstraint(
            "repo_id", "kind", "number", name=op.f("uq_candidate_pr_repo_id_kind_number")
        ),
    )
    with op.batch_alter_table("candidate_pr", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_candidate_pr_decision"), ["decision"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_candidate_pr_filter_verdict"), ["filter_verdict"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_candidate_pr_repo_id"), ["repo_id"], unique=False)

    op.create_table(
        "cursor",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repo_id", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("position", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("updated_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["repo_id"], ["repo.id"], name=op.f("fk_cursor_repo_id_repo")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cursor")),
        sa.UniqueConstraint("repo_id", "source", name=op.f("uq_cursor_repo_id_source")),
    )
    with op.batch_alter_table("cursor", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_cursor_repo_id"), ["repo_id"], unique=False)

    op.create_table(
        "task",
        sa.Column("instance_id", sqlmodel.sql.sqltypes.AutoString(length=300), nullable=False),
        sa.Column("repo", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("pull_number", sa.Integer(), nullable=False),
        sa.Column("base_commit", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("merge_commit", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("created_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("patch", sa.Text(), nullable=False),
        sa.Column("test_patch", sa.Text(), nullable=False),
        sa.Column("problem_statement", sa.Text(), nullable=False),
        sa.Column("hints_text", sa.Text(), nullable=False),
        sa.Column("version", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column(
            "environment_setup_commit", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True
        ),
        sa.Column("fail_to_pass", sa.JSON(), nullable=False),
        sa.Column("pass_to_pass", sa.JSON(), nullable=False),
        sa.Column("contract", sa.JSON(), nullable=False),
        sa.Column("hollow_patch", sa.Text(), nullable=False),
        sa.Column("lock_hash", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=True),
        sa.Column("gpus", sa.Integer(), nullable=False),
        sa.Column("gpu_type", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("areas", sa.JSON(), nullable=False),
        sa.Column("coverage", sa.JSON(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("candidate_id", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("registered_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["candidate_id"], ["candidate_pr.id"], name=op.f("fk_task_candidate_id_candidate_pr")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_task")),
    )
    with op.batch_alter_table("task", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_task_candidate_id"), ["candidate_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_task_instance_id"), ["instance_id"], unique=True)
        batch_op.create_index(batch_op.f("ix_task_repo"), ["repo"], unique=False)
        batch_op.create_index(batch_op.f("ix_task_status"), ["status"], unique=False)

    op.create_table(
        "adversarial_patch",
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("operator", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("file", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
        sa.Column("line", sa.Integer(), nullable=True),
        sa.Column("promise_category", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("patch", sa.Text(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("survives_original", sa.Boolean(), nullable=True),
        sa.Column("rejected_by", sa.JSON(), nullable=False),
        sa.Column("created_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["task_id"], ["task.id"], name=op.f("fk_adversarial_patch_task_id_task")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_adversarial_patch")),
    )
    with op.batch_alter_table("adversarial_patch", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_adversarial_patch_task_id"), ["task_id"], unique=False)

    op.create_table(
        "promise",
        sa.Column("category", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("quote", sa.Text(), nullable=False),
        sa.Column("quantity", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column("verdict", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["task.id"], name=op.f("fk_promise_task_id_task")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_promise")),
    )
    with op.batch_alter_table("promise", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_promise_category"), ["category"], unique=False)
        batch_op.create_index(batch_op.f("ix_promise_task_id"), ["task_id"], unique=False)

    op.create_table(
        "submission",
        sa.Column("run_label", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("patch", sa.Text(), nullable=False),
        sa.Column("log", sa.Text(), nullable=False),
        sa.Column("wall_s", sa.Float(), nullable=True),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("graded_at", task_registry.types.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["agent.id"], name=op.f("fk_submission_agent_id_agent")
        ),
        sa.ForeignKeyConstraint(["task_id"], ["task.id"], name=op.f("fk_submission_task_id_task")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_submission")),
        sa.UniqueConstraint(
            "agent_id",
            "task_id",
            "run_label",
            name=op.f("uq_submission_agent_id_task_id_run_label"),
        ),
    )
    with op.batch_alter_table("submission", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_submission_agent_id"), ["agent_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_submission_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_submission_task_id"), ["task_id"], unique=False)

    op.create_table(
        "probe",
        sa.Column("path", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("markers", sa.JSON(), nullable=False),
        sa.Column("author", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("promise_id", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("rejection_reason", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["promise_id"], ["promise.id"], name=op.f("fk_probe_promise_id_promise")
        ),
        sa.ForeignKeyConstraint(["task_id"], ["task.id"], name=op.f("fk_probe_task_id_task")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_probe")),
        sa.UniqueConstraint("task_id", "path", name=op.f("uq_probe_task_id_path")),
    )
    with op.batch_alter_table("probe", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_probe_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_probe_task_id"), ["task_id"], unique=False)

    op.create_table(
        "score",
        sa.Column("suite", sa.String(length=16), nullable=False),
        sa.Column("n_collected", sa.Integer(), nullable=False),
        sa.Column("n_passed", sa.Integer(), nullable=False),
        sa.Column("n_golden_passed", sa.Integer(), nullable=False),
        sa.Column("passed_fraction", sa.Float(), nullable=False),
        sa.Column("resolved_count", sa.Boolean(), nullable=False),
        sa.Column("resolved_set", sa.Boolean(), nullable=False),
        sa.Column("fault", sa.Boolean(), nullable=False),
        sa.Column("passed_tests", sa.JSON(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("created_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["submission_id"], ["submission.id"], name=op.f("fk_score_submission_id_submission")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_score")),
        sa.UniqueConstraint("submission_id", "suite", name=op.f("uq_score_submission_id_suite")),
    )
    with op.batch_alter_table("score", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_score_submission_id"), ["submission_id"], unique=False)

    op.create_table(
        "validation_run",
        sa.Column("control", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("suite", sa.String(length=16), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("runner", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("fault_kind", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("fault_detail", sa.Text(), nullable=True),
        sa.Column("n_collected", sa.Integer(), nullable=False),
        sa.Column("n_passed", sa.Integer(), nullable=False),
        sa.Column("wall_s", sa.Float(), nullable=True),
        sa.Column("cpu_s", sa.Float(), nullable=True),
        sa.Column("peak_rss_bytes", sa.Integer(), nullable=True),
        sa.Column("gpu_peak_bytes", sa.Integer(), nullable=True),
        sa.Column("started_at", task_registry.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", task_registry.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("log", sa.Text(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("adversarial_id", sa.Integer(), nullable=True),
        sa.Column("submission_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["adversarial_id"],
            ["adversarial_patch.id"],
            name=op.f("fk_validation_run_adversarial_id_adversarial_patch"),
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submission.id"],
            name=op.f("fk_validation_run_submission_id_submission"),
        ),
        sa.ForeignKeyConstraint(
            ["task_id"], ["task.id"], name=op.f("fk_validation_run_task_id_task")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_validation_run")),
    )
    with op.batch_alter_table("validation_run", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_validation_run_control"), ["control"], unique=False)
        batch_op.create_index(batch_op.f("ix_validation_run_outcome"), ["outcome"], unique=False)
        batch_op.create_index(batch_op.f("ix_validation_run_task_id"), ["task_id"], unique=False)

    op.create_table(
        "test_result",
        sa.Column("test_id", sa.Text(), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("is_probe", sa.Boolean(), nullable=False),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["validation_run.id"], name=op.f("fk_test_result_run_id_validation_run")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_test_result")),
    )
    with op.batch_alter_table("test_result", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_test_result_run_id"), ["run_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("test_result", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_test_result_run_id"))

    op.drop_table("test_result")
    with op.batch_alter_table("validation_run", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_validation_run_task_id"))
        batch_op.drop_index(batch_op.f("ix_validation_run_outcome"))
        batch_op.drop_index(batch_op.f("ix_validation_run_control"))

    op.drop_table("validation_run")
    with op.batch_alter_table("score", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_score_submission_id"))

    op.drop_table("score")
    with op.batch_alter_table("probe", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_probe_task_id"))
        batch_op.drop_index(batch_op.f("ix_probe_status"))

    op.drop_table("probe")
    with op.batch_alter_table("submission", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_submission_task_id"))
        batch_op.drop_index(batch_op.f("ix_submission_status"))
        batch_op.drop_index(batch_op.f("ix_submission_agent_id"))

    op.drop_table("submission")
    with op.batch_alter_table("promise", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_promise_task_id"))
        batch_op.drop_index(batch_op.f("ix_promise_category"))

    op.drop_table("promise")
    with op.batch_alter_table("adversarial_patch", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_adversarial_patch_task_id"))

    op.drop_table("adversarial_patch")
    with op.batch_alter_table("task", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_task_status"))
        batch_op.drop_index(batch_op.f("ix_task_repo"))
        batch_op.drop_index(batch_op.f("ix_task_instance_id"))
        batch_op.drop_index(batch_op.f("ix_task_candidate_id"))

    op.drop_table("task")
    with op.batch_alter_table("cursor", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_cursor_repo_id"))

    op.drop_table("cursor")
    with op.batch_alter_table("candidate_pr", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_candidate_pr_repo_id"))
        batch_op.drop_index(batch_op.f("ix_candidate_pr_filter_verdict"))
        batch_op.drop_index(batch_op.f("ix_candidate_pr_decision"))

    op.drop_table("candidate_pr")
    with op.batch_alter_table("agent", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_agent_name"))

    op.drop_table("agent")
    with op.batch_alter_table("webhook_delivery", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_webhook_delivery_status"))
        batch_op.drop_index(batch_op.f("ix_webhook_delivery_delivery_id"))

    op.drop_table("webhook_delivery")
    with op.batch_alter_table("repo", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_repo_full_name"))

    op.drop_table("repo")
    with op.batch_alter_table("model", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_model_name"))

    op.drop_table("model")
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_job_status"))
        batch_op.drop_index(batch_op.f("ix_job_kind"))

    op.drop_table("job")

"""SQLModel tables of the registry, with the Base/Create/Public ladder.

``XBase`` holds the fields a caller supplies, ``XCreate`` is what query
functions accept, ``X`` is the table, and ``XPublic`` is what leaves the
service (API, exports). Lists and nested records are JSON columns; statuses
are strings validated by the enums in :mod:`task_registry.types`.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, String, Text, UniqueConstraint, false
from sqlmodel import Field, SQLModel

from task_registry.types import (
    CursorSource,
    Decision,
    DeliveryStatus,
    DescriptionSource,
    FilterVerdict,
    JobStatus,
    PatchSource,
    PRKind,
    ProbeStatus,
    ReportStatus,
    RunOutcome,
    ScoreSuite,
    SubmissionStatus,
    Suite,
    TaskStatus,
    TestOutcome,
    UTCDateTime,
    utcnow,
)

# Named constraints keep later SQLite batch migrations able to find what they alter.
SQLModel.metadata.naming_convention = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def _text(**kwargs: Any) -> Any:
    return Field(sa_type=Text, **kwargs)


def _json_list() -> Any:
    return Field(default_factory=list, sa_column=Column(JSON, nullable=False))


def _json_dict() -> Any:
    return Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


def _status(default: str, length: int = 16) -> Any:
    return Field(default=default, sa_type=String(length), index=True)


def _when(**kwargs: Any) -> Any:
    return Field(sa_type=UTCDateTime, **kwargs)


def _stamp() -> Any:
    return Field(default_factory=utcnow, sa_type=UTCDateTime)


# --- repositories and mining cursors -------------------------------------------------


class RepoBase(SQLModel):
    full_name: str = Field(max_length=200, unique=True, index=True)
    default_branch: str = Field(default="main", max_length=200)


class RepoCreate(RepoBase):
    pass


class Repo(RepoBase, table=True):
    id: int | None = Field(default=None, primary_key=True)
    created_at: datetime = _stamp()


class RepoPublic(RepoBase):
    id: int
    created_at: datetime


class Cursor(SQLModel, table=True):
    """How far mining has got, per repo and source (a commit sha or an ISO time)."""

    __table_args__ = (UniqueConstraint("repo_id", "source"),)
    id: int | None = Field(default=None, primary_key=True)
    repo_id: int = Field(foreign_key="repo.id", index=True)
    source: CursorSource = Field(sa_type=String(16))
    position: str = Field(max_length=200)
    updated_at: datetime = _stamp()


# --- candidate PRs -------------------------------------------------------------------


class CandidatePRBase(SQLModel):
    number: int
    kind: PRKind = Field(default=PRKind.github, sa_type=String(16))
    title: str = Field(default="", sa_type=Text)
    body: str = Field(default="", sa_type=Text)
    description_source: DescriptionSource = Field(
        default=DescriptionSource.none, sa_type=String(16)
    )
    author: str | None = Field(default=None, max_length=200)
    merged_at: datetime | None = _when(default=None)
    base_sha: str | None = Field(default=None, max_length=64)
    merge_sha: str | None = Field(default=None, max_length=64)
    additions: int = 0
    deletions: int = 0
    changed_files: int = 0
    test_lines_added: int = 0
    core_share: float = 0.0
    rank_score: float = 0.0
    files: list[dict[str, Any]] = _json_list()
    labels: list[str] = _json_list()
    follow_ups: list[dict[str, Any]] = _json_list()
    filter_verdict: FilterVerdict = _status(FilterVerdict.passed)
    failed_filter: str | None = Field(default=None, max_length=64)
    filter_reason: str | None = Field(default=None, sa_type=Text)


class CandidatePRCreate(CandidatePRBase):
    repo_id: int


class CandidatePR(CandidatePRBase, table=True):
    __tablename__ = "candidate_pr"
    __table_args__ = (UniqueConstraint("repo_id", "kind", "number"),)
    id: int | None = Field(default=None, primary_key=True)
    repo_id: int = Field(foreign_key="repo.id", index=True)
    decision: Decision = _status(Decision.pending)
    decision_reason: str | None = Field(default=None, sa_type=Text)
    decided_by: str | None = Field(default=None, max_length=200)
    decided_at: datetime | None = _when(default=None)
    created_at: datetime = _stamp()
    updated_at: datetime = _stamp()


class CandidatePRPublic(CandidatePRBase):
    id: int
    repo_id: int
    decision: Decision
    decision_reason: str | None
    decided_at: datetime | None


# --- tasks ---------------------------------------------------------------------------


class TaskBase(SQLModel):
    instance_id: str = Field(max_length=300, unique=True, index=True)
    repo: str = Field(max_length=200, index=True)
    pull_number: int
    base_commit: str = Field(max_length=64)
    merge_commit: str | None = Field(default=None, max_length=64)
    created_at: datetime = _when(description="merge time of the PR")
    patch: str = _text(default="")
    test_patch: str = _text(default="")
    problem_statement: str = _text(default="")
    hints_text: str = _text(default="")
    version: str = Field(default="", max_length=64)
    environment_setup_commit: str | None = Field(default=None, max_length=64)
    fail_to_pass: list[str] = _json_list()
    pass_to_pass: list[str] = _json_list()
    contract: dict[str, Any] = _json_dict()
    hollow_patch: str = _text(default="")
    lock_hash: str | None = Field(default=None, max_length=128)
    gpus: int = 0
    gpu_type: str | None = Field(default=None, max_length=64)
    areas: list[str] = _json_list()
    coverage: dict[str, Any] = _json_dict()


class TaskCreate(TaskBase):
    candidate_id: int | None = None
    status: TaskStatus = TaskStatus.candidate


class Task(TaskBase, table=True):
    id: int | None = Field(default=None, primary_key=True)
    candidate_id: int | None = Field(default=None, foreign_key="candidate_pr.id", index=True)
    status: TaskStatus = _status(TaskStatus.candidate)
    registered_at: datetime = _stamp()
    updated_at: datetime = _stamp()


class TaskPublic(TaskBase):
    id: int
    status: TaskStatus
    registered_at: datetime


# --- promises, probes, adversarial patches -------------------------------------------


class PromiseBase(SQLModel):
    category: str = Field(max_length=32, index=True)
    quote: str = _text()
    quantity: str | None = Field(default=None, max_length=200)
    verdict: str | None = Field(default=None, max_length=16)
    evidence: str = _text(default="")
    position: int = 0


class PromiseCreate(PromiseBase):
    task_id: int


class Promise(PromiseBase, table=True):
    id: int | None = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="task.id", index=True)


class PromisePublic(PromiseBase):
    id: int
    task_id: int


class ProbeBase(SQLModel):
    path: str = Field(max_length=500)
    content: str = _text()
    markers: list[str] = _json_list()
    author: str = Field(default="curator", max_length=64)
    round: int = 0


class ProbeCreate(ProbeBase):
    task_id: int
    promise_id: int | None = None


class Probe(ProbeBase, table=True):
    __table_args__ = (UniqueConstraint("task_id", "path"),)
    id: int | None = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="task.id", index=True)
    promise_id: int | None = Field(default=None, foreign_key="promise.id")
    status: ProbeStatus = _status(ProbeStatus.proposed)
    rejection_reason: str | None = Field(default=None, sa_type=Text)


class ProbePublic(SQLModel):
    """Probe metadata only: probe code never leaves through the public API."""

    id: int
    task_id: int
    promise_id: int | None
    path: str
    markers: list[str]
    status: ProbeStatus
    rejection_reason: str | None


class AdversarialPatchBase(SQLModel):
    source: PatchSource = Field(default=PatchSource.mechanical, sa_type=String(16))
    operator: str = Field(max_length=64)
    file: str = Field(default="", max_length=500)
    line: int | None = None
    promise_category: str | None = Field(default=None, max_length=32)
    description: str = _text(default="")
    patch: str = _text()


class AdversarialPatchCreate(AdversarialPatchBase):
    task_id: int


class AdversarialPatch(AdversarialPatchBase, table=True):
    __tablename__ = "adversarial_patch"
    id: int | None = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="task.id", index=True)
    survives_original: bool | None = None
    rejected_by: list[int] = _json_list()
    created_at: datetime = _stamp()


class AdversarialPatchPublic(AdversarialPatchBase):
    id: int
    task_id: int
    survives_original: bool | None
    rejected_by: list[int]


# --- validation runs and per-test results --------------------------------------------


class SandboxRecord(SQLModel):
    """How a run was kept from its host: the kind (``runners.types.SandboxKind``: namespaces,
    none) and, for none, why. Null: the backend did not say (Docker and Actions runs say so
    only when their result does), which counts as sandboxed."""

    sandbox: str | None = Field(default=None, max_length=16)
    sandbox_reason: str | None = Field(default=None, sa_type=Text)


class ValidationRunBase(SandboxRecord):
    control: str = Field(max_length=16, index=True)
    suite: Suite = Field(default=Suite.all, sa_type=String(16))
    attempt: int = 1
    runner: str = Field(default="local", max_length=64)
    outcome: RunOutcome = _status(RunOutcome.completed)
    fault_kind: str | None = Field(default=None, max_length=64)
    fault_detail: str | None = Field(default=None, sa_type=Text)
    n_collected: int = 0
    n_passed: int = 0
    wall_s: float | None = None
    cpu_s: float | None = None
    peak_rss_bytes: int | None = None
    gpu_peak_bytes: int | None = None
    started_at: datetime = _stamp()
    finished_at: datetime | None = _when(default=None)
    log: str = _text(default="")


class ValidationRunCreate(ValidationRunBase):
    task_id: int
    adversarial_id: int | None = None
    submission_id: int | None = None


class ValidationRun(ValidationRunBase, table=True):
    __tablename__ = "validation_run"
    id: int | None = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="task.id", index=True)
    adversarial_id: int | None = Field(default=None, foreign_key="adversarial_patch.id")
    submission_id: int | None = Field(default=None, foreign_key="submission.id")


class ValidationRunPublic(ValidationRunBase):
    id: int
    task_id: int
    adversarial_id: int | None
    submission_id: int | None


class TestResultBase(SQLModel):
    __test__ = False  # not a pytest class, despite the name
    test_id: str = Field(sa_type=Text)
    outcome: TestOutcome = Field(sa_type=String(16))
    duration_s: float | None = None
    message: str | None = Field(default=None, sa_type=Text)
    is_probe: bool = False


class TestResult(TestResultBase, table=True):
    __tablename__ = "test_result"
    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="validation_run.id", index=True)


# --- models, agents, submissions, scores ---------------------------------------------


class ModelBase(SQLModel):
    name: str = Field(max_length=200, unique=True, index=True)
    provider: str | None = Field(default=None, max_length=200)
    knowledge_cutoff: date


class ModelCreate(ModelBase):
    pass


class Model(ModelBase, table=True):
    id: int | None = Field(default=None, primary_key=True)
    created_at: datetime = _stamp()


class ModelPublic(ModelBase):
    id: int


class AgentBase(SQLModel):
    name: str = Field(max_length=200, unique=True, index=True)
    command: str = _text(description="template with {workdir} {statement} {model} {budget_s}")
    builtin: bool = False


class AgentCreate(AgentBase):
    model_id: int | None = None


class Agent(AgentBase, table=True):
    id: int | None = Field(default=None, primary_key=True)
    model_id: int | None = Field(default=None, foreign_key="model.id")
    created_at: datetime = _stamp()


class AgentPublic(AgentBase):
    id: int
    model_id: int | None


class SubmissionBase(SandboxRecord):  # the agent's run
    run_label: str = Field(default="default", max_length=200)
    patch: str = _text(default="")
    log: str = _text(default="")
    wall_s: float | None = None


class SubmissionCreate(SubmissionBase):
    agent_id: int
    task_id: int


class Submission(SubmissionBase, table=True):
    __table_args__ = (UniqueConstraint("agent_id", "task_id", "run_label"),)
    id: int | None = Field(default=None, primary_key=True)
    agent_id: int = Field(foreign_key="agent.id", index=True)
    task_id: int = Field(foreign_key="task.id", index=True)
    status: SubmissionStatus = _status(SubmissionStatus.pending)
    created_at: datetime = _stamp()
    graded_at: datetime | None = _when(default=None)


class SubmissionPublic(SubmissionBase):
    id: int
    agent_id: int
    task_id: int
    status: SubmissionStatus


class ScoreBase(SQLModel):
    suite: ScoreSuite = Field(sa_type=String(16))
    n_collected: int
    n_passed: int
    n_golden_passed: int
    passed_fraction: float
    resolved_count: bool
    resolved_set: bool
    fault: bool = False
    # The agent's run or the grading run had no sandbox: the leaderboard marks the score.
    unsandboxed: bool = Field(default=False, sa_column_kwargs={"server_default": false()})
    passed_tests: list[str] = _json_list()


class ScoreCreate(ScoreBase):
    submission_id: int


class Score(ScoreBase, table=True):
    __table_args__ = (UniqueConstraint("submission_id", "suite"),)
    id: int | None = Field(default=None, primary_key=True)
    submission_id: int = Field(foreign_key="submission.id", index=True)
    created_at: datetime = _stamp()


class ScorePublic(ScoreBase):
    id: int
    submission_id: int


# --- model-author exchanges --------------------------------------------------------


class AuthorExchangeRecord(SQLModel, table=True):
    """One request to a model endpoint and its answer (credentials never stored)."""

    __tablename__ = "author_exchange"
    id: int | None = Field(default=None, primary_key=True)
    task_id: int | None = Field(default=None, foreign_key="task.id", index=True)
    author: str = Field(max_length=64)
    purpose: str = Field(max_length=16)
    round: int = 0
    endpoint: str = _text()
    model: str = Field(max_length=200)
    request: str = _text()
    response: str | None = Field(default=None, sa_type=Text)
    status_code: int | None = None
    error: str | None = Field(default=None, sa_type=Text)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    started_at: datetime = _stamp()
    duration_s: float = 0.0


# --- webhook deliveries and jobs -----------------------------------------------------


class WebhookDelivery(SQLModel, table=True):
    __tablename__ = "webhook_delivery"
    id: int | None = Field(default=None, primary_key=True)
    delivery_id: str = Field(max_length=100, unique=True, index=True)
    event: str = Field(max_length=64)
    action: str | None = Field(default=None, max_length=64)
    repo: str | None = Field(default=None, max_length=200)
    payload_sha256: str = Field(max_length=64)
    payload: str = _text(default="")
    status: DeliveryStatus = _status(DeliveryStatus.queued)
    error: str | None = Field(default=None, sa_type=Text)
    received_at: datetime = _stamp()


class JobBase(SQLModel):
    kind: str = Field(max_length=64, index=True)
    payload: dict[str, Any] = _json_dict()
    dedupe_key: str | None = Field(default=None, max_length=300, unique=True)
    max_attempts: int = 3


class JobCreate(JobBase):
    run_after: datetime | None = None


class Job(JobBase, table=True):
    id: int | None = Field(default=None, primary_key=True)
    status: JobStatus = _status(JobStatus.queued)
    attempts: int = 0
    lease_owner: str | None = Field(default=None, max_length=200)
    lease_expires_at: datetime | None = _when(default=None)
    run_after: datetime = _stamp()
    result: dict[str, Any] = _json_dict()
    error: str | None = Field(default=None, sa_type=Text)
    created_at: datetime = _stamp()
    updated_at: datetime = _stamp()


class JobPublic(JobBase):
    id: int
    status: JobStatus
    attempts: int
    error: str | None


# --- PR reports and GitHub App installations -----------------------------------------


class PRReport(SQLModel, table=True):
    __tablename__ = "pr_report"
    __table_args__ = (UniqueConstraint("repo", "pull_number"),)
    id: int | None = Field(default=None, primary_key=True)
    repo: str = Field(max_length=200, index=True)
    pull_number: int
    task_id: int | None = Field(default=None, foreign_key="task.id", index=True)
    merge_sha: str | None = Field(default=None, max_length=64)
    body: str = Field(default="", sa_type=Text)
    body_hash: str = Field(default="", max_length=64)
    summary: str = Field(default="", sa_type=Text)
    actionable: bool = False
    status: ReportStatus = Field(default=ReportStatus.rendered, sa_type=String(16), index=True)
    skip_reason: str | None = Field(default=None, sa_type=Text)
    dry_run: bool = True
    ignored: bool = False
    comment_id: int | None = Field(default=None, sa_type=BigInteger)
    posted_hash: str | None = Field(default=None, max_length=64)
    check_run_id: int | None = Field(default=None, sa_type=BigInteger)
    check_run_hash: str | None = Field(default=None, max_length=64)
    posted_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    lock_owner: str | None = Field(default=None, max_length=200)
    lock_expires_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class EntryFeedback(SQLModel, table=True):
    """A maintainer's word on one entry of a report: was the surviving patch worth their time?
    One vote per maintainer and patch; a later vote replaces the earlier one."""

    __tablename__ = "entry_feedback"
    __table_args__ = (UniqueConstraint("repo", "pull_number", "adversarial_id", "author"),)
    id: int | None = Field(default=None, primary_key=True)
    repo: str = Field(max_length=200, index=True)
    pull_number: int
    adversarial_id: int
    operator: str = Field(max_length=64)
    useful: bool
    author: str = Field(max_length=100)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, index=True)


class AppInstallation(SQLModel, table=True):
    __tablename__ = "app_installation"
    id: int | None = Field(default=None, primary_key=True)
    installation_id: int = Field(sa_type=BigInteger, unique=True, index=True)
    account: str = Field(max_length=200)
    repositories: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    active: bool = True
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)

    def covers(self, repo: str) -> bool:
        return self.active and repo.lower() in {name.lower() for name in self.repositories}

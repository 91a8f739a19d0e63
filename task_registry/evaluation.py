"""Models, agents, submissions and scores."""

from __future__ import annotations

import hashlib

from sqlalchemy import Integer, cast, func
from sqlalchemy import select as sql_select
from sqlmodel import Session, col, select

from task_registry.errors import AlreadyExists, NotFound
from task_registry.models import (
    Agent,
    AgentCreate,
    Model,
    ModelCreate,
    Score,
    ScoreCreate,
    Submission,
    SubmissionCreate,
    Task,
)
from task_registry.types import SubmissionStatus, utcnow

SCORE_COLUMNS = ("n_collected", "n_passed", "n_golden_passed", "passed_fraction")
SCORE_FLAGS = ("resolved_count", "resolved_set", "fault", "unsandboxed")


def register_model(*, session: Session, model_in: ModelCreate) -> Model:
    existing = session.exec(select(Model).where(Model.name == model_in.name)).first()
    if existing is not None:
        if existing.knowledge_cutoff != model_in.knowledge_cutoff:
            raise AlreadyExists("model", f"{model_in.name} (cutoff {existing.knowledge_cutoff})")
        return existing
    model = Model.model_validate(model_in)
    session.add(model)
    session.flush()
    return model


def register_agent(*, session: Session, agent_in: AgentCreate) -> Agent:
    existing = find_agent(session=session, name=agent_in.name)
    if existing is not None:
        existing.sqlmodel_update(agent_in.model_dump())
        agent = existing
    else:
        agent = Agent.model_validate(agent_in)
    session.add(agent)
    session.flush()
    return agent


def find_agent(*, session: Session, name: str) -> Agent | None:
    return session.exec(select(Agent).where(Agent.name == name)).first()


def get_agent(*, session: Session, name: str) -> Agent:
    agent = find_agent(session=session, name=name)
    if agent is None:
        raise NotFound("agent", name)
    return agent


def find_submission(
    *, session: Session, agent_id: int, task_id: int, run_label: str
) -> Submission | None:
    query = select(Submission).where(
        Submission.agent_id == agent_id,
        Submission.task_id == task_id,
        Submission.run_label == run_label,
    )
    return session.exec(query).first()


def get_or_create_submission(*, session: Session, submission_in: SubmissionCreate) -> Submission:
    """One submission per (agent, task, run label): a rerun finds the earlier one."""
    existing = find_submission(
        session=session,
        agent_id=submission_in.agent_id,
        task_id=submission_in.task_id,
        run_label=submission_in.run_label,
    )
    if existing is not None:
        return existing
    submission = Submission.model_validate(submission_in)
    session.add(submission)
    session.flush()
    return submission


def set_submission_status(
    *, session: Session, submission: Submission, status: SubmissionStatus
) -> Submission:
    submission.status = status
    if status is SubmissionStatus.graded:
        submission.graded_at = utcnow()
    session.add(submission)
    session.flush()
    return submission


def record_score(*, session: Session, score_in: ScoreCreate) -> Score:
    """Store a score; grading the same submission and suite again replaces it."""
    query = select(Score).where(
        Score.submission_id == score_in.submission_id, Score.suite == score_in.suite
    )
    score = session.exec(query).first()
    if score is None:
        score = Score.model_validate(score_in)
    else:
        score.sqlmodel_update(score_in.model_dump())
    session.add(score)
    session.flush()
    return score


def list_scores(*, session: Session, submission_id: int) -> list[Score]:
    query = select(Score).where(Score.submission_id == submission_id).order_by(col(Score.suite))
    return list(session.exec(query))


def scores_version(*, session: Session) -> str:
    """A digest that changes whenever what a leaderboard reads changes: a score stored or
    regraded (its fault and unsandboxed flags included), a submission's status, an agent's
    model, a model, a task's merge time or areas.

    It is a few aggregates (counts, largest ids and times, sums of the score columns), one
    small query per table, so a page can keep what it computed from the scores until they
    change, in every process that serves it.
    """
    score, flag = Score.__table__.c, Integer  # type: ignore[attr-defined]
    submission = Submission.__table__.c  # type: ignore[attr-defined]
    agent, model, task = (t.__table__.c for t in (Agent, Model, Task))  # type: ignore[union-attr]
    queries = (
        sql_select(
            func.count(score.id),
            func.max(score.id),
            *(func.sum(score[name]) for name in SCORE_COLUMNS),
            *(func.sum(cast(score[name], flag)) for name in SCORE_FLAGS),
        ),
        sql_select(
            submission.status,
            func.count(submission.id),
            func.max(submission.id),
            func.max(submission.graded_at),
        )
        .group_by(submission.status)
        .order_by(submission.status),
        sql_select(
            func.count(agent.id),
            func.max(agent.id),
            func.sum(agent.model_id),
            func.sum(cast(agent.builtin, flag)),
        ),
        sql_select(func.count(model.id), func.max(model.id)),
        sql_select(func.count(task.id), func.max(task.updated_at)),
    )
    parts = [session.execute(query).all() for query in queries]
    return hashlib.sha256(repr(parts).encode()).hexdigest()

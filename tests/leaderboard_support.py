"""Stored scores for the leaderboard tests: tasks, agents and graded submissions, no runs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from sqlmodel import Session

from task_registry.evaluation import get_or_create_submission, record_score, register_agent
from task_registry.evaluation import register_model as add_model
from task_registry.models import AgentCreate, ModelCreate, ScoreCreate, SubmissionCreate, TaskCreate
from task_registry.tasks import create_task, find_task
from task_registry.types import ScoreSuite, SubmissionStatus, TaskStatus


@dataclass(frozen=True)
class S:
    """A stored score: n, a, g and both rules' verdicts."""

    n: int
    a: int
    g: int
    count: bool
    set: bool


BOTH = S(4, 4, 4, True, True)
NONE = S(4, 0, 4, False, False)
DISAGREE = S(4, 3, 3, True, False)  # golden passes {1,2,3}, candidate {1,2,4}
FAULT = None


def task(session: Session, number: int, merged: datetime, areas: tuple[str, ...] = ()) -> int:
    instance_id = f"acme__lib-{number}"
    found = find_task(session=session, instance_id=instance_id)
    if found is None:
        found = create_task(
            session=session,
            task_in=TaskCreate(
                instance_id=instance_id,
                repo="acme/lib",
                pull_number=number,
                base_commit="0" * 40,
                created_at=merged,
                areas=list(areas),
                status=TaskStatus.published,
            ),
        )
    assert found.id is not None
    return found.id


def scored(
    session: Session,
    agent: str,
    rows: list[tuple[int, datetime, S | None, S | None]],
    *,
    cutoff: date | None = None,
    label: str = "default",
    areas: tuple[str, ...] = (),
) -> None:
    """An agent's graded (or faulted) submissions: (task number, merge time, original, probes)."""
    model_id = None
    if cutoff is not None:
        model_id = add_model(
            session=session, model_in=ModelCreate(name=f"{agent}-model", knowledge_cutoff=cutoff)
        ).id
    row = register_agent(
        session=session, agent_in=AgentCreate(name=agent, command="a {workdir}", model_id=model_id)
    )
    for number, merged, original, probes in rows:
        sub = get_or_create_submission(
            session=session,
            submission_in=SubmissionCreate(
                agent_id=row.id or 0, task_id=task(session, number, merged, areas), run_label=label
            ),
        )
        sub.status = SubmissionStatus.fault if original is None else SubmissionStatus.graded
        session.add(sub)
        for suite, score in ((ScoreSuite.original, original), (ScoreSuite.with_probes, probes)):
            record_score(session=session, score_in=score_in(sub.id or 0, suite, score))


def score_in(submission_id: int, suite: ScoreSuite, s: S | None) -> ScoreCreate:
    s = s or S(0, 0, 0, False, False)
    return ScoreCreate(
        submission_id=submission_id,
        suite=suite,
        n_collected=s.n,
        n_passed=s.a,
        n_golden_passed=s.g,
        passed_fraction=s.a / s.n if s.n else 0.0,
        resolved_count=s.count,
        resolved_set=s.set,
        fault=s.n == 0,
    )


def day(month: int, d: int = 15) -> datetime:
    return datetime(2026, month, d, 12, tzinfo=UTC)

"""Candidate PRs: the miner's output, with the filter verdict and the curator's decision."""

from __future__ import annotations

from sqlmodel import Session, col, select

from task_registry.errors import NotFound
from task_registry.models import CandidatePR, CandidatePRCreate
from task_registry.types import Decision, FilterVerdict, PRKind, utcnow


def upsert_candidate(*, session: Session, candidate_in: CandidatePRCreate) -> CandidatePR:
    """Insert a mined PR, or refresh its mined fields; a curator's decision is never touched."""
    existing = find_candidate(
        session=session,
        repo_id=candidate_in.repo_id,
        number=candidate_in.number,
        kind=candidate_in.kind,
    )
    if existing is None:
        candidate = CandidatePR.model_validate(candidate_in)
    else:
        candidate = existing
        candidate.sqlmodel_update(candidate_in.model_dump())
        candidate.updated_at = utcnow()
    session.add(candidate)
    session.flush()
    return candidate


def find_candidate(
    *, session: Session, repo_id: int, number: int, kind: PRKind = PRKind.github
) -> CandidatePR | None:
    query = select(CandidatePR).where(
        CandidatePR.repo_id == repo_id, CandidatePR.number == number, CandidatePR.kind == kind
    )
    return session.exec(query).first()


def get_candidate(*, session: Session, candidate_id: int) -> CandidatePR:
    candidate = session.get(CandidatePR, candidate_id)
    if candidate is None:
        raise NotFound("candidate", candidate_id)
    return candidate


def list_candidates(
    *,
    session: Session,
    repo_id: int | None = None,
    verdict: FilterVerdict | None = None,
    decision: Decision | None = None,
    limit: int | None = None,
) -> list[CandidatePR]:
    query = select(CandidatePR)
    if repo_id is not None:
        query = query.where(CandidatePR.repo_id == repo_id)
    if verdict is not None:
        query = query.where(CandidatePR.filter_verdict == verdict)
    if decision is not None:
        query = query.where(CandidatePR.decision == decision)
    query = query.order_by(col(CandidatePR.rank_score).desc(), col(CandidatePR.id)).limit(limit)
    return list(session.exec(query))


def decide_candidate(
    *,
    session: Session,
    candidate_id: int,
    decision: Decision,
    reason: str | None = None,
    decided_by: str | None = None,
) -> CandidatePR:
    candidate = get_candidate(session=session, candidate_id=candidate_id)
    candidate.decision, candidate.decision_reason = decision, reason
    candidate.decided_by, candidate.decided_at = decided_by, utcnow()
    session.add(candidate)
    session.flush()
    return candidate

"""PR reports and App installations: keyword-only queries over the report tables.

A report row is created once per upstream PR and updated in place. Posting to
GitHub is guarded by a short lock on the row (owner + expiry, taken with a
compare-and-set update), so two workers never post the same PR at once, and a
worker killed mid-post leaves a lock that simply expires.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from sqlalchemy import func, or_, update
from sqlmodel import Session, col, select

from task_registry.errors import NotFound
from task_registry.models import AppInstallation, EntryFeedback, PRReport
from task_registry.types import ReportStatus, utcnow


def find_report(*, session: Session, repo: str, pull_number: int) -> PRReport | None:
    query = select(PRReport).where(PRReport.repo == repo, PRReport.pull_number == pull_number)
    return session.exec(query).first()


def get_report(*, session: Session, repo: str, pull_number: int) -> PRReport:
    report = find_report(session=session, repo=repo, pull_number=pull_number)
    if report is None:
        raise NotFound("report", f"{repo}#{pull_number}")
    return report


def get_or_create_report(*, session: Session, repo: str, pull_number: int) -> PRReport:
    report = find_report(session=session, repo=repo, pull_number=pull_number)
    if report is None:
        report = PRReport(repo=repo, pull_number=pull_number)
        session.add(report)
        session.flush()
    return report


def list_reports(
    *, session: Session, repo: str | None = None, limit: int = 50, offset: int = 0
) -> list[PRReport]:
    query = select(PRReport)
    if repo is not None:
        query = query.where(PRReport.repo == repo)
    query = query.order_by(col(PRReport.updated_at).desc(), col(PRReport.id).desc())
    return list(session.exec(query.offset(offset).limit(limit)))


def count_reports(*, session: Session, repo: str | None = None) -> int:
    query = select(func.count()).select_from(PRReport)
    if repo is not None:
        query = query.where(PRReport.repo == repo)
    return int(session.exec(query).one())


def save_report(*, session: Session, report: PRReport, **fields: object) -> PRReport:
    """Update fields of a report row and stamp it."""
    for name, value in fields.items():
        if name not in PRReport.model_fields:
            raise AttributeError(f"PRReport has no field {name!r}")
        setattr(report, name, value)
    report.updated_at = utcnow()
    session.add(report)
    session.flush()
    return report


def set_report_status(
    *, session: Session, report: PRReport, status: ReportStatus, reason: str | None = None
) -> PRReport:
    return save_report(session=session, report=report, status=status, skip_reason=reason)


def take_post_lock(*, session: Session, report_id: int, owner: str, ttl_s: float) -> bool:
    """Hold the report's posting lock for ``ttl_s`` seconds; False while another owner holds it."""
    now = utcnow()
    free = or_(
        col(PRReport.lock_owner).is_(None),
        col(PRReport.lock_owner) == owner,
        col(PRReport.lock_expires_at) < now,
    )
    statement = (
        update(PRReport)
        .where(col(PRReport.id) == report_id, free)
        .values(lock_owner=owner, lock_expires_at=now + timedelta(seconds=ttl_s))
    )
    return session.execute(statement).rowcount == 1  # type: ignore[attr-defined]


def release_post_lock(*, session: Session, report_id: int, owner: str) -> None:
    statement = (
        update(PRReport)
        .where(col(PRReport.id) == report_id, col(PRReport.lock_owner) == owner)
        .values(lock_owner=None, lock_expires_at=None)
    )
    session.execute(statement)


# --- GitHub App installations --------------------------------------------------------


def find_installation(*, session: Session, installation_id: int) -> AppInstallation | None:
    query = select(AppInstallation).where(AppInstallation.installation_id == installation_id)
    return session.exec(query).first()


def upsert_installation(
    *,
    session: Session,
    installation_id: int,
    account: str,
    repositories: Iterable[str] | None = None,
    active: bool = True,
) -> AppInstallation:
    """Record an installation; ``repositories=None`` keeps the list already stored."""
    row = find_installation(session=session, installation_id=installation_id)
    if row is None:
        row = AppInstallation(installation_id=installation_id, account=account)
    row.account, row.active, row.updated_at = account, active, utcnow()
    if repositories is not None:
        row.repositories = sorted(set(repositories))
    session.add(row)
    session.flush()
    return row


def change_installation_repos(
    *,
    session: Session,
    installation_id: int,
    account: str,
    added: Iterable[str] = (),
    removed: Iterable[str] = (),
) -> AppInstallation:
    row = upsert_installation(session=session, installation_id=installation_id, account=account)
    gone = {name.lower() for name in removed}
    kept = [name for name in row.repositories if name.lower() not in gone]
    row.repositories = sorted(set(kept) | set(added))
    session.add(row)
    session.flush()
    return row


def list_installations(*, session: Session) -> list[AppInstallation]:
    return list(session.exec(select(AppInstallation).order_by(col(AppInstallation.id))))


def installation_for(*, session: Session, repo: str) -> AppInstallation | None:
    """The active installation covering ``repo`` (the App and its webhook are installed there)."""
    for row in list_installations(session=session):
        if row.covers(repo):
            return row
    return None


# --- maintainers' feedback on report entries ---------------------------------------------


def record_feedback(
    *,
    session: Session,
    repo: str,
    pull_number: int,
    adversarial_id: int,
    operator: str,
    useful: bool,
    author: str,
) -> EntryFeedback:
    """Store a maintainer's vote on one entry; their earlier vote on it is replaced."""
    query = select(EntryFeedback).where(
        EntryFeedback.repo == repo,
        EntryFeedback.pull_number == pull_number,
        EntryFeedback.adversarial_id == adversarial_id,
        EntryFeedback.author == author,
    )
    row = session.exec(query).first() or EntryFeedback(
        repo=repo,
        pull_number=pull_number,
        adversarial_id=adversarial_id,
        operator=operator,
        useful=useful,
        author=author,
    )
    row.useful, row.created_at = useful, utcnow()
    session.add(row)
    session.flush()
    return row


def votes_by_operator(*, session: Session, repo: str) -> dict[str, tuple[int, int]]:
    """Per mutation operator, the repository's (useful, not useful) vote counts."""
    query = (
        select(EntryFeedback.operator, EntryFeedback.useful, func.count())
        .where(EntryFeedback.repo == repo)
        .group_by(col(EntryFeedback.operator), col(EntryFeedback.useful))
    )
    found: dict[str, tuple[int, int]] = {}
    for operator, useful, count in session.exec(query).all():
        yes, no = found.get(operator, (0, 0))
        found[operator] = (yes + count, no) if useful else (yes, no + count)
    return found


def feedback_by_month(*, session: Session) -> list[tuple[str, int, int]]:
    """Per calendar month (``YYYY-MM``), the (useful, not useful) votes of every repository."""
    rows = session.exec(select(EntryFeedback.created_at, EntryFeedback.useful)).all()
    months: dict[str, list[int]] = {}
    for created, useful in rows:
        counts = months.setdefault(created.strftime("%Y-%m"), [0, 0])
        counts[0 if useful else 1] += 1
    return [(month, yes, no) for month, (yes, no) in sorted(months.items())]

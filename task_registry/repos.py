"""Repositories and their mining cursors."""

from __future__ import annotations

from sqlmodel import Session, select

from probewatch.names import check_repo_name
from task_registry.errors import NotFound
from task_registry.models import Cursor, Repo, RepoCreate
from task_registry.types import CursorSource, utcnow


def get_or_create_repo(*, session: Session, repo_in: RepoCreate) -> Repo:
    """The stored repository; a name that is not ``owner/name`` is refused, nothing stored."""
    check_repo_name(repo_in.full_name)
    repo = find_repo(session=session, full_name=repo_in.full_name)
    if repo is not None:
        return repo
    repo = Repo.model_validate(repo_in)
    session.add(repo)
    session.flush()
    return repo


def find_repo(*, session: Session, full_name: str) -> Repo | None:
    return session.exec(select(Repo).where(Repo.full_name == full_name)).first()


def get_repo(*, session: Session, full_name: str) -> Repo:
    repo = find_repo(session=session, full_name=full_name)
    if repo is None:
        raise NotFound("repo", full_name)
    return repo


def list_repos(*, session: Session) -> list[Repo]:
    return list(session.exec(select(Repo).order_by(Repo.full_name)))


def get_cursor(*, session: Session, repo_id: int, source: CursorSource) -> str | None:
    cursor = _cursor_row(session, repo_id, source)
    return cursor.position if cursor else None


def set_cursor(*, session: Session, repo_id: int, source: CursorSource, position: str) -> Cursor:
    cursor = _cursor_row(session, repo_id, source)
    if cursor is None:
        cursor = Cursor(repo_id=repo_id, source=source, position=position)
    cursor.position, cursor.updated_at = position, utcnow()
    session.add(cursor)
    session.flush()
    return cursor


def _cursor_row(session: Session, repo_id: int, source: CursorSource) -> Cursor | None:
    query = select(Cursor).where(Cursor.repo_id == repo_id, Cursor.source == source)
    return session.exec(query).first()

"""Model-author exchanges: every request to an OpenAI-compatible endpoint, and its answer."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Session, col, select

from task_registry.models import AuthorExchangeRecord
from task_registry.tasks import find_task


def record_exchange(
    *,
    session: Session,
    instance_id: str | None,
    author: str,
    purpose: str,
    round: int,
    endpoint: str,
    model: str,
    request: str,
    response: str | None,
    status_code: int | None,
    error: str | None,
    started_at: datetime,
    duration_s: float,
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
) -> AuthorExchangeRecord:
    """Store one exchange; it hangs off the task when the task exists already."""
    task = find_task(session=session, instance_id=instance_id) if instance_id else None
    row = AuthorExchangeRecord(
        task_id=task.id if task else None,
        author=author,
        purpose=purpose,
        round=round,
        endpoint=endpoint,
        model=model,
        request=request,
        response=response,
        status_code=status_code,
        error=error,
        started_at=started_at,
        duration_s=duration_s,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )
    session.add(row)
    session.flush()
    return row


def list_exchanges(*, session: Session, task_id: int | None = None) -> list[AuthorExchangeRecord]:
    query = select(AuthorExchangeRecord)
    if task_id is not None:
        query = query.where(AuthorExchangeRecord.task_id == task_id)
    return list(session.exec(query.order_by(col(AuthorExchangeRecord.id))))

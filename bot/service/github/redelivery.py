"""Redeliver webhook deliveries that never reached us (GitHub does not retry by itself).

The App's delivery log (``GET /app/hook/deliveries``, JWT auth) lists every
attempt. A delivery (one ``guid``) failed when none of its attempts got a 2xx
answer; if the registry has not stored that guid either (it was never received,
for example while the service was down), its latest attempt is redelivered
(``POST /app/hook/deliveries/{id}/attempts``). The webhook's dedupe on the
delivery id makes a redelivery of something already received harmless anyway.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from pydantic import BaseModel

from task_registry.types import utcnow

LOOKBACK = timedelta(hours=24)
MAX_REDELIVERIES = 50
PAGE_SIZE = 100


class HookAttempt(BaseModel):
    id: int
    guid: str
    status_code: int
    delivered_at: datetime
    redelivery: bool = False

    @property
    def succeeded(self) -> bool:
        return 200 <= self.status_code < 300


def to_redeliver(
    attempts: Iterable[HookAttempt],
    received: Callable[[str], bool],
    *,
    since: datetime | None = None,
    limit: int = MAX_REDELIVERIES,
) -> list[HookAttempt]:
    """The latest attempt of each failed, never-received delivery since ``since``, oldest first."""
    since = since or utcnow() - LOOKBACK
    by_guid: dict[str, list[HookAttempt]] = defaultdict(list)
    for attempt in attempts:
        by_guid[attempt.guid].append(attempt)
    failed = [
        max(tries, key=lambda a: a.id)
        for guid, tries in by_guid.items()
        if not any(a.succeeded for a in tries) and not received(guid)
    ]
    recent = [a for a in failed if a.delivered_at >= since]
    return sorted(recent, key=lambda a: a.id)[:limit]


def fetch_attempts(requester: object) -> list[HookAttempt]:
    """The latest page of the App's delivery log (newest first, as GitHub lists it)."""
    _, data = requester.requestJsonAndCheck(  # type: ignore[attr-defined]
        "GET", "/app/hook/deliveries", parameters={"per_page": PAGE_SIZE}
    )
    return [HookAttempt.model_validate(item) for item in data or []]


def redeliver(requester: object, attempt: HookAttempt) -> None:
    requester.requestJsonAndCheck("POST", f"/app/hook/deliveries/{attempt.id}/attempts")  # type: ignore[attr-defined]

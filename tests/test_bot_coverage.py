"""The bot's coverage table read from the registry: which survivors are evidence for a promise."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from bot.report.coverage import coverage_from_registry
from task_registry.db import session_scope
from task_registry.tasks import list_adversarials
from tests.factories import make_task


def test_a_survivor_rejected_by_a_promises_probe_is_evidence_for_that_promise(
    sqlite_engine: Engine,
) -> None:
    """Regression: a mechanical mutant of the demo weight sync was tagged ``state`` (its line
    mentions a version), so the traffic promise its probe defends showed no evidence and the
    report said every promise was checked."""
    with session_scope(sqlite_engine) as session:
        task = make_task(session, 41)
        (patch,) = list_adversarials(session=session, task_id=task.id or 0)
        patch.promise_category = "state"  # the guess; the traffic probe rejects it
        session.add(patch)
    with session_scope(sqlite_engine) as session:
        table = coverage_from_registry(session, task)
    traffic = next(row for row in table.promises if row.category == "resource.traffic")
    functional = next(row for row in table.promises if row.category == "functional")
    assert [s.operator for s in traffic.survivors] == ["force_branch_true"]
    assert traffic.missed
    assert functional.survivors == ()

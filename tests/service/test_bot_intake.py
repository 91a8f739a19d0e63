"""Group commit of webhook intake: deliveries that arrive while a batch commits share the next
commit; each answers only after its own commit; one failing delivery leaves the others stored."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from bot.service.intake import GroupCommitWriter
from task_registry.db import session_scope
from task_registry.deliveries import record_delivery
from task_registry.models import WebhookDelivery


def store(delivery_id: str, pause_s: float = 0.0):  # type: ignore[no-untyped-def]
    def run(session: Session) -> dict[str, object]:
        time.sleep(pause_s)
        _, created = record_delivery(
            session=session, delivery_id=delivery_id, event="ping", payload=b"{}"
        )
        return {"created": created}

    return run


def stored_ids(engine: Engine) -> list[str]:
    with session_scope(engine) as session:
        return sorted(d.delivery_id for d in session.exec(select(WebhookDelivery)))


def test_deliveries_arriving_during_a_commit_share_the_next_one(engine: Engine) -> None:
    commits: list[int] = []
    event.listen(engine, "commit", lambda connection: commits.append(1))
    writer = GroupCommitWriter(engine)
    slow = writer.submit(store("slow", pause_s=0.3))
    time.sleep(0.05)  # the writer is inside the first batch now
    rest = [writer.submit(store(f"d{i:02}")) for i in range(20)]

    answers = [f.result(timeout=10) for f in [slow, *rest]]
    writer.stop()

    assert all(answer == {"created": True} for answer in answers)
    assert stored_ids(engine) == sorted(["slow", *(f"d{i:02}" for i in range(20))])
    assert len(commits) <= 3  # one for the slow batch, then the twenty together


def test_a_failing_delivery_does_not_undo_the_rest_of_its_batch(engine: Engine) -> None:
    def broken(session: Session) -> dict[str, object]:
        record_delivery(session=session, delivery_id="broken", event="ping", payload=b"{}")
        raise ValueError("bad payload")

    writer = GroupCommitWriter(engine)
    gate = threading.Event()
    first = writer.submit(lambda session: (gate.wait(5), {"created": True})[1])
    futures: list[Future[dict[str, object]]] = [
        writer.submit(store("a")),
        writer.submit(broken),
        writer.submit(store("b")),
    ]
    gate.set()

    assert first.result(timeout=10) == {"created": True}
    assert futures[0].result(timeout=10) == {"created": True}
    with pytest.raises(ValueError, match="bad payload"):
        futures[1].result(timeout=10)
    assert futures[2].result(timeout=10) == {"created": True}
    writer.stop()
    assert stored_ids(engine) == ["a", "b"]


def test_a_second_delivery_of_an_id_in_the_same_batch_is_a_duplicate(engine: Engine) -> None:
    writer = GroupCommitWriter(engine)
    gate = threading.Event()
    writer.submit(lambda session: (gate.wait(5), {})[1])
    twice = [writer.submit(store("same")), writer.submit(store("same"))]
    gate.set()
    assert [f.result(timeout=10) for f in twice] == [{"created": True}, {"created": False}]
    writer.stop()

"""Group commit for webhook intake: one thread stores deliveries in batches.

Storing a delivery and queuing its job must be durable before GitHub gets its
answer, and a commit costs a disk flush (milliseconds on SQLite). Request
threads therefore hand their delivery to one writer thread, which stores
everything that arrived while the previous batch committed in one transaction,
each delivery in its own savepoint, and answers all of them after the one
commit. Under load the flushes are shared; with one request at a time it is a
plain transaction. One writer per process also means request threads never
queue on SQLite's database lock.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from task_registry.db import session_scope

log = logging.getLogger(__name__)
MAX_BATCH = 128

Store = Callable[[Session], dict[str, Any]]


@dataclass
class _Item:
    store: Store
    future: Future[dict[str, Any]] = field(default_factory=Future)


class GroupCommitWriter:
    def __init__(self, engine: Engine, max_batch: int = MAX_BATCH) -> None:
        self.engine, self.max_batch = engine, max_batch
        self._queue: queue.Queue[_Item | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, store: Store) -> Future[dict[str, Any]]:
        """Queue ``store(session)``; the future resolves after its batch has committed."""
        self._ensure_started()
        item = _Item(store)
        self._queue.put(item)
        return item.future

    def stop(self, timeout_s: float = 5.0) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout_s)
            self._thread = None

    def _ensure_started(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="intake-writer", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first, *self._drain()]
            stop = None in batch
            self._write([item for item in batch if item is not None])
            if stop:
                return

    def _drain(self) -> list[_Item | None]:
        extra: list[_Item | None] = []
        while len(extra) < self.max_batch - 1:
            try:
                extra.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return extra

    def _write(self, batch: list[_Item]) -> None:
        answers: list[tuple[_Item, dict[str, Any] | BaseException]] = []
        try:
            with session_scope(self.engine) as session:
                _take_write_lock(session)
                for item in batch:
                    answers.append((item, _store_one(session, item)))
        except Exception as exc:  # the commit failed: no delivery of the batch was stored
            log.exception("intake: a batch of %d deliveries failed to commit", len(batch))
            for item in batch:
                item.future.set_exception(exc)
            return
        for item, answer in answers:
            if isinstance(answer, BaseException):
                item.future.set_exception(answer)
            else:
                item.future.set_result(answer)


def _take_write_lock(session: Session) -> None:
    """On SQLite, take the write lock before the first read.

    A transaction that reads and then writes fails at once ("database is locked", with no
    wait) when another connection committed in between; one that writes first waits for the
    lock under the busy timeout instead.
    """
    if session.get_bind().dialect.name == "sqlite":
        session.execute(text("UPDATE webhook_delivery SET id = id WHERE 0"))


def _store_one(session: Session, item: _Item) -> dict[str, Any] | BaseException:
    """One delivery in its own savepoint: its failure leaves the rest of the batch alone."""
    try:
        with session.begin_nested():
            return item.store(session)
    except Exception as exc:
        return exc

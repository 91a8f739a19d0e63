"""Snapshot-and-diff of counters: how much did each one move inside a block?

Work counters (cache hits, kernel launches, tokens recomputed, bytes sent) are
the cheapest trustworthy observable of a promise such as "the second call is
served from the cache": they do not depend on the machine's speed. A counter
is an attribute (dotted paths allowed) or a key of a mapping; a missing
counter fails the probe, because a promise about it cannot hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from probe_builder.kit.errors import CounterMismatch, KitUsageError

Expectation = int | float | Callable[[float], bool]


@dataclass
class CounterDeltas:
    """How far each counter moved; filled in when the block exits."""

    deltas: dict[str, float] = field(default_factory=dict)

    def __getitem__(self, name: str) -> float:
        return self.deltas[name]


@contextmanager
def counter_delta(obj: Any, **expected: Expectation) -> Iterator[CounterDeltas]:
    """Check that each named counter of ``obj`` moves by exactly the expected amount.

    An expectation is a number (exact delta) or a predicate on the delta
    (``hits=lambda d: d >= 1``). Dotted names are given with ``__`` in keywords:
    ``counter_delta(engine, stats__hits=1)`` reads ``engine.stats.hits``.
    """
    if not expected:
        raise KitUsageError("counter_delta needs at least one counter=expected")
    names = {keyword: keyword.replace("__", ".") for keyword in expected}
    before = {keyword: read_counter(obj, path) for keyword, path in names.items()}
    result = CounterDeltas()
    yield result
    for keyword, path in names.items():
        delta = read_counter(obj, path) - before[keyword]
        result.deltas[keyword] = delta
        _check(path, delta, expected[keyword])


def read_counter(obj: Any, path: str) -> float:
    """The counter at a dotted ``path`` of attributes or mapping keys."""
    value = obj
    for part in path.split("."):
        value = _lookup(value, part, path, obj)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CounterMismatch(
            f"counter {path!r} of {type(obj).__name__} is not a number: {value!r}"
        )
    return value


def _lookup(value: Any, part: str, path: str, root: Any) -> Any:
    if isinstance(value, Mapping) and part in value:
        return value[part]
    if hasattr(value, part):
        return getattr(value, part)
    raise CounterMismatch(f"{type(root).__name__} has no counter {path!r}")


def _check(path: str, delta: float, expectation: Expectation) -> None:
    if callable(expectation):
        if not expectation(delta):
            raise CounterMismatch(f"counter {path!r} moved by {delta}, which the check rejects")
    elif delta != expectation:
        raise CounterMismatch(f"counter {path!r} moved by {delta}, expected {expectation}")

"""Exceptions of the probe kit, in one place.

Two families matter to the acceptance protocol. ``ProbeUnsupported`` means the
observable cannot be measured on this machine: the plugin turns it into a skip
with its reason, and a skip is never an acceptance. Every ``*Mismatch`` or
``*Failed`` class is an ``AssertionError``: the probe ran and the promise was
broken, so pytest reports an ordinary failure.
"""

from __future__ import annotations


class ProbeUnsupported(Exception):
    """The observable a probe needs cannot be measured here (no CUDA, nothing seen, ...)."""


class KitUsageError(ValueError):
    """A kit helper was called in a way that could only give a meaningless answer."""


class RankFailed(RuntimeError):
    """A rank died, could not report its result, or raised an exception that cannot be sent back."""

    def __init__(self, rank: int, reason: str) -> None:
        self.rank = rank
        super().__init__(f"rank {rank}: {reason}")


class RankTimeout(RankFailed):
    """Ranks were still running at the deadline; every rank was killed."""


class LifecycleMismatch(AssertionError):
    """A step of a lifecycle script gave a different result than a freshly built reference."""


class CounterMismatch(AssertionError):
    """A counter moved by a different amount than expected, or does not exist."""


class CompileCheckFailed(AssertionError):
    """A compiled function disagreed with eager execution or recompiled too often."""


class GraphReplayMismatch(AssertionError):
    """A CUDA graph replay on new inputs disagreed with eager execution."""

"""Cost of a candidate relative to a baseline, measured both in one run.

Wall-clock time on a shared runner drifts, so both functions are measured in
the same process, interleaved (base, candidate, base, ...) after a warm-up,
and compared by their medians. Where the promise is about work rather than
seconds ("recomputes only the new tokens"), a work counter is the better
observable: ``measure="flops"`` counts floating-point operations with torch's
flop counter, and any zero-argument callable returning a monotone counter
(kernel launches, tokens processed) can be given instead. Work counts are
deterministic; a ratio of them needs no tolerance for noise.

GPU work is asynchronous: a CUDA call returns once its kernel is queued, so a
clock read around it times the launch, not the kernel. Where CUDA is in use,
each wall-clock sample waits for the device before it starts and before it
stops, and so counts the kernels the call queued.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

from probe_builder.kit.errors import KitUsageError

WALL: Final = "wall"
FLOPS: Final = "flops"
Measure = Literal["wall", "flops"] | Callable[[], float]


@dataclass(frozen=True)
class TimeRatio:
    """Medians of both sides in the same unit, and candidate / base."""

    base: float
    candidate: float
    unit: str
    base_samples: tuple[float, ...]
    candidate_samples: tuple[float, ...]

    @property
    def ratio(self) -> float:
        if self.base == 0:
            raise KitUsageError(f"the baseline measured 0 {self.unit}: no ratio can be formed")
        return self.candidate / self.base


def time_ratio(
    base: Callable[[], Any],
    cand: Callable[[], Any],
    warmup: int = 1,
    repeats: int = 5,
    *,
    measure: Measure = WALL,
) -> TimeRatio:
    """Measure ``base`` and ``cand`` ``repeats`` times each, interleaved, after ``warmup`` calls."""
    if repeats < 1:
        raise KitUsageError("time_ratio needs repeats >= 1")
    sample, unit = _sampler(measure)
    for _ in range(warmup):
        base()
        cand()
    base_samples, cand_samples = [], []
    for _ in range(repeats):
        base_samples.append(sample(base))
        cand_samples.append(sample(cand))
    return TimeRatio(
        base=statistics.median(base_samples),
        candidate=statistics.median(cand_samples),
        unit=unit,
        base_samples=tuple(base_samples),
        candidate_samples=tuple(cand_samples),
    )


def _sampler(measure: Measure) -> tuple[Callable[[Callable[[], Any]], float], str]:
    if measure == WALL:
        return _wall_seconds, "seconds"
    if measure == FLOPS:
        return _flops, "flops"
    if callable(measure):
        return (lambda fn: _counter_delta(measure, fn)), "work units"
    raise KitUsageError(f"measure must be 'wall', 'flops' or a counter callable, not {measure!r}")


def _wall_seconds(fn: Callable[[], Any]) -> float:
    _wait_for_device()
    start = time.perf_counter()
    fn()
    _wait_for_device()
    return time.perf_counter() - start


def _wait_for_device() -> None:
    """Let queued CUDA kernels finish; nothing where the process has not used CUDA."""
    torch = sys.modules.get("torch")  # a probe that never imported torch launched no kernel
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def _flops(fn: Callable[[], Any]) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn()
    return float(counter.get_total_flops())


def _counter_delta(counter: Callable[[], float], fn: Callable[[], Any]) -> float:
    before = counter()
    fn()
    return float(counter() - before)

"""How far a bench's ratio could move on other PRs like these: a bootstrap over PRs.

A labelled set is a sample of PRs, and its promises come in clumps (one PR's
description may hold five of a category, another none), so a ratio's
uncertainty is that of the PRs drawn, not of the promises. Each ratio is kept
as one (numerator, denominator) pair per PR; the PRs are drawn again with
replacement, the ratio of the sums is taken each time, and the interval is the
middle ``level`` of those ratios. Every ratio of one resampling is taken on the
same drawn PRs, and the draws are seeded, so a run is reproducible.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence

Pair = tuple[int, int]  # one PR's numerator and denominator
LEVEL = 0.9
RESAMPLES = 1000
SEED = 20261203


def intervals(
    ratios: Mapping[str, Sequence[Pair]],
    *,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> dict[str, tuple[float, float] | None]:
    """For each named ratio (its pairs in the same PR order as every other's), the
    percentile interval of the ratio over PRs resampled with replacement; None when no PR
    has a denominator. A resampling whose denominator is 0 says nothing of the ratio and is
    left out."""
    if not 0 < level < 1:
        raise ValueError(f"level {level}: give a share of the draws between 0 and 1, as 0.9")
    sizes = {len(pairs) for pairs in ratios.values()}
    if len(sizes) > 1:
        raise ValueError(f"ratios over different PRs ({sorted(sizes)} PRs): give one pair per PR")
    count = sizes.pop() if sizes else 0
    rng = random.Random(seed)
    drawn: dict[str, list[float]] = {name: [] for name in ratios}
    for _ in range(resamples if count else 0):
        weights = Counter(rng.randrange(count) for _ in range(count))
        for name, pairs in ratios.items():
            numerator = sum(pairs[i][0] * w for i, w in weights.items())
            denominator = sum(pairs[i][1] * w for i, w in weights.items())
            if denominator:
                drawn[name].append(numerator / denominator)
    return {name: _percentiles(values, level) for name, values in drawn.items()}


def _percentiles(values: list[float], level: float) -> tuple[float, float] | None:
    if not values:
        return None
    values.sort()
    tail = (1 - level) / 2
    low = values[max(0, math.floor(tail * len(values)))]
    high = values[min(len(values) - 1, math.ceil((1 - tail) * len(values)) - 1)]
    return low, high


def render_interval(bounds: tuple[float, float] | None) -> str:
    return "     -     " if bounds is None else f"[{bounds[0]:4.2f},{bounds[1]:4.2f}]"

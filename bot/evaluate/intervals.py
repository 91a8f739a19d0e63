"""Confidence intervals for the leaderboard's rates, honest when only a few tasks are scored.

A bootstrap over three tasks that all resolve resamples only ones and reports ``[100, 100]``;
the Wilson score interval says what three successes out of three can and cannot show
(roughly ``[44, 100]`` at 95%). It is computed from the successes and the number of tasks
alone, so the leaderboard, its JSON, its plot and the terminal all show the same interval.
For the Passed rate, a mean of per-task fractions in ``[0, 1]``, the binomial variance
``p(1 - p)`` is the largest such a mean can have, so the same formula errs on the wide side.
"""

from __future__ import annotations

import math
from statistics import NormalDist

DEFAULT_LEVEL = 0.95


def z_score(level: float = DEFAULT_LEVEL) -> float:
    """The two-sided standard normal quantile of a confidence level (1.96 for 95%)."""
    if not 0 < level < 1:
        raise ValueError(f"confidence level must lie strictly between 0 and 1, not {level}")
    return NormalDist().inv_cdf(1 - (1 - level) / 2)


def wilson_interval(
    successes: float, n: int, *, level: float = DEFAULT_LEVEL
) -> tuple[float, float]:
    """The Wilson score interval of a proportion, as fractions in ``[0, 1]``.

    ``successes`` may be fractional (a sum of per-task fractions); with no task there is
    nothing to estimate and the interval is the whole range."""
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return 0.0, 1.0
    z = z_score(level)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # At p = 0 or 1 one end is exactly 0 or 1; rounding must not move it off.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high

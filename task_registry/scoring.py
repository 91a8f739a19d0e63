"""Scores of agent submissions, exactly as DESIGN.md "Scoring" defines them.

For task p: N_p = the tests collected when the golden patch ran on that hardware
(failed and skipped ones included), a_p = those of N_p the candidate passes,
g_p = those the golden passes. Passed = 100/P · Σ a_p/N_p; Resolved by the
count rule is a_p ≥ g_p, by the set rule G_p ⊆ A_p. Empty, missing and
unappliable submissions score 0 and stay in the denominator; runner faults are
excluded and counted. Every rate carries a binomial standard error and a
bootstrap interval; two runs on the same tasks compare pairwise with an exact
McNemar test. Pure functions over typed records: the registry supplies them.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from enum import StrEnum


class SubmissionState(StrEnum):
    graded = "graded"  # applied and ran: per-test results count
    empty = "empty"  # the agent changed nothing
    missing = "missing"  # no submission at all
    unappliable = "unappliable"  # did not apply, or was refused
    fault = "fault"  # the runner failed, not the candidate: excluded


ZERO_STATES = frozenset(
    {SubmissionState.empty, SubmissionState.missing, SubmissionState.unappliable}
)


@dataclass(frozen=True)
class TaskOutcome:
    instance_id: str
    merged_at: datetime
    collected: frozenset[str]  # N_p: what the golden run collected
    golden_passed: frozenset[str]  # G_p
    candidate_passed: frozenset[str] = frozenset()  # A_p before restricting to N_p
    state: SubmissionState = SubmissionState.graded
    areas: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskScore:
    instance_id: str
    n: int
    a: int
    g: int
    passed_fraction: float
    resolved_count: bool
    resolved_set: bool

    @property
    def rules_disagree(self) -> bool:
        return self.resolved_count != self.resolved_set


@dataclass(frozen=True)
class Rate:
    """A percentage with its binomial standard error and a bootstrap interval (all in %)."""

    value: float
    se: float
    low: float
    high: float


@dataclass(frozen=True)
class Summary:
    tasks: int  # P: scored tasks (faults excluded)
    passed: Rate
    resolved_count: Rate
    resolved_set: Rate
    resolved_count_n: int
    resolved_set_n: int
    disagreements: int  # tasks where the two Resolved rules differ
    faults: int
    fault_tasks: tuple[str, ...] = ()
    scores: tuple[TaskScore, ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class PairedComparison:
    """Two runs on the same tasks: which tasks one resolves and the other does not."""

    fixed: int  # resolved by b, not by a
    broken: int  # resolved by a, not by b
    both: int
    neither: int
    p_value: float  # exact two-sided McNemar (binomial on the discordant pairs)


def score_task(outcome: TaskOutcome) -> TaskScore:
    """One task's numbers; a zero-state submission passes nothing."""
    passed = (
        outcome.candidate_passed & outcome.collected
        if outcome.state is SubmissionState.graded
        else frozenset()
    )
    golden = outcome.golden_passed & outcome.collected
    n = len(outcome.collected)
    return TaskScore(
        instance_id=outcome.instance_id,
        n=n,
        a=len(passed),
        g=len(golden),
        passed_fraction=len(passed) / n if n else 0.0,
        resolved_count=len(passed) >= len(golden),
        resolved_set=golden <= passed,
    )


def summarize(outcomes: Iterable[TaskOutcome], *, resamples: int = 2000, seed: int = 0) -> Summary:
    outcomes = list(outcomes)
    faults = tuple(o.instance_id for o in outcomes if o.state is SubmissionState.fault)
    scores = tuple(score_task(o) for o in outcomes if o.state is not SubmissionState.fault)
    return summarize_scores(scores, fault_tasks=faults, resamples=resamples, seed=seed)


def summarize_scores(
    scores: Iterable[TaskScore],
    *,
    fault_tasks: Iterable[str] = (),
    resamples: int = 2000,
    seed: int = 0,
) -> Summary:
    """The summary of task scores already computed (e.g. read back from the registry);
    ``fault_tasks`` are the faulted tasks, excluded and counted. With ``resamples=0`` no
    bootstrap is drawn and each rate's interval is its point."""
    scores, faults = tuple(scores), tuple(fault_tasks)
    fractions = [s.passed_fraction for s in scores]
    counted = [1.0 if s.resolved_count else 0.0 for s in scores]
    by_set = [1.0 if s.resolved_set else 0.0 for s in scores]
    return Summary(
        tasks=len(scores),
        passed=_rate(fractions, resamples, seed),
        resolved_count=_rate(counted, resamples, seed),
        resolved_set=_rate(by_set, resamples, seed),
        resolved_count_n=int(sum(counted)),
        resolved_set_n=int(sum(by_set)),
        disagreements=sum(s.rules_disagree for s in scores),
        faults=len(faults),
        fault_tasks=faults,
        scores=scores,
    )


def _rate(values: Sequence[float], resamples: int, seed: int) -> Rate:
    if not values:
        return Rate(0.0, 0.0, 0.0, 0.0)
    mean = sum(values) / len(values)
    low, high = (mean, mean)  # no resamples: the caller draws its own interval
    if resamples:
        low, high = bootstrap_interval(values, resamples=resamples, seed=seed)
    return Rate(100 * mean, 100 * standard_error(values), 100 * low, 100 * high)


def standard_error(values: Sequence[float]) -> float:
    """Binomial SE sqrt(p(1-p)/n) for 0/1 values; the SE of the mean for fractions."""
    n = len(values)
    if n < 2:
        return 0.0
    mean = sum(values) / n
    if all(v in (0.0, 1.0) for v in values):
        return math.sqrt(mean * (1 - mean) / n)
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    return math.sqrt(variance / n)


def bootstrap_interval(
    values: Sequence[float], *, resamples: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap over tasks (deterministic for a seed)."""
    if not values:
        return 0.0, 0.0
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(resamples))
    tail = (1 - level) / 2
    return means[int(tail * (resamples - 1))], means[int((1 - tail) * (resamples - 1))]


def mcnemar_exact(discordant_a: int, discordant_b: int) -> float:
    """Two-sided exact p-value of McNemar's test (a sign test on the discordant pairs)."""
    n = discordant_a + discordant_b
    if n == 0:
        return 1.0
    k = min(discordant_a, discordant_b)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def compare_paired(a: Mapping[str, bool], b: Mapping[str, bool]) -> PairedComparison:
    """Resolved-or-not per task in two runs; only tasks present in both count."""
    shared = sorted(set(a) & set(b))
    fixed = sum(1 for t in shared if b[t] and not a[t])
    broken = sum(1 for t in shared if a[t] and not b[t])
    both = sum(1 for t in shared if a[t] and b[t])
    return PairedComparison(
        fixed=fixed,
        broken=broken,
        both=both,
        neither=len(shared) - fixed - broken - both,
        p_value=mcnemar_exact(fixed, broken),
    )


def after_cutoff(
    outcomes: Iterable[TaskOutcome], cutoff: date, *, margin_days: int = 0
) -> list[TaskOutcome]:
    """Contamination-free selection: only tasks merged after cutoff (+ margin)."""
    start = cutoff_start(cutoff, margin_days=margin_days)
    return [o for o in outcomes if o.merged_at >= start]


def cutoff_start(cutoff: date, *, margin_days: int = 0) -> datetime:
    """The first moment that counts as after ``cutoff`` (+ margin): the next day, 00:00 UTC.
    A task merged on the cutoff day itself may be in the model's training data."""
    return datetime.combine(cutoff + timedelta(days=margin_days + 1), datetime.min.time(), UTC)


class Window(StrEnum):
    month = "month"
    quarter = "quarter"


def window_label(moment: datetime, window: Window) -> str:
    moment = moment.astimezone(UTC)
    if window is Window.month:
        return f"{moment.year}-{moment.month:02d}"
    return f"{moment.year}-Q{(moment.month - 1) // 3 + 1}"


def by_window(
    outcomes: Iterable[TaskOutcome], window: Window, **summary_options: int
) -> list[tuple[str, Summary]]:
    """Scores per time window of merge time, oldest first."""
    return _grouped(outcomes, lambda o: [window_label(o.merged_at, window)], **summary_options)


def by_area(outcomes: Iterable[TaskOutcome], **summary_options: int) -> list[tuple[str, Summary]]:
    """Scores per area label (a task with several labels counts in each)."""
    return _grouped(outcomes, lambda o: list(o.areas) or ["(none)"], **summary_options)


def _grouped(
    outcomes: Iterable[TaskOutcome],
    keys: Callable[[TaskOutcome], list[str]],
    **summary_options: int,
) -> list[tuple[str, Summary]]:
    groups: dict[str, list[TaskOutcome]] = {}
    for outcome in outcomes:
        for key in keys(outcome):
            groups.setdefault(key, []).append(outcome)
    return [(key, summarize(groups[key], **summary_options)) for key in sorted(groups)]


def overturned(original: Summary, with_probes: Summary, *, rule: str = "count") -> list[str]:
    """Tasks resolved on the original tests but not once the probes run (InfraDev's 102 → 69)."""
    attr = "resolved_count" if rule == "count" else "resolved_set"
    before = {s.instance_id for s in original.scores if getattr(s, attr)}
    after = {s.instance_id for s in with_probes.scores if getattr(s, attr)}
    return sorted(before - after)

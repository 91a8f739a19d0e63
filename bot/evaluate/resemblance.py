"""Which control a failed submission resembles: the snapshot, the hollow patch, an adversarial.

A submission that is not resolved fails some tests; each control run of the
task (the pre-change snapshot, the hollow patch, each adversarial patch, as
validation stored them) fails some too. The closest control is the one whose
failing set, among the tests both runs collected, has the largest Jaccard
similarity with the submission's; a resemblance is reported from
``THRESHOLD`` up. "Fails like the hollow patch" reads as: the code has the
interface and nothing behind it; "like adversarial #3 (delete_call)": it
breaks the promise that mutant breaks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from sqlmodel import Session, col, select

from task_registry.models import AdversarialPatch, TestResult, ValidationRun
from task_registry.types import Control, RunOutcome, TestOutcome

THRESHOLD = 0.5
CONTROLS = (Control.snapshot, Control.hollow, Control.adversarial)


@dataclass(frozen=True)
class RunTests:
    collected: frozenset[str]
    failed: frozenset[str]  # collected and not passed (failed, error, skipped, timeout)


@dataclass(frozen=True)
class Resemblance:
    control: str  # "snapshot", "hollow", "adversarial #3 (delete_call)"
    similarity: float  # Jaccard of the failing sets, 0..1
    shared_failures: int


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def closest_control(
    submission: RunTests, controls: Mapping[str, RunTests], *, threshold: float = THRESHOLD
) -> Resemblance | None:
    """The control failing most like the submission, compared on the tests both collected;
    None when the submission fails nothing or no control comes up to the threshold."""
    best: Resemblance | None = None
    for label in sorted(controls):
        control = controls[label]
        shared = submission.collected & control.collected
        mine, theirs = submission.failed & shared, control.failed & shared
        if not mine:
            continue
        score = jaccard(mine, theirs)
        if score >= threshold and (best is None or score > best.similarity):
            best = Resemblance(label, score, len(mine & theirs))
    return best


def run_tests(results: Iterable[TestResult]) -> RunTests:
    rows = list(results)
    return RunTests(
        collected=frozenset(r.test_id for r in rows),
        failed=frozenset(r.test_id for r in rows if r.outcome != TestOutcome.passed),
    )


def _results(session: Session, run_id: int) -> list[TestResult]:
    return list(session.exec(select(TestResult).where(TestResult.run_id == run_id)))


def control_runs(*, session: Session, task_id: int) -> dict[str, RunTests]:
    """The latest completed run of each control of a task, by label."""
    query = (
        select(ValidationRun)
        .where(ValidationRun.task_id == task_id, ValidationRun.outcome == RunOutcome.completed)
        .where(col(ValidationRun.control).in_([str(c) for c in CONTROLS]))
        .order_by(col(ValidationRun.id))
    )
    latest: dict[str, ValidationRun] = {}
    for run in session.exec(query):
        latest[_label(session, run)] = run  # later runs replace earlier ones
    return {label: run_tests(_results(session, run.id or 0)) for label, run in latest.items()}


def _label(session: Session, run: ValidationRun) -> str:
    if run.control != Control.adversarial or run.adversarial_id is None:
        return str(run.control)
    patch = session.get(AdversarialPatch, run.adversarial_id)
    operator = f" ({patch.operator})" if patch is not None else ""
    return f"adversarial #{run.adversarial_id}{operator}"


def submission_resemblance(
    *, session: Session, task_id: int, submission_id: int
) -> Resemblance | None:
    """The control the submission's latest grading run fails like, if any."""
    query = (
        select(ValidationRun)
        .where(ValidationRun.submission_id == submission_id)
        .where(ValidationRun.outcome == RunOutcome.completed)
        .order_by(col(ValidationRun.id).desc())
    )
    run = session.exec(query).first()
    if run is None or run.id is None:
        return None
    controls = control_runs(session=session, task_id=task_id)
    return closest_control(run_tests(_results(session, run.id)), controls)


def count_by_control(found: Sequence[Resemblance | None]) -> dict[str, int]:
    """How many failed submissions resemble each control kind (adversarials together)."""
    counts: dict[str, int] = {}
    for resemblance in found:
        kind = resemblance.control.split(" ", 1)[0] if resemblance else "none"
        counts[kind] = counts.get(kind, 0) + 1
    return counts

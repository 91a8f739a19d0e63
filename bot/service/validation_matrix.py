"""A task's validation matrix: for each control, what it must do and whether it did.

Rows are the controls (golden, the pre-change snapshot, the hollow patch, each adversarial
patch); columns are the PR's own tests and then each probe. A probe must pass every golden
run with no skip and fail on the snapshot, the hollow patch and the surviving adversarials;
a cell says what happened and marks it met, missed, not run or waiting. The PR's own tests
are shown the same way, as evidence: a patch they do not reject is a gap. Cells read the
coverage table validation stored, plus the stored runs for the counts; every run is also
listed on its own with what it was for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from task_registry.coverage import AdversarialCoverage, ControlRef, CoverageTable, ProbeCoverage
from task_registry.models import TestResult, ValidationRun
from task_registry.types import Control, ProbeStatus, RunOutcome, Suite, TestOutcome


class Mark(StrEnum):
    met = "met"  # the control did what it must
    missed = "missed"  # it did not
    not_run = "not run"
    waiting = "waiting"  # the probe waits for a GPU runner

    @property
    def symbol(self) -> str:
        return {"met": "✓", "missed": "✗", "not run": "—", "waiting": "…"}[self.value]


@dataclass(frozen=True)
class Cell:
    mark: Mark
    text: str


@dataclass(frozen=True)
class Column:
    """The PR's tests, or one probe with its status and why it was not accepted."""

    title: str
    status: str = ""
    reason: str | None = None


@dataclass(frozen=True)
class Row:
    control: Control
    label: str
    must: str
    detail: str = ""
    cells: list[Cell] = field(default_factory=list)


@dataclass(frozen=True)
class RunLine:
    """One stored run: which control, on which tests, and whether it did what it must."""

    control: str
    suite: str
    attempt: int
    outcome: str
    original: str  # "7/7 passed" on the PR's tests, "" when none ran
    probes: str
    result: str  # what the run showed, against what its control must do
    mark: Mark
    detail: str = ""


@dataclass(frozen=True)
class Matrix:
    columns: list[Column]
    rows: list[Row]
    runs: list[RunLine]


MUST = {
    Control.golden: "pass, every run, no skip",
    Control.snapshot: "fail (be rejected)",
    Control.hollow: "fail (be rejected)",
    Control.adversarial: "fail (be rejected)",
}
PR_TESTS = "PR's tests"
REJECTED = Cell(Mark.met, "rejected")


def build_matrix(
    table: CoverageTable, runs: Sequence[ValidationRun], results: Sequence[TestResult] = ()
) -> Matrix:
    """The matrix of a task from its stored table, its validation runs and their results."""
    own = [r for r in runs if r.submission_id is None and r.control != Control.submission]
    columns = [Column(PR_TESTS), *(_probe_column(p) for p in table.probes)]
    rows = [
        _golden_row(table, own),
        _baseline_row(table, Control.snapshot, "snapshot", "the code before the PR"),
        _baseline_row(table, Control.hollow, "hollow patch", "the PR's names, no behaviour"),
        *(_adversarial_row(table, a) for a in table.adversarials),
    ]
    judged = bool(own) or _table_judged(table)
    return Matrix(columns, rows if judged else [], [run_line(r, results) for r in own])


def _table_judged(table: CoverageTable) -> bool:
    """The stored table carries a validation's verdicts (its runs may not be kept)."""
    return any(p.golden_runs for p in table.probes) or any(
        a.survives_original is not None for a in table.adversarials
    )


def _probe_column(probe: ProbeCoverage) -> Column:
    return Column(probe.path, str(probe.status), probe.rejection_reason)


def _golden_row(table: CoverageTable, runs: Sequence[ValidationRun]) -> Row:
    baseline = next(
        (r for r in runs if r.control == Control.golden and r.suite != Suite.probes), None
    )
    own = _passes_all(baseline) if baseline is not None else Cell(Mark.not_run, "not run")
    cells = [own, *(_golden_cell(p) for p in table.probes)]
    return Row(Control.golden, "golden patch", MUST[Control.golden], "the PR itself", cells)


def _passes_all(run: ValidationRun) -> Cell:
    text = f"{run.n_passed}/{run.n_collected} passed"
    if run.outcome != RunOutcome.completed:
        return Cell(Mark.missed, f"{run.outcome}: {text}")
    return Cell(Mark.met if run.n_passed == run.n_collected > 0 else Mark.missed, text)


def _golden_cell(probe: ProbeCoverage) -> Cell:
    if (unjudged := _unjudged(probe)) is not None:
        return unjudged
    text = f"{probe.golden_passes}/{probe.golden_runs} passed"
    return Cell(Mark.met if probe.golden_passes == probe.golden_runs else Mark.missed, text)


def _unjudged(probe: ProbeCoverage) -> Cell | None:
    if probe.status == ProbeStatus.waiting:
        return Cell(Mark.waiting, "waits for a GPU runner")
    if probe.golden_runs == 0:
        return Cell(Mark.not_run, "not run")
    return None


def _baseline_row(table: CoverageTable, kind: Control, label: str, detail: str) -> Row:
    ref = ControlRef(kind=kind)
    own = REJECTED if ref in table.original_rejects else Cell(Mark.missed, "passes")
    return Row(kind, label, MUST[kind], detail, [own, *(_rejects(p, ref) for p in table.probes)])


def _rejects(probe: ProbeCoverage, ref: ControlRef) -> Cell:
    if (unjudged := _unjudged(probe)) is not None:
        return unjudged
    return REJECTED if ref in probe.rejects else Cell(Mark.missed, "passes")


def _adversarial_row(table: CoverageTable, adversarial: AdversarialCoverage) -> Row:
    ref = ControlRef(kind=Control.adversarial, adversarial=adversarial.id)
    where = adversarial.path + (f":{adversarial.line}" if adversarial.line else "")
    detail = " ".join(part for part in (adversarial.operator, where) if part)
    if adversarial.survives_original is None:
        own = Cell(Mark.not_run, "not run")
    elif adversarial.survives_original:
        own = Cell(Mark.missed, "survives")
    else:
        own = REJECTED
    cells = [own]
    for probe in table.probes:
        if adversarial.survives_original is False:
            cells.append(Cell(Mark.not_run, "not needed"))  # the PR's tests reject it already
        else:
            cells.append(_rejects(probe, ref))
    label = f"adversarial #{adversarial.id}"
    return Row(Control.adversarial, label, MUST[Control.adversarial], detail, cells)


# --- every run on its own -------------------------------------------------------------------


def run_line(run: ValidationRun, results: Sequence[TestResult] = ()) -> RunLine:
    own = [r for r in results if r.run_id == run.id]
    original = _count([r for r in own if not r.is_probe])
    probes = _count([r for r in own if r.is_probe])
    if not own:  # results not kept: the run's counts are all there is
        original, probes = _counts_by_suite(run)
    result, mark = _run_verdict(run, own)
    return RunLine(
        control=_run_label(run),
        suite=str(run.suite),
        attempt=run.attempt,
        outcome=str(run.outcome),
        original=original,
        probes=probes,
        result=result,
        mark=mark,
        detail=run.fault_detail or "",
    )


def _counts_by_suite(run: ValidationRun) -> tuple[str, str]:
    counts = f"{run.n_passed}/{run.n_collected} passed"
    if run.suite == Suite.probes:
        return "", counts
    if run.suite == Suite.original:
        return counts, ""
    return f"{counts} (with the probes)", ""


def _run_label(run: ValidationRun) -> str:
    if run.control == Control.adversarial and run.adversarial_id is not None:
        return f"adversarial #{run.adversarial_id}"
    return str(run.control)


def _count(results: Sequence[TestResult]) -> str:
    if not results:
        return ""
    passed = sum(r.outcome == TestOutcome.passed for r in results)
    return f"{passed}/{len(results)} passed"


def _run_verdict(run: ValidationRun, results: Sequence[TestResult]) -> tuple[str, Mark]:
    """What this run showed, marked against what its control must do."""
    if run.outcome != RunOutcome.completed:
        return f"did not complete ({run.fault_kind or run.outcome})", Mark.missed
    if run.control == Control.golden:
        failed = run.n_collected - run.n_passed
        if run.n_collected == 0:
            return "collected no test", Mark.missed
        return ("passes every test", Mark.met) if not failed else (f"{failed} failed", Mark.missed)
    probes = [r for r in results if r.is_probe]
    if run.suite == Suite.original or (run.suite == Suite.all and not probes):
        # The PR's own tests against a control: evidence, not a condition a probe must meet.
        if run.n_passed < run.n_collected:
            return "the PR's tests reject it", Mark.met
        return "passes the PR's tests: a gap", Mark.missed
    if probes:
        rejected = any(r.outcome != TestOutcome.passed for r in probes)
    else:
        rejected = run.n_passed < run.n_collected
    return ("the probes reject it", Mark.met) if rejected else ("passes the probes", Mark.missed)

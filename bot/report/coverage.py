"""The coverage table as the bot reads it: promise → verdict → probes → controls → survivors.

One row per promise the PR made: the verdict on the PR's own tests
(checked / exercised / unchecked), the probes written for it with the controls
each one rejects (snapshot, hollow, adversarial patches), and the adversarial
patches that survive the PR's original tests, with the accepted probes that
catch them. ``coverage_from_registry`` assembles it from stored records, so the
report, the API and the dashboard read one shape, whoever built the task.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from sqlmodel import Session

from task_registry.models import (
    AdversarialPatch,
    Probe,
    Promise,
    Task,
    ValidationRun,
)
from task_registry.tasks import (
    list_adversarials,
    list_probes,
    list_promises,
    list_test_results,
    list_validation_runs,
)
from task_registry.types import Control, ProbeStatus, PromiseVerdict

REJECTING_OUTCOMES = frozenset({"failed", "error", "timeout"})


@dataclass(frozen=True)
class ProbeCell:
    path: str
    status: str
    rejects: tuple[str, ...] = ()

    @property
    def accepted(self) -> bool:
        return self.status == ProbeStatus.accepted


@dataclass(frozen=True)
class Survivor:
    """An adversarial patch that passes the PR's own tests: evidence of a gap."""

    id: int
    operator: str
    file: str
    line: int | None
    description: str
    patch: str
    caught_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class PromiseRow:
    category: str
    quote: str
    verdict: str
    quantity: str | None = None
    probes: tuple[ProbeCell, ...] = ()
    survivors: tuple[Survivor, ...] = ()

    @property
    def missed(self) -> bool:
        """The PR's tests miss this promise, and a surviving patch proves it."""
        return self.verdict != PromiseVerdict.checked and bool(self.survivors)


@dataclass(frozen=True)
class CoverageTable:
    repo: str
    pull_number: int
    instance_id: str
    merge_commit: str | None
    task_id: int | None = None
    promises: tuple[PromiseRow, ...] = field(default_factory=tuple)

    @property
    def problems(self) -> tuple[PromiseRow, ...]:
        return tuple(row for row in self.promises if row.missed)

    @property
    def covered(self) -> tuple[PromiseRow, ...]:
        return tuple(row for row in self.promises if not row.missed)

    @property
    def actionable(self) -> bool:
        return bool(self.problems)


def drop_ignored(table: CoverageTable, ignored: Callable[[str], bool]) -> CoverageTable:
    """The table without surviving patches in paths the maintainers told probewatch to ignore."""
    rows = tuple(
        replace(row, survivors=tuple(s for s in row.survivors if not ignored(s.file)))
        for row in table.promises
    )
    return replace(table, promises=rows)


def coverage_from_registry(session: Session, task: Task) -> CoverageTable:
    """Assemble the coverage table of a stored task from its promises, probes and runs."""
    assert task.id is not None
    probes = list_probes(session=session, task_id=task.id)
    adversarials = list_adversarials(session=session, task_id=task.id)
    rejections = _rejections(session, task.id, probes, adversarials)
    rows = tuple(
        _row(promise, probes, adversarials, rejections)
        for promise in list_promises(session=session, task_id=task.id)
    )
    return CoverageTable(
        repo=task.repo,
        pull_number=task.pull_number,
        instance_id=task.instance_id,
        merge_commit=task.merge_commit,
        task_id=task.id,
        promises=rows,
    )


def _row(
    promise: Promise,
    probes: Sequence[Probe],
    adversarials: Sequence[AdversarialPatch],
    rejections: dict[int, tuple[str, ...]],
) -> PromiseRow:
    mine = [p for p in probes if p.promise_id == promise.id]
    accepted = {p.id: p.path for p in mine if p.status == ProbeStatus.accepted}
    cells = tuple(ProbeCell(p.path, p.status, rejections.get(p.id or 0, ())) for p in mine)
    survivors = tuple(
        _survivor(patch, accepted)
        for patch in adversarials
        if patch.survives_original and _breaks(patch, promise, accepted)
    )
    return PromiseRow(
        category=promise.category,
        quote=promise.quote,
        verdict=promise.verdict or PromiseVerdict.unchecked,
        quantity=promise.quantity,
        probes=cells,
        survivors=survivors,
    )


def _breaks(patch: AdversarialPatch, promise: Promise, accepted: dict[int | None, str]) -> bool:
    """The patch violates this promise: its category says so, or a probe accepted for the
    promise rejects it. A mechanical mutant's category is a guess from the code it touches;
    a probe written for the promise failing on it is evidence."""
    return patch.promise_category == promise.category or any(
        i in accepted for i in patch.rejected_by
    )


def _survivor(patch: AdversarialPatch, accepted: dict[int | None, str]) -> Survivor:
    assert patch.id is not None
    caught = tuple(accepted[i] for i in patch.rejected_by if i in accepted)
    return Survivor(
        id=patch.id,
        operator=patch.operator,
        file=patch.file,
        line=patch.line,
        description=patch.description,
        patch=patch.patch,
        caught_by=caught,
    )


def control_label(run: ValidationRun) -> str:
    if run.control == Control.adversarial and run.adversarial_id is not None:
        return f"adversarial #{run.adversarial_id}"
    return str(run.control)


def _rejections(
    session: Session,
    task_id: int,
    probes: Sequence[Probe],
    adversarials: Sequence[AdversarialPatch],
) -> dict[int, tuple[str, ...]]:
    """Controls each probe rejects: failed probe tests in runs, plus recorded adversarial kills."""
    found: dict[int, set[str]] = {p.id: set() for p in probes if p.id is not None}
    for patch in adversarials:
        for probe_id in patch.rejected_by:
            found.setdefault(probe_id, set()).add(f"adversarial #{patch.id}")
    for run in list_validation_runs(session=session, task_id=task_id):
        if run.control in (Control.golden, Control.submission):
            continue
        failing = [
            r.test_id
            for r in list_test_results(session=session, run_id=run.id or 0)
            if r.is_probe and r.outcome in REJECTING_OUTCOMES
        ]
        for probe in probes:
            if any(test_id.startswith(probe.path) for test_id in failing):
                found.setdefault(probe.id or 0, set()).add(control_label(run))
    return {key: tuple(sorted(value)) for key, value in found.items()}

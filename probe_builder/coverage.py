"""Deriving the coverage table a task stores, and rendering it for ``probewatch show``.

The table's model lives with the task it is stored on (``task_registry.coverage``);
here it is derived, once per build and per validation. The one survivor rule: an
adversarial patch is evidence against a promise when it survives the PR's original
tests and either it is of the promise's category in the code the promise concerns (a
changed definition the promise's verdict links it to holds the patched line) or an
accepted probe written for the promise rejects it (a mechanical mutant's category is a
guess from the code it touches; a probe of the promise failing on it is evidence). A
probe is *redundant* when every control it rejects is already rejected by the original
tests.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from probe_builder.promises.verdicts import PromiseCheck
from task_registry.coverage import (
    AdversarialCoverage,
    ControlRef,
    CoverageTable,
    ProbeCoverage,
    PromiseCoverage,
    WaitingTest,
)
from task_registry.types import Control, ProbeStatus

QUOTE_WIDTH = 70


def is_redundant(probe: ProbeCoverage, original_rejects: Iterable[ControlRef]) -> bool:
    """True when the probe rejects nothing the PR's original tests do not already reject.

    A probe that failed a golden run is not judged so: what it "rejects" says nothing when
    it fails the correct patch too, and it is out for that reason already.
    """
    if probe.golden_runs and probe.golden_passes < probe.golden_runs:
        return False
    return set(probe.rejects) <= set(original_rejects)


def _killers(adversarial: AdversarialCoverage, probes: Sequence[ProbeCoverage]) -> list[str]:
    ref = ControlRef(kind=Control.adversarial, adversarial=adversarial.id)
    return [p.path for p in probes if ref in p.rejects]


def build_coverage_table(
    instance_id: str,
    checks: Sequence[PromiseCheck],
    *,
    probes: Sequence[ProbeCoverage] = (),
    adversarials: Sequence[AdversarialCoverage] = (),
    original_rejects: Sequence[ControlRef] = (),
    waiting: Mapping[str, str] | None = None,
    notes: Sequence[str] = (),
) -> CoverageTable:
    """Link promises, probes and adversarials; flag redundant probes."""
    probe_rows = [
        p.model_copy(update={"redundant": is_redundant(p, original_rejects)}) for p in probes
    ]
    adversarial_rows = [
        a.model_copy(update={"rejected_by": _killers(a, probe_rows)}) for a in adversarials
    ]
    promises = []
    for check in checks:
        promise = check.promise
        row = PromiseCoverage(
            position=promise.position,
            category=promise.category,
            quote=promise.quote,
            quantity=promise.quantity,
            verdict=check.verdict,
            evidence=check.evidence,
            concerns=sorted(check.concerns),
            probes=[p.path for p in probe_rows if p.promise_position == promise.position],
        )
        row.survivors = [
            a.id
            for a in adversarial_rows
            if a.survives_original and not a.equivalent and _breaks(a, row, probe_rows)
        ]
        promises.append(row)
    return CoverageTable(
        instance_id=instance_id,
        promises=promises,
        probes=probe_rows,
        adversarials=adversarial_rows,
        original_rejects=list(original_rejects),
        waiting=[WaitingTest(path=path, reason=why) for path, why in (waiting or {}).items()],
        notes=list(notes),
    )


def _breaks(
    adversarial: AdversarialCoverage, promise: PromiseCoverage, probes: Sequence[ProbeCoverage]
) -> bool:
    """The patch violates the promise: it is of the promise's kind in the code the promise
    concerns, or an accepted probe written for the promise rejects it (a mechanical mutant's
    category and place are guesses; the probe is evidence)."""
    own = {
        p.path
        for p in probes
        if p.promise_position == promise.position and p.status == ProbeStatus.accepted
    }
    return promise.concerned_by(adversarial) or bool(own & set(adversarial.rejected_by))


def _verdict_cell(table: CoverageTable, row: PromiseCoverage) -> str:
    """The verdict read from the PR's tests, unless a survivor contradicts it."""
    return table.reading(row, lambda verdict: str(verdict or "-"))


def _probe_cell(table: CoverageTable, paths: Sequence[str]) -> str:
    lines = []
    for path in paths:
        probe = table.probe(path)
        if probe is None:
            continue
        rejects = ", ".join(r.label for r in probe.rejects) or "nothing"
        flag = " [redundant]" if probe.redundant else ""
        lines.append(f"{path} ({probe.status}{flag}) rejects {rejects}")
    return "\n".join(lines) or "-"


def _survivor_cell(table: CoverageTable, ids: Sequence[str]) -> str:
    by_id = {a.id: a for a in table.adversarials}
    lines = []
    for adversarial_id in ids:
        a = by_id[adversarial_id]
        killed = (
            f" (rejected by {', '.join(a.rejected_by)})"
            if a.rejected_by
            else " (no probe rejects it)"
        )
        place = f" in {a.place}" if a.place else ""
        lines.append(f"{a.id}: {a.description}{place}{killed}")
    return "\n".join(lines) or "-"


def render_coverage(table: CoverageTable) -> Table:
    """A rich table, one row per promise."""
    grid = Table(title=f"probe coverage: {table.instance_id}", show_lines=True)
    for column in (
        "#",
        "category",
        "promise",
        "PR tests",
        "probes and the controls they reject",
        "surviving adversarials",
    ):
        grid.add_column(column, overflow="fold")
    for number, row in enumerate(table.promises, 1):  # the report numbers promises alike
        quote = row.quote if len(row.quote) <= QUOTE_WIDTH else row.quote[: QUOTE_WIDTH - 1] + "…"
        cells = (
            str(number),
            str(row.category),
            quote,
            _verdict_cell(table, row),
            _probe_cell(table, row.probes),
            _survivor_cell(table, row.survivors),
        )
        grid.add_row(*(escape(cell) for cell in cells))  # paths and code may hold [brackets]
    if table.redundant_probes():
        grid.caption = escape("redundant: " + ", ".join(p.path for p in table.redundant_probes()))
    return grid


def coverage_text(table: CoverageTable, width: int = 200) -> str:
    """The rendered table as plain text (logs, comments, tests)."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, force_terminal=False)
    console.print(render_coverage(table))
    for adversarial in table.unlinked():
        console.print(
            f"survives, tied to no promise: {adversarial.id}: {adversarial.description}",
            markup=False,
        )
    for adversarial in table.set_aside():
        console.print(
            f"set aside, not reported: {adversarial.id}: {adversarial.equivalent}", markup=False
        )
    for note in table.notes:
        console.print(note, markup=False)
    return buffer.getvalue()

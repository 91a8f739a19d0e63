"""What a report entry stands on: one gap per distinct surviving patch, its own hunk, the
PR's tests that run its line, the assertion that would catch it, and how validation ran.

A surviving patch that breaks several promises is one gap listing them, never one entry
per promise. A gap is *caught* when any accepted probe rejects the patch, and its link to
a promise is *confirmed* when an accepted probe written for that promise rejects it;
otherwise the link is inferred from the kind of code the patch changes. The hunk is the
mutation against the merged code (the patch and the golden patch differ there and only
there), a few lines, whatever the rest of the PR touches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from probe_builder.material.diffs import patch_difference
from task_registry.coverage import AdversarialCoverage, CoverageTable, PromiseCoverage
from task_registry.models import ValidationRun
from task_registry.types import Control, PromiseCategory, PromiseVerdict, RunOutcome, Suite

HUNK_CONTEXT = 2  # lines of merged code on each side of the mutation
HUNK_LINES = 7  # at most, context included

# The assertion that would catch a patch, by the kind of promise it breaks.
SUGGESTIONS: dict[PromiseCategory, str] = {
    PromiseCategory.memory: (
        "assert the peak memory of the call (e.g. `torch.cuda.max_memory_allocated()` after "
        "`torch.cuda.reset_peak_memory_stats()`) against the promised bound"
    ),
    PromiseCategory.time: (
        "assert the work the call does (steps, calls or copies counted with a spy), "
        "not only its result"
    ),
    PromiseCategory.traffic: (
        "count what is sent (wrap the collective or transport and sum bytes or calls) "
        "and assert the promised amount"
    ),
    PromiseCategory.state: (
        "call it again (after `reset()`, a second step, or a save and load) and assert "
        "the state the PR promises then"
    ),
    PromiseCategory.mode: (
        "assert that the promised mode is in effect (graph captured, compiled path taken, "
        "the option reaching this code), not only that the call succeeds"
    ),
    PromiseCategory.numeric: (
        "compare with a reference at the promised tolerance "
        "(`torch.testing.assert_close(actual, expected, rtol=..., atol=...)`)"
    ),
    PromiseCategory.functional: "assert the value or side effect this line produces",
}


@dataclass(frozen=True)
class Gap:
    """One surviving patch and the promises it breaks (their order in the table)."""

    patch: AdversarialCoverage
    promises: tuple[PromiseCoverage, ...]
    confirmed: tuple[int, ...]  # positions of the promises an own accepted probe ties it to
    caught: bool  # some accepted probe rejects the patch

    @property
    def lead(self) -> PromiseCoverage:
        """The promise the entry quotes first: a confirmed one, else the most specific."""
        for promise in self.promises:
            if promise.position in self.confirmed:
                return promise
        specific = [p for p in self.promises if p.category != PromiseCategory.functional]
        return (specific or list(self.promises))[0]

    @property
    def category(self) -> PromiseCategory:
        return self.lead.category

    @property
    def location(self) -> str:
        line = f":{self.patch.line}" if self.patch.line else ""
        return f"{self.patch.path}{line}" if self.patch.path else f"patch {self.patch.id}"

    @property
    def place(self) -> str:
        """The innermost changed definition that holds the patch, when it or one around it
        is code the lead promise concerns (its quote names it, or it is right behind what
        the quote names); empty when the link rests on the patch's kind alone."""
        return self.patch.place if self.lead.holds(self.patch) else ""

    def suggestion(self) -> str:
        text = SUGGESTIONS[self.category]
        quantity = self.lead.quantity
        return f"{text} (promised: {quantity})" if quantity else text


def gaps(table: CoverageTable) -> list[Gap]:
    """One gap per surviving patch that breaks a promise the PR's tests miss: confirmed
    links first, then caught ones, then by file and line (the report ranks them further:
    :mod:`bot.report.ranking`)."""
    found, problems = [], table.problems
    for patch in table.survivors():
        promises = tuple(p for p in problems if table.shows(p, patch))
        if not promises:
            continue
        confirmed = tuple(p.position for p in promises if _own_probe_rejects(table, p, patch))
        found.append(Gap(patch, promises, confirmed, bool(table.caught_by(patch))))
    return sorted(
        found,
        key=lambda g: (not g.confirmed, not g.caught, g.patch.path, g.patch.line or 0),
    )


def _own_probe_rejects(
    table: CoverageTable, promise: PromiseCoverage, patch: AdversarialCoverage
) -> bool:
    return any(
        probe.accepted and probe.path in patch.rejected_by for probe in table.probes_of(promise)
    )


def promise_numbers(table: CoverageTable) -> dict[int, int]:
    """Each promise's number as ``probewatch show`` prints it: its place in the table, from 1,
    by its position in the description."""
    return {promise.position: number for number, promise in enumerate(table.promises, 1)}


# --- the mutation's own hunk -------------------------------------------------------------


def mutation_hunk(golden_patch: str, patch: str, path: str) -> str | None:
    """The lines where ``patch`` differs from the golden patch in ``path``, as a diff against
    the merged code with a little context; None when the patches cannot be read or do not
    differ there."""
    regions = patch_difference(golden_patch, patch, path, context=HUNK_CONTEXT)
    if not regions:
        return None
    lines = regions[0]
    if len(lines) > HUNK_LINES:
        lines = [*lines[:HUNK_LINES], f"… {len(lines) - HUNK_LINES} more changed lines"]
    return "\n".join(lines)


def survivor_hunks(
    golden_patch: str, patches: Mapping[str, str], survivors: Iterable[AdversarialCoverage]
) -> dict[str, str]:
    """Each survivor's own hunk against the merged code, by its id: what a reader needs to
    see beside a terse description (``3 -> 4``). A survivor whose patch is not stored or
    cannot be read has none."""
    found = {}
    for survivor in survivors:
        patch = patches.get(survivor.id)
        hunk = mutation_hunk(golden_patch, patch, survivor.path) if patch else None
        if hunk:
            found[survivor.id] = hunk
    return found


def change_line(hunk: str | None, fallback: str) -> str:
    """The mutation in a few words: `before` → `after`, from its hunk."""
    if not hunk:
        return fallback
    removed = [line[1:].strip() for line in hunk.splitlines() if line.startswith("-")]
    added = [line[1:].strip() for line in hunk.splitlines() if line.startswith("+")]
    if removed and added:
        return f"{_tick(removed[0])} → {_tick(added[0])}"
    if added:
        return f"adds {_tick(added[0])}"
    return f"removes {_tick(removed[0])}" if removed else fallback


def _tick(text: str) -> str:
    return f"`{text}`" if "`" not in text else f"`` {text} ``"


# --- how validation ran ------------------------------------------------------------------


@dataclass(frozen=True)
class RunContext:
    """What a maintainer needs to trust the verdict: what ran, where, and what it showed."""

    runners: tuple[str, ...] = ()
    gpu: bool = False
    golden_passed: int = 0  # the PR's tests the golden patch passes here
    golden_tests: int = 0
    probe_runs: int = 0  # golden runs of the hidden probes, and how many passed
    probe_passes: int = 0
    controls: dict[str, bool] = field(default_factory=dict)  # snapshot/hollow -> PR tests fail it
    mutants: int = 0  # mechanical and authored patches judged against the PR's tests
    survivors: int = 0
    unjudged: int = 0  # patches no test that ran here could judge

    @property
    def validated(self) -> bool:
        return self.golden_tests > 0


def run_context(table: CoverageTable, runs: Iterable[ValidationRun]) -> RunContext:
    runs = [r for r in runs if r.outcome == RunOutcome.completed]
    golden = [r for r in runs if r.control == Control.golden and r.suite == Suite.original]
    probes = [r for r in runs if r.control == Control.golden and r.suite == Suite.probes]
    rejected = {ref.kind for ref in table.original_rejects}
    judged = [a for a in table.adversarials if a.survives_original is not None]
    return RunContext(
        runners=tuple(sorted({r.runner for r in runs})),
        gpu=any(r.gpu_peak_bytes for r in runs),
        golden_passed=golden[0].n_passed if golden else 0,
        golden_tests=golden[0].n_collected if golden else 0,
        probe_runs=len(probes),
        probe_passes=sum(1 for r in probes if r.n_collected and r.n_passed == r.n_collected),
        controls={
            str(kind): kind in rejected
            for kind in (Control.snapshot, Control.hollow)
            if any(r.control == kind for r in runs)
        },
        mutants=len(judged),
        survivors=sum(1 for a in judged if a.survives_original),
        unjudged=unjudged(table),
    )


def unjudged(table: CoverageTable) -> int:
    """Patches validation could not judge (their lines run only in tests that did not run);
    none before any patch was judged."""
    if not any(a.survives_original is not None for a in table.adversarials):
        return 0
    return sum(1 for a in table.adversarials if a.survives_original is None)


def context_line(context: RunContext, waiting: int) -> str:
    """One line: where validation ran, what the golden patch and the controls showed."""
    if not context.validated:
        parts = ["not validated yet"]
    else:
        where = ", ".join(f"`{r}`" for r in context.runners) or "a runner"
        parts = [f"ran on {where} ({'GPU' if context.gpu else 'CPU only'})"]
        parts.append(
            f"golden patch passes {context.golden_passed} of {context.golden_tests} PR tests"
        )
        parts += [_control(kind, failed) for kind, failed in context.controls.items()]
        if context.mutants:
            verb = "passes" if context.survivors == 1 else "pass"
            parts.append(
                f"{context.survivors} of {context.mutants} mutants of the changed lines {verb} them"
            )
        if context.unjudged:
            parts.append(f"{context.unjudged} more not judged: no test that runs here reaches them")
    if waiting:
        parts.append(f"{waiting} not run here (below)")
    return " · ".join(parts)


def _control(kind: str, failed: bool) -> str:
    name = {"snapshot": "pre-change code", "hollow": "hollow patch"}.get(kind, kind)
    return f"{name} {'fails' if failed else 'passes'} them"


def verdict_word(verdict: PromiseVerdict | None) -> str:
    return (
        {
            PromiseVerdict.checked: "checked",
            PromiseVerdict.exercised: "exercised, not checked",
            PromiseVerdict.unchecked: "not tested",
        }.get(verdict, "not judged")
        if verdict
        else "not judged"
    )


def short_quote(text: str, limit: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def tests_sentence(patch: AdversarialCoverage, limit: int = 3) -> str:
    """Which of the PR's tests run the mutated line and pass anyway."""
    if patch.reach == "unexecuted":
        return "None of the PR's tests run this line."
    if patch.reach == "covering" and patch.exercised_by:
        named = ", ".join(f"`{_short_node(t)}`" for t in patch.exercised_by[:limit])
        more = len(patch.exercised_by) - limit
        tail = f" and {more} more" if more > 0 else ""
        verb = "runs" if len(patch.exercised_by) == 1 else "run"
        return (
            f"{named}{tail} {verb} this line and {'passes' if verb == 'runs' else 'pass'} anyway."
        )
    return "The PR's tests pass with it (line coverage was not measured here)."


def _short_node(node: str) -> str:
    path, _, name = node.partition("::")
    return f"{path.rsplit('/', 1)[-1]}::{name}" if name else path


def promise_list(numbered: Mapping[int, int], promises: Sequence[PromiseCoverage]) -> str:
    numbers = [str(numbered[p.position]) for p in promises]
    if len(numbers) == 1:
        return f"promise {numbers[0]}"
    return f"promises {', '.join(numbers[:-1])} and {numbers[-1]}"

"""The probe acceptance protocol: golden x3, snapshot, hollow patch and adversarial controls.

Controls: G the golden patch, S the pre-change snapshot, H the hollow patch,
A_i the adversarial patches. First every A_i runs against the original
tests (:mod:`probe_builder.adversarial.survivors`): one that does worse than G there is a
broken patch, not evidence, and is dropped as evidence; the survivors are
what a maintainer report shows, with or without probes. Then each probe
must pass G three times with no skip (a skip is not accepted, passing two of
three is flaky), and must fail on S and on H (a probe that passes H only
checks that names exist). The probes left form the set, which must reject
every surviving A_i of the promise categories it claims (the categories its
probes are tagged with or reject an adversarial of). A failed set goes back
to the author for a bounded number of revision rounds when one is
configured; otherwise, or after the last round, the task keeps no probes
and the report says which condition failed. Probes travel only in the runs'
test overlay, never in a tree an agent sees.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from probe_builder.adversarial.dynamic import likely_equivalent
from probe_builder.adversarial.survivors import (
    ControlJob,
    ControlRun,
    ControlRunner,
    Selection,
    SurvivorReport,
    TaskRunSpec,
    Variant,
    search_survivors,
)
from probe_builder.material.diffs import patch_difference
from runners.backends.placement import describe_hardware, fits, place_test
from runners.types import Capacity, HardwareRules, Outcome, PatchSpec, TestStatus
from task_registry.coverage import ControlRef
from task_registry.types import Control, PromiseCategory, Suite

GOLDEN_REPEATS = 3
DEFAULT_MAX_ROUNDS = 2
MESSAGE_CHARS = 300


@dataclass(frozen=True)
class ProbeFile:
    """A probe test file, its path relative to the repository root."""

    path: str
    content: str
    promise_category: PromiseCategory | None = None
    author: str = "curator"
    round: int = 0


@dataclass(frozen=True)
class AdversarialInput:
    id: str
    patch: str
    promise_category: PromiseCategory | None = None
    path: str = ""
    line: int | None = None
    operator: str = ""

    @property
    def variant(self) -> Variant:
        return Variant(self.id, self.patch, self.path, self.line, self.operator)


@dataclass(frozen=True)
class AcceptanceInputs:
    spec: TaskRunSpec
    hollow_patch: str
    adversarials: tuple[AdversarialInput, ...] = ()


class ProbeRejection(StrEnum):
    """Why one probe is not accepted, in the order the checks are made."""

    no_tests = "collects no test on the golden patch"
    skipped = "skipped on the golden patch (a skip is not accepted)"
    flaky = "flaky on the golden patch"
    fails_golden = "fails on the golden patch"
    passes_snapshot = "passes the pre-change snapshot"
    passes_hollow = "passes the hollow patch (it only checks that names exist)"
    set_rejected = "the probe set was not accepted"
    waits_for_gpu = "needs GPUs this runner does not offer: it waits for a GPU runner"


@dataclass(frozen=True)
class ProbeOutcome:
    probe: ProbeFile
    golden_passes: int
    golden_runs: int
    rejects: tuple[ControlRef, ...]
    rejection: ProbeRejection | None = None
    detail: str = ""  # the evidence behind the rejection: a skip reason, a failure

    @property
    def accepted(self) -> bool:
        return self.rejection is None

    @property
    def waiting(self) -> bool:
        return self.rejection is ProbeRejection.waits_for_gpu

    @property
    def reason(self) -> str | None:
        if self.rejection is None:
            return None
        return f"{self.rejection}: {self.detail}" if self.detail else str(self.rejection)


@dataclass(frozen=True)
class AdversarialOutcome:
    id: str
    survives_original: bool | None
    reason: str
    rejected_by: tuple[str, ...] = ()  # probe paths that fail on it
    reach: str | None = None  # how the original tests met its line (Selection's value)
    exercised_by: tuple[str, ...] = ()  # the original tests that run its line
    equivalent: str = ""  # why it was set aside as likely equivalent (dynamic check)

    @property
    def evidence(self) -> bool:
        return self.survives_original is True and not self.equivalent


@dataclass(frozen=True)
class AcceptanceReport:
    probes: tuple[ProbeOutcome, ...]
    failures: tuple[str, ...]  # why the probe set was not accepted; empty when it was
    adversarials: tuple[AdversarialOutcome, ...]
    original_rejects: tuple[ControlRef, ...]
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    runs: tuple[ControlRun, ...]
    search: SurvivorReport
    rounds: int = 0
    notes: tuple[str, ...] = ()

    @property
    def accepted(self) -> bool:
        return bool(self.probes) and not self.failures

    @property
    def waiting(self) -> dict[str, str]:
        """Original tests and probes not judged here, with why (they wait for a GPU runner,
        or the machine failed them)."""
        found = dict(self.search.waiting)
        found.update({o.probe.path: o.detail for o in self.probes if o.waiting})
        return found

    @property
    def accepted_probes(self) -> tuple[ProbeOutcome, ...]:
        return tuple(p for p in self.probes if p.accepted)

    @property
    def survivors(self) -> tuple[str, ...]:
        return tuple(a.id for a in self.adversarials if a.evidence)


Reviser = Callable[[int, str], Sequence[ProbeFile]]  # (round, feedback) → new probes


# --- running the controls ----------------------------------------------------------------


@dataclass(frozen=True)
class ControlBatch:
    """The runs that judge one batch of probes."""

    golden: tuple[ControlRun, ...]
    snapshot: ControlRun
    hollow: ControlRun
    adversarial: Mapping[str, ControlRun]

    @property
    def runs(self) -> tuple[ControlRun, ...]:
        return (*self.golden, self.snapshot, self.hollow, *self.adversarial.values())


def _probe_map(probes: Sequence[ProbeFile]) -> dict[str, str]:
    return {p.path: p.content for p in probes}


def golden_jobs(spec: TaskRunSpec, overlay: Mapping[str, str]) -> list[ControlJob]:
    """The golden patch three times, with the probes only."""
    if not overlay:
        return []
    return [
        ControlJob(
            Control.golden,
            Suite.probes,
            spec.request(
                [spec.golden()], label=f"golden#{n}", probes=overlay, tests=tuple(overlay)
            ),
            attempt=n,
        )
        for n in range(1, GOLDEN_REPEATS + 1)
    ]


def baseline_jobs(
    inputs: AcceptanceInputs, overlay: Mapping[str, str], *, with_originals: bool
) -> list[ControlJob]:
    """S and H, with the original tests when asked (their results give FAIL_TO_PASS)."""
    spec, tests = inputs.spec, () if with_originals else tuple(overlay)
    suite = _suite(bool(overlay), with_originals)
    hollow = PatchSpec(name="hollow", diff=inputs.hollow_patch, allow_binary=True)
    return [
        ControlJob(
            Control.snapshot, suite, spec.request([], label="snapshot", probes=overlay, tests=tests)
        ),
        ControlJob(
            Control.hollow,
            suite,
            spec.request([hollow], label="hollow", probes=overlay, tests=tests),
        ),
    ]


def _suite(has_probes: bool, with_originals: bool) -> Suite:
    if not has_probes:
        return Suite.original
    return Suite.all if with_originals else Suite.probes


def evidence_jobs(
    inputs: AcceptanceInputs, probes: Sequence[ProbeFile], evidence: Sequence[AdversarialInput]
) -> list[ControlJob]:
    """Each surviving adversarial against the probes."""
    if not probes:
        return []
    spec, overlay = inputs.spec, _probe_map(probes)
    return [
        ControlJob(
            Control.adversarial,
            Suite.probes,
            spec.request(
                [PatchSpec(name=f"adversarial-{a.id}", diff=a.patch, allow_binary=True)],
                label=f"adversarial-{a.id}-probes",
                probes=overlay,
                tests=tuple(overlay),
            ),
            adversarial=a.id,
        )
        for a in evidence
    ]


def run_controls(
    inputs: AcceptanceInputs,
    probes: Sequence[ProbeFile],
    evidence: Sequence[AdversarialInput],
    runner: ControlRunner,
    *,
    with_originals: bool,
) -> ControlBatch:
    """G x3, S and H first (in parallel), then the evidence adversarials with the probes.

    The phases stay apart so a probe with outside state sees the three golden runs
    before any adversarial run."""
    overlay = _probe_map(probes)
    first = runner.run_all(
        golden_jobs(inputs.spec, overlay)
        + baseline_jobs(inputs, overlay, with_originals=with_originals)
    )
    later = runner.run_all(evidence_jobs(inputs, probes, evidence))
    *golden, snapshot, hollow = first
    by_id = {run.job.adversarial or "": run for run in later}
    return ControlBatch(tuple(golden), snapshot, hollow, by_id)


# --- judging probes ----------------------------------------------------------------------


class _GoldenState(StrEnum):
    passed = "passed"
    skipped = "skipped"
    failed = "failed"
    absent = "absent"


def golden_state(run: ControlRun, path: str) -> tuple[_GoldenState, str]:
    """How one probe file did in one golden run, with the first message that explains it."""
    tests = [t for t in run.result.tests if t.node_id == path or t.node_id.startswith(path + "::")]
    if not tests:
        detail = run.result.detail if run.result.outcome is not Outcome.completed else ""
        return _GoldenState.absent, detail
    skipped = [t for t in tests if t.status is TestStatus.skipped]
    if skipped:
        return _GoldenState.skipped, f"{skipped[0].node_id}: {skipped[0].message or 'skipped'}"
    failing = [t for t in tests if t.status is not TestStatus.passed]
    if failing:
        first = failing[0]
        return _GoldenState.failed, f"{first.node_id} {first.status}: {first.message or ''}".strip()
    return _GoldenState.passed, ""


def _golden_rejection(
    states: Sequence[tuple[_GoldenState, str]],
) -> tuple[ProbeRejection | None, str]:
    kinds = [state for state, _ in states]
    passes = kinds.count(_GoldenState.passed)
    first = {state: detail for state, detail in reversed(states)}
    if all(kind is _GoldenState.absent for kind in kinds):
        return ProbeRejection.no_tests, first.get(_GoldenState.absent, "")
    if _GoldenState.skipped in kinds:
        return ProbeRejection.skipped, first[_GoldenState.skipped]
    if 0 < passes < len(states):
        bad = first.get(_GoldenState.failed) or first.get(_GoldenState.absent, "")
        return ProbeRejection.flaky, f"passed {passes} of {len(states)} runs; {bad}".rstrip("; ")
    if passes == 0:
        return ProbeRejection.fails_golden, first.get(_GoldenState.failed, "")
    return None, ""


def probe_rejects(
    path: str, batch: ControlBatch, evidence: Sequence[AdversarialInput]
) -> tuple[ControlRef, ...]:
    """The controls on which the probe file fails."""
    found = []
    if batch.snapshot.rejects_with(path):
        found.append(ControlRef(kind=Control.snapshot))
    if batch.hollow.rejects_with(path):
        found.append(ControlRef(kind=Control.hollow))
    for adversarial in evidence:
        run = batch.adversarial.get(adversarial.id)
        if run is not None and run.rejects_with(path):
            found.append(ControlRef(kind=Control.adversarial, adversarial=adversarial.id))
    return tuple(found)


def judge_probe(
    probe: ProbeFile, batch: ControlBatch, evidence: Sequence[AdversarialInput]
) -> ProbeOutcome:
    """A probe's own verdict: golden x3 without a skip, then it must fail on S and on H."""
    states = [golden_state(run, probe.path) for run in batch.golden]
    rejects = probe_rejects(probe.path, batch, evidence)
    outcome = ProbeOutcome(
        probe=probe,
        golden_passes=sum(state is _GoldenState.passed for state, _ in states),
        golden_runs=len(states),
        rejects=rejects,
    )
    rejection, detail = _golden_rejection(states)
    if rejection is None and ControlRef(kind=Control.snapshot) not in rejects:
        rejection = ProbeRejection.passes_snapshot
    elif rejection is None and ControlRef(kind=Control.hollow) not in rejects:
        rejection = ProbeRejection.passes_hollow
    return replace(outcome, rejection=rejection, detail=_short(detail))


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"


def claimed_categories(
    outcomes: Sequence[ProbeOutcome], evidence: Sequence[AdversarialInput]
) -> set[PromiseCategory]:
    """Categories the probes stand for: their tags, and those of the adversarials they reject."""
    by_id = {a.id: a.promise_category for a in evidence}
    claimed = {o.probe.promise_category for o in outcomes if o.probe.promise_category}
    for outcome in outcomes:
        claimed.update(
            category
            for ref in outcome.rejects
            if ref.adversarial and (category := by_id.get(ref.adversarial)) is not None
        )
    return {c for c in claimed if c is not None}


def set_failures(
    outcomes: Sequence[ProbeOutcome], evidence: Sequence[AdversarialInput]
) -> list[str]:
    """Why the set of individually accepted probes is not accepted (empty: it is)."""
    kept = [o for o in outcomes if o.accepted]
    if not kept:
        return ["no probe passed its own checks" if outcomes else "no probes were given"]
    claimed = claimed_categories(kept, evidence)
    caught = {ref.adversarial for o in kept for ref in o.rejects if ref.adversarial}
    return [
        f"no accepted probe rejects adversarial {a.id} ({a.promise_category}), "
        "which passes the PR's own tests"
        for a in evidence
        if a.id not in caught and (a.promise_category is None or a.promise_category in claimed)
    ]


def feedback(
    outcomes: Sequence[ProbeOutcome],
    failures: Sequence[str],
    evidence: Sequence[AdversarialInput] = (),
    golden_patch: str = "",
) -> str:
    """What an author is told about the previous round: why each probe was rejected, why the
    set was, and each surviving patch no accepted probe rejects with the lines it changes,
    so the next round can write the probe that kills it (Meta's ACH loop)."""
    lines = [f"{o.probe.path}: {o.reason}" for o in outcomes if not o.accepted]
    lines += [f"probe set: {failure}" for failure in failures]
    caught = {ref.adversarial for o in outcomes if o.accepted for ref in o.rejects}
    for adversarial in evidence:
        if adversarial.id in caught:
            continue
        where = f" at {adversarial.path}:{adversarial.line}" if adversarial.path else ""
        lines.append(
            f"surviving patch {adversarial.id}{where} passes the PR's tests; write a probe that "
            f"passes the golden patch and fails on it. It changes:\n"
            + changed_lines(golden_patch, adversarial.patch)
        )
    return "\n".join(lines)


def changed_lines(golden_patch: str, patch: str, limit: int = 8) -> str:
    """What ``patch`` changes in the golden code, both being diffs against the base: the
    golden lines it drops (``-``) and the lines it puts there (``+``)."""
    shown = [line for region in patch_difference(golden_patch, patch) or [] for line in region]
    if len(shown) > limit:
        shown = [*shown[:limit], f"… {len(shown) - limit} more changed lines"]
    return "\n".join(shown) if shown else "(no line of the golden patch differs)"


def _final(outcomes: Sequence[ProbeOutcome], failures: Sequence[str]) -> tuple[ProbeOutcome, ...]:
    """When the set fails, no probe is kept: the individually good ones say why."""
    if not failures:
        return tuple(outcomes)
    why = _short("; ".join(failures))
    return tuple(
        replace(o, rejection=ProbeRejection.set_rejected, detail=why) if o.accepted else o
        for o in outcomes
    )


# --- the protocol ------------------------------------------------------------------------


@dataclass
class _Round:
    outcomes: list[ProbeOutcome]
    runs: list[ControlRun]


def _judge_batch(
    inputs: AcceptanceInputs,
    probes: Sequence[ProbeFile],
    evidence: Sequence[AdversarialInput],
    runner: ControlRunner,
    *,
    with_originals: bool,
) -> tuple[list[ProbeOutcome], ControlBatch]:
    batch = run_controls(inputs, probes, evidence, runner, with_originals=with_originals)
    return [judge_probe(p, batch, evidence) for p in probes], batch


def _revise(
    inputs: AcceptanceInputs,
    state: _Round,
    evidence: Sequence[AdversarialInput],
    runner: ControlRunner,
    revise: Reviser,
    max_rounds: int,
) -> int:
    """Revision rounds while the set fails; the number of rounds made."""
    rounds = 0
    while set_failures(state.outcomes, evidence) and rounds < max_rounds:
        proposed = list(
            revise(
                rounds + 1,
                feedback(
                    state.outcomes,
                    set_failures(state.outcomes, evidence),
                    evidence,
                    inputs.spec.golden_patch,
                ),
            )
        )
        if not proposed:
            break
        rounds += 1
        taken = {o.probe.path for o in state.outcomes if o.accepted}
        fresh = [replace(p, round=rounds) for p in proposed if p.path not in taken]
        replaced = {p.path for p in fresh}  # a rejected probe's path may be reused
        earlier = [o for o in state.outcomes if o.probe.path not in replaced]
        judged, batch = _judge_batch(inputs, fresh, evidence, runner, with_originals=False)
        state.outcomes = earlier + judged
        state.runs.extend(batch.runs)
    return rounds


def run_acceptance(
    inputs: AcceptanceInputs,
    probes: Sequence[ProbeFile],
    runner: ControlRunner,
    *,
    revise: Reviser | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    use_coverage: bool = True,
    rules: HardwareRules | None = None,
    replay: bool = True,
) -> AcceptanceReport:
    """Judge the adversarials on the original tests, then the probes on every control.

    Survivors whose function behaves like the golden one on every recorded and edge input
    are set aside as likely equivalent (``replay``; :mod:`probe_builder.adversarial.dynamic`):
    no probe is judged against them and no report shows them. Probes that need GPUs the
    runner does not offer are not run: they wait for a GPU runner, and the original tests
    the golden run showed to need one wait with them."""
    search = search_survivors(
        inputs.spec, [a.variant for a in inputs.adversarials], runner, use_coverage=use_coverage
    )
    inputs = replace(inputs, spec=replace(inputs.spec, waiting=search.waiting))
    runnable, waiting = split_by_hardware(probes, runner.backend.capacity(), rules)
    surviving = [a for a in inputs.adversarials if search.verdict(a.id).survives]
    equivalent = (
        likely_equivalent(
            inputs.spec, [(a.variant, search.verdict(a.id)) for a in surviving], runner
        )
        if replay
        else {}
    )
    evidence = [a for a in surviving if a.id not in equivalent]
    outcomes, batch = _judge_batch(inputs, runnable, evidence, runner, with_originals=True)
    state = _Round(outcomes, list(batch.runs))
    rounds = 0
    if revise is not None:
        rounds = _revise(inputs, state, evidence, runner, revise, max_rounds)
    failures = set_failures(state.outcomes, evidence) if (runnable or rounds) else []
    final = (*_final(state.outcomes, failures), *waiting)
    return AcceptanceReport(
        probes=final,
        failures=tuple(failures),
        adversarials=_adversarial_outcomes(inputs, search, final, equivalent),
        original_rejects=_original_rejects(search, batch),
        fail_to_pass=tuple(sorted(search.golden.passed - batch.snapshot.result.passed)),
        pass_to_pass=tuple(sorted(search.golden.passed & batch.snapshot.result.passed)),
        runs=(*search.runs, *state.runs),
        search=search,
        rounds=rounds,
        notes=_notes(runnable, rounds, failures, revise is not None, len(waiting)),
    )


def split_by_hardware(
    probes: Sequence[ProbeFile], capacity: Capacity, rules: HardwareRules | None
) -> tuple[list[ProbeFile], list[ProbeOutcome]]:
    """Probes this runner can run, and the outcomes of those that wait for a GPU runner."""
    runnable, waiting = [], []
    for probe in probes:
        placed = place_test(probe.path, probe.content, rules or HardwareRules())
        if fits(capacity, placed.hardware):
            runnable.append(probe)
            continue
        detail = f"needs {describe_hardware(placed.hardware)} ({placed.reason})"
        waiting.append(ProbeOutcome(probe, 0, 0, (), ProbeRejection.waits_for_gpu, _short(detail)))
    return runnable, waiting


def _adversarial_outcomes(
    inputs: AcceptanceInputs,
    search: SurvivorReport,
    outcomes: Sequence[ProbeOutcome],
    equivalent: Mapping[str, str],
) -> tuple[AdversarialOutcome, ...]:
    found = []
    for adversarial in inputs.adversarials:
        verdict = search.verdict(adversarial.id)
        ref = ControlRef(kind=Control.adversarial, adversarial=adversarial.id)
        killers = tuple(o.probe.path for o in outcomes if ref in o.rejects)
        found.append(
            AdversarialOutcome(
                adversarial.id,
                verdict.survives,
                verdict.reason,
                killers,
                reach=str(verdict.selection),
                exercised_by=verdict.tests if verdict.selection is Selection.covering else (),
                equivalent=equivalent.get(adversarial.id, ""),
            )
        )
    return tuple(found)


def _original_rejects(search: SurvivorReport, batch: ControlBatch) -> tuple[ControlRef, ...]:
    """Controls the PR's own tests already reject: a golden-passing test fails on them."""
    passed = search.golden.passed
    found = []
    if passed - batch.snapshot.result.passed:
        found.append(ControlRef(kind=Control.snapshot))
    if passed - batch.hollow.result.passed:
        found.append(ControlRef(kind=Control.hollow))
    found += [
        ControlRef(kind=Control.adversarial, adversarial=v.variant)
        for v in search.verdicts
        if v.failing
    ]
    return tuple(found)


def _notes(
    probes: Sequence[ProbeFile],
    rounds: int,
    failures: Sequence[str],
    has_author: bool,
    waiting: int = 0,
) -> tuple[str, ...]:
    if waiting and not probes and not rounds:
        return (f"{waiting} probe(s) wait for a GPU runner; none could run here",)
    if not probes and not rounds:
        return ("no probes: the adversarial patches were judged against the PR's own tests only",)
    if not failures:
        return (f"probe set accepted after {rounds} revision round(s)",) if rounds else ()
    after = f" after {rounds} revision round(s)" if has_author else ""
    return (f"probe set not accepted{after}: {'; '.join(failures)}; the task keeps no probes",)

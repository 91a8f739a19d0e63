"""The coverage table stored on a task: promise, verdict, probes, controls, survivors.

One row per promise: whether the PR's own tests check it, which probes defend it and
which controls (snapshot, hollow, each adversarial) each of those probes rejects, and
which adversarial patches survive the PR's original tests and break it (the evidence a
maintainer sees). ``probe_builder.coverage`` derives the table, with the one survivor
rule, when a task is built and each time it is validated, and stores it on the task as
JSON; ``probewatch show``, the API, the dashboard and the PR report all read the stored
table through :func:`stored_coverage` and never derive it again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pydantic import BaseModel, ConfigDict, Field

from task_registry.models import Task
from task_registry.types import (
    Control,
    PatchSource,
    ProbeStatus,
    PromiseCategory,
    PromiseVerdict,
    TaskStatus,
)

# A promise the PR's tests were read to check, broken by a patch that passes them anyway.
CONTRADICTED = "asserted on, yet a gap passes"


class ControlRef(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: Control
    adversarial: str | None = None  # the adversarial patch's id when kind is adversarial

    @property
    def label(self) -> str:
        return f"{self.kind} #{self.adversarial}" if self.adversarial else str(self.kind)


class ProbeCoverage(BaseModel):
    path: str
    promise_position: int | None = None
    status: ProbeStatus = ProbeStatus.proposed
    rejection_reason: str | None = None
    golden_passes: int = 0  # out of golden_runs, no skip allowed
    golden_runs: int = 0
    rejects: list[ControlRef] = Field(default_factory=list)
    redundant: bool = False

    @property
    def accepted(self) -> bool:
        return self.status == ProbeStatus.accepted


class AdversarialCoverage(BaseModel):
    id: str
    source: PatchSource = PatchSource.mechanical
    operator: str
    path: str = ""
    line: int | None = None
    promise_category: PromiseCategory | None = None
    description: str = ""
    # The changed definitions that hold its line, outer first, by qualified name (a class,
    # then its method); empty when the line is outside them or unknown (a model's patch).
    symbols: list[str] = Field(default_factory=list)
    survives_original: bool | None = None  # None: not run against the original tests yet
    rejected_by: list[str] = Field(default_factory=list)  # probe paths
    # How the PR's tests met the mutated line: "covering" (the tests in ``exercised_by`` run
    # it, by line coverage), "pr_tests" (no line data: the PR's test files judged it),
    # "unexecuted" (no test runs it); None before validation.
    reach: str | None = None
    exercised_by: list[str] = Field(default_factory=list)  # node ids
    # Why the patch was set aside as likely equivalent (its function gave the golden
    # results on every recorded and edge input): listed here, never reported as a gap.
    equivalent: str = ""

    @property
    def place(self) -> str:
        """The innermost changed definition that holds its line (a method rather than its
        class); empty when none is known."""
        return self.symbols[-1] if self.symbols else ""


class PromiseCoverage(BaseModel):
    position: int
    category: PromiseCategory
    quote: str
    quantity: str | None = None
    verdict: PromiseVerdict | None = None
    evidence: str = ""
    # The changed definitions the promise concerns, by qualified name; empty when its quote
    # names none of the change (it may concern any of it).
    concerns: list[str] = Field(default_factory=list)
    probes: list[str] = Field(default_factory=list)
    survivors: list[str] = Field(default_factory=list)  # adversarial ids

    def concerned_by(self, adversarial: AdversarialCoverage) -> bool:
        """The patch is of the promise's kind and in the code the promise concerns: a
        definition the promise is linked to holds its line. A promise linked to no
        definition, or a patch whose place is unknown, gives no place to compare."""
        if adversarial.promise_category != self.category:
            return False
        return not self.concerns or not adversarial.symbols or self.holds(adversarial)

    def holds(self, adversarial: AdversarialCoverage) -> bool:
        """A definition the promise concerns holds the patch's line (it or one around it)."""
        return bool(set(self.concerns) & set(adversarial.symbols))

    def contradicted_by(self, adversarial: AdversarialCoverage) -> bool:
        """The patch breaks what a "checked" reading of this promise claims: it is of the
        promise's own kind (memory, time, traffic, state, mode or numeric) and in a function
        the promise itself is linked to. A patch elsewhere in the promise's class (a
        ``reset`` beside the ``encode`` a cache promise is about) breaks another promise of
        that class, not this one; and a functional promise's reading stands, since the code
        behind a checked feature always leaves some patch alive (an argument, a log line)."""
        return (
            self.category != PromiseCategory.functional
            and adversarial.promise_category == self.category
            and adversarial.place in self.concerns
        )

    @property
    def missed(self) -> bool:
        """The PR's tests do not check this promise, and a surviving patch shows it (a
        promise they were read to check can be missed too: :meth:`CoverageTable.contradicted`)."""
        return self.verdict != PromiseVerdict.checked and bool(self.survivors)


class WaitingTest(BaseModel):
    """An original test file (or one test) or a probe that was not judged here, and why: it
    needs GPUs the runner did not offer, or the machine failed it (an asset, a module)."""

    path: str
    reason: str

    @property
    def needs_gpu(self) -> bool:
        return self.reason.startswith(("needs_gpu", "needs "))


class CoverageTable(BaseModel):
    instance_id: str
    promises: list[PromiseCoverage] = Field(default_factory=list)
    probes: list[ProbeCoverage] = Field(default_factory=list)
    adversarials: list[AdversarialCoverage] = Field(default_factory=list)
    original_rejects: list[ControlRef] = Field(default_factory=list)
    waiting: list[WaitingTest] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    validated_with: str | None = None  # what the validation's inputs hashed to

    def contradicted(self, promise: PromiseCoverage) -> bool:
        """The tests were read to check ``promise``, yet a surviving patch that breaks what
        the reading claims passes them (:meth:`PromiseCoverage.contradicted_by`): what
        running showed outweighs what reading said."""
        return promise.verdict == PromiseVerdict.checked and any(
            promise.contradicted_by(a) for a in self.survivors_of(promise)
        )

    def shows(self, promise: PromiseCoverage, adversarial: AdversarialCoverage) -> bool:
        """The surviving patch is evidence the PR's tests miss ``promise``: any survivor the
        promise's row lists, when the tests were not read to check it; when they were, one
        that contradicts the reading."""
        if adversarial.id not in promise.survivors:
            return False
        return promise.verdict != PromiseVerdict.checked or promise.contradicted_by(adversarial)

    def reading(
        self,
        promise: PromiseCoverage,
        words: Callable[[PromiseVerdict | None], str] = lambda v: str(v or "unchecked"),
    ) -> str:
        """What the PR's tests do with ``promise`` in the words of one surface (the report's,
        a table's; by default the verdict's name): the verdict read from them, or
        :data:`CONTRADICTED` when a surviving patch breaks a promise they were read to
        check. Every surface says it this way."""
        return CONTRADICTED if self.contradicted(promise) else words(promise.verdict)

    def missed(self, promise: PromiseCoverage) -> bool:
        """A surviving patch shows the PR's tests miss ``promise``: read as not checked, or
        read as checked and contradicted."""
        return promise.missed or self.contradicted(promise)

    def survivors(self) -> list[AdversarialCoverage]:
        """Patches that pass the PR's tests and were not set aside as likely equivalent."""
        return [a for a in self.adversarials if a.survives_original and not a.equivalent]

    def set_aside(self) -> list[AdversarialCoverage]:
        """Surviving patches set aside as likely equivalent: the task's table lists them."""
        return [a for a in self.adversarials if a.survives_original and a.equivalent]

    def linked(self) -> set[str]:
        """The ids of the surviving patches some promise's row lists."""
        return {i for promise in self.promises for i in promise.survivors}

    def unlinked(self) -> list[AdversarialCoverage]:
        """Surviving patches no promise's row lists: gaps in the PR's tests all the same, in
        code no promise of the description names; the task's table lists them apart."""
        linked = self.linked()
        return [a for a in self.survivors() if a.id not in linked]

    def redundant_probes(self) -> list[ProbeCoverage]:
        return [p for p in self.probes if p.redundant]

    def probe(self, path: str) -> ProbeCoverage | None:
        return next((p for p in self.probes if p.path == path), None)

    def adversarial(self, adversarial_id: str) -> AdversarialCoverage | None:
        return next((a for a in self.adversarials if a.id == adversarial_id), None)

    def probes_of(self, promise: PromiseCoverage) -> list[ProbeCoverage]:
        return [probe for path in promise.probes if (probe := self.probe(path)) is not None]

    def survivors_of(self, promise: PromiseCoverage) -> list[AdversarialCoverage]:
        return [a for i in promise.survivors if (a := self.adversarial(i)) is not None]

    def caught_by(self, adversarial: AdversarialCoverage) -> list[str]:
        """The accepted probes that reject ``adversarial`` (a rejected probe proves nothing)."""
        return [
            path
            for path in adversarial.rejected_by
            if (probe := self.probe(path)) is not None and probe.accepted
        ]

    @property
    def problems(self) -> list[PromiseCoverage]:
        """Promises the PR's tests miss, each with a surviving patch as evidence."""
        return [p for p in self.promises if self.missed(p)]

    @property
    def covered(self) -> list[PromiseCoverage]:
        return [p for p in self.promises if not self.missed(p)]

    @property
    def actionable(self) -> bool:
        return bool(self.problems)

    def with_adversarial_ids(self, ids: Mapping[str, str]) -> CoverageTable:
        """The same table with its adversarials renamed (rows imported into another registry
        get new ids); an id not in ``ids`` stays as it is."""

        def ref(control: ControlRef) -> ControlRef:
            if control.adversarial is None:
                return control
            return control.model_copy(
                update={"adversarial": ids.get(control.adversarial, control.adversarial)}
            )

        return self.model_copy(
            update={
                "adversarials": [
                    a.model_copy(update={"id": ids.get(a.id, a.id)}) for a in self.adversarials
                ],
                "promises": [
                    p.model_copy(update={"survivors": [ids.get(i, i) for i in p.survivors]})
                    for p in self.promises
                ],
                "probes": [
                    p.model_copy(update={"rejects": [ref(r) for r in p.rejects]})
                    for p in self.probes
                ],
                "original_rejects": [ref(r) for r in self.original_rejects],
            }
        )

    def without_survivors_in(self, ignored: Callable[[str], bool]) -> CoverageTable:
        """The table without evidence in paths the maintainers told probewatch to ignore."""
        kept = {a.id for a in self.adversarials if not ignored(a.path)}
        promises = [
            p.model_copy(update={"survivors": [i for i in p.survivors if i in kept]})
            for p in self.promises
        ]
        return self.model_copy(update={"promises": promises})


def stored_coverage(task: Task) -> CoverageTable:
    """The table stored on ``task``; a task not built yet has an empty one."""
    return CoverageTable.model_validate(task.coverage or {"instance_id": task.instance_id})


# A task in one of these states went through a validation that ran to its end.
VALIDATED_STATUSES = frozenset({TaskStatus.validated, TaskStatus.published})


def validation_finished(task: Task) -> bool:
    """Whether the task's validation ran to its end: it is validated (or published), or it is
    built and its table says which tests wait for a runner that can run them (nothing could
    run here). A task that is only built, whose validation was cut short (a worker killed
    mid-way) or never started, has no evidence yet: no report may stand on it."""
    status = TaskStatus(task.status)
    if status in VALIDATED_STATUSES:
        return True
    return status is TaskStatus.built and bool(stored_coverage(task).waiting)

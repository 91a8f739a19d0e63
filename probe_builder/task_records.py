"""What building and validating a task write to the registry, and read back from it.

A build stores the task (status ``built``), its promises with their verdicts,
its adversarial patches and a first coverage table; a rebuild whose material
is unchanged leaves everything as it is, a changed one replaces the derived
rows (probes stay: they are the curator's input). A validation replaces the
task's control runs and probes with the new ones, records each run with its
per-test results, marks survivors and which probes reject them, and stores
the coverage table. Both refuse a task that submissions were graded against,
or that is published or retired: what was graded must stay as it was.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlmodel import Session, col, delete, func, select

from probe_builder.acceptance import (
    AcceptanceReport,
    AdversarialInput,
    AdversarialOutcome,
    ProbeFile,
    ProbeOutcome,
)
from probe_builder.adversarial.survivors import ControlRun
from probe_builder.coverage import build_coverage_table
from probe_builder.material.assemble import TaskMaterial
from probe_builder.material.contract import Contract
from probe_builder.promises.extract import ExtractedPromise
from probe_builder.promises.verdicts import PromiseCheck
from probewatch.errors import BuildError
from runners.types import Outcome, sandbox_columns
from task_registry.candidates import find_candidate
from task_registry.coverage import (
    AdversarialCoverage,
    CoverageTable,
    ProbeCoverage,
    PromiseCoverage,
    WaitingTest,
)
from task_registry.models import (
    AdversarialPatch,
    AdversarialPatchCreate,
    CandidatePR,
    Probe,
    ProbeCreate,
    Promise,
    PromiseCreate,
    Submission,
    Task,
    TaskCreate,
    TestResult,
    TestResultBase,
    ValidationRun,
    ValidationRunCreate,
)
from task_registry.repos import find_repo
from task_registry.tasks import (
    add_adversarial,
    add_probe,
    add_promise,
    create_task,
    find_task,
    list_adversarials,
    list_probes,
    list_promises,
    record_validation_run,
    set_task_status,
)
from task_registry.types import (
    Control,
    Decision,
    PatchSource,
    ProbeStatus,
    PromiseCategory,
    PromiseVerdict,
    RunOutcome,
    TaskStatus,
    TestOutcome,
)

PROMISE_MARKER = "promise="  # a probe row's marker naming the promise category it is tagged with
VALIDATION_NOTE = "validation: "  # prefix of the notes a validation adds to the table
CONTROLS = (Control.golden, Control.snapshot, Control.hollow, Control.adversarial)
RUN_OUTCOMES: dict[Outcome, RunOutcome] = {
    Outcome.completed: RunOutcome.completed,
    Outcome.unappliable: RunOutcome.unappliable,
    Outcome.refused: RunOutcome.unappliable,  # refused before touching disk: it does not apply
    Outcome.timeout: RunOutcome.timeout,
    Outcome.fault: RunOutcome.fault,
    Outcome.unschedulable: RunOutcome.unschedulable,
}
BUILDABLE = frozenset({TaskStatus.candidate, TaskStatus.built, TaskStatus.validated})


class PipelineError(BuildError):
    """A task cannot be built or validated; the message says why and what to do."""


@dataclass(frozen=True)
class CandidateRef:
    id: int
    repo: str
    number: int
    title: str
    body: str
    merge_sha: str
    merged_at: datetime | None

    @property
    def instance_id(self) -> str:
        return f"{self.repo.replace('/', '__')}-{self.number}"


def parse_instance_id(instance_id: str) -> tuple[str, int]:
    """``owner__name-12`` → (``owner/name``, 12)."""
    slug, _, number = instance_id.rpartition("-")
    owner, sep, name = slug.partition("__")
    if not (sep and owner and name and number.isdigit()):
        raise PipelineError(f"{instance_id!r} is not an instance id (expected owner__name-NUMBER)")
    return f"{owner}/{name}", int(number)


def load_candidate(session: Session, instance_id: str) -> CandidateRef:
    """The accepted candidate PR behind ``instance_id``."""
    repo, number = parse_instance_id(instance_id)
    row = find_repo(session=session, full_name=repo)
    candidate = (
        find_candidate(session=session, repo_id=row.id, number=number) if row and row.id else None
    )
    if candidate is None:
        raise PipelineError(f"no candidate {repo}#{number}: mine it first (`probewatch mine`)")
    if candidate.decision != Decision.accepted:
        raise PipelineError(
            f"candidate {repo}#{number} is {candidate.decision}: only accepted candidates are "
            f"built (`probewatch candidates accept {repo}#{number}`)"
        )
    if not candidate.merge_sha:
        raise PipelineError(f"candidate {repo}#{number} has no merge commit")
    assert candidate.id is not None
    return CandidateRef(
        candidate.id,
        repo,
        number,
        candidate.title,
        candidate.body,
        candidate.merge_sha,
        candidate.merged_at,
    )


class BuildAction(StrEnum):
    created = "created"
    replaced = "replaced"
    unchanged = "unchanged"


@dataclass(frozen=True)
class BuildResult:
    instance_id: str
    action: BuildAction
    status: TaskStatus
    promises: int
    adversarials: int
    lint_ok: bool
    leaks_ok: bool
    notes: tuple[str, ...]
    table: CoverageTable


def build_notes(material: TaskMaterial) -> list[str]:
    notes = list(material.notes)
    notes += [f"statement lint: {f.message}" for f in material.lint.findings]
    notes += [f"statement leak: {f.message}" for f in material.leaks.findings]
    if not material.split.test_files:
        notes.append("the PR changes no test file: there are no original tests")
    return notes


def _promise_rows(material: TaskMaterial) -> list[dict[str, Any]]:
    return [
        dict(
            category=str(check.promise.category),
            quote=check.promise.quote,
            quantity=check.promise.quantity,
            verdict=str(check.verdict),
            position=check.promise.position,
        )
        for check in material.checks
    ]


def _adversarial_rows(material: TaskMaterial) -> list[dict[str, Any]]:
    return [
        dict(
            source=PatchSource(p.source),
            operator=p.operator,
            file=p.path,
            line=p.line,
            promise_category=str(p.promise_category) if p.promise_category else None,
            description=p.description,
            patch=p.patch,
        )
        for p in material.adversarials
    ]


def _unchanged(
    session: Session, task: Task, fields: Mapping[str, Any], material: TaskMaterial
) -> bool:
    assert task.id is not None
    same_task = all(
        getattr(task, key) == value
        for key, value in fields.items()
        if key not in ("fail_to_pass", "pass_to_pass", "created_at")
    )
    promises = [
        dict(
            category=p.category,
            quote=p.quote,
            quantity=p.quantity,
            verdict=p.verdict,
            position=p.position,
        )
        for p in list_promises(session=session, task_id=task.id)
    ]
    adversarials = [
        dict(
            source=PatchSource(a.source),
            operator=a.operator,
            file=a.file,
            line=a.line,
            promise_category=a.promise_category,
            description=a.description,
            patch=a.patch,
        )
        for a in list_adversarials(session=session, task_id=task.id)
    ]
    return (
        same_task
        and promises == _promise_rows(material)
        and adversarials == _adversarial_rows(material)
    )


def refuse_if_graded(session: Session, task: Task, doing: str) -> None:
    """Submissions were graded against the task's probes and patches: they stay as they are."""
    if TaskStatus(task.status) not in BUILDABLE:
        raise PipelineError(
            f"task {task.instance_id} is {task.status}: it cannot be {doing} (retire it first "
            "and build a new task)"
        )
    count = session.exec(
        select(func.count()).select_from(Submission).where(Submission.task_id == task.id)
    ).one()
    if count:
        raise PipelineError(
            f"task {task.instance_id} has {count} submission(s) graded against it: "
            f"it cannot be {doing} without changing what they were graded on"
        )


def clear_validation(session: Session, task_id: int) -> None:
    """Remove the task's control runs (never submissions' runs) and their test results."""
    runs = select(ValidationRun.id).where(
        col(ValidationRun.task_id) == task_id,
        col(ValidationRun.control).in_([str(c) for c in CONTROLS]),
    )
    session.exec(delete(TestResult).where(col(TestResult.run_id).in_(runs)))
    session.exec(
        delete(ValidationRun).where(
            col(ValidationRun.task_id) == task_id,
            col(ValidationRun.control).in_([str(c) for c in CONTROLS]),
        )
    )


def clear_derived(session: Session, task_id: int) -> None:
    """Remove what a build derives: control runs, adversarials, promises. Probes are the
    curator's input: they stay, unlinked from the old promises and back to proposed."""
    clear_validation(session, task_id)
    for probe in list_probes(session=session, task_id=task_id):
        probe.promise_id, probe.status, probe.rejection_reason = None, ProbeStatus.proposed, None
        session.add(probe)
    session.flush()
    session.exec(delete(AdversarialPatch).where(col(AdversarialPatch.task_id) == task_id))
    session.exec(delete(Promise).where(col(Promise.task_id) == task_id))
    session.flush()


def store_build(
    session: Session, candidate: CandidateRef, fields: Mapping[str, Any], material: TaskMaterial
) -> BuildResult:
    """Create the task, or replace its derived rows when the material changed."""
    task = find_task(session=session, instance_id=candidate.instance_id)
    if task is not None:
        if _unchanged(session, task, fields, material):
            table = placed_again(CoverageTable.model_validate(task.coverage), material)
            stored = table.model_dump(mode="json")
            if stored != task.coverage:
                task.coverage = stored
                session.add(task)
                session.flush()
            return _build_result(task, BuildAction.unchanged, material, table)
        refuse_if_graded(session, task, "rebuilt")
        assert task.id is not None
        clear_derived(session, task.id)
        task.sqlmodel_update(dict(fields))
        action = BuildAction.replaced
    else:
        task = create_task(
            session=session,
            task_in=TaskCreate(
                instance_id=candidate.instance_id, candidate_id=candidate.id, **fields
            ),
        )
        action = BuildAction.created
    set_task_status(session=session, task=task, status=TaskStatus.built)
    table = _store_rows(session, task, material)
    return _build_result(task, action, material, table)


def placed_again(table: CoverageTable, material: TaskMaterial) -> CoverageTable:
    """The stored table with what each promise is about and where each patch lies as the
    material now says, and its survivors linked again by them: a table stored before
    probewatch placed them (or placed them otherwise) gets the places without a run. The
    material is unchanged, so its promises and patches are the table's, in its order."""
    if len(table.adversarials) != len(material.adversarials) or len(table.promises) != len(
        material.checks
    ):
        return table  # not the table of this material: left as it is
    adversarials = [
        row.model_copy(update={"symbols": list(material.symbols_of(proposed))})
        for row, proposed in zip(table.adversarials, material.adversarials, strict=True)
    ]
    placed = build_coverage_table(
        table.instance_id,
        material.checks,
        probes=table.probes,
        adversarials=adversarials,
        original_rejects=table.original_rejects,
        waiting={w.path: w.reason for w in table.waiting},
        notes=table.notes,
    )
    return placed.model_copy(update={"validated_with": table.validated_with})


def _store_rows(session: Session, task: Task, material: TaskMaterial) -> CoverageTable:
    assert task.id is not None
    for row in _promise_rows(material):
        add_promise(session=session, promise_in=PromiseCreate(task_id=task.id, **row))
    adversarials = []
    for proposed, row in zip(material.adversarials, _adversarial_rows(material), strict=True):
        stored = add_adversarial(
            session=session, patch_in=AdversarialPatchCreate(task_id=task.id, **row)
        )
        adversarials.append(
            AdversarialCoverage(
                id=str(stored.id),
                source=PatchSource(proposed.source),
                operator=proposed.operator,
                path=proposed.path,
                line=proposed.line,
                promise_category=proposed.promise_category,
                description=proposed.description,
                symbols=list(material.symbols_of(proposed)),
            )
        )
    table = build_coverage_table(
        task.instance_id, material.checks, adversarials=adversarials, notes=build_notes(material)
    )
    task.coverage = table.model_dump(mode="json")
    session.add(task)
    session.flush()
    return table


def _build_result(
    task: Task, action: BuildAction, material: TaskMaterial, table: CoverageTable
) -> BuildResult:
    return BuildResult(
        instance_id=task.instance_id,
        action=action,
        status=TaskStatus(task.status),
        promises=len(material.checks),
        adversarials=len(material.adversarials),
        lint_ok=material.lint.ok,
        leaks_ok=material.leaks.ok,
        notes=tuple(build_notes(material)),
        table=table,
    )


@dataclass(frozen=True)
class StoredTask:
    """What validation reads from the registry, detached from any session."""

    id: int
    instance_id: str
    base_commit: str
    merge_commit: str
    patch: str
    test_patch: str
    hollow_patch: str
    statement: str
    contract: Contract
    table: CoverageTable
    title: str
    body: str
    adversarials: tuple[AdversarialInput, ...]
    probes: tuple[ProbeFile, ...]
    promise_ids: Mapping[int, int]  # position → Promise.id
    merged_at: datetime | None = None
    lock_hash: str | None = None  # the environment the task was built with
    validated: bool = False  # its status is validated (not only built)


def _probe_file(row: Probe) -> ProbeFile:
    tags = [m.removeprefix(PROMISE_MARKER) for m in row.markers if m.startswith(PROMISE_MARKER)]
    category = tags[0] if tags else None
    return ProbeFile(
        path=row.path,
        content=row.content,
        promise_category=PromiseCategory(category) if category else None,
        author=row.author,
        round=row.round,
    )


def _adversarial_input(row: AdversarialPatch) -> AdversarialInput:
    category = PromiseCategory(row.promise_category) if row.promise_category else None
    return AdversarialInput(str(row.id), row.patch, category, row.file, row.line, row.operator)


def load_stored_task(session: Session, instance_id: str) -> StoredTask:
    task = find_task(session=session, instance_id=instance_id)
    if task is None:
        raise PipelineError(
            f"no task {instance_id}: build it first (`probewatch build {instance_id}`)"
        )
    if task.status == TaskStatus.candidate:
        raise PipelineError(
            f"task {instance_id} is not built yet: run `probewatch build {instance_id}`"
        )
    refuse_if_graded(session, task, "validated again")
    if not task.merge_commit:
        raise PipelineError(f"task {instance_id} has no merge commit: its tests cannot be read")
    assert task.id is not None
    candidate = session.get(CandidatePR, task.candidate_id) if task.candidate_id else None
    promises = list_promises(session=session, task_id=task.id)
    return StoredTask(
        id=task.id,
        instance_id=task.instance_id,
        base_commit=task.base_commit,
        merge_commit=task.merge_commit,
        patch=task.patch,
        test_patch=task.test_patch,
        hollow_patch=task.hollow_patch,
        statement=task.problem_statement,
        contract=Contract.model_validate(task.contract or {}),
        table=CoverageTable.model_validate(task.coverage or {"instance_id": instance_id}),
        title=candidate.title if candidate else "",
        body=candidate.body if candidate else "",
        adversarials=tuple(
            _adversarial_input(a) for a in list_adversarials(session=session, task_id=task.id)
        ),
        probes=tuple(_probe_file(p) for p in list_probes(session=session, task_id=task.id)),
        promise_ids={p.position: p.id for p in promises if p.id is not None},
        merged_at=task.created_at,
        lock_hash=task.lock_hash,
        validated=task.status == TaskStatus.validated,
    )


def promise_for(
    outcome: ProbeOutcome, table: CoverageTable, categories: Mapping[str, PromiseCategory | None]
) -> PromiseCoverage | None:
    """The promise a probe checks: its tag, else the category of the adversarials it rejects;
    among promises of that category, the first one the PR's tests do not check."""
    category = outcome.probe.promise_category
    if category is None:
        seen = Counter(
            c
            for ref in outcome.rejects
            if ref.adversarial and (c := categories.get(ref.adversarial))
        )
        category = seen.most_common(1)[0][0] if seen else None
    matching = [p for p in table.promises if p.category == category]
    unchecked = [p for p in matching if p.verdict != PromiseVerdict.checked]
    return next(iter(unchecked or matching), None)


def probe_status(outcome: ProbeOutcome) -> ProbeStatus:
    if outcome.waiting:
        return ProbeStatus.waiting
    return ProbeStatus.accepted if outcome.accepted else ProbeStatus.rejected


def _probe_coverage(outcome: ProbeOutcome, promise: PromiseCoverage | None) -> ProbeCoverage:
    return ProbeCoverage(
        path=outcome.probe.path,
        promise_position=promise.position if promise else None,
        status=probe_status(outcome),
        rejection_reason=outcome.reason,
        golden_passes=outcome.golden_passes,
        golden_runs=outcome.golden_runs,
        rejects=list(outcome.rejects),
    )


def validated_table(
    stored: StoredTask, report: AcceptanceReport, notes: Sequence[str]
) -> tuple[CoverageTable, list[tuple[ProbeOutcome, PromiseCoverage | None]]]:
    table = stored.table
    categories = {a.id: a.promise_category for a in table.adversarials}
    linked = [(o, promise_for(o, table, categories)) for o in report.probes]
    outcomes = {a.id: a for a in report.adversarials}
    adversarials = [_judged(a, outcomes.get(a.id)) for a in table.adversarials]
    checks = [
        PromiseCheck(
            ExtractedPromise(
                category=p.category, quote=p.quote, quantity=p.quantity, position=p.position
            ),
            p.verdict or PromiseVerdict.unchecked,
            p.evidence,
            frozenset(p.concerns),
        )
        for p in table.promises
    ]
    kept_notes = [n for n in table.notes if not n.startswith(VALIDATION_NOTE)]
    new = build_coverage_table(
        stored.instance_id,
        checks,
        probes=[_probe_coverage(o, p) for o, p in linked],
        adversarials=adversarials,
        original_rejects=report.original_rejects,
        waiting=report.waiting,
        notes=[*kept_notes, *notes],
    )
    return new, linked


def _judged(row: AdversarialCoverage, outcome: AdversarialOutcome | None) -> AdversarialCoverage:
    if outcome is None:
        return row.model_copy(update={"survives_original": None})
    return row.model_copy(
        update={
            "survives_original": outcome.survives_original,
            "reach": outcome.reach,
            "exercised_by": list(outcome.exercised_by),
            "equivalent": outcome.equivalent,
        }
    )


def store_validation(
    session: Session,
    stored: StoredTask,
    report: AcceptanceReport,
    notes: Sequence[str],
    runner: str,
    fingerprint: str | None = None,
) -> CoverageTable:
    task = session.get(Task, stored.id)
    if task is None:
        raise PipelineError(f"task {stored.instance_id} was removed while it was validated")
    refuse_if_graded(session, task, "validated again")
    clear_validation(session, stored.id)
    session.exec(delete(Probe).where(col(Probe.task_id) == stored.id))
    session.flush()
    table, linked = validated_table(stored, report, notes)
    table = table.model_copy(update={"validated_with": fingerprint})
    probe_ids = _store_probes(session, stored, linked)
    _store_adversarials(session, stored, report, probe_ids)
    for run in report.runs:
        _store_run(session, stored.id, run, runner)
    task.fail_to_pass, task.pass_to_pass = list(report.fail_to_pass), list(report.pass_to_pass)
    task.coverage = table.model_dump(mode="json")
    session.add(task)
    set_task_status(session=session, task=task, status=TaskStatus.validated)
    return table


def store_waiting(
    session: Session, stored: StoredTask, waiting: Mapping[str, str], notes: Sequence[str]
) -> CoverageTable:
    """Nothing could run on the validating runner: the table says what waits and why; the
    task stays built, and its earlier validation (if any) is cleared, not kept half-true."""
    task = session.get(Task, stored.id)
    if task is None:
        raise PipelineError(f"task {stored.instance_id} was removed while it was validated")
    refuse_if_graded(session, task, "validated again")
    clear_validation(session, stored.id)
    kept_notes = [n for n in stored.table.notes if not n.startswith(VALIDATION_NOTE)]
    table = stored.table.model_copy(
        update={
            "waiting": [WaitingTest(path=path, reason=why) for path, why in waiting.items()],
            "notes": [*kept_notes, *notes],
        }
    )
    task.coverage = table.model_dump(mode="json")
    session.add(task)
    set_task_status(session=session, task=task, status=TaskStatus.built)
    return table


def _store_probes(
    session: Session,
    stored: StoredTask,
    linked: Sequence[tuple[ProbeOutcome, PromiseCoverage | None]],
) -> dict[str, int]:
    ids = {}
    for outcome, promise in linked:
        probe = outcome.probe
        markers = [PROMISE_MARKER + probe.promise_category] if probe.promise_category else []
        row = add_probe(
            session=session,
            probe_in=ProbeCreate(
                task_id=stored.id,
                promise_id=stored.promise_ids.get(promise.position) if promise else None,
                path=probe.path,
                content=probe.content,
                markers=markers,
                author=probe.author,
                round=probe.round,
            ),
        )
        row.status = probe_status(outcome)
        row.rejection_reason = outcome.reason
        session.add(row)
        assert row.id is not None
        ids[probe.path] = row.id
    session.flush()
    return ids


def _store_adversarials(
    session: Session, stored: StoredTask, report: AcceptanceReport, probe_ids: Mapping[str, int]
) -> None:
    outcomes = {a.id: a for a in report.adversarials}
    for row in list_adversarials(session=session, task_id=stored.id):
        outcome = outcomes.get(str(row.id))
        if outcome is None:
            continue
        row.survives_original = outcome.survives_original
        row.rejected_by = [probe_ids[path] for path in outcome.rejected_by if path in probe_ids]
        session.add(row)
    session.flush()


def _store_run(session: Session, task_id: int, run: ControlRun, runner: str) -> None:
    result = run.result
    sandbox, sandbox_reason = sandbox_columns(result.sandbox)
    record_validation_run(
        session=session,
        run_in=ValidationRunCreate(
            task_id=task_id,
            adversarial_id=int(run.job.adversarial) if run.job.adversarial else None,
            control=str(run.job.control),
            suite=run.job.suite,
            attempt=run.job.attempt,
            runner=runner,
            outcome=RUN_OUTCOMES[result.outcome],
            fault_kind=str(result.fault.kind) if result.fault else None,
            fault_detail=result.fault.detail if result.fault else (result.detail or None),
            n_collected=len(result.tests),
            n_passed=len(result.passed),
            wall_s=result.resources.wall_s,
            cpu_s=result.resources.cpu_s,
            peak_rss_bytes=result.resources.peak_rss_bytes,
            gpu_peak_bytes=result.resources.gpu_peak_bytes,
            started_at=run.started_at,
            finished_at=run.finished_at,
            sandbox=sandbox,
            sandbox_reason=sandbox_reason,
            log=result.log,
        ),
        results=[
            TestResultBase(
                test_id=t.node_id,
                outcome=TestOutcome(str(t.status)),
                duration_s=t.duration_s,
                message=t.message,
                is_probe=t.is_probe,
            )
            for t in result.tests
        ],
    )

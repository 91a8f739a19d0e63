"""Build and validate tasks: from a mined candidate PR to a stored, validated task.

``build_task`` reads an accepted candidate (repo, number, merge commit, title,
body) and a local mirror of its repository, derives the task's material
(split, promises, assertion profile and verdicts, contract, statement with
its lint and leak reports, hollow patch, adversarial patches; see
:mod:`probe_builder.material.assemble`) and stores it as one transaction: the task
(status ``built``), its promises, its adversarial patches and a first
coverage table. ``validate_task`` runs the acceptance protocol
(:mod:`probe_builder.acceptance`) on the stored task with the curator's or
the author's probes, outside any transaction, then stores the probes with
their verdicts, each run with its per-test results, the survivors, FAIL_TO_PASS
and PASS_TO_PASS and the coverage table, and marks the task ``validated``.
Re-running either is idempotent: an unchanged build is left alone, a changed
one replaces the task's derived rows, and both refuse when submissions were
graded against the task. Progress goes to an optional callback.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any

from sqlalchemy.engine import Engine

from probe_builder.acceptance import (
    AcceptanceInputs,
    AcceptanceReport,
    ProbeFile,
    ProbeOutcome,
    Reviser,
    run_acceptance,
)
from probe_builder.adversarial.hollow import HollowError
from probe_builder.adversarial.survivors import (
    BaselineError,
    ControlRun,
    ControlRunner,
    NothingRunsHere,
    SearchStats,
    TaskRunSpec,
    golden_failures,
)
from probe_builder.authors.base import Author, AuthorError, AuthorRequest
from probe_builder.environment import (
    EnvironmentPlan,
    TaskCommits,
    prepare_task_environment,
    task_environment,
)
from probe_builder.gitio import GitTree
from probe_builder.material.assemble import PullRequest, TaskMaterial, build_material
from probe_builder.material.diffs import DiffParseError, parse_diff
from probe_builder.material.statement_checks import check_leaks
from probe_builder.promises.extract import ExtractedPromise
from probe_builder.task_records import (
    VALIDATION_NOTE,
    BuildResult,
    CandidateRef,
    PipelineError,
    StoredTask,
    load_candidate,
    load_stored_task,
    parse_instance_id,
    store_build,
    store_validation,
    store_waiting,
)
from probewatch.git import GitError, run_git
from probewatch.testfiles import (
    DEFAULT_TEST_GLOBS,
    PYTEST_MODULE_GLOBS,
    TestFiles,
    is_pytest_module,
)
from runners.backends.placement import (
    TestPlacement,
    describe_capacity,
    describe_hardware,
    fits,
    place_test,
)
from runners.env import Prepared
from runners.types import Backend, Capacity, EnvironmentRef, Hardware, HardwareRules, Outcome
from task_registry.coverage import CoverageTable
from task_registry.db import session_scope
from task_registry.types import PromiseCategory

__all__ = [
    "BuildResult",
    "PipelineError",
    "ProbeFile",
    "ProgressEvent",
    "RepoSettings",
    "ValidationResult",
    "build_task",
    "load_probe_folder",
    "parse_instance_id",
    "validate_task",
]

DEFAULT_PROBE_DIR = "tests/probes"  # where a curator's probe files go in the run's tree
PROBE_MANIFEST = "probes.toml"  # optional, in a probe folder: [categories] file = "state"


class Stage(StrEnum):
    material = "material"
    environment = "environment"
    store = "store"
    runs = "runs"


@dataclass(frozen=True)
class ProgressEvent:
    stage: Stage
    message: str
    done: int | None = None  # runs finished so far, during the runs stage


Progress = Callable[[ProgressEvent], None]


def _noop(_: ProgressEvent) -> None:
    return None


@dataclass(frozen=True)
class RepoSettings:
    """The repository's conventions (from the watch file) that build and validate need."""

    test_globs: tuple[str, ...] = DEFAULT_TEST_GLOBS
    setup_commands: tuple[str, ...] = ()
    hardware: HardwareRules = field(default_factory=HardwareRules)
    environment: EnvironmentPlan | None = None  # None: this interpreter (the demo)
    env: Mapping[str, str] = field(default_factory=dict)  # variables the repository's CI sets
    timeout_per_test_s: float | None = 300.0
    timeout_run_s: float = 3600.0


# --- where a task comes from -------------------------------------------------------------


def pre_change_commit(mirror: Path, merge_sha: str) -> str:
    """The merge commit's first parent: the pre-change snapshot.

    Not GitHub's ``base.sha`` (the base branch's tip when the PR was opened), which
    would drag other PRs' changes into the diff."""
    try:
        return run_git(mirror, "rev-parse", "--verify", f"{merge_sha}^1^{{commit}}").stdout.strip()
    except GitError as exc:
        raise PipelineError(
            f"commit {merge_sha} (or its parent) is not in the mirror {mirror}: fetch it first"
        ) from exc


def commit_time(mirror: Path, sha: str) -> datetime:
    stamp = run_git(mirror, "show", "-s", "--format=%ct", sha).stdout.strip()
    return datetime.fromtimestamp(int(stamp), tz=UTC)


# --- where each test runs -----------------------------------------------------------------


def changed_test_modules(
    mirror: Path, base: str, head: str, test_globs: Sequence[str]
) -> tuple[str, ...]:
    """The test modules the PR adds or changes (what its own tests are)."""
    names = run_git(
        mirror, "diff", "--name-only", "--no-renames", "--diff-filter=d", base, head
    ).stdout.splitlines()
    return tuple(p for p in TestFiles(test_globs).among(names) if is_pytest_module(p))


def test_placements(
    mirror: Path, head: str, paths: Sequence[str], rules: HardwareRules
) -> tuple[TestPlacement, ...]:
    """Each test module's hardware, read from its text at ``head`` and the conventions."""
    tree = GitTree(mirror, head)
    return tuple(place_test(path, tree.read(path), rules) for path in paths)


def task_hardware(placements: Sequence[TestPlacement]) -> Hardware:
    """What the task needs to run all its tests: its most demanding test file's hardware."""
    return max((p.hardware for p in placements), key=lambda h: h.gpus, default=Hardware())


# --- build -------------------------------------------------------------------------------


def build_task(
    *,
    engine: Engine,
    instance_id: str,
    mirror: Path,
    settings: RepoSettings,
    author: Author | None = None,
    progress: Progress = _noop,
) -> BuildResult:
    """Derive the task's material from the candidate and store it (one transaction)."""
    with session_scope(engine) as session:
        candidate = load_candidate(session, instance_id)
    base = pre_change_commit(mirror, candidate.merge_sha)
    progress(ProgressEvent(Stage.material, f"deriving {instance_id} from {base[:10]}.."))
    pr = PullRequest(
        mirror, base, candidate.merge_sha, candidate.title, candidate.body, instance_id
    )
    tests = changed_test_modules(mirror, base, candidate.merge_sha, settings.test_globs)
    hardware = task_hardware(test_placements(mirror, candidate.merge_sha, tests, settings.hardware))
    try:
        material = build_material(
            pr, test_globs=settings.test_globs, hardware=hardware, author=author
        )
    except (HollowError, DiffParseError, AuthorError) as exc:
        raise PipelineError(f"{instance_id} cannot be built: {exc}") from exc
    merged_at = candidate.merged_at or commit_time(mirror, candidate.merge_sha)
    fields = _task_fields(candidate, base, merged_at, material, hardware)
    if settings.environment is not None:
        progress(ProgressEvent(Stage.environment, f"environment for {base[:10]} as of {merged_at}"))
        commits = TaskCommits(mirror, base, candidate.merge_sha, merged_at, tests)
        prepared = prepare_task_environment(settings.environment, commits)
        fields["lock_hash"] = prepared.build.ref.lock_hash
    progress(ProgressEvent(Stage.store, f"storing {instance_id}"))
    with session_scope(engine) as session:
        result = store_build(session, candidate, fields, material)
    if settings.environment is None:
        return result
    return replace(result, notes=(*result.notes, _environment_note(prepared)))


def _environment_note(prepared: Prepared) -> str:
    """What the task's environment took: built now (with its repairs) or found."""
    ref = prepared.build.ref
    done = f"built in {prepared.seconds:.0f}s" if prepared.builds else "found, built before"
    added = [r.distribution for r in prepared.repairs if r.outcome == "added" and r.distribution]
    repaired = f"; added {', '.join(added)} for the PR's tests" if added else ""
    missing = ", ".join(sorted(ref.unavailable))
    unavailable = f"; unavailable here: {missing}" if missing else ""
    return f"environment {ref.lock_hash[:12]}: {done}{repaired}{unavailable}"


def _task_fields(
    candidate: CandidateRef,
    base: str,
    merged_at: datetime,
    material: TaskMaterial,
    hardware: Hardware,
) -> dict[str, Any]:
    return dict(
        repo=candidate.repo,
        pull_number=candidate.number,
        base_commit=base,
        merge_commit=candidate.merge_sha,
        created_at=merged_at,
        patch=material.split.golden,
        test_patch=material.split.test,
        problem_statement=material.statement,
        contract=material.contract.model_dump(mode="json"),
        hollow_patch=material.hollow.patch,
        gpus=hardware.gpus,
        gpu_type=hardware.gpu_type,
        fail_to_pass=[],
        pass_to_pass=[],
    )


# --- validate ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ValidationResult:
    instance_id: str
    accepted: bool
    probes: tuple[ProbeOutcome, ...]
    survivors: tuple[str, ...]
    stats: SearchStats | None  # None: nothing could run here
    runs: int
    rounds: int
    notes: tuple[str, ...]
    table: CoverageTable


def run_spec(
    stored: StoredTask,
    mirror: Path,
    settings: RepoSettings,
    capacity: Capacity | None = None,
    environment: EnvironmentRef | None = None,
) -> TaskRunSpec:
    """The original tests are the PR's post-change test files, read from the merge commit.

    Each test module is placed by the repository's conventions; those needing GPUs that
    ``capacity`` (the validating runner's) does not offer wait for a GPU runner."""
    head = GitTree(mirror, stored.merge_commit)
    files = parse_diff(stored.test_patch)
    tests = {
        f.path: text for f in files if not f.is_deleted and (text := head.read(f.path)) is not None
    }
    placements = [
        place_test(path, text, settings.hardware)
        for path, text in tests.items()
        if is_pytest_module(path)
    ]
    offered = capacity or Capacity(cpu_slots=1, gpus=0)
    here = [p for p in placements if fits(offered, p.hardware)]
    waiting = {
        p.path: f"needs {describe_hardware(p.hardware)} ({p.reason}); "
        f"this runner offers {describe_capacity(offered)}"
        for p in placements
        if not fits(offered, p.hardware)
    }
    return TaskRunSpec(
        repo=mirror,
        base_commit=stored.base_commit,
        golden_patch=stored.patch,
        original_tests=tests,
        removed_tests=tuple(f.old_path or f.path for f in files if f.is_deleted),
        setup_commands=settings.setup_commands,
        env=dict(settings.env),
        environment=environment,
        hardware=task_hardware(here),
        timeout_per_test_s=settings.timeout_per_test_s,
        timeout_run_s=settings.timeout_run_s,
        waiting=waiting,
    )


def _promises(table: CoverageTable) -> tuple[ExtractedPromise, ...]:
    return tuple(
        ExtractedPromise(
            category=p.category, quote=p.quote, quantity=p.quantity, position=p.position
        )
        for p in table.promises
    )


def author_reviser(author: Author, stored: StoredTask, mirror: Path) -> Reviser:
    """Ask ``author`` for probes, telling it why the previous round's were rejected."""
    request = AuthorRequest(
        instance_id=stored.instance_id,
        title=stored.title,
        description=stored.body,
        golden_files=tuple(parse_diff(stored.patch)),
        test_patch=stored.test_patch,
        promises=_promises(stored.table),
        contract=stored.contract,
        base=GitTree(mirror, stored.base_commit),
        head=GitTree(mirror, stored.merge_commit),
        statement=stored.statement,
    )

    def revise(round_number: int, feedback: str) -> list[ProbeFile]:
        asked = AuthorRequest(**{**request.__dict__, "round": round_number, "feedback": feedback})
        return [
            ProbeFile(p.path, p.content, p.promise_category, author=author.name, round=round_number)
            for p in author.propose_probes(asked)
        ]

    return revise


def validate_task(
    *,
    engine: Engine,
    instance_id: str,
    mirror: Path,
    settings: RepoSettings,
    backend: Backend,
    workspace_root: Path,
    probes: Sequence[ProbeFile] | None = None,
    author: Author | None = None,
    max_rounds: int = 2,
    use_coverage: bool = True,
    force: bool = False,
    progress: Progress = _noop,
) -> ValidationResult:
    """Run the acceptance protocol on a built task and store what it found.

    A validated task whose inputs are all as they were when it was validated (its
    material, probes, environment, run settings, the runner's capacity and the protocol's
    options) is not run again unless ``force``: the stored result stands."""
    with session_scope(engine) as session:
        stored = load_stored_task(session, instance_id)
    chosen = tuple(probes) if probes is not None else stored.probes
    fingerprint = validation_fingerprint(
        stored, chosen, settings, backend.capacity(), author, max_rounds, use_coverage
    )
    if not force and stored.validated and stored.table.validated_with == fingerprint:
        return _unchanged_result(stored)
    environment = _environment(stored, mirror, settings, progress)
    inputs = AcceptanceInputs(
        run_spec(stored, mirror, settings, backend.capacity(), environment),
        stored.hollow_patch,
        stored.adversarials,
    )
    counter = _RunCounter(progress)
    runner = ControlRunner(backend, workspace_root=workspace_root, on_run=counter)
    progress(
        ProgressEvent(
            Stage.runs,
            f"validating {instance_id}: {len(chosen)} probe(s), "
            f"{len(stored.adversarials)} adversarial patch(es)",
        )
    )
    try:
        report = run_acceptance(
            inputs,
            chosen,
            runner,
            revise=author_reviser(author, stored, mirror) if author is not None else None,
            max_rounds=max_rounds,
            use_coverage=use_coverage,
            rules=settings.hardware,
        )
    except NothingRunsHere as exc:
        return _waiting_result(engine, stored, exc, counter.done)
    except BaselineError as exc:
        raise PipelineError(f"{instance_id} cannot be validated: {exc}") from exc
    notes = validation_notes(report, stored)
    progress(ProgressEvent(Stage.store, f"storing {len(report.runs)} run(s)"))
    with session_scope(engine) as session:
        table = store_validation(session, stored, report, notes, backend.name, fingerprint)
    return ValidationResult(
        instance_id=instance_id,
        accepted=report.accepted,
        probes=report.probes,
        survivors=report.survivors,
        stats=report.search.stats,
        runs=len(report.runs),
        rounds=report.rounds,
        notes=tuple(notes),
        table=table,
    )


def validation_fingerprint(
    stored: StoredTask,
    probes: Sequence[ProbeFile],
    settings: RepoSettings,
    capacity: Capacity,
    author: Author | None,
    max_rounds: int,
    use_coverage: bool,
) -> str:
    """A hash of everything a validation's outcome depends on: equal hashes, equal runs."""
    document = {
        "task": [stored.base_commit, stored.merge_commit, stored.patch, stored.test_patch],
        "hollow": stored.hollow_patch,
        "adversarials": [[a.id, a.patch] for a in stored.adversarials],
        "probes": sorted([p.path, p.content, str(p.promise_category)] for p in probes),
        "environment": stored.lock_hash if settings.environment is not None else "host",
        "settings": repr(
            (
                settings.setup_commands,
                settings.hardware,
                settings.test_globs,
                sorted(settings.env.items()),
            )
        ),
        "limits": [settings.timeout_per_test_s, settings.timeout_run_s],
        "capacity": [capacity.gpus, capacity.gpu_type],
        "protocol": [author.name if author else None, max_rounds, use_coverage],
    }
    text = json.dumps(document, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


UNCHANGED_NOTE = "nothing changed since the last validation"


def _unchanged_result(stored: StoredTask) -> ValidationResult:
    table = stored.table
    note = f"{UNCHANGED_NOTE}: its result stands, no run was made"
    return ValidationResult(
        instance_id=stored.instance_id,
        accepted=any(p.accepted for p in table.probes),
        probes=(),
        survivors=tuple(a.id for a in table.survivors()),
        stats=None,
        runs=0,
        rounds=0,
        notes=(note,),
        table=table,
    )


def _environment(
    stored: StoredTask, mirror: Path, settings: RepoSettings, progress: Progress
) -> EnvironmentRef | None:
    """The environment the task was built with (prepared again when it is not here)."""
    if settings.environment is None:
        return None
    tests = tuple(
        f.path
        for f in parse_diff(stored.test_patch)
        if not f.is_deleted and is_pytest_module(f.path)
    )
    commits = TaskCommits(mirror, stored.base_commit, stored.merge_commit, stored.merged_at, tests)
    found, prepared = task_environment(settings.environment, stored.lock_hash, commits)
    if prepared:
        progress(ProgressEvent(Stage.environment, f"prepared environment {found.lock_hash[:12]}"))
    return found


def _waiting_result(
    engine: Engine, stored: StoredTask, waiting: NothingRunsHere, runs: int
) -> ValidationResult:
    """Nothing of the task can run on this runner: store what waits, and say so."""
    note = f"validation waits: {waiting}"
    with session_scope(engine) as session:
        table = store_waiting(session, stored, waiting.waiting, [VALIDATION_NOTE + note])
    return ValidationResult(
        instance_id=stored.instance_id,
        accepted=False,
        probes=(),
        survivors=(),
        stats=None,
        runs=runs,
        rounds=0,
        notes=(note,),
        table=table,
    )


@dataclass
class _RunCounter:
    progress: Progress
    done: int = 0

    def __call__(self, run: ControlRun) -> None:
        self.done += 1
        outcome = run.result.outcome
        summary = f"{len(run.result.passed)}/{len(run.result.tests)} passed"
        what = summary if outcome is Outcome.completed else f"{outcome}: {run.result.detail[:80]}"
        self.progress(ProgressEvent(Stage.runs, f"{run.label}: {what}", done=self.done))


def validation_notes(report: AcceptanceReport, stored: StoredTask) -> list[str]:
    stats = report.search.stats
    notes = [*report.notes]
    notes.append(
        f"survivor search: {stats.variants} variant(s), {stats.runs} run(s), "
        f"{stats.test_executions} test execution(s) in {stats.wall_s:.1f}s "
        f"(naive, {_naive_basis(stats)} per variant: {stats.naive_runs} run(s), "
        f"{stats.naive_test_executions} test execution(s); "
        f"coverage {'used' if stats.coverage_used else 'not available'})"
    )
    notes += _golden_failures(report)
    notes += _unmatched_survivors(report, stored.table)
    kept = {o.probe.path: o.probe.content for o in report.accepted_probes}
    if kept:
        leaks = check_leaks(stored.statement, golden_code=[], contract=stored.contract, probes=kept)
        notes += [f"statement leaks a probe: {f.message}" for f in leaks.findings]
    return [VALIDATION_NOTE + note for note in notes]


def _golden_failures(report: AcceptanceReport, shown: int = 3) -> list[str]:
    """The PR's own tests that fail with the golden patch on this runner: said, not dropped."""
    failing = golden_failures(report.search.golden.run.result)
    if not failing:
        return []
    listed = "; ".join(f"{node} ({why[:160]})" for node, why in list(failing.items())[:shown])
    more = f"; and {len(failing) - shown} more" if len(failing) > shown else ""
    return [
        f"{len(failing)} of the PR's tests fail with the golden patch here and judge no "
        f"adversarial: {listed}{more}"
    ]


def _naive_basis(stats: SearchStats) -> str:
    return "the full suite" if stats.suite_measured else "the PR's tests"


def _unmatched_survivors(report: AcceptanceReport, table: CoverageTable) -> list[str]:
    """Survivors whose category no promise of the PR has: no row of the table shows them."""
    promised = {p.category for p in table.promises}
    rows = {a.id: a for a in table.adversarials}
    return [
        f"survivor {a.id} ({rows[a.id].promise_category}) breaks no promise the PR states: "
        f"{rows[a.id].description} ({a.reason})"
        for a in report.adversarials
        if a.evidence and a.id in rows and rows[a.id].promise_category not in promised
    ]


# --- probe folders -----------------------------------------------------------------------


def load_probe_folder(folder: Path, *, probe_dir: str = DEFAULT_PROBE_DIR) -> list[ProbeFile]:
    """Every test module under ``folder`` (a file pytest collects: helpers and conftest.py
    stay out) as a probe placed under ``probe_dir`` in the tree."""
    if not folder.is_dir():
        raise PipelineError(f"{folder} is not a folder of probe files")
    categories = _manifest(folder)
    probes = []
    for file in sorted(folder.rglob("*.py")):
        relative = file.relative_to(folder).as_posix()
        if not is_pytest_module(relative):
            continue
        probes.append(
            ProbeFile(
                path=str(PurePosixPath(probe_dir) / relative),
                content=file.read_text(encoding="utf-8"),
                promise_category=categories.get(relative),
            )
        )
    if not probes:
        names = " or ".join(PYTEST_MODULE_GLOBS)
        raise PipelineError(f"{folder} holds no probe file ({names})")
    return probes


def _manifest(folder: Path) -> dict[str, PromiseCategory]:
    manifest = folder / PROBE_MANIFEST
    if not manifest.is_file():
        return {}
    try:
        raw = tomllib.loads(manifest.read_text(encoding="utf-8")).get("categories", {})
        return {str(name): PromiseCategory(value) for name, value in raw.items()}
    except (tomllib.TOMLDecodeError, ValueError, AttributeError) as exc:
        known = ", ".join(PromiseCategory)
        raise PipelineError(f"{manifest}: {exc} (categories: {known})") from None

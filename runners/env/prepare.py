"""From (repository, commit, merge time) to a built, repaired environment: the one entry point.

Read the declared requirements at the base commit, resolve them in the PR's
era with the runner's overrides, build (or find) the environment for that
hash, then, when tests are given, collect them and repair what they import but
nobody declared: add the distribution, re-resolve in the same era, rebuild,
collect again, a bounded number of rounds. Every repair is recorded in the
final environment's manifest.
"""

from __future__ import annotations

import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from packaging.utils import canonicalize_name

from runners.env.build import BuildResult, ensure_environment, environment_ref, record_repairs
from runners.env.config import OPTIONAL_HARNESS, EnvHome, RepoEnvConfig, RunnerOverrides
from runners.env.errors import EnvError
from runners.env.lock import Lock, ResolutionError, choose_interpreter, resolve
from runners.env.manifest import Dropped, Provenance, Repair, RepairOutcome
from runners.env.repair import (
    Collection,
    collect,
    distribution_for,
    hold_back,
    judge,
    missing_modules,
    missing_names,
)
from runners.env.sources import RequirementInputs, read_requirements
from runners.env.uv import Uv

DEFAULT_REPAIR_ROUNDS = 4


@dataclass(frozen=True)
class EnvRequest:
    """What to build: a repository at a commit, resolved in an era, checked against tests."""

    repo: Path  # clone or bare mirror
    commit: str  # the requirement files are read here (the task's base commit)
    merge_time: datetime | None = None  # None: today's index
    config: RepoEnvConfig = field(default_factory=RepoEnvConfig)
    overrides: RunnerOverrides = field(default_factory=RunnerOverrides)
    tests: tuple[str, ...] = ()  # collected for repairs; empty: no repair
    tests_commit: str | None = None  # where the tests live (default: commit)
    worktree: Path | None = None  # a ready tree of tests_commit; None: exported for collection
    python: Path | None = None  # base interpreter; None: the one running this code
    repo_name: str = ""
    max_repair_rounds: int = DEFAULT_REPAIR_ROUNDS
    optional: tuple[str, ...] = OPTIONAL_HARNESS  # added when the era can build them


@dataclass(frozen=True)
class Prepared:
    build: BuildResult
    lock: Lock
    repairs: tuple[Repair, ...]
    collection: Collection | None  # the last collection (None when no tests were given)
    builds: int  # environments this call built (the repaired ones included)
    seconds: float  # resolution, builds and collections together


def prepare_environment(request: EnvRequest, home: EnvHome, uv: Uv | None = None) -> Prepared:
    """Build (or find) the environment for ``request``, repaired against its tests."""
    started = time.monotonic()
    job = _Job(request, home, uv or Uv(home.uv_cache))
    job.build()
    collection = job.repair() if request.tests else None
    if job.state.repairs:
        # Decisions of the last round (nothing left to add) were made after the final build.
        manifest = record_repairs(home, job.lock.lock_hash, job.state.repairs)
        ref = environment_ref(home, job.lock.lock_hash, manifest)
        job.result = replace(job.result, ref=ref, manifest=manifest)
    return Prepared(
        job.result,
        job.lock,
        tuple(job.state.repairs),
        collection,
        job.builds,
        time.monotonic() - started,
    )


class _Job:
    """One preparation: the inputs read once, the current lock and build, the repairs so far."""

    lock: Lock
    result: BuildResult

    def __init__(self, request: EnvRequest, home: EnvHome, uv: Uv) -> None:
        self.request, self.home, self.uv = request, home, uv
        self.overrides = replace(request.overrides, optional=request.optional)
        inputs = read_requirements(request.repo, request.commit, request.config)
        self.python = choose_interpreter(
            inputs.requires_python, request.python, request.overrides.pythons
        )
        self.provenance = _provenance(request, inputs)
        self.state = _RepairState(inputs.requirements)
        self.builds = 0

    def resolve(self, requirements: list[str]) -> Lock:
        return resolve(
            requirements,
            python=self.python,
            uv=self.uv,
            overrides=self.overrides,
            exclude_newer=self.request.merge_time,
        )

    def build(self) -> None:
        try:
            self._build()
        except EnvError:
            if not self.overrides.optional:
                raise
            # The harness's optional part does not fit this era: build without it.
            self.overrides = replace(self.overrides, optional=())
            self._build()

    def _build(self) -> None:
        self.lock = self.resolve(self.state.requirements())
        self.result = ensure_environment(
            self.lock, self.home, self.uv, provenance=self.provenance, repairs=self.state.repairs
        )
        self.builds += int(self.result.built)

    def repair(self) -> Collection:
        """Collect, add what is missing, rebuild; until nothing new is added or rounds run out."""
        tests = self.request.tests
        with _worktree(self.request) as tree:
            for round_ in range(1, self.request.max_repair_rounds + 1):
                collection = collect(self.result.ref, tree, tests)
                missing = missing_modules(collection.output)
                # A submodule of an installed distribution is not missing: its release is
                # too new (urllib3 2 dropped urllib3.packages). Hold it back instead.
                dropped = [m for m in missing if "." in m and self.lock.pin_of(distribution_for(m))]
                absent = [m for m in missing if m not in dropped]
                grew = self.state.consider(absent, round_, tree, self.request.config, self.resolve)
                names = [*missing_names(collection.output), *(_last_part(m) for m in dropped)]
                held = self.state.hold_back(names, round_, self.lock, self.resolve)
                if not (grew or held):
                    return collection
                self.build()
            return collect(self.result.ref, tree, tests)


def _last_part(module: str) -> tuple[str, str]:
    package, _, name = module.rpartition(".")
    return package, name


class _RepairState:
    """The added distributions and every repair decision so far."""

    def __init__(self, declared: tuple[str, ...]) -> None:
        self.declared = list(declared)
        self.added: list[str] = []
        self.repairs: list[Repair] = []
        self.tried: set[str] = set()
        self.held: set[str] = set()

    def requirements(self) -> list[str]:
        return [*self.declared, *self.added]

    def consider(
        self,
        modules: list[str],
        round_: int,
        tree: Path,
        config: RepoEnvConfig,
        resolver: Callable[[list[str]], Lock],
    ) -> bool:
        """Judge each missing module; True when something was added (so: rebuild and retry)."""
        grew = False
        settled = {r.module for r in self.repairs if r.outcome is not RepairOutcome.added}
        for module in (m for m in modules if m not in settled):
            repair = judge(module, round_=round_, worktree=tree, config=config, tried=self.tried)
            if repair.outcome is RepairOutcome.added and repair.distribution:
                self.tried.add(canonicalize_name(repair.distribution))
                repair = self._try_add(repair, resolver)
                grew = grew or repair.outcome is RepairOutcome.added
            self.repairs.append(repair)
        return grew

    def hold_back(
        self,
        names: list[tuple[str, str]],
        round_: int,
        lock: Lock,
        resolver: Callable[[list[str]], Lock],
    ) -> bool:
        """Hold back each distribution whose installed release lacks a name the code imports;
        True when something was held back (so: rebuild and retry)."""
        grew = False
        for module, name in names:
            distribution = distribution_for(module)
            repair = hold_back(
                module, name, lock.pin_of(distribution), round_=round_, tried=self.held
            )
            if repair.outcome is RepairOutcome.held_back:
                self.held.add(canonicalize_name(distribution))
                repair = self._try_add(repair, resolver)
                grew = grew or repair.outcome is RepairOutcome.held_back
            self.repairs.append(repair)
        return grew

    def _try_add(self, repair: Repair, resolver: Callable[[list[str]], Lock]) -> Repair:
        line = repair.requirement or repair.distribution
        assert line is not None
        try:
            resolver([*self.requirements(), line])
        except ResolutionError as exc:
            detail = str(exc).splitlines()[-1][:300] if str(exc) else "no solution"
            update = {"outcome": RepairOutcome.unresolvable, "detail": detail}
            return repair.model_copy(update=update)
        self.added.append(line)
        return repair


def _provenance(request: EnvRequest, inputs: RequirementInputs) -> Provenance:
    dropped = [Dropped(source=d.source, line=d.line, reason=d.reason) for d in inputs.dropped]
    return Provenance(
        repo=request.repo_name, commit=request.commit, sources=list(inputs.sources), dropped=dropped
    )


@contextmanager
def _worktree(request: EnvRequest) -> Iterator[Path]:
    """The caller's tree, or a temporary export of the tests' commit (the repo is not touched)."""
    if request.worktree is not None:
        yield request.worktree
        return
    with tempfile.TemporaryDirectory(prefix="probewatch-collect-") as tmp:
        export_tree(request.repo, request.tests_commit or request.commit, Path(tmp))
        yield Path(tmp)


def export_tree(repo: Path, commit: str, dest: Path) -> None:
    """Write the files of ``commit`` into ``dest`` with ``git archive`` (no work tree, no refs)."""
    archive = dest / ".probewatch-export.tar"
    with archive.open("wb") as out:
        subprocess.run(
            ["git", "-C", str(repo), "archive", "--format=tar", commit], stdout=out, check=True
        )
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    archive.unlink()

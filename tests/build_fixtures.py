"""Fixture repositories (real git) for the build, survivor and acceptance tests, and the probes
a curator might hand in for them.

``memo_pr`` is a small project whose PR adds a hit counter to a memo cache and a
``reset()`` that promises to forget every entry. Its own tests check the counter,
and call ``reset()`` without checking that entries are gone: the counter promise is
checked (its mutants die), the reset promise is missed (deleting the ``clear()``
call survives). The PR also adds ``hit_rate()``, which no test runs, and a module-level
constant, which runs at import. The probes cover every acceptance case: a good one,
one that passes the hollow patch, one that passes the pre-change snapshot, one that
skips, one with no test, one that misses a surviving adversarial of its promise, and
one that passes the golden patch only twice in three runs (it counts its golden
passes in a folder outside the work tree, so the outcome is deterministic).

Run ``python -m tests.build_fixtures`` to measure the survivor search on the fixture
tasks against running the full suite for every variant.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from probe_builder.acceptance import AdversarialInput, ProbeFile
from probe_builder.adversarial.survivors import (
    ControlJob,
    ControlRunner,
    TaskRunSpec,
    Variant,
    search_survivors,
)
from probe_builder.authors.base import MechanicalAuthor, ProposedPatch
from probewatch.git import run_git
from runners.types import PatchSpec
from task_registry.types import Control, PromiseCategory, Suite
from tests.probe_builder_support import FixturePR, make_pr

MEMO_TITLE = "Add a hit counter to Cache"
MEMO_BODY = """\
### What does this PR do?

Add a hit counter to `Cache`.
Calling `reset()` invalidates every stored entry.

### Checklist
- [x] Tests added
"""

MEMO_BASE = {
    "pkg/__init__.py": "",
    "pkg/cache.py": '''
        """A memo cache."""


        class Cache:
            def __init__(self):
                self._entries = {}

            def lookup(self, key, compute):
                if key not in self._entries:
                    self._entries[key] = compute(key)
                return self._entries[key]
        ''',
    "tests/test_cache.py": """
        from pkg.cache import Cache


        def test_lookup_computes_once():
            calls = []
            cache = Cache()
            cache.lookup("a", lambda k: calls.append(k) or k.upper())
            assert cache.lookup("a", str.lower) == "A"
            assert calls == ["a"]
        """,
    "tests/test_other.py": """
        def test_unrelated():
            assert sorted([3, 1, 2]) == [1, 2, 3]
        """,
}
MEMO_CHANGE = {
    "pkg/cache.py": '''
        """A memo cache."""

        NO_HITS = 0


        class Cache:
            def __init__(self):
                self._entries = {}
                self.hits = NO_HITS

            def lookup(self, key, compute):
                if key in self._entries:
                    self.hits += 1
                    return self._entries[key]
                value = compute(key)
                self._entries[key] = value
                return value

            def reset(self):
                """Forget every entry and the hit count."""
                self._entries.clear()
                self.hits = NO_HITS

            def hit_rate(self, lookups):
                return self.hits / lookups
        ''',
    "tests/test_cache.py": """
        from pkg.cache import Cache


        def test_lookup_computes_once():
            calls = []
            cache = Cache()
            cache.lookup("a", lambda k: calls.append(k) or k.upper())
            assert cache.lookup("a", str.lower) == "A"
            assert calls == ["a"]


        def test_repeated_lookup_counts_a_hit():
            cache = Cache()
            cache.lookup("a", str.upper)
            assert cache.lookup("a", str.upper) == "A"
            assert cache.hits == 1


        def test_reset_can_be_called_after_lookups():
            cache = Cache()
            cache.lookup("a", str.upper)
            assert cache.lookup("b", str.upper) == "B"
            cache.reset()
        """,
}

# The promise the PR's tests miss: after reset() a lookup computes again.
GOOD_PROBE = """\
from pkg.cache import Cache


def test_reset_forgets_entries_and_hits():
    cache = Cache()
    cache.lookup("a", str.upper)
    cache.lookup("a", str.upper)
    cache.reset()
    assert cache.lookup("a", str.lower) == "a"
    assert cache.hits == 0
"""
# Only checks that the name exists: the hollow patch has it too.
HOLLOW_PASSING_PROBE = """\
from pkg.cache import Cache


def test_reset_exists():
    assert callable(getattr(Cache, "reset", None))
"""
# Checks what the cache did before the PR: the pre-change snapshot passes it too.
OLD_BEHAVIOUR_PROBE = """\
from pkg.cache import Cache


def test_lookup_remembers():
    cache = Cache()
    cache.lookup("a", str.upper)
    assert cache.lookup("a", str.lower) == "A"
"""
# Checks only that stored entries are forgotten: misses a reset() that keeps the hit count.
ENTRIES_ONLY_PROBE = """\
from pkg.cache import Cache


def test_reset_forgets_entries():
    cache = Cache()
    cache.lookup("a", str.upper)
    cache.reset()
    assert cache.lookup("a", str.lower) == "a"
"""
NO_TEST_PROBE = """\
from pkg.cache import Cache

CHECKED = Cache
"""
SKIPPING_PROBE = """\
import pytest

from pkg.cache import Cache


def test_reset_on_a_gpu():
    Cache().reset()
    pytest.skip("needs a GPU")
"""
# Checks the behaviour, then records one golden pass in a folder outside the tree
# (O_EXCL makes each number taken once, even by runs in parallel) and fails on the
# third: two passes of three, whatever the order of the runs.
FLAKY_PROBE = """\
import os

from pkg.cache import Cache

COUNTER = {counter!r}


def test_reset_forgets_entries_mostly():
    cache = Cache()
    cache.lookup("a", str.upper)
    cache.reset()
    assert cache.lookup("a", str.lower) == "a"
    number = 0
    while True:
        try:
            os.close(os.open(os.path.join(COUNTER, str(number)), os.O_CREAT | os.O_EXCL))
            break
        except FileExistsError:
            number += 1
    assert number != 2, "third run"
"""

PROBE_DIR = "tests/probes"


def memo_pr(tmp_path: Path) -> FixturePR:
    return make_pr(tmp_path, MEMO_BASE, MEMO_CHANGE, name="memo")


def flaky_probe(counter: Path) -> str:
    counter.mkdir(parents=True, exist_ok=True)
    return FLAKY_PROBE.format(counter=str(counter))


def probe(name: str, content: str, category: PromiseCategory | None = None) -> ProbeFile:
    return ProbeFile(path=f"{PROBE_DIR}/{name}", content=content, promise_category=category)


def run_spec(pr: FixturePR) -> TaskRunSpec:
    """The controls' common part: the PR's post-change test files as overlay files."""
    tests = {f.path: pr.head_tree.read(f.path) or "" for f in pr.split.test_python}
    return TaskRunSpec(
        repo=pr.repo,
        base_commit=pr.base,
        golden_patch=pr.split.golden,
        original_tests=tests,
        timeout_per_test_s=60.0,
        timeout_run_s=300.0,
    )


def mechanical_patches(pr: FixturePR) -> list[ProposedPatch]:
    from probe_builder.authors.base import AuthorRequest
    from probe_builder.material.contract import Contract

    request = AuthorRequest(
        instance_id="fixture",
        title=MEMO_TITLE,
        description=MEMO_BODY,
        golden_files=pr.split.golden_files,
        test_patch=pr.split.test,
        promises=(),
        contract=Contract(),
        base=pr.base_tree,
        head=pr.head_tree,
    )
    return MechanicalAuthor().propose_adversarials(request)


def adversarial_inputs(pr: FixturePR) -> list[AdversarialInput]:
    return [
        AdversarialInput(
            id=f"{p.path}:{p.line}:{p.operator}",
            patch=p.patch,
            promise_category=p.promise_category,
            path=p.path,
            line=p.line,
        )
        for p in mechanical_patches(pr)
    ]


def variants(pr: FixturePR) -> list[Variant]:
    return [a.variant for a in adversarial_inputs(pr)]


# --- the cost of the survivor search against one full-suite run per variant ---------------


@dataclass(frozen=True)
class Cost:
    task: str
    variants: int
    survivors: int
    runs: int
    test_executions: int
    wall_s: float
    naive_survivors: int
    naive_runs: int
    naive_test_executions: int
    naive_wall_s: float

    def line(self) -> str:
        return (
            f"{self.task}: {self.variants} variants, {self.survivors} survivors | search: "
            f"{self.runs} runs, {self.test_executions} test executions, {self.wall_s:.1f}s | "
            f"naive full suite per variant: {self.naive_runs} runs, "
            f"{self.naive_test_executions} test executions, {self.naive_wall_s:.1f}s, "
            f"{self.naive_survivors} survivors"
        )


def _full_suite_job(spec: TaskRunSpec, variant: Variant | None) -> ControlJob:
    patches = [spec.golden()] if variant is None else [PatchSpec(variant.id, variant.patch)]
    label = "naive-golden" if variant is None else f"naive-{variant.id}"
    request = replace(spec.request(patches, label=label), full_suite=True)
    control = Control.golden if variant is None else Control.adversarial
    return ControlJob(control, Suite.all, request, adversarial=variant.id if variant else None)


def naive_search(
    spec: TaskRunSpec, chosen: Sequence[Variant], runner: ControlRunner
) -> tuple[int, int, float, int]:
    """Runs, test executions, wall time and survivors of one full-suite run per variant."""
    started = time.monotonic()
    golden, *runs = runner.run_all([_full_suite_job(spec, v) for v in (None, *chosen)])
    wall = time.monotonic() - started
    survivors = sum(golden.result.passed <= run.result.passed for run in runs)
    executions = sum(len(r.result.tests) for r in (golden, *runs))
    return 1 + len(runs), executions, wall, survivors


def measure(task: str, spec: TaskRunSpec, chosen: Sequence[Variant], root: Path) -> Cost:
    from runners.backends.local import LocalBackend

    backend = LocalBackend(workspace_root=root, cpu_slots=2, gpu_indices=())
    runner = ControlRunner(backend, workspace_root=root)
    search = search_survivors(spec, chosen, runner)
    naive_runs, naive_executions, naive_wall, naive_survivors = naive_search(spec, chosen, runner)
    stats = search.stats
    return Cost(
        task,
        stats.variants,
        len(search.survivors),
        stats.runs,
        stats.test_executions,
        stats.wall_s,
        naive_survivors,
        naive_runs,
        naive_executions,
        naive_wall,
    )


def demo_specs(folder: Path) -> list[tuple[str, TaskRunSpec, list[Variant]]]:
    """The demo repository's three planted PRs, as ``build`` derives them."""
    from probe_builder.demo_repo import create_demo_repo
    from probe_builder.material.assemble import PullRequest, build_material

    demo = create_demo_repo(folder / "minirl")
    found = []
    for pr in demo.prs:
        request = PullRequest(demo.path, pr.base_sha, pr.merge_sha, pr.title, "")
        material = build_material(request, test_globs=("tests/**", "**/test_*.py"))
        head = request.head
        tests = {
            f.path: run_git(demo.path, "show", f"{head}:{f.path}").stdout
            for f in material.split.test_python
        }
        spec = TaskRunSpec(demo.path, pr.base_sha, material.split.golden, tests)
        chosen = [
            Variant(str(n), a.patch, a.path, a.line) for n, a in enumerate(material.adversarials)
        ]
        found.append((f"demo #{pr.number}", spec, chosen))
    return found


def main(argv: Sequence[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="survivor-cost-") as scratch:
        root = Path(scratch)
        pr = memo_pr(root / "memo")
        tasks = [("fixture memo", run_spec(pr), variants(pr))]
        if "--demo" in argv:
            tasks += demo_specs(root / "demo")
        for task, spec, chosen in tasks:
            print(measure(task, spec, chosen, root / "runs").line(), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

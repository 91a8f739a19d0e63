"""A small upstream repository for the harness tests: a PR that adds a memo cache, its tests,
a probe for the promise its tests miss, the hollow and one adversarial patch, and a future.

History of ``acme/memo`` (real commits, mirrored bare with every ref):
base ── merge (PR #7: ``Memo`` + tests/test_memo.py) ── later (``Memo.size``), tag ``v0.2``,
and a side branch ``future-branch``. The promise of PR #7: "a repeated lookup is served from
the cache and reset() forgets it"; its tests check only the values, so the adversarial
patch that never caches passes them, and the probe rejects it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session

from bot.evaluate.grading import RepoSetup
from bot.evaluate.harness import Harness
from probe_builder.pipeline import RepoSettings
from runners.backends.local import LocalBackend
from task_registry.db import session_scope
from task_registry.models import ProbeCreate, Task, TaskCreate
from task_registry.swebench import instance_id_for
from task_registry.tasks import add_probe, create_task
from task_registry.types import ProbeStatus, TaskStatus
from tests.runner_repos import FixtureRepo, git

REPO = "acme/memo"
NUMBER = 7
MERGED_AT = datetime(2026, 5, 12, 9, 30, tzinfo=UTC)

STORE = '''"""A plain key-value store."""


class Store:
    def __init__(self):
        self._data = {}

    def put(self, key, value):
        self._data[key] = value

    def get(self, key):
        return self._data[key]
'''
MEMO = '''"""Memoised lookups."""


class Memo:
    """Caches compute(key); a repeated key is a hit; reset() forgets every value."""

    def __init__(self, compute):
        self.compute = compute
        self.hits = 0
        self._values = {}

    def get(self, key):
        if key in self._values:
            self.hits += 1
            return self._values[key]
        value = self.compute(key)
        self._values[key] = value
        return value

    def reset(self):
        self._values.clear()
'''
# Passes the PR's tests (values are right), breaks the promise (nothing is ever cached).
ADVERSARIAL_MEMO = MEMO.replace("        if key in self._values:\n", "        if False:\n")
HOLLOW_MEMO = '''"""Memoised lookups."""


class Memo:
    """Caches compute(key); a repeated key is a hit; reset() forgets every value."""

    def __init__(self, compute):
        raise NotImplementedError("Memo.__init__")

    def get(self, key):
        raise NotImplementedError("Memo.get")

    def reset(self):
        raise NotImplementedError("Memo.reset")
'''
TEST_STORE = """from cachelib.store import Store


def test_put_then_get():
    store = Store()
    store.put("a", 1)
    assert store.get("a") == 1
"""
TEST_MEMO = """from cachelib.memo import Memo


def test_get_computes_the_value():
    assert Memo(lambda key: key * 2).get(3) == 6


def test_get_twice_gives_the_same_value():
    memo = Memo(lambda key: key * 2)
    assert memo.get(3) == memo.get(3) == 6
"""
PROBE_PATH = "tests/test_probe_memo.py"
PROBE = """from cachelib.memo import Memo


def test_second_get_is_a_cache_hit():
    calls = []
    memo = Memo(lambda key: calls.append(key) or key)
    memo.get(1)
    memo.get(1)
    assert calls == [1] and memo.hits == 1


def test_reset_forgets_the_values():
    calls = []
    memo = Memo(lambda key: calls.append(key) or key)
    memo.get(1)
    memo.reset()
    memo.get(1)
    assert calls == [1, 1]
"""
LATER_MEMO = (
    MEMO
    + """
    def size(self):
        return len(self._values)
"""
)
ORIGINAL_TESTS = (
    "tests/test_memo.py::test_get_computes_the_value",
    "tests/test_memo.py::test_get_twice_gives_the_same_value",
)
PROBE_TESTS = (
    "tests/test_probe_memo.py::test_reset_forgets_the_values",
    "tests/test_probe_memo.py::test_second_get_is_a_cache_hit",
)


@dataclass(frozen=True)
class MemoRepo:
    source: Path  # the upstream clone
    mirror: Path  # bare mirror: every branch and tag, the future included
    base: str
    merge: str
    later: str
    side: str  # tip of future-branch
    golden: str
    test_patch: str
    hollow: str
    adversarial: str


def make_memo_repo(root: Path) -> MemoRepo:
    repo, base = FixtureRepo.create(
        root / "memo",
        {
            "cachelib/__init__.py": "",
            "cachelib/store.py": STORE,
            "tests/test_store.py": TEST_STORE,
        },
    )
    merge = repo.commit(
        {"cachelib/memo.py": MEMO, "tests/test_memo.py": TEST_MEMO}, "Add Memo (#7)"
    )
    later = repo.commit({"cachelib/memo.py": LATER_MEMO}, "Memo.size (#8)")
    git(repo.path, "tag", "v0.2")
    git(repo.path, "checkout", "--quiet", "-b", "future-branch")
    side = repo.commit({"cachelib/side.py": "SIDE = 1\n"}, "side work")
    git(repo.path, "checkout", "--quiet", "main")
    mirror = repo.mirror(root / "memo.git")
    return MemoRepo(
        source=repo.path,
        mirror=mirror,
        base=base,
        merge=merge,
        later=later,
        side=side,
        golden=git(repo.path, "diff", base, merge, "--", "cachelib"),
        test_patch=git(repo.path, "diff", base, merge, "--", "tests"),
        hollow=variant_diff(repo.path, base, {"cachelib/memo.py": HOLLOW_MEMO}),
        adversarial=variant_diff(repo.path, base, {"cachelib/memo.py": ADVERSARIAL_MEMO}),
    )


def variant_diff(repo: Path, base: str, files: dict[str, str | bytes | None]) -> str:
    """The diff against ``base`` of ``base`` with ``files`` written (None: deleted), made in a
    throwaway tree."""
    tree = repo.parent / f"variant-{len(list(repo.parent.glob('variant-*')))}"
    git(repo, "worktree", "add", "--quiet", "--detach", str(tree), base)
    try:
        for name, text in files.items():
            if text is None:
                (tree / name).unlink()
                continue
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            if isinstance(text, bytes):
                (tree / name).write_bytes(text)
            else:
                (tree / name).write_text(text)
        git(tree, "add", "--all")
        return git(tree, "diff", "--cached", "--binary", base)
    finally:
        git(repo, "worktree", "remove", "--force", str(tree))


def seed_task(
    session: Session,
    memo: MemoRepo,
    *,
    number: int = NUMBER,
    merged_at: datetime = MERGED_AT,
    status: TaskStatus = TaskStatus.published,
    with_probe: bool = True,
) -> Task:
    task = create_task(
        session=session,
        task_in=TaskCreate(
            instance_id=instance_id_for(REPO, number),
            repo=REPO,
            pull_number=number,
            base_commit=memo.base,
            merge_commit=memo.merge,
            created_at=merged_at,
            patch=memo.golden,
            test_patch=memo.test_patch,
            problem_statement=(
                "Add `cachelib.memo.Memo(compute)` with `get(key)` and `reset()`: a repeated "
                "key is served from the cache (count it in `hits`); reset() forgets values."
            ),
            hollow_patch=memo.hollow,
            areas=["inference", "state"],
            status=status,
        ),
    )
    assert task.id is not None
    if with_probe:
        probe = add_probe(
            session=session, probe_in=ProbeCreate(task_id=task.id, path=PROBE_PATH, content=PROBE)
        )
        probe.status = ProbeStatus.accepted
        session.add(probe)
        session.flush()
    return task


def seed(engine: Engine, memo: MemoRepo, **options: object) -> str:
    with session_scope(engine) as session:
        return seed_task(session, memo, **options).instance_id  # type: ignore[arg-type]


def make_harness(
    engine: Engine,
    memo: MemoRepo,
    root: Path,
    *,
    setup_commands: tuple[str, ...] = (),
    **options: object,
) -> Harness:
    backend = LocalBackend(workspace_root=root / "runs", cpu_slots=2, gpu_indices=())
    setup = RepoSetup(memo.mirror, RepoSettings(setup_commands=setup_commands, timeout_run_s=120.0))
    setups = {REPO: setup}
    return Harness(
        engine=engine,
        backend=backend,
        repos=lambda name: setups[name],
        agent_root=root / "agent-runs",
        **options,  # type: ignore[arg-type]
    )

"""Grading's pieces: the post-change tests read from the mirror, the golden baseline a grading
uses, the two suites' N_p and G_p, and what of a submission is graded."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from bot.evaluate.grading import (
    Baseline,
    GradingTask,
    RepoSetup,
    gradable_part,
    post_change_tests,
    stored_baseline,
    suite_scores,
)
from probe_builder.pipeline import RepoSettings
from runners.agents import split_test_changes
from runners.types import Hardware
from task_registry.db import session_scope
from task_registry.models import TestResultBase, ValidationRunCreate
from task_registry.scoring import SubmissionState
from task_registry.tasks import get_task, record_validation_run
from task_registry.types import Control, RunOutcome, ScoreSuite
from task_registry.types import TestOutcome as Verdict
from tests.harness_support import (
    MERGED_AT,
    ORIGINAL_TESTS,
    PROBE_TESTS,
    TEST_MEMO,
    MemoRepo,
    make_memo_repo,
    seed,
    variant_diff,
)


@pytest.fixture(scope="module")
def memo(tmp_path_factory: pytest.TempPathFactory) -> MemoRepo:
    return make_memo_repo(tmp_path_factory.mktemp("upstream"))


def test_post_change_tests_are_the_test_patch_applied_to_the_base_without_a_checkout(
    memo: MemoRepo,
) -> None:
    patch = variant_diff(
        memo.source,
        memo.base,
        {
            "tests/test_memo.py": TEST_MEMO,
            "tests/test_store.py": None,
            "tests/data/blob.bin": b"\xff\x00\xfe",  # not UTF-8: cannot travel in an overlay
        },
    )
    before = sorted(p.name for p in memo.mirror.rglob("*"))
    tests = post_change_tests(memo.mirror, memo.base, patch)
    assert tests.files == {"tests/test_memo.py": TEST_MEMO}
    assert tests.deleted == ("tests/test_store.py",)
    assert tests.unreadable == ("tests/data/blob.bin",)
    assert sorted(p.name for p in memo.mirror.rglob("*")) == before  # the mirror is untouched
    assert post_change_tests(memo.mirror, memo.base, "").files == {}


def golden(
    engine: Engine, instance_id: str, results: list[TestResultBase], **fields: object
) -> int:
    with session_scope(engine) as session:
        task = get_task(session=session, instance_id=instance_id)
        run_in = ValidationRunCreate(task_id=task.id or 0, control=Control.golden, **fields)  # type: ignore[arg-type]
        return record_validation_run(session=session, run_in=run_in, results=results).id or 0


ORIGINAL = [TestResultBase(test_id=t, outcome=Verdict.passed) for t in ORIGINAL_TESTS]
PROBES = [TestResultBase(test_id=t, outcome=Verdict.passed, is_probe=True) for t in PROBE_TESTS]


def test_the_baseline_is_the_latest_completed_golden_run_covering_tests_and_probes(
    sqlite_engine: Engine, memo: MemoRepo
) -> None:
    instance_id = seed(sqlite_engine, memo)
    complete = golden(sqlite_engine, instance_id, ORIGINAL + PROBES)
    golden(sqlite_engine, instance_id, ORIGINAL)  # no probe results: ran before the probes
    golden(sqlite_engine, instance_id, ORIGINAL + PROBES, outcome=RunOutcome.fault)
    probe_path = PROBE_TESTS[0].split("::")[0]
    with session_scope(sqlite_engine) as session:
        task_id = get_task(session=session, instance_id=instance_id).id or 0
        found = stored_baseline(session=session, task_id=task_id, probe_paths=[probe_path])
        probes_only = golden(sqlite_engine, instance_id, PROBES)
        strict = stored_baseline(session=session, task_id=task_id, probe_paths=[probe_path])
        lenient = stored_baseline(
            session=session, task_id=task_id, probe_paths=[probe_path], needs_original=False
        )
    assert found is not None and found.run_id == complete
    assert strict is not None and strict.run_id == complete
    assert lenient is not None and lenient.run_id == probes_only


def test_each_suite_has_its_own_n_p_and_g_p(memo: MemoRepo) -> None:
    baseline = Baseline(
        run_id=1,
        collected=frozenset({"t1", "t2", "p1", "p2"}),
        passed=frozenset({"t1", "t2", "p1", "p2"}),
        probe_tests=frozenset({"p1", "p2"}),
    )
    task = GradingTask(1, "x", "r", "b", MERGED_AT, "", "", "", "", Hardware())
    scores = suite_scores(task, baseline, SubmissionState.graded, frozenset({"t1", "t2", "p1"}))
    original, probes = scores[ScoreSuite.original], scores[ScoreSuite.with_probes]
    assert (original.n, original.a, original.g, original.resolved_set) == (2, 2, 2, True)
    assert (probes.n, probes.a, probes.g, probes.resolved_set) == (4, 3, 4, False)
    empty = suite_scores(task, baseline, SubmissionState.unappliable, frozenset({"t1"}))
    assert empty[ScoreSuite.original].a == 0  # an unappliable patch passes nothing


PLAIN = """--- a/cachelib/memo.py
+++ b/cachelib/memo.py
@@ -1 +1 @@
-a
+b
--- a/tests/test_memo.py
+++ b/tests/test_memo.py
@@ -1 +1 @@
-a
+b
"""


def test_only_the_non_test_part_of_a_submission_is_graded(memo: MemoRepo, tmp_path: Path) -> None:
    mixed = memo.golden + memo.test_patch
    kept, dropped = gradable_part(mixed, RepoSetup(mirror=memo.mirror))
    assert kept == memo.golden and dropped == ("tests/test_memo.py",)
    kept, dropped = split_test_changes(PLAIN, ("tests/**",))
    assert (
        "cachelib/memo.py" in kept and "tests/" not in kept and dropped == ("tests/test_memo.py",)
    )
    custom = RepoSetup(memo.mirror, RepoSettings(test_globs=("cachelib/memo.py",)))
    assert gradable_part(memo.golden, custom) == ("", ("cachelib/memo.py",))
    assert split_test_changes("not a diff", ("tests/**",)) == ("not a diff", ())

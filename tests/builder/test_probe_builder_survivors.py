"""Survivor search: real git, real pytest runs, coverage-selected tests, parallel runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from probe_builder.adversarial.survivors import (
    NOT_IN_A_TEST,
    BaselineError,
    ControlJob,
    ControlRunner,
    Selection,
    SurvivorReport,
    TaskRunSpec,
    Variant,
    context_node_id,
    module_index,
    search_survivors,
)
from runners.backends.local import LocalBackend
from task_registry.types import Control, Suite
from tests.build_fixtures import MEMO_BASE, MEMO_CHANGE, memo_pr, run_spec, variants
from tests.probe_builder_support import FixturePR, make_pr

RESET_TEST = "tests/test_cache.py::test_reset_can_be_called_after_lookups"
HIT_TESTS = {
    "tests/test_cache.py::test_lookup_computes_once",
    "tests/test_cache.py::test_repeated_lookup_counts_a_hit",
}


def runner_for(root: Path, cpu_slots: int = 2) -> ControlRunner:
    backend = LocalBackend(workspace_root=root, cpu_slots=cpu_slots, gpu_indices=())
    return ControlRunner(backend, workspace_root=root)


@pytest.fixture(scope="module")
def memo(tmp_path_factory: pytest.TempPathFactory) -> FixturePR:
    return memo_pr(tmp_path_factory.mktemp("memo"))


@pytest.fixture(scope="module")
def search(memo: FixturePR, tmp_path_factory: pytest.TempPathFactory) -> SurvivorReport:
    root = tmp_path_factory.mktemp("runs")
    return search_survivors(run_spec(memo), variants(memo), runner_for(root), measure_suite=True)


def by_line(report: SurvivorReport, line: int):
    return next(v for v in report.verdicts if v.variant.startswith(f"pkg/cache.py:{line}:"))


def test_a_test_function_context_maps_to_its_node_id():
    modules = module_index(["tests/test_cache.py", "tests/unit/test_a.py", "tests/other/test_a.py"])
    assert (
        context_node_id("test_cache.TestK.test_m", modules) == "tests/test_cache.py::TestK::test_m"
    )
    assert context_node_id("tests.test_cache.test_x", modules) == "tests/test_cache.py::test_x"
    assert context_node_id("unit.test_a.test_y", modules) == "tests/unit/test_a.py::test_y"
    # Two files pytest could both import as ``test_a``: the context cannot be placed.
    assert context_node_id("test_a.test_y", modules) is None
    assert context_node_id("pkg.helpers.test_like", modules) is None


def test_golden_coverage_maps_changed_lines_to_the_tests_that_execute_them(search):
    coverage = search.golden.coverage
    assert coverage is not None and search.stats.coverage_used
    assert coverage.tests_for("pkg/cache.py", 21) == {RESET_TEST}  # self._entries.clear()
    assert coverage.tests_for("pkg/cache.py", 13) == HIT_TESTS  # self.hits += 1
    assert coverage.tests_for("pkg/cache.py", 3) == {NOT_IN_A_TEST}  # NO_HITS = 0, at import
    assert coverage.tests_for("pkg/cache.py", 25) == frozenset()  # hit_rate: never run


def test_a_mutant_the_pr_tests_catch_dies_on_just_the_tests_that_run_its_line(search):
    swapped = by_line(search, 13)  # self.hits -= 1
    assert swapped.selection is Selection.covering
    assert set(swapped.tests) == HIT_TESTS
    assert swapped.survives is False
    assert swapped.failing == ("tests/test_cache.py::test_repeated_lookup_counts_a_hit",)


def test_a_mutant_the_pr_tests_miss_survives_on_the_test_that_runs_it(search):
    deleted = by_line(search, 21)  # reset() no longer clears the entries
    assert deleted.selection is Selection.covering and deleted.tests == (RESET_TEST,)
    assert deleted.survives is True and deleted.failing == ()
    assert deleted.run is not None
    assert {t.node_id for t in deleted.run.result.tests} == {RESET_TEST}


def test_a_line_no_test_executes_survives_without_a_run(search):
    unexecuted = by_line(search, 25)
    assert unexecuted.selection is Selection.unexecuted
    assert unexecuted.survives is True and unexecuted.run is None
    assert "no original test executes pkg/cache.py:25" in unexecuted.reason


def test_a_line_run_at_import_is_judged_on_all_the_pr_tests(search):
    constant = by_line(search, 3)  # NO_HITS = 1
    assert constant.selection is Selection.pr_tests  # every test the golden patch passes
    assert constant.tests == tuple(sorted(HIT_TESTS | {RESET_TEST}))
    assert constant.run is not None
    assert {t.node_id for t in constant.run.result.tests} == HIT_TESTS | {RESET_TEST}
    assert constant.survives is False


def test_the_search_runs_fewer_tests_than_a_full_suite_run_per_variant(search):
    stats = search.stats
    assert stats.variants == 6 and stats.suite_measured and stats.suite_size == 4
    # golden + 5 variant runs (one variant runs nothing) against 7 full-suite runs
    assert stats.runs == 6 and stats.naive_runs == 7
    assert stats.test_executions == 13 and stats.naive_test_executions == 28


def test_without_coverage_every_variant_runs_the_pr_tests_and_the_verdicts_agree(
    memo, search, tmp_path
):
    plain = search_survivors(
        run_spec(memo), variants(memo), runner_for(tmp_path), use_coverage=False
    )
    assert {v.selection for v in plain.verdicts} == {Selection.pr_tests}
    assert all(v.run is not None for v in plain.verdicts)
    assert plain.survivors == search.survivors
    assert {s.split(":")[1] for s in plain.survivors} == {"21", "22", "25"}
    assert plain.stats.test_executions > search.stats.test_executions


def test_a_patch_that_does_not_apply_is_not_a_survivor(memo, tmp_path):
    broken = Variant(
        "broken",
        "diff --git a/pkg/cache.py b/pkg/cache.py\n--- a/pkg/cache.py\n"
        "+++ b/pkg/cache.py\n@@ -1,1 +1,1 @@\n-no such line\n+x\n",
    )
    report = search_survivors(run_spec(memo), [broken], runner_for(tmp_path), use_coverage=False)
    verdict = report.verdict("broken")
    assert verdict.survives is False and verdict.reason.startswith("does not apply")


SLEEPY = {"tests/test_sleep.py": "import time\n\n\ndef test_sleep():\n    time.sleep(0.6)\n"}


def _max_overlap(runs) -> int:
    moments = sorted([(r.started_at, 1) for r in runs] + [(r.finished_at, -1) for r in runs])
    level = peak = 0
    for _, step in moments:
        level += step
        peak = max(peak, level)
    return peak


def test_independent_runs_go_in_parallel_up_to_the_backend_slots(tmp_path):
    pr = make_pr(tmp_path, {"m.py": "X = 1\n"}, {"m.py": "X = 2\n", **SLEEPY})
    spec = TaskRunSpec(pr.repo, pr.base, pr.split.golden, SLEEPY)
    jobs = [
        ControlJob(Control.golden, Suite.original, spec.request([spec.golden()], label=f"g{n}"))
        for n in range(3)
    ]
    runs = runner_for(tmp_path / "runs", cpu_slots=2).run_all(jobs)
    assert [r.label for r in runs] == ["g0", "g1", "g2"]  # results in the jobs' order
    assert all(r.result.passed == {"tests/test_sleep.py::test_sleep"} for r in runs)
    assert _max_overlap(runs) == 2  # in parallel, never more than the two slots


def test_a_golden_patch_failing_its_own_tests_cannot_be_the_baseline(tmp_path):
    failing = {"tests/test_m.py": "from m import X\n\n\ndef test_x():\n    assert X == 3\n"}
    pr = make_pr(tmp_path, {"m.py": "X = 1\n"}, {"m.py": "X = 2\n", **failing})
    spec = TaskRunSpec(pr.repo, pr.base, pr.split.golden, failing)
    expected = r"passes none of the PR's own tests here: tests/test_m.py: failed: .*assert 2 == 3"
    with pytest.raises(BaselineError, match=expected):
        search_survivors(spec, [Variant("v", pr.split.golden)], runner_for(tmp_path / "runs"))


def test_test_files_that_hold_no_pytest_test_are_named_as_such(tmp_path):
    script = {"tests/test_server.py": "import sys\n\nif __name__ == '__main__':\n    sys.exit(0)\n"}
    pr = make_pr(tmp_path, {"m.py": "X = 1\n"}, {"m.py": "X = 2\n", **script})
    spec = TaskRunSpec(pr.repo, pr.base, pr.split.golden, script)
    with pytest.raises(BaselineError, match="collects no test from the PR's own test files"):
        search_survivors(spec, [Variant("v", pr.split.golden)], runner_for(tmp_path / "runs"))


def test_a_task_without_test_modules_is_refused_before_any_run(tmp_path):
    spec = TaskRunSpec(tmp_path, "HEAD", "", {"tests/data.json": "{}"})
    runner = runner_for(tmp_path / "runs")
    with pytest.raises(BaselineError, match="changes no test module"):
        search_survivors(spec, [], runner)
    assert not (tmp_path / "runs").exists()


def test_a_pr_test_that_fails_on_golden_is_not_run_for_a_variant_and_makes_unexecuted_lines_unknown(
    tmp_path,
):
    """Tests that cannot pass here (a GPU, an asset) can neither tell a variant apart nor
    vouch that no test executes a line: a variant no passing test reaches is undetermined."""
    broken = "def test_needs_the_machine():\n    raise OSError('no such device')\n"
    pr = make_pr(tmp_path, MEMO_BASE, {**MEMO_CHANGE, "tests/test_machine.py": broken})
    spec = run_spec(pr)
    found = search_survivors(spec, variants(pr), runner_for(tmp_path / "runs"))

    ran = {t.node_id for v in found.verdicts if v.run for t in v.run.result.tests}
    assert "tests/test_machine.py::test_needs_the_machine" not in ran
    unexecuted = [v for v in found.verdicts if v.selection is Selection.unexecuted]
    assert unexecuted and all(v.survives is None for v in unexecuted)
    assert "did not run or pass here and might" in unexecuted[0].reason


def test_a_module_missing_while_the_golden_run_runs_is_the_environments_fault(
    tmp_path: Path,
) -> None:
    """The golden run is trusted: a test importing, mid-run, a module the environment lacks
    waits for a runner that has it, and the variants are judged on the rest."""
    transport = "def test_rollout():\n    import a_transport_nobody_installed  # noqa: F401\n"
    pr = make_pr(tmp_path, MEMO_BASE, {**MEMO_CHANGE, "tests/test_transport.py": transport})
    found = search_survivors(run_spec(pr), variants(pr), runner_for(tmp_path / "runs"))

    why = found.waiting["tests/test_transport.py"]
    assert why.startswith("environment_build") and "'a_transport_nobody_installed'" in why
    assert (
        found.golden.passed and "tests/test_transport.py::test_rollout" not in found.golden.passed
    )


# --- the dynamic equivalence check: record, replay, compare ------------------------------

CALC_BASE = {
    "pkg/__init__.py": "",
    "pkg/calc.py": (
        "def positive_part(x):\n    return x\n\n\ndef total(xs):\n    return 0\n\n\n"
        "def record_seen(xs):\n    return None\n"
    ),
}
CALC = """class Meter:
    def __init__(self):
        self.seen = 0


def positive_part(x):
    if x > 0:
        return x
    return 0.0


def total(xs, meter=None):
    if meter is not None:
        meter.seen += len(xs)
    return sum(abs(x) for x in xs) * 2


SEEN = []


def record_seen(xs):
    SEEN.append(len(xs))
"""
CALC_TESTS = """from pkg.calc import SEEN, Meter, positive_part, record_seen, total


def test_positive_part():
    assert positive_part(3) == 3
    assert positive_part(-2) == 0


def test_total():
    meter = Meter()
    assert total([1, -2], meter) == 6


def test_record_seen():
    record_seen([1, 2])
    assert SEEN[-1] == 2
"""
# Differs from the golden code only on an edge input (0: 0 instead of 0.0).
EDGE_ONLY = ("    if x > 0:", "    if x >= 0:")
# Never differs: x * 2 and x + x are the same number, NaN and infinity included.
NEVER = (
    "    return sum(abs(x) for x in xs) * 2",
    "    return sum(abs(x) + abs(x) for x in xs)",
)
# Differs on recorded inputs only in the state it leaves: the meter counts twice.
IN_PLACE = ("        meter.seen += len(xs)", "        meter.seen += 2 * len(xs)")
# Its effect goes to a global no fingerprint reads: the replay cannot tell the golden
# function from the pre-change one, so it vouches for nothing there.
UNSEEN = ("    SEEN.append(len(xs))", "    pass")
# Holds the input for good and returns the same: only memory tells it apart, so a replay of
# its outputs would call it equivalent.
HELD = (
    "    return sum(abs(x) for x in xs) * 2",
    '    globals().setdefault("_probewatch_kept", []).extend((xs,)); '
    "return sum(abs(x) for x in xs) * 2",
)


def _calc_variant(pr: FixturePR, number: int, edit: tuple[str, str], operator: str = "") -> Variant:
    from probe_builder.material.diffs import render_file_diff

    line = CALC.splitlines().index(edit[0]) + 1
    mutated = CALC.replace(edit[0] + "\n", edit[1] + "\n")
    base = CALC_BASE["pkg/calc.py"]
    diff = render_file_diff("pkg/calc.py", base, mutated)
    return Variant(str(number), diff, "pkg/calc.py", line, operator)


def test_a_survivor_equal_on_every_input_is_set_aside_and_one_an_edge_tells_apart_is_kept(
    tmp_path: Path,
) -> None:
    from probe_builder.adversarial.dynamic import likely_equivalent, replay_survivors
    from probe_builder.adversarial.survivors import SurvivorVerdict

    pr = make_pr(tmp_path, CALC_BASE, {"pkg/calc.py": CALC, "tests/test_calc.py": CALC_TESTS})
    spec = run_spec(pr)
    tests = (
        "tests/test_calc.py::test_positive_part",
        "tests/test_calc.py::test_total",
        "tests/test_calc.py::test_record_seen",
    )
    survivors = [
        (_calc_variant(pr, n, edit), SurvivorVerdict(str(n), True, Selection.covering, tests))
        for n, edit in enumerate((EDGE_ONLY, NEVER, IN_PLACE, UNSEEN), 1)
    ]
    held = _calc_variant(pr, 5, HELD, "keep_alive")
    survivors.append((held, SurvivorVerdict("5", True, Selection.covering, tests)))
    runner = runner_for(tmp_path / "runs")

    replayed = replay_survivors(spec, survivors, runner)

    assert replayed["1"].recorded == 2 and replayed["1"].differs  # 0 vs 0.0 on the zero edge
    assert all(d.startswith("edge input") for d in replayed["1"].differs)
    assert replayed["2"].recorded == 1 and not replayed["2"].differs and replayed["2"].compared > 1
    assert any("recorded" in d for d in replayed["3"].differs)  # the meter it leaves behind
    assert not replayed["4"].differs and not replayed["4"].sees_the_change
    assert replayed["2"].sees_the_change
    # A control-flow mutant whose path never differed was not exercised: no evidence.
    quiet = replace(replayed["2"], operator="force_branch", diverged=())
    assert not quiet.equivalent
    assert replace(quiet, diverged=("recorded input 1",)).equivalent
    equivalent = likely_equivalent(spec, survivors, runner)
    assert list(equivalent) == ["2"] and "likely equivalent: total" in equivalent["2"]
    assert "5" not in replayed  # held memory: the same outputs are what it is made to give
    assert not list((tmp_path / "runs").glob("replay-*"))  # the recordings are removed

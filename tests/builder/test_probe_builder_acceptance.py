"""The probe acceptance protocol on a real git fixture with real pytest runs.

One protocol run judges six probes at once (each fails a different condition, one
passes them all); smaller runs cover a set that misses a survivor, revision rounds
and the no-probe case. The pure rules are also checked one by one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from probe_builder.acceptance import (
    AcceptanceInputs,
    AcceptanceReport,
    AdversarialInput,
    ControlBatch,
    ProbeFile,
    ProbeOutcome,
    ProbeRejection,
    changed_lines,
    golden_state,
    judge_probe,
    run_acceptance,
    set_failures,
)
from probe_builder.adversarial.hollow import build_hollow_patch
from probe_builder.adversarial.survivors import ControlJob, ControlRun, ControlRunner
from runners.backends.local import LocalBackend
from runners.types import Outcome, RunRequest, RunResult, TestCaseResult, TestStatus
from task_registry.coverage import ControlRef
from task_registry.types import Control, PromiseCategory, Suite, utcnow
from tests.build_fixtures import (
    ENTRIES_ONLY_PROBE,
    GOOD_PROBE,
    HOLLOW_PASSING_PROBE,
    NO_TEST_PROBE,
    OLD_BEHAVIOUR_PROBE,
    SKIPPING_PROBE,
    adversarial_inputs,
    flaky_probe,
    memo_pr,
    probe,
    run_spec,
)
from tests.probe_builder_support import FixturePR

CLEAR_DELETED = "pkg/cache.py:21:delete_call"  # reset() keeps the entries
HITS_KEPT = "pkg/cache.py:22:early_return"  # reset() keeps the hit count
HITS_SWAPPED = "pkg/cache.py:13:arith_swap"  # caught by the PR's own tests
RATE_SWAPPED = "pkg/cache.py:25:arith_swap"  # hit_rate(), which no test runs
SNAPSHOT = ControlRef(kind=Control.snapshot)
HOLLOW = ControlRef(kind=Control.hollow)


def adv(adversarial_id: str) -> ControlRef:
    return ControlRef(kind=Control.adversarial, adversarial=adversarial_id)


def runner_for(root: Path, shared: tuple[Path, ...] = ()) -> ControlRunner:
    backend = LocalBackend(workspace_root=root, cpu_slots=2, gpu_indices=(), shared=shared)
    return ControlRunner(backend, workspace_root=root)


def inputs_for(pr: FixturePR, only: tuple[str, ...] | None = None) -> AcceptanceInputs:
    hollow = build_hollow_patch(pr.split.golden_files, base=pr.base_tree, head=pr.head_tree)
    adversarials = [a for a in adversarial_inputs(pr) if only is None or a.id in only]
    return AcceptanceInputs(run_spec(pr), hollow.patch, tuple(adversarials))


@pytest.fixture(scope="module")
def memo(tmp_path_factory: pytest.TempPathFactory) -> FixturePR:
    return memo_pr(tmp_path_factory.mktemp("memo"))


@pytest.fixture(scope="module")
def report(memo: FixturePR, tmp_path_factory: pytest.TempPathFactory) -> AcceptanceReport:
    counter = tmp_path_factory.mktemp("counter")  # outside every work tree
    probes = [
        probe("test_good.py", GOOD_PROBE),
        probe("test_flaky.py", flaky_probe(counter)),
        probe("test_names.py", HOLLOW_PASSING_PROBE),
        probe("test_old.py", OLD_BEHAVIOUR_PROBE),
        probe("test_skip.py", SKIPPING_PROBE),
        probe("test_empty.py", NO_TEST_PROBE),
    ]
    root = tmp_path_factory.mktemp("runs")
    # Runs are sandboxed: the counter is the one host folder they share.
    return run_acceptance(inputs_for(memo), probes, runner_for(root, shared=(counter,)))


def outcome(report: AcceptanceReport, name: str) -> ProbeOutcome:
    return next(o for o in report.probes if o.probe.path.endswith(name))


def test_a_probe_passing_golden_three_times_and_failing_every_control_is_accepted(report):
    good = outcome(report, "test_good.py")
    assert good.accepted and good.reason is None
    assert (good.golden_passes, good.golden_runs) == (3, 3)
    assert set(good.rejects) == {SNAPSHOT, HOLLOW, adv(CLEAR_DELETED), adv(HITS_KEPT)}
    assert report.accepted and report.failures == ()
    assert [o.probe.path for o in report.accepted_probes] == ["tests/probes/test_good.py"]


def test_a_probe_passing_golden_two_times_of_three_is_rejected_as_flaky(report):
    flaky = outcome(report, "test_flaky.py")
    assert flaky.rejection is ProbeRejection.flaky
    assert (flaky.golden_passes, flaky.golden_runs) == (2, 3)
    assert "passed 2 of 3 runs" in flaky.reason and "third run" in flaky.reason


def test_a_probe_that_passes_the_hollow_patch_is_rejected(report):
    names = outcome(report, "test_names.py")
    assert names.rejection is ProbeRejection.passes_hollow
    assert names.golden_passes == 3 and names.rejects == (SNAPSHOT,)


def test_a_probe_that_passes_the_pre_change_snapshot_is_rejected(report):
    old = outcome(report, "test_old.py")
    assert old.rejection is ProbeRejection.passes_snapshot
    assert SNAPSHOT not in old.rejects


def test_a_probe_that_skips_on_golden_is_rejected_with_its_reason(report):
    skipped = outcome(report, "test_skip.py")
    assert skipped.rejection is ProbeRejection.skipped
    assert skipped.golden_passes == 0 and "needs a GPU" in skipped.reason


def test_a_probe_file_without_tests_is_rejected(report):
    assert outcome(report, "test_empty.py").rejection is ProbeRejection.no_tests


def test_adversarials_doing_worse_than_golden_on_the_pr_tests_are_not_evidence(report):
    outcomes = {a.id: a for a in report.adversarials}
    assert outcomes[HITS_SWAPPED].survives_original is False
    assert not outcomes[HITS_SWAPPED].evidence
    assert set(report.survivors) == {CLEAR_DELETED, HITS_KEPT, RATE_SWAPPED}
    assert outcomes[HITS_KEPT].rejected_by == ("tests/probes/test_good.py",)
    assert outcomes[RATE_SWAPPED].rejected_by == ()
    assert adv(HITS_SWAPPED) in report.original_rejects
    assert adv(CLEAR_DELETED) not in report.original_rejects


def test_the_original_tests_give_fail_to_pass_and_pass_to_pass(report):
    assert report.fail_to_pass == (
        "tests/test_cache.py::test_repeated_lookup_counts_a_hit",
        "tests/test_cache.py::test_reset_can_be_called_after_lookups",
    )
    assert report.pass_to_pass == ("tests/test_cache.py::test_lookup_computes_once",)
    assert {SNAPSHOT, HOLLOW} <= set(report.original_rejects)


def test_probes_run_only_in_the_test_overlay_and_golden_runs_three_times(report):
    golden = [
        r for r in report.runs if r.job.control is Control.golden and r.job.suite is Suite.probes
    ]
    assert sorted(r.job.attempt for r in golden) == [1, 2, 3]
    for run in report.runs:
        request = run.job.request
        assert all(not p.diff.count("tests/probes/") for p in request.patches)
        if run.job.suite is not Suite.original:
            assert set(request.overlay.probes) == {o.probe.path for o in report.probes}


def test_a_set_that_misses_a_surviving_adversarial_of_its_promise_keeps_no_probes(memo, tmp_path):
    only = (CLEAR_DELETED, HITS_KEPT, RATE_SWAPPED)
    result = run_acceptance(
        inputs_for(memo, only),
        [probe("test_entries.py", ENTRIES_ONLY_PROBE)],
        runner_for(tmp_path),
        use_coverage=False,
    )
    entries = result.probes[0]
    assert not result.accepted and entries.rejection is ProbeRejection.set_rejected
    assert entries.golden_passes == 3 and adv(CLEAR_DELETED) in entries.rejects
    # It claims the state promise (it rejects a state adversarial) but lets another one through;
    # the numeric survivor is no promise it claims.
    assert result.failures == (
        f"no accepted probe rejects adversarial {HITS_KEPT} (state), "
        "which passes the PR's own tests",
    )
    assert result.notes[-1].startswith("probe set not accepted: no accepted probe rejects")
    assert result.notes[-1].endswith("the task keeps no probes")


@dataclass
class ScriptedAuthor:
    """Proposes the next probe set from a script and remembers the feedback it got."""

    script: list[list[ProbeFile]]
    feedback: list[tuple[int, str]] = field(default_factory=list)

    def __call__(self, round_number: int, feedback: str) -> list[ProbeFile]:
        self.feedback.append((round_number, feedback))
        return self.script.pop(0) if self.script else []


def test_an_author_revises_a_rejected_set_and_the_fixed_set_is_accepted(memo, tmp_path):
    author = ScriptedAuthor([[probe("test_good.py", GOOD_PROBE)]])
    result = run_acceptance(
        inputs_for(memo, (HITS_KEPT,)),
        [probe("test_names.py", HOLLOW_PASSING_PROBE)],
        runner_for(tmp_path),
        revise=author,
        use_coverage=False,
    )
    assert result.accepted and result.rounds == 1
    assert author.feedback[0][0] == 1
    told = author.feedback[0][1]
    assert "test_names.py: passes the hollow patch" in told
    # The surviving patch no probe rejects, with the lines it changes: the next probe's target.
    assert f"surviving patch {HITS_KEPT}" in told
    assert told.split("It changes:\n", 1)[1].splitlines() == ["+        return"]
    good = outcome(result, "test_good.py")
    assert good.accepted and good.probe.round == 1
    assert outcome(result, "test_names.py").rejection is ProbeRejection.passes_hollow
    assert result.notes == ("probe set accepted after 1 revision round(s)",)


def test_revision_stops_at_the_bound_and_the_task_keeps_no_probes(memo, tmp_path):
    author = ScriptedAuthor(
        [[probe(f"test_names_{n}.py", HOLLOW_PASSING_PROBE)] for n in range(1, 5)]
    )
    result = run_acceptance(
        inputs_for(memo, (CLEAR_DELETED,)),
        [probe("test_names_0.py", HOLLOW_PASSING_PROBE)],
        runner_for(tmp_path),
        revise=author,
        max_rounds=1,
        use_coverage=False,
    )
    assert result.rounds == 1 and len(author.feedback) == 1 and not result.accepted
    assert len(author.script) == 3  # sets were left, the bound stopped the asking
    assert result.accepted_probes == () and len(result.probes) == 2
    assert result.notes[-1].startswith("probe set not accepted after 1 revision round(s)")
    assert result.notes[-1].endswith("the task keeps no probes")


def test_without_probes_the_adversarials_still_yield_the_survivors(memo, tmp_path):
    result = run_acceptance(
        inputs_for(memo, (CLEAR_DELETED, HITS_SWAPPED)), [], runner_for(tmp_path)
    )
    assert result.survivors == (CLEAR_DELETED,)
    assert result.probes == () and result.failures == () and not result.accepted
    assert result.notes == (
        "no probes: the adversarial patches were judged against the PR's own tests only",
    )
    assert {r.job.control for r in result.runs} == {
        Control.golden,
        Control.snapshot,
        Control.hollow,
        Control.adversarial,
    }


# --- the rules on their own ----------------------------------------------------------------


def _run(control: Control, tests: dict[str, TestStatus], attempt: int = 1) -> ControlRun:
    request = RunRequest(repo=Path("."), base_commit="HEAD", label=str(control))
    results = tuple(
        TestCaseResult(node, status, message="why" if status is TestStatus.skipped else None)
        for node, status in tests.items()
    )
    job = ControlJob(control, Suite.probes, request, attempt=attempt)
    return ControlRun(job, RunResult(Outcome.completed, results), utcnow(), utcnow())


P = "tests/probes/test_p.py"
PASS, FAIL, SKIP = TestStatus.passed, TestStatus.failed, TestStatus.skipped


def _batch(golden: list[TestStatus], snapshot: TestStatus, hollow: TestStatus) -> ControlBatch:
    return ControlBatch(
        golden=tuple(_run(Control.golden, {f"{P}::test_a": s}, n) for n, s in enumerate(golden, 1)),
        snapshot=_run(Control.snapshot, {f"{P}::test_a": snapshot}),
        hollow=_run(Control.hollow, {f"{P}::test_a": hollow}),
        adversarial={},
    )


@pytest.mark.parametrize(
    ("golden", "snapshot", "hollow", "expected"),
    [
        ([PASS, PASS, PASS], FAIL, FAIL, None),
        ([PASS, FAIL, PASS], FAIL, FAIL, ProbeRejection.flaky),
        ([PASS, PASS, SKIP], FAIL, FAIL, ProbeRejection.skipped),
        ([FAIL, FAIL, FAIL], FAIL, FAIL, ProbeRejection.fails_golden),
        ([PASS, PASS, PASS], PASS, FAIL, ProbeRejection.passes_snapshot),
        ([PASS, PASS, PASS], FAIL, PASS, ProbeRejection.passes_hollow),
        ([PASS, PASS, PASS], SKIP, FAIL, ProbeRejection.passes_snapshot),  # a skip rejects nothing
    ],
)
def test_each_probe_condition_on_its_own(golden, snapshot, hollow, expected):
    judged = judge_probe(ProbeFile(P, ""), _batch(golden, snapshot, hollow), [])
    assert judged.rejection is expected


def test_a_collection_error_counts_as_the_probe_failing():
    run = _run(Control.snapshot, {P: TestStatus.error, "tests/probes/test_pq.py::t": PASS})
    assert run.rejects_with(P) and not run.rejects_with("tests/probes/test_p")
    assert golden_state(run, "tests/probes/test_pq.py")[0] == "passed"


def test_the_set_must_reject_survivors_of_the_categories_it_claims():
    state = AdversarialInput("s", "", PromiseCategory.state)
    other_state = AdversarialInput("s2", "", PromiseCategory.state)
    numeric = AdversarialInput("n", "", PromiseCategory.numeric)
    tagged = ProbeOutcome(ProbeFile(P, "", PromiseCategory.numeric), 3, 3, (adv("s"),))
    # Tagged numeric and rejecting a state patch: both categories are claimed.
    missing = set_failures([tagged], [state, other_state, numeric])
    assert [m.split()[5] for m in missing] == ["s2", "n"]
    untagged = ProbeOutcome(ProbeFile(P, ""), 3, 3, (adv("s"), adv("s2")))
    assert set_failures([untagged], [state, other_state, numeric]) == []
    assert set_failures([], [state]) == ["no probes were given"]


def test_a_survivors_changed_lines_are_read_against_the_golden_patch():
    golden = "--- a/m.py\n+++ b/m.py\n@@ -1 +1,2 @@\n-x = 1\n+x = 2\n+y = x / n\n"
    swapped = golden.replace("+y = x / n", "+y = x * n")
    assert changed_lines(golden, swapped) == "-y = x / n\n+y = x * n"
    assert changed_lines(golden, golden) == "(no line of the golden patch differs)"

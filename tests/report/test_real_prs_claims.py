"""bench/real_prs.py puts the report's "not checked" beside what validation found, and says
where each surviving patch is shown."""

from __future__ import annotations

import subprocess

import pytest

from bench.real_prs import (
    BACKED,
    CHECKED,
    CHECKED_BUT_SURVIVED,
    OPEN,
    REFUTED,
    Row,
    claim_evidence,
    claim_figures,
    enough,
    main,
    outcome_of,
    survivor_places,
    watched_entry,
)
from task_registry.coverage import AdversarialCoverage, CoverageTable, PromiseCoverage
from task_registry.types import PromiseCategory, PromiseVerdict
from tests.bench_support import dated_clone, refusal

M, T, S, D, N = (
    PromiseCategory.memory,
    PromiseCategory.time,
    PromiseCategory.state,
    PromiseCategory.mode,
    PromiseCategory.numeric,
)


def _promise(position: int, category, verdict, survivors=()) -> PromiseCoverage:
    return PromiseCoverage(
        position=position,
        category=category,
        quote=f"promise {position}",
        verdict=verdict,
        survivors=list(survivors),
    )


def _patch(id_: str, category, survives: bool | None) -> AdversarialCoverage:
    return AdversarialCoverage(
        id=id_, operator="flip", promise_category=category, survives_original=survives
    )


def test_each_claim_is_backed_refuted_or_open_by_the_patches_of_its_category():
    table = CoverageTable(
        instance_id="o__r-1",
        promises=[
            _promise(1, M, PromiseVerdict.exercised, survivors=["a1"]),
            _promise(2, S, PromiseVerdict.unchecked),
            _promise(3, D, PromiseVerdict.unchecked),
            _promise(4, T, PromiseVerdict.checked, survivors=["t1"]),
            _promise(5, T, PromiseVerdict.checked, survivors=["t1"]),
            _promise(6, N, PromiseVerdict.unchecked),  # numeric: not the report's claim
        ],
        adversarials=[
            _patch("a1", M, True),
            _patch("s1", S, False),
            _patch("s2", S, False),
            _patch("s3", S, None),  # not run: says nothing
            _patch("t1", T, True),
        ],
    )
    table.promises[3].concerns = ["Timer.step"]
    table.promises[4].concerns = ["Timer", "Timer.reset"]
    table.adversarials[-1].symbols = ["Timer", "Timer.step"]
    # A "not checked" whose category's patches all died is refuted, not backed; one with no
    # patch of its kind that ran is open. A "checked" reading is outweighed, as the report
    # says, only by a survivor in the promise's own function, not elsewhere in its class.
    assert claim_evidence(table) == {
        BACKED: 1,
        REFUTED: 1,
        OPEN: 1,
        CHECKED_BUT_SURVIVED: 1,
        CHECKED: 1,
    }


def test_a_checked_claim_with_every_patch_killed_is_counted_as_checked():
    table = CoverageTable(
        instance_id="o__r-2",
        promises=[_promise(1, M, PromiseVerdict.checked)],
        adversarials=[_patch("m1", M, False)],
    )
    assert claim_evidence(table) == {CHECKED: 1}


def test_a_killed_patch_in_code_the_promise_is_not_about_decides_nothing():
    def patch(id_: str, symbols: list[str], survives: bool) -> AdversarialCoverage:
        return _patch(id_, S, survives).model_copy(update={"symbols": symbols})

    promise = _promise(1, S, PromiseVerdict.unchecked).model_copy(
        update={"concerns": ["SkipState.resume"]}
    )
    elsewhere = CoverageTable(
        instance_id="o__r-4",
        promises=[promise],
        adversarials=[patch("c1", ["SkipState", "SkipState.save"], False)],
    )
    assert claim_evidence(elsewhere) == {OPEN: 1}
    inside = elsewhere.model_copy(
        update={
            "adversarials": [
                patch("c1", ["SkipState", "SkipState.save"], False),
                patch("k1", ["SkipState", "SkipState.resume"], False),
            ]
        }
    )
    assert claim_evidence(inside) == {REFUTED: 1}


def test_a_validation_not_run_again_is_not_called_waiting():
    from probe_builder.adversarial.survivors import SearchStats
    from probe_builder.pipeline import UNCHANGED_NOTE, ValidationResult

    def result(stats, notes=()) -> ValidationResult:
        table = CoverageTable(instance_id="o__r-5")
        return ValidationResult("o__r-5", False, (), (), stats, 0, 0, tuple(notes), table)

    unchanged = result(None, [f"{UNCHANGED_NOTE}: its result stands, no run was made"])
    assert outcome_of(unchanged) == "validated before, inputs unchanged: not run again"
    assert outcome_of(result(None)) == "waits: nothing runs here"
    assert outcome_of(result(SearchStats(1, 1, 1, 0.5, 1, 1, 1, True, True))) == "validated"


def test_the_claims_of_a_table_validated_before_count_and_those_of_a_waiting_pr_do_not(capsys):
    from bench.real_prs import REUSED, print_table

    rows = [
        Row(1, "a", 1, outcome=REUSED, claims={BACKED: 1}),
        Row(2, "b", 1, outcome="validated", claims={REFUTED: 1}),
        Row(3, "c", 1, outcome="waits: nothing runs here", claims={REFUTED: 5}),
    ]
    print_table(rows)
    assert "precision 0.50" in capsys.readouterr().out


def test_the_claims_precision_is_backed_over_decided():
    rows = [Row(1, "a", 1, claims={BACKED: 3, OPEN: 4}), Row(2, "b", 1, claims={REFUTED: 1})]
    text = claim_figures(rows)
    assert "precision 0.75" in text and f"{OPEN} 4" in text
    assert "precision n/a" in claim_figures([Row(3, "c", 1, claims={OPEN: 2})])


def test_every_survivor_not_set_aside_is_on_the_task_page_with_what_it_is_tied_to():
    table = CoverageTable(
        instance_id="o__r-3",
        promises=[
            _promise(1, M, PromiseVerdict.unchecked, survivors=["m1"]),
            _promise(2, S, PromiseVerdict.checked, survivors=["s1"]).model_copy(
                update={"concerns": ["Store.save"]}
            ),
            _promise(3, PromiseCategory.functional, PromiseVerdict.checked, survivors=["c1"]),
        ],
        adversarials=[
            _patch("m1", M, True),
            _patch("s1", S, True).model_copy(update={"symbols": ["Store", "Store.save"]}),
            _patch("c1", PromiseCategory.functional, True),
            _patch("f1", PromiseCategory.functional, True),
            _patch("f2", PromiseCategory.functional, True).model_copy(
                update={"equivalent": "same outputs"}
            ),
            _patch("k1", M, False),
        ],
    )
    places = {p["id"]: (p["where"], p["link"]) for p in survivor_places(table, "", {})}
    assert places == {
        "m1": ("task page", "missed promise"),
        "s1": ("task page", "missed promise, read as checked"),
        "c1": ("task page", "checked promise"),
        "f1": ("task page", "no promise"),
        "f2": ("set aside: same outputs", "no promise"),
    }


def test_a_run_stops_at_count_built_prs_or_when_its_minutes_are_spent():
    def rows(*outcomes: str, minutes: float = 0.0) -> list[Row]:
        return [
            Row(number=n, title="t", changed_lines=200, outcome=o, wall_seconds=minutes * 60)
            for n, o in enumerate(outcomes)
        ]

    # PRs skipped before building do not count; validated, waiting and failed ones do.
    assert enough(rows("skipped: GPU only", "validated", "error"), 3, 0, 500) == ""
    assert "3 PRs built" in enough(rows("validated", "waits: nothing runs here", "error"), 3, 0, 1)
    assert "of --minutes 60" in enough(rows("skipped: GPU only"), 3, 60, 61)
    assert enough(rows("skipped: GPU only"), 3, 60, 59) == ""
    # No PR starts that a PR of the run's median time would carry past the limit; a
    # skipped PR's few seconds do not count in that median.
    assert enough(rows("validated", minutes=20), 3, 60, 39) == ""
    assert "a PR takes about 20" in enough(rows("validated", minutes=20), 3, 60, 41)
    mixed = rows("validated", "error", minutes=20) + rows("skipped: GPU only", minutes=0.1)
    assert enough(mixed, 4, 60, 39) == ""
    assert "a PR takes about 20" in enough(mixed, 4, 60, 41)
    # ... nor does a build that stopped on an error in seconds, while one ran to the end.
    quick_errors = rows("validated", minutes=20) + rows("error", "error", minutes=0.5)
    assert "a PR takes about 20" in enough(quick_errors, 5, 60, 41)
    assert enough(rows("error", "error", minutes=0.5), 5, 60, 41) == ""
    # ... nor do PRs whose tests all wait for a GPU runner: built, nothing validated.
    waiting = rows("validated", minutes=20) + rows(*["waits: nothing runs here"] * 2, minutes=0.5)
    assert "a PR takes about 20" in enough(waiting, 5, 60, 41)
    assert enough(rows(*["waits: nothing runs here"] * 2, minutes=0.5), 5, 60, 41) == ""


@pytest.mark.parametrize(
    ("repo", "since", "said"),
    [
        ("volcengine/verl", "2026-01-01", "is not a git repository"),  # the folder is empty
        ("nobody/none", "2026-01-01", "--repo nobody/none is not in"),
        ("volcengine/verl", "2026-01", "'2026-01' is not a date (YYYY-MM-DD) or ISO time"),
    ],
)
def test_bad_input_is_one_line_that_names_it(tmp_path, capsys, repo, since, said):
    # a traceback, before the miner's own errors were caught at the bench's edge
    (tmp_path / "mirror").mkdir()
    if "git repository" not in said:  # a repository, so that the refusal is the other input's
        subprocess.run(["git", "init", "-q", str(tmp_path / "mirror")], check=True)
    argv = ["--mirror", str(tmp_path / "mirror"), "--repo", repo, "--since", since]
    argv += ["--until", "2026-02-01", "--home", str(tmp_path / "home")]
    assert said in refusal(main, argv, capsys)


def test_numbers_the_window_did_not_keep_are_named_in_one_line(tmp_path, capsys):
    # an empty table and exit 0 before: a PR outside the window or rejected ran nothing, silently
    mirror = dated_clone(tmp_path / "mirror", "Add a (#12)", "2026-01-05T00:00:00Z")
    argv = ["--mirror", str(mirror), "--repo", "volcengine/verl", "--since", "2026-01-01"]
    argv += ["--until", "2026-02-01", "--home", str(tmp_path / "home"), "--numbers", "12,34"]
    said = refusal(main, argv, capsys)
    assert "--numbers #12, #34: not among the 0 survivors of volcengine/verl" in said


def test_min_lines_sets_the_size_a_pr_needs_to_be_mined(tmp_path, capsys):
    # only the watch file's 1,000 lines before: a memory fix of 600 lines was never mined
    mirror = dated_clone(tmp_path / "mirror", "Add a (#12)", "2026-01-05T00:00:00Z")
    watched, _ = watched_entry("volcengine/verl", mirror, "watch", 250)
    assert watched.size_threshold == 250
    assert watched_entry("volcengine/verl", mirror, "watch")[0].size_threshold == 1000
    argv = ["--mirror", str(mirror), "--repo", "volcengine/verl", "--since", "2026-01-01"]
    argv += ["--until", "2026-02-01", "--home", str(tmp_path / "home"), "--numbers", "34"]
    said = refusal(main, [*argv, "--min-lines", "250"], capsys)
    assert "it keeps PRs of 250 changed lines or more: --min-lines" in said
    said = refusal(main, [*argv, "--min-lines", "0"], capsys)
    assert "--min-lines: 0 is below 1: give 1 or more" in said

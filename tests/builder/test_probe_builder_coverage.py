"""Coverage table: promises linked to verdicts, probes, rejected controls and survivors."""

from __future__ import annotations

from probe_builder.coverage import build_coverage_table, coverage_text, is_redundant
from probe_builder.promises.extract import ExtractedPromise
from probe_builder.promises.verdicts import PromiseCheck
from task_registry.coverage import (
    CONTRADICTED,
    AdversarialCoverage,
    ControlRef,
    CoverageTable,
    ProbeCoverage,
)
from task_registry.types import Control, ProbeStatus, PromiseCategory, PromiseVerdict

SNAPSHOT = ControlRef(kind=Control.snapshot)
HOLLOW = ControlRef(kind=Control.hollow)


def _adv(adversarial_id: str) -> ControlRef:
    return ControlRef(kind=Control.adversarial, adversarial=adversarial_id)


def _table() -> CoverageTable:
    checks = [
        PromiseCheck(
            ExtractedPromise(
                category=PromiseCategory.state, quote="reset empties the cache", position=1
            ),
            PromiseVerdict.exercised,
            "run by test_lookup",
        ),
        PromiseCheck(
            ExtractedPromise(
                category=PromiseCategory.numeric, quote="gradients are averaged", position=2
            ),
            PromiseVerdict.checked,
            "tests/test_g.py:4",
        ),
    ]
    probes = [
        ProbeCoverage(
            path="probes/test_reset.py",
            promise_position=1,
            status=ProbeStatus.accepted,
            golden_passes=3,
            golden_runs=3,
            rejects=[SNAPSHOT, HOLLOW, _adv("m.py:5:delete_call")],
        ),
        ProbeCoverage(
            path="probes/test_mean.py",
            promise_position=2,
            status=ProbeStatus.accepted,
            golden_passes=3,
            golden_runs=3,
            rejects=[SNAPSHOT, HOLLOW],
        ),
    ]
    adversarials = [
        AdversarialCoverage(
            id="m.py:5:delete_call",
            operator="delete_call",
            promise_category=PromiseCategory.state,
            description="delete call self._entries.clear()",
            survives_original=True,
        ),
        AdversarialCoverage(
            id="g.py:3:mean_sum",
            operator="mean_sum",
            promise_category=PromiseCategory.numeric,
            description=".mean -> .sum",
            survives_original=False,
        ),
        AdversarialCoverage(
            id="g.py:9:constant",
            operator="constant",
            promise_category=PromiseCategory.numeric,
            description="2 -> 3",
            survives_original=None,
        ),
    ]
    return build_coverage_table(
        "o__r-1",
        checks,
        probes=probes,
        adversarials=adversarials,
        original_rejects=[SNAPSHOT, HOLLOW, _adv("g.py:3:mean_sum")],
        notes=["3 mutants, 1 survivor"],
    )


def test_promises_link_their_probes_and_surviving_adversarials():
    table = _table()
    state, numeric = table.promises
    assert (state.verdict, state.probes, state.survivors) == (
        PromiseVerdict.exercised,
        ["probes/test_reset.py"],
        ["m.py:5:delete_call"],
    )
    assert (numeric.probes, numeric.survivors) == (
        ["probes/test_mean.py"],
        [],
    )  # the mean->sum mutant fails the PR's tests
    assert [a.id for a in table.survivors()] == ["m.py:5:delete_call"]
    assert table.adversarials[0].rejected_by == ["probes/test_reset.py"]


def test_a_probe_that_rejects_only_what_the_original_tests_reject_is_redundant():
    table = _table()
    assert [p.path for p in table.redundant_probes()] == ["probes/test_mean.py"]
    assert not is_redundant(table.probes[0], table.original_rejects)
    assert is_redundant(ProbeCoverage(path="p.py", rejects=[]), [])  # rejects nothing at all
    # A probe rejected for failing the golden patch is out for that, not redundant...
    failed = ProbeCoverage(
        path="p.py", status=ProbeStatus.rejected, golden_passes=2, golden_runs=3, rejects=[]
    )
    assert not is_redundant(failed, [])
    # ...while one that passes it and rejects only what the tests reject is.
    shallow = failed.model_copy(update={"golden_passes": 3})
    assert is_redundant(shallow, [])


def test_table_round_trips_through_json():
    table = _table()
    assert CoverageTable.model_validate_json(table.model_dump_json()) == table


def test_rendered_table_shows_each_promise_its_probes_controls_and_survivors():
    text = coverage_text(_table(), width=400)
    assert "probe coverage: o__r-1" in text
    assert "reset empties the cache" in text and "exercised" in text
    assert "rejects snapshot, hollow, adversarial #m.py:5:delete_call" in text
    assert (
        "m.py:5:delete_call: delete call self._entries.clear() (rejected by probes/test_reset.py)"
        in text
    )
    assert "probes/test_mean.py (accepted [redundant]) rejects snapshot, hollow" in text
    assert "redundant: probes/test_mean.py" in text
    assert "3 mutants, 1 survivor" in text


def _survivor(id_: str, symbols: list[str]) -> AdversarialCoverage:
    return AdversarialCoverage(
        id=id_,
        operator="keep_alive",
        promise_category=PromiseCategory.memory,
        symbols=symbols,
        survives_original=True,
    )


def test_a_survivor_is_evidence_only_for_promises_about_the_code_that_holds_it():
    def check(quote: str, concerns: frozenset[str]) -> PromiseCheck:
        promise = ExtractedPromise(category=PromiseCategory.memory, quote=quote, position=1)
        return PromiseCheck(promise, PromiseVerdict.unchecked, "", concerns)

    survivors = [
        _survivor("cache", ["KVCache", "KVCache.evict"]),  # a method of the linked class
        _survivor("loader", ["Loader", "Loader.load_shards"]),  # memory kept elsewhere
        _survivor("model", []),  # a model's patch without a line: no place to compare
    ]
    linked = build_coverage_table(
        "o__r-2", [check("evict frees the cache", frozenset({"KVCache"}))], adversarials=survivors
    )
    # A patch of the promise's kind in code the promise is not about shows nothing about it.
    assert linked.promises[0].survivors == ["cache", "model"]
    assert [a.id for a in linked.unlinked()] == ["loader"]
    # A promise whose quote names none of the change may concern any of it.
    weak = build_coverage_table(
        "o__r-3", [check("uses less memory", frozenset())], adversarials=survivors
    )
    assert weak.promises[0].survivors == ["cache", "loader", "model"]
    # What the promise concerns survives the table's round trip, and validation reads it back.
    assert weak.promises[0].concerns == [] and linked.promises[0].concerns == ["KVCache"]
    assert CoverageTable.model_validate_json(linked.model_dump_json()) == linked
    # show says where each survivor lies: the class and the method that hold it
    assert "cache: " in coverage_text(linked, width=400)
    assert " in KVCache.evict (no probe rejects it)" in coverage_text(linked, width=400)


def test_a_survivor_of_its_own_kind_in_the_promises_function_outweighs_a_checked_reading():
    def table(
        category: PromiseCategory, verdict: PromiseVerdict, place: str = "KVCache.evict"
    ) -> CoverageTable:
        promise = ExtractedPromise(category=category, quote="evict frees the cache", position=1)
        survivor = _survivor("cache", ["KVCache", place]).model_copy(
            update={"promise_category": category}
        )
        check = PromiseCheck(promise, verdict, "", frozenset({"KVCache", "KVCache.evict"}))
        return build_coverage_table("o__r-4", [check], adversarials=[survivor])

    read_checked = table(PromiseCategory.memory, PromiseVerdict.checked)
    (row,) = read_checked.promises
    assert read_checked.contradicted(row) and read_checked.missed(row)
    assert read_checked.problems == [row] and read_checked.actionable
    assert CONTRADICTED in coverage_text(read_checked, width=400)
    # A patch in another method of the promise's class breaks another promise of that class.
    sibling = table(PromiseCategory.memory, PromiseVerdict.checked, place="KVCache.reset")
    assert sibling.promises[0].survivors == ["cache"]  # still listed beside it
    assert not sibling.contradicted(sibling.promises[0]) and not sibling.actionable
    # A feature's reading stands: some patch of a checked feature's code always survives.
    feature = table(PromiseCategory.functional, PromiseVerdict.checked)
    assert not feature.contradicted(feature.promises[0]) and not feature.actionable
    assert "yet a survivor" not in coverage_text(feature, width=400)
    # Read as exercised, the survivor shows the gap as it always did, with nothing to contradict.
    exercised = table(PromiseCategory.memory, PromiseVerdict.exercised)
    assert exercised.promises[0].missed and not exercised.contradicted(exercised.promises[0])


def test_only_the_survivor_in_the_promises_function_is_shown_against_a_checked_reading():
    promise = ExtractedPromise(category=PromiseCategory.memory, quote="evict frees", position=1)
    check = PromiseCheck(
        promise, PromiseVerdict.checked, "", frozenset({"KVCache", "KVCache.evict"})
    )
    inside = _survivor("inside", ["KVCache", "KVCache.evict"])
    beside = _survivor("beside", ["KVCache", "KVCache.reset"])
    table = build_coverage_table("o__r-5", [check], adversarials=[inside, beside])
    (row,) = table.promises
    assert row.survivors == ["inside", "beside"] and table.contradicted(row)
    assert table.shows(row, inside) and not table.shows(row, beside)

"""Which gaps a comment shows first, and how maintainers' feedback moves them."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace

import pytest
import yaml

from bench.survivor_eval import LABELS
from bot.report.evidence import HUNK_CONTEXT, Gap
from bot.report.ranking import (
    JUDGED_PRIOR,
    OPERATOR_PRIOR,
    SUPPRESS_AFTER,
    Votes,
    concern,
    for_the_comment,
    posterior,
    rank,
    usefulness,
    words,
)
from task_registry.coverage import AdversarialCoverage, PromiseCoverage
from task_registry.types import PromiseCategory

CACHE_PROMISE = PromiseCoverage(
    position=0,
    category=PromiseCategory.state,
    quote="The prefix cache is invalidated when the weights are updated.",
    survivors=["1", "2", "3"],
)


def gap(id: str, operator: str, path: str, description: str, *, confirmed: bool = False) -> Gap:
    patch = AdversarialCoverage(
        id=id, operator=operator, path=path, line=int(id), description=description
    )
    return Gap(patch, (CACHE_PROMISE,), (0,) if confirmed else (), caught=False)


IN_THE_CACHE = gap("1", "constant", "pkg/prefix_cache.py", "invalidateCache(version) -> pass")
ELSEWHERE = gap("2", "delete_call", "pkg/logging_utils.py", "delete call flush_buffer()")
NUDGE = gap("3", "constant", "pkg/scheduler.py", "4 -> 5")


def test_words_split_names_as_code_spells_them() -> None:
    assert words("rollout_cache.resetPrefix(KVCache)") >= {"rollout", "cache", "reset", "prefix"}


def test_a_gap_in_code_the_promise_concerns_comes_first() -> None:
    assert concern(IN_THE_CACHE) > 0 and concern(ELSEWHERE) == 0
    assert rank([ELSEWHERE, NUDGE, IN_THE_CACHE])[0] is IN_THE_CACHE


def test_the_function_that_holds_the_patch_is_part_of_its_place() -> None:
    # The line says nothing of the cache; the method it sits in does.
    inside = gap("4", "constant", "pkg/scheduler.py", "4 -> 5")
    inside.patch.symbols = ["Scheduler", "Scheduler.invalidate_prefix_cache"]
    assert concern(inside) > 0 and concern(NUDGE) == 0
    assert rank([NUDGE, inside])[0] is inside


def test_then_the_operator_that_shows_real_gaps_more_often() -> None:
    assert rank([NUDGE, ELSEWHERE]) == [ELSEWHERE, NUDGE]  # deleting a call before a +1


def test_a_confirmed_gap_comes_before_everything() -> None:
    confirmed = replace(NUDGE, confirmed=(0,))
    assert rank([IN_THE_CACHE, ELSEWHERE, confirmed])[0] is confirmed


def test_feedback_moves_an_operator_and_a_few_votes_do_not_outweigh_the_prior() -> None:
    assert usefulness("constant", Votes(useful=1)) > usefulness("constant")
    assert usefulness("delete_call", Votes(not_useful=1)) > usefulness("constant")
    many = {"delete_call": Votes(not_useful=8), "constant": Votes(useful=8)}
    assert rank([ELSEWHERE, NUDGE], many) == [NUDGE, ELSEWHERE]


def test_an_operator_marked_not_useful_often_enough_leaves_the_comment_not_the_page() -> None:
    ranked = rank([ELSEWHERE, NUDGE])
    few = {"delete_call": Votes(not_useful=SUPPRESS_AFTER - 1)}
    enough = {"delete_call": Votes(not_useful=SUPPRESS_AFTER)}
    assert ELSEWHERE in for_the_comment(ranked, few, 3)
    assert for_the_comment(ranked, enough, 3) == [NUDGE]
    confirmed = replace(ELSEWHERE, confirmed=(0,))
    assert confirmed in for_the_comment([confirmed, NUDGE], enough, 3)  # a probe confirms it


def _at(id: str, path: str, line: int, operator: str, description: str) -> Gap:
    patch = AdversarialCoverage(
        id=id, operator=operator, path=path, line=line, description=description
    )
    return Gap(patch, (CACHE_PROMISE,), (), caught=False)


def test_a_comment_shows_each_gap_once() -> None:
    forced = "'if cache is not None:' -> 'if False:'"
    first = _at("11", "recipe/a/trainer.py", 40, "force_branch", forced)
    copied = _at("12", "recipe/b/trainer.py", 90, "force_branch", forced)  # the same edit
    inside = _at("13", "recipe/a/trainer.py", 41, "delete_call", "delete call cache.reset()")
    other = _at("14", "pkg/cache.py", 7, "delete_call", "delete call cache.evict()")
    far = _at("15", "recipe/a/trainer.py", 60, "constant", "1 -> 2")
    shown = for_the_comment([first, copied, inside, other, far], None, 3)
    # The copy and the statement's own body stay on the task page; the slots go to others.
    assert shown == [first, other, far]
    assert for_the_comment([first, copied, inside], None, 3) == [first]
    # The copy's own body is the same gap too: a gap shown again shows its copies again.
    copied_inside = _at("16", "recipe/b/trainer.py", 91, "delete_call", "delete call x()")
    inside_again = _at("17", "recipe/c/trainer.py", 5, "delete_call", "delete call x()")
    assert for_the_comment([first, copied, copied_inside, inside_again, far], None, 3) == [
        first,
        far,
    ]


def test_an_edit_the_shown_hunk_already_holds_is_the_same_gap_and_one_past_it_is_not() -> None:
    # two halves of one conditional expression: `a in steps if steps is not None else False`
    body = _at("21", "recipe/a/trainer.py", 100, "compare_flip", "'in' -> 'not in'")
    condition = _at("22", "recipe/a/trainer.py", 101, "compare_flip", "'is not' -> 'is'")
    above = _at("23", "recipe/a/trainer.py", 98, "constant", "False -> True")
    past = _at("24", "recipe/a/trainer.py", 100 + HUNK_CONTEXT + 1, "delete_call", "delete x()")
    elsewhere = _at("25", "recipe/b/trainer.py", 101, "compare_flip", "'<' -> '<='")

    assert for_the_comment([body, condition, above, past, elsewhere], None, 3) == [
        body,
        past,
        elsewhere,
    ]
    assert for_the_comment([condition, body], None, 3) == [condition]  # either way round


def test_a_survivor_set_aside_as_likely_equivalent_is_listed_in_show_never_reported() -> None:
    from bot.report.evidence import gaps
    from probe_builder.coverage import coverage_text
    from task_registry.coverage import CoverageTable

    promise = CACHE_PROMISE.model_copy(update={"survivors": ["1"]})
    kept = AdversarialCoverage(
        id="1", operator="constant", path="pkg/prefix_cache.py", survives_original=True
    )
    aside = kept.model_copy(update={"equivalent": "likely equivalent: lookup gives the same"})
    for patch, reported in ((kept, True), (aside, False)):
        table = CoverageTable(instance_id="o__r-1", promises=[promise], adversarials=[patch])
        assert bool(gaps(table)) is reported
        assert (
            "set aside, not reported: 1: likely equivalent" in coverage_text(table)
        ) is not reported


def test_a_survivor_no_promise_names_is_listed_in_show_never_reported() -> None:
    from bot.report.evidence import gaps
    from probe_builder.coverage import coverage_text
    from task_registry.coverage import CoverageTable

    patch = AdversarialCoverage(
        id="4",
        operator="early_return",
        path="pkg/setup.py",
        description="return early in __init__",
        survives_original=True,
    )
    for survivors, reported in ((["4"], True), ([], False)):
        promise = CACHE_PROMISE.model_copy(update={"survivors": survivors})
        table = CoverageTable(instance_id="o__r-1", promises=[promise], adversarials=[patch])
        assert bool(gaps(table)) is reported
        assert [a.id for a in table.unlinked()] == ([] if reported else ["4"])
        listed = "survives, tied to no promise: 4: return early in __init__" in coverage_text(table)
        assert listed is not reported


def test_operator_priors_are_the_judgement_moved_by_the_dev_labels_alone() -> None:
    """Reproducible from the labelled set: change a dev label, or let a holdout label in, and
    the stored priors no longer match."""
    labels = yaml.safe_load(LABELS.read_text())["items"]
    dev: dict[str, Counter[str]] = defaultdict(Counter)
    for item in labels:
        if item["split"] == "dev":
            dev[item["operator"]][item["label"]] += 1

    assert set(OPERATOR_PRIOR) == set(JUDGED_PRIOR)
    assert set(dev) <= set(JUDGED_PRIOR), "a labelled operator has no prior"
    for operator, judged in JUDGED_PRIOR.items():
        labels_of = dev[operator]
        real = labels_of["real_gap"]
        votes = Votes(useful=real, not_useful=sum(labels_of.values()) - real)
        moved = posterior(judged, votes)
        assert OPERATOR_PRIOR[operator] == pytest.approx(moved, abs=0.006), operator

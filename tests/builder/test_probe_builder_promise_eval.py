"""bench/promise_eval.py: quote matching, PR-level scores, slices, and the sealed holdout's misses."""

from __future__ import annotations

import pytest

from bench.promise_eval import (
    MISSES_REFUSED,
    LabelledItem,
    LabelledPromise,
    evaluate,
    main,
    overlap,
    report,
    slices,
)
from probe_builder.promises.extract import ExtractedPromise
from task_registry.types import PromiseCategory

M, T = PromiseCategory.memory, PromiseCategory.time


def _item(id_: str, description: str, *promises: tuple[PromiseCategory, str]) -> LabelledItem:
    labelled = tuple(LabelledPromise(c, q) for c, q in promises)
    return LabelledItem(id_, "dev", "title", description, labelled)


def _extractor(*promises: tuple[PromiseCategory, str]):
    return lambda title, body: [ExtractedPromise(category=c, quote=q) for c, q in promises]


def test_quotes_wrapped_differently_match_fully():
    assert (
        overlap("reduces peak\n  memory of the\tlogits", "reduces peak memory of the logits") == 1
    )
    assert overlap("a memory-\nefficient loss", "a memory-efficient loss") == 1


def test_promise_level_needs_the_same_category_and_enough_shared_words():
    item = _item("o/r#1", "d", (M, "cut peak memory of the loss"))
    same = evaluate([item], _extractor((M, "Cut peak memory of the loss by 40%.")))
    other_category = evaluate([item], _extractor((T, "Cut peak memory of the loss by 40%.")))
    assert same.per_category[M].true_positives == 1
    assert other_category.per_category[M].true_positives == 0


def test_pr_level_asks_only_whether_the_category_is_promised():
    item = _item("o/r#1", "d", (M, "cut peak memory"), (M, "no OOM at 32k"))
    evaluation = evaluate([item], _extractor((M, "an unrelated sentence about memory")))
    assert evaluation.per_category[M].true_positives == 0
    pr = evaluation.pr_level[M]
    assert (pr.true_positives, pr.labelled, pr.extracted) == (1, 1, 1)
    assert evaluation.pr_level[T].extracted == 0


def test_slices_are_each_repository_and_the_title_only_items():
    items = [_item("a/x#1", "body"), _item("b/y!2", ""), _item("b/y#3", "body")]
    named = slices(items)
    assert list(named) == ["all", "a/x", "b/y", "title-only"]
    assert [i.id for i in named["title-only"]] == ["b/y!2"]


def test_report_puts_dev_and_holdout_side_by_side():
    dev = _item("a/x#1", "d", (M, "cut memory"))
    holdout = LabelledItem("a/x#2", "holdout", "t", "", (LabelledPromise(T, "faster"),))
    text = report([dev, holdout], _extractor((M, "cut memory")))
    assert "== all: dev 1 items, holdout 1 items" in text
    assert "== title-only: dev 0 items, holdout 1 items" in text


@pytest.mark.parametrize("split", ["holdout", "all"])
def test_misses_of_the_sealed_holdout_are_refused(split, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--split", split, "--misses"])
    assert exit_.value.code == 2
    assert MISSES_REFUSED in capsys.readouterr().err

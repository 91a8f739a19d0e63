"""The learned sentence model the promise bench measures beside the rules (``--learned``): it
learns from labels, reads as an extractor, and its folds keep each PR whole."""

from __future__ import annotations

import pytest

from bench.promise_eval import (
    LabelledItem,
    LabelledPromise,
    as_extractor,
    fit,
    folds,
    main,
    said_by,
    tokens,
)
from probe_builder.promises.extract import ruled_sentences
from task_registry.types import PromiseCategory

MEMORY_TITLES = [
    "Shrink the rollout buffer footprint",
    "Shrink activations kept by the attention block",
    "Shrink the optimizer footprint on every rank",
    "Shrink the cache of encoder outputs",
]
OTHER_TITLES = [
    "Add a chat template for the reward model",
    "Add a config option for the tokenizer path",
    "Add retries to the checkpoint uploader",
    "Add a command to list datasets",
]


def _item(n: int, title: str, category: PromiseCategory) -> LabelledItem:
    return LabelledItem(f"o/r#{n}", "dev", title, "", (LabelledPromise(category, title),))


def _items() -> list[LabelledItem]:
    memory = [_item(i, t, PromiseCategory.memory) for i, t in enumerate(MEMORY_TITLES)]
    other = [_item(10 + i, t, PromiseCategory.functional) for i, t in enumerate(OTHER_TITLES)]
    return memory + other


def test_a_sentence_is_labelled_with_the_promises_that_say_it():
    item = _items()[0]
    (title,) = ruled_sentences(item.title, item.description)
    assert said_by(item, title) == {PromiseCategory.memory}
    assert "<title>" in tokens(title, "words")
    assert not any(t.startswith("<rule") for t in tokens(title, "words"))


@pytest.mark.parametrize("variant", ["words", "rules"])
def test_the_model_learns_a_word_from_the_labels(variant):
    extract = as_extractor(fit(_items(), variant), threshold=0.5)
    said = {p.category for p in extract("Shrink the KV pool", "")}
    assert PromiseCategory.memory in said
    assert PromiseCategory.memory not in {p.category for p in extract("Add a logging hook", "")}


def test_labels_swapped_teach_the_opposite():
    swapped = [
        _item(n, item.title, PromiseCategory.functional if n < 10 else PromiseCategory.memory)
        for n, item in ((int(i.id.split("#")[1]), i) for i in _items())
    ]
    extract = as_extractor(fit(swapped, "words"), threshold=0.5)
    assert PromiseCategory.memory not in {p.category for p in extract("Shrink the KV pool", "")}


def test_each_pr_falls_in_one_fold_and_the_deal_is_reproducible():
    items = _items()
    dealt = folds(items, count=3)
    ids = [i.id for fold in dealt for i in fold]
    assert sorted(ids) == sorted(i.id for i in items)
    assert [[i.id for i in f] for f in folds(items, count=3)] == [[i.id for i in f] for f in dealt]


def test_a_threshold_outside_zero_and_one_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["--learned", "rules", "--threshold", "1.5"])
    assert "not between 0 and 1" in capsys.readouterr().err

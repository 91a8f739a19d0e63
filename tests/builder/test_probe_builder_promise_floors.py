"""The extractor stays above precision/recall floors on the labelled set of real descriptions."""

from __future__ import annotations

import re

import pytest

from bench.promise_eval import evaluate, load_labelled_set, render
from probe_builder.material.description import description_sentences
from probe_builder.promises.extract import ExtractedPromise, extract_promises
from task_registry.types import PromiseCategory

# Per-category floors, a little under the measured values (bench/promise_eval.py).
PRECISION_FLOOR = 0.8
RECALL_FLOOR = 0.8
OVERALL_FLOOR = 0.9


@pytest.fixture(scope="module")
def labelled():
    return load_labelled_set()


def _failures(evaluation) -> list[str]:
    failures = []
    for category, score in evaluation.per_category.items():
        if score.precision < PRECISION_FLOOR:
            failures.append(f"{category} precision {score.precision:.2f}")
        if score.recall < RECALL_FLOOR:
            failures.append(f"{category} recall {score.recall:.2f}")
    total = evaluation.total()
    if min(total.precision, total.recall) < OVERALL_FLOOR:
        failures.append(f"overall {total.precision:.2f}/{total.recall:.2f}")
    return failures


def test_labelled_set_is_large_and_covers_every_category(labelled):
    assert len(labelled) >= 40
    assert {i.id.split("#")[0].split("!")[0].split("@")[0] for i in labelled} == {
        "volcengine/verl",
        "NVIDIA/Megatron-LM",
    }
    categories = {p.category for item in labelled for p in item.promises}
    assert categories == set(PromiseCategory)


def test_extractor_stays_above_the_floors(labelled):
    evaluation = evaluate(labelled)
    assert _failures(evaluation) == [], render(evaluation, "labelled set")


def _every_sentence_functional(title: str, body: str) -> list[ExtractedPromise]:
    return [
        ExtractedPromise(category=PromiseCategory.functional, quote=s.text, position=s.position)
        for s in description_sentences(title, body)
    ]


def _keyword_only(title: str, body: str) -> list[ExtractedPromise]:
    # A naive extractor: any sentence mentioning "memory" is a memory promise, no boilerplate removal.
    sentences = re.split(r"(?<=[.!?])\s+", f"{title}. {body}")
    return [
        ExtractedPromise(category=PromiseCategory.memory, quote=s, position=i)
        for i, s in enumerate(sentences)
        if "memory" in s.lower()
    ]


@pytest.mark.parametrize("wrong", [_every_sentence_functional, _keyword_only])
def test_wrong_extractors_fall_below_the_floors(labelled, wrong):
    assert _failures(evaluate(labelled, wrong)) != []


def test_extractor_without_its_memory_rules_fails_the_memory_floor(labelled, monkeypatch):
    import probe_builder.promises.extract as promises

    monkeypatch.setitem(promises.CUES, PromiseCategory.memory, re.compile(r"(?!x)x"))
    evaluation = evaluate(labelled, extract_promises)
    assert evaluation.per_category[PromiseCategory.memory].recall < RECALL_FLOOR

"""The extractor stays above precision/recall floors on the sealed holdout of real descriptions.

The floors are a little under what ``bench/promise_eval.py`` measures on the
holdout (items labelled before the rules were written and not read while
they changed), promise level and PR level per category.
"""

from __future__ import annotations

import re

import pytest

from bench.promise_eval import HOLDOUT, Evaluation, evaluate, load_labelled_set, render
from probe_builder.material.description import description_sentences
from probe_builder.promises.extract import ExtractedPromise, extract_promises
from task_registry.types import PromiseCategory

M, T, X, S, D, N, F = (
    PromiseCategory.memory,
    PromiseCategory.time,
    PromiseCategory.traffic,
    PromiseCategory.state,
    PromiseCategory.mode,
    PromiseCategory.numeric,
    PromiseCategory.functional,
)
# (precision, recall) floors on the holdout: the measured values rounded down to 0.05. The
# issue's targets (P 0.85 / R 0.75 per resource, state and mode category, PR-level recall
# 0.85) are not met yet; the floors keep what is measured from slipping back.
PROMISE_FLOORS = {
    M: (0.85, 0.70),
    T: (0.55, 0.65),
    X: (0.70, 0.30),
    S: (0.35, 0.55),
    D: (0.60, 0.70),
    N: (0.70, 0.50),
    F: (0.50, 0.60),
}
PR_FLOORS = {
    M: (0.95, 0.80),
    T: (0.75, 0.70),
    X: (0.85, 0.50),
    S: (0.70, 0.75),
    D: (0.95, 0.85),
    N: (0.90, 0.70),
}
OVERALL_FLOOR = (0.55, 0.55)


@pytest.fixture(scope="module")
def holdout():
    return load_labelled_set(split=HOLDOUT)


def _failures(evaluation: Evaluation) -> list[str]:
    failures = []
    for level, floors, scores in (
        ("promise", PROMISE_FLOORS, evaluation.per_category),
        ("PR", PR_FLOORS, evaluation.pr_level),
    ):
        for category, (precision, recall) in floors.items():
            score = scores[category]
            if score.precision < precision:
                failures.append(f"{level} {category} precision {score.precision:.2f}")
            if score.recall < recall:
                failures.append(f"{level} {category} recall {score.recall:.2f}")
    total = evaluation.total()
    if total.precision < OVERALL_FLOOR[0] or total.recall < OVERALL_FLOOR[1]:
        failures.append(f"overall {total.precision:.2f}/{total.recall:.2f}")
    return failures


def test_holdout_is_large_and_covers_each_repository_and_the_title_only_slice(holdout):
    assert len(holdout) >= 80
    assert {i.repository for i in holdout} == {
        "volcengine/verl",
        "NVIDIA/Megatron-LM",
        "vllm-project/vllm",
    }
    assert sum(i.repository == "vllm-project/vllm" for i in holdout) >= 25
    assert sum(i.title_only for i in holdout) >= 20
    assert {p.category for item in holdout for p in item.promises} == set(PromiseCategory)


def test_extractor_stays_above_the_floors_on_the_holdout(holdout):
    evaluation = evaluate(holdout)
    assert _failures(evaluation) == [], render(evaluation, "holdout")


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
def test_wrong_extractors_fall_below_the_floors(holdout, wrong):
    assert _failures(evaluate(holdout, wrong)) != []


def test_extractor_without_its_memory_rules_fails_the_memory_floors(holdout, monkeypatch):
    import probe_builder.promises.phrases as promises

    monkeypatch.setitem(promises.CUES, PromiseCategory.memory, re.compile(r"(?!x)x"))
    evaluation = evaluate(holdout, extract_promises)
    assert evaluation.per_category[M].recall < PROMISE_FLOORS[M][1]
    assert evaluation.pr_level[M].recall < PR_FLOORS[M][1]

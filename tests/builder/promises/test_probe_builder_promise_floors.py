"""The extractor stays above precision/recall floors on the sealed holdout of real descriptions;
bench/promise_eval.py's quote matching, PR-level scores, slices and sealed misses; no rule
quotes or names a labelled item.

The floors are a little under what ``bench/promise_eval.py`` measures on the
holdout (items labelled before the rules were written and not read while
they changed), promise level and PR level per category.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import pytest
import yaml

import probe_builder.promises
from bench.promise_eval import (
    AGREEMENT_DIR,
    HOLDOUT,
    MISSES_REFUSED,
    NONE,
    AgreementError,
    Evaluation,
    LabelledItem,
    LabelledPromise,
    evaluate,
    evaluate_labeller,
    load_labelled_set,
    load_second_labeller,
    main,
    overlap,
    render,
    report,
    slices,
)
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
    M: (0.90, 0.70),
    T: (0.55, 0.55),
    X: (0.60, 0.40),
    S: (0.45, 0.60),
    D: (0.70, 0.75),
    N: (0.65, 0.40),
    F: (0.55, 0.50),
}
PR_FLOORS = {
    M: (1.00, 0.80),
    T: (0.75, 0.70),
    X: (0.90, 0.65),
    S: (0.70, 0.80),
    D: (1.00, 0.85),
    N: (0.85, 0.50),
}
OVERALL_FLOOR = (0.60, 0.50)


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


# --- bench/promise_eval.py itself ---------------------------------------------------------


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


def test_the_confusion_puts_each_promise_once_against_what_the_other_side_said():
    item = _item(
        "o/r#1",
        "d",
        (M, "cut peak memory of the loss"),
        (F, "the refit keeps the weights"),
        (T, "faster rollout of the first batch"),
    )
    counts = evaluate(
        [item],
        _extractor(
            (M, "Cut peak memory of the loss by 40%."),
            (S, "The refit keeps the weights in sync."),  # the readers' functional
            (N, "Logging of the metric is unchanged."),  # promises nothing they saw
        ),
    ).confusion
    assert counts == {
        (str(M), str(M)): 1,
        (str(S), str(F)): 1,
        (str(N), NONE): 1,
        (NONE, str(T)): 1,
    }
    # a labelled promise said twice is confused once: the other is a promise no one made
    refit_twice = _extractor((S, "the refit keeps the weights"), (N, "the refit"))
    twice = evaluate([item], refit_twice).confusion
    assert twice[(str(S), str(F))] + twice[(str(N), str(F))] == 1
    assert twice[(str(S), NONE)] + twice[(str(N), NONE)] == 1
    assert twice[(NONE, str(M))] == twice[(NONE, str(T))] == 1
    assert sum(twice.values()) == 4


def test_the_bench_prints_the_confusion_of_each_split(tmp_path, capsys):
    memory = [{"category": str(M), "quote": "Cut peak memory"}]
    items = [
        {"id": f"o/r#{n}", "split": split, "title": "Cut peak memory", "description": ""}
        | {"promises": memory}
        for n, split in enumerate(("dev", "holdout"))
    ]
    (tmp_path / "batch.yaml").write_text(yaml.safe_dump(items))
    assert main(["--dir", str(tmp_path), "--confusion"]) == 0
    out = capsys.readouterr().out
    assert "== dev: rows said, columns labelled" in out
    assert "== holdout: rows said, columns labelled" in out
    assert re.search(r"^resource\.memory\s+1\s", out, re.M)


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


def test_the_second_labellers_files_name_only_items_of_their_split():
    items = load_labelled_set()
    second = load_second_labeller(items)
    assert set(second) == {"dev", HOLDOUT}
    assert len(second["dev"]) >= 40 and len(second[HOLDOUT]) >= 50


def test_a_second_labeller_who_agrees_scores_one_and_one_who_labels_less_loses_recall():
    item = _item("o/r#1", "d", (M, "cut peak memory"), (T, "2x faster decode"))
    same = evaluate_labeller([item], {"o/r#1": item.promises})
    fewer = evaluate_labeller([item], {"o/r#1": item.promises[:1]})
    assert (same.total().precision, same.total().recall) == (1.0, 1.0)
    assert (fewer.total().precision, fewer.total().recall) == (1.0, 0.5)
    assert fewer.pr_level[T].recall == 0.0


def test_a_second_labeller_naming_an_unknown_item_is_refused_with_the_file_and_id(tmp_path):
    (tmp_path / AGREEMENT_DIR).mkdir()
    (tmp_path / AGREEMENT_DIR / "dev.yaml").write_text("- id: o/r#9\n  promises: []\n")
    with pytest.raises(AgreementError, match=r"dev.yaml: item 'o/r#9' is not in the labelled set"):
        load_second_labeller([_item("o/r#1", "d")], tmp_path)


def test_the_agreement_report_puts_the_labeller_beside_the_extractor(capsys):
    assert main(["--agreement"]) == 0
    out = capsys.readouterr().out
    assert "== second labeller vs the set's labels: dev" in out
    assert "== extractor vs the set's labels, same items" in out
    assert "== extractor vs the second labeller" in out


def test_one_item_file_is_scored_alone_and_an_unknown_one_is_refused(tmp_path, capsys):
    item = "- id: {id}\n  split: dev\n  title: {title}\n  description: ''\n  promises: {promises}\n"
    (tmp_path / "batch.yaml").write_text(
        item.format(
            id="o/r#1",
            title="Cut peak memory",
            promises="[{category: resource.memory, quote: Cut peak memory}]",
        )
    )
    (tmp_path / "older.yaml").write_text(item.format(id="o/r#2", title="Docs", promises="[]"))
    (tmp_path / "verdicts.yaml").write_text("[]\n")
    assert main(["--dir", str(tmp_path), "--file", "batch.yaml"]) == 0
    out = capsys.readouterr().out
    assert "== all: dev 1 items, holdout 0 items" in out
    assert main(["--dir", str(tmp_path)]) == 0
    assert "== all: dev 2 items" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["--dir", str(tmp_path), "--file", "verdicts.yaml"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--file verdicts.yaml: no such item file" in err
    assert "(name one of: batch.yaml, older.yaml)" in err


def test_one_split_is_scored_alone(tmp_path, capsys):
    item = "- id: {id}\n  split: {split}\n  title: Cut peak memory\n  description: ''\n  promises: []\n"
    (tmp_path / "batch.yaml").write_text(
        item.format(id="o/r#1", split="dev") + item.format(id="o/r#2", split="holdout")
    )
    assert main(["--dir", str(tmp_path), "--split", "dev"]) == 0
    assert "== all: dev 1 items, holdout 0 items" in capsys.readouterr().out
    assert main(["--dir", str(tmp_path), "--split", "holdout"]) == 0
    assert "== all: dev 0 items, holdout 1 items" in capsys.readouterr().out
    assert main(["--dir", str(tmp_path)]) == 0
    assert "== all: dev 1 items, holdout 1 items" in capsys.readouterr().out


# No rule of the extractor or the verdicts (``probe_builder/promises/``) names a labelled PR
# or quotes a labelled sentence: a comment or pattern that copies a run of words of one of
# their titles, descriptions or quotes would score that PR and say nothing of others. Six
# words in a row are a quote; fewer are a phrase of the trade ("time to first token").
RULES = sorted(Path(probe_builder.promises.__file__).parent.glob("*.py"))
QUOTE_WORDS = 6
_WORD = re.compile(r"[a-z0-9]+")
_NUMBER = re.compile(r"[#!](\d+)\b")


def word_runs(text: str, length: int = QUOTE_WORDS) -> set[str]:
    words = _WORD.findall(text.lower())
    return {" ".join(words[i : i + length]) for i in range(len(words) - length + 1)}


def rule_texts(source: str) -> Iterator[tuple[int, str]]:
    """Each comment and string literal of a module's source, with its line."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.COMMENT, tokenize.STRING):
            yield token.start[0], token.string


def findings(sources: Iterable[tuple[str, str]], items: Sequence[LabelledItem]) -> list[str]:
    """``name:line: why`` for each comment or literal of ``sources`` (name, text) that quotes
    a labelled item or names its number."""
    quoted: dict[str, str] = {}
    for item in items:
        for text in (item.title, item.description, *(p.quote for p in item.promises)):
            for run in word_runs(text):
                quoted.setdefault(run, item.id)
    numbers = {m.group(1): item.id for item in items for m in _NUMBER.finditer(item.id)}
    found = []
    for name, source in sources:
        for line, text in rule_texts(source):
            for run in sorted(word_runs(text) & quoted.keys())[:1]:
                found.append(f"{name}:{line}: quotes {quoted[run]}: {run!r}")
            for match in _NUMBER.finditer(text):
                if match.group(1) in numbers:
                    found.append(f"{name}:{line}: names {numbers[match.group(1)]}")
    return found


def test_no_rule_quotes_or_names_an_item_of_either_split() -> None:
    items = load_labelled_set()  # dev and holdout
    sources = [(path.name, path.read_text(encoding="utf-8")) for path in RULES]
    assert len(sources) >= 5  # extract, phrases, assertions, linking, verdicts
    assert findings(sources, items) == []


ITEM = LabelledItem(
    id="example/repo#4321",
    split="dev",
    title="Overlap the gradient all-reduce with the backward pass",
    description="",
    promises=(
        LabelledPromise(
            PromiseCategory.time, "Overlap the gradient all-reduce with the backward pass"
        ),
    ),
)


def test_a_rule_copying_six_words_of_a_quote_or_naming_the_pr_is_found() -> None:
    copied = '# as in "overlap the gradient all-reduce with the backward" (#4321)\nX = 1\n'
    said_otherwise = '# as in "overlap a reduction with backward"\nX = r"\\boverlap\\b"\n'
    assert findings([("copied.py", copied)], [ITEM]) == [
        "copied.py:1: quotes example/repo#4321: 'gradient all reduce with the backward'",
        "copied.py:1: names example/repo#4321",
    ]
    assert findings([("general.py", said_otherwise)], [ITEM]) == []

"""The benches' intervals: a bootstrap over PRs, seeded, with the PRs' clumps kept whole."""

from __future__ import annotations

import re

import pytest

from bench.promise_eval import LabelledItem, LabelledPromise, Score, evaluate_slices
from bench.promise_eval import main as promise_main
from bench.promise_eval import render_intervals as render_intervals_of
from bench.resample import intervals
from bench.verdict_eval import LabelledVerdict, VerdictItem, render_intervals
from probe_builder.promises.extract import ExtractedPromise
from task_registry.types import PromiseCategory, PromiseVerdict


def test_identical_prs_give_the_ratio_itself():
    bounds = intervals({"P": [(1, 2)] * 30})
    assert bounds == {"P": (0.5, 0.5)}


def test_the_prs_are_drawn_again_not_the_promises():
    # One PR holds ten right promises, ten PRs one wrong promise each: the ratio is 0.5, but
    # a draw without the big PR gives 0, so over PRs the interval reaches far below what
    # twenty independent promises would (about 0.3 to 0.7 at 90%).
    pairs = [(10, 10)] + [(0, 1)] * 10
    low, high = intervals({"R": pairs})["R"] or (1.0, 0.0)
    assert low < 0.2
    assert low <= 0.5 <= high


def test_a_run_is_reproducible_and_a_ratio_without_a_denominator_has_none():
    ratios = {"P": [(1, 1), (0, 1), (2, 3), (0, 0)], "R": [(0, 0)] * 4}
    first, again = intervals(ratios), intervals(ratios)
    assert first == again
    assert first["R"] is None
    assert intervals({"P": []}) == {"P": None}


@pytest.mark.parametrize(
    ("ratios", "level", "message"),
    [
        ({"P": [(1, 1)]}, 1.5, "level 1.5: give a share of the draws between 0 and 1"),
        ({"P": [(1, 1)], "R": [(1, 1), (0, 1)]}, 0.9, "ratios over different PRs ([1, 2] PRs)"),
    ],
)
def test_bad_input_is_refused_with_what_to_give(ratios, level, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        intervals(ratios, level=level)


def test_the_promise_bench_prints_intervals_beside_its_tables(tmp_path, capsys):
    item = "- id: {id}\n  split: {split}\n  title: {title}\n  description: ''\n  promises: {p}\n"
    memory = "[{category: resource.memory, quote: Cut peak memory}]"
    (tmp_path / "batch.yaml").write_text(
        item.format(id="o/r#1", split="dev", title="Cut peak memory", p=memory)
        + item.format(id="o/r#2", split="dev", title="Rename a helper", p=memory)
        + item.format(id="o/r#3", split="holdout", title="Cut peak memory", p=memory)
    )
    assert promise_main(["--dir", str(tmp_path), "--intervals"]) == 0
    out = capsys.readouterr().out
    assert "90% intervals over PRs resampled" in out
    intervals_table = out.split("90% intervals over PRs resampled")[1]
    memory_row = next(
        line for line in intervals_table.splitlines() if line.startswith("resource.memory ")
    )
    # dev: one of the two labelled promises found (R in [0, 1]); holdout: the one found
    assert "[1.00,1.00] [0.00,1.00] [1.00,1.00] [1.00,1.00]" in memory_row


def test_each_slice_gets_its_intervals_and_each_item_is_extracted_once():
    calls: list[str] = []

    def extractor(title: str, body: str) -> list[ExtractedPromise]:
        calls.append(title)
        return [ExtractedPromise(category=PromiseCategory.memory, quote=title)]

    promise = (LabelledPromise(PromiseCategory.memory, "Cut peak memory"),)
    items = [
        LabelledItem("a/x#1", "dev", "Cut peak memory", "", promise),  # title-only too
        LabelledItem("b/y#2", "dev", "Rename a helper", "body", promise),
        LabelledItem("b/y#3", "holdout", "Cut peak memory", "body", promise),
    ]
    sliced = evaluate_slices(items, extractor)
    assert sorted(calls) == ["Cut peak memory", "Cut peak memory", "Rename a helper"]
    assert list(sliced) == ["all", "a/x", "b/y", "title-only"]
    dev, holdout = sliced["b/y"]
    assert (dev.items, holdout.items) == (1, 1)
    assert dev.per_category[PromiseCategory.memory] == Score(0, 1, 1)
    assert sliced["all"][0].total() == Score(1, 2, 2)
    assert "== title-only, 90% intervals" in render_intervals_of(
        *sliced["title-only"], "title-only"
    )


def test_the_verdict_bench_gives_each_rate_an_interval_per_split():
    def item(id_: str, split: str, verdict: PromiseVerdict) -> VerdictItem:
        label = LabelledVerdict(PromiseCategory.memory, "Cut peak memory", verdict)
        return VerdictItem(id=id_, split=split, title="Cut peak memory", promises=(label,))

    items = [
        item("o/r#1", "dev", PromiseVerdict.checked),
        item("o/r#2", "dev", PromiseVerdict.unchecked),
        item("o/r#3", "holdout", PromiseVerdict.checked),
    ]
    said = {i.id: [PromiseVerdict.checked] for i in items}
    rows = dict(line.split(maxsplit=1) for line in render_intervals(items, said).splitlines()[2:])
    assert rows["agreement"].split() == ["[0.00,1.00]", "[1.00,1.00]"]


def test_a_rate_over_nothing_prints_no_figure():
    # A split with no judged item, or a category nothing was extracted for, has no rate; a
    # 1.00 there would read as a perfect score.
    from bench.promise_eval import _cell
    from bench.verdict_eval import VerdictScore, render

    judged = VerdictScore()
    judged.add(
        VerdictItem(id="o/r#1", split="holdout", title="t", promises=()),
        LabelledVerdict(PromiseCategory.memory, "Cut peak memory", PromiseVerdict.checked),
        PromiseVerdict.unchecked,
    )
    rows = {line[:20].strip(): line[20:] for line in render(VerdictScore(), judged).splitlines()}
    assert rows["agreement"].split() == ["n/a", "0/0", "0.00", "0/1"]
    assert _cell(Score(0, 0, 2)).split() == ["n/a", "0.00", "2", "0"]
    assert _cell(Score(0, 1, 0)).split() == ["0.00", "n/a", "0", "1"]

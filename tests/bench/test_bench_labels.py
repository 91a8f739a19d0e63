"""The promise and verdict benches refuse a labelled set they cannot read in one line that
names the file, the item and what to fix, before measuring anything."""

from __future__ import annotations

import pytest

from bench.promise_eval import main as promise_eval
from bench.verdict_eval import main as verdict_eval
from tests.bench_support import refusal

ITEM = "- id: o/r#1\n  split: {split}\n  title: Cut peak memory\n  description: ''\n  promises: {promises}\n"
MEMORY = "[{category: resource.memory, quote: Cut peak memory}]"
VERDICT = "- id: o/r#1\n  split: dev\n  promises: [{{category: {category}, quote: q, verdict: {verdict}}}]\n"


@pytest.mark.parametrize(
    ("items", "said"),
    [
        ("- id: o/r#1\n  split: dev\n  promises: [\n", "batch.yaml: not valid YAML at line 4"),
        ("id: o/r#1\n", "batch.yaml: expected a list of items"),
        ("- id: o/r#1\n  split: dev\n  promises: []\n", "item 1 (o/r#1): missing 'title'"),
        (ITEM.format(split="test", promises=MEMORY), "split 'test' is neither 'dev' nor 'holdout'"),
        (
            ITEM.format(split="dev", promises="[{category: speed, quote: faster}]"),
            "item 1 (o/r#1): category 'speed' is not one of resource.memory, resource.time",
        ),
        (ITEM.format(split="dev", promises="[{category: state}]"), "a state promise has no quote"),
        (ITEM.format(split="dev", promises="[state]"), "promises must be a list of"),
    ],
)
@pytest.mark.parametrize("main", [promise_eval, verdict_eval])
def test_an_item_file_the_benches_cannot_read_is_refused_by_name(
    tmp_path, capsys, main, items, said
):
    # each of these ended in a traceback (KeyError, ValueError, TypeError, a YAML error)
    (tmp_path / "batch.yaml").write_text(items)
    line = refusal(main, ["--dir", str(tmp_path)], capsys)
    assert said in line


@pytest.mark.parametrize("main", [promise_eval, verdict_eval])
def test_a_folder_without_item_files_is_refused(tmp_path, capsys, main):
    # the promise bench printed a table of nothing; the verdict bench a FileNotFoundError
    line = refusal(main, ["--dir", str(tmp_path / "absent")], capsys)
    assert f"no item files (*.yaml) in {tmp_path / 'absent'}" in line


@pytest.mark.parametrize(
    ("verdicts", "said"),
    [
        (None, "no labelled verdicts at"),
        (VERDICT.format(category="memory", verdict="checked"), "category 'memory' is not one of"),
        (
            VERDICT.format(category="state", verdict="tested"),
            "item 1 (o/r#1): verdict 'tested' is not one of checked, exercised, unchecked",
        ),
        ("- id: o/r#1\n  promises: []\n", "verdicts.yaml: item 1 (o/r#1): missing 'split'"),
    ],
)
def test_a_verdicts_file_the_bench_cannot_read_is_refused_by_name(tmp_path, capsys, verdicts, said):
    (tmp_path / "batch.yaml").write_text(ITEM.format(split="dev", promises=MEMORY))
    if verdicts is not None:
        (tmp_path / "verdicts.yaml").write_text(verdicts)
    line = refusal(verdict_eval, ["--dir", str(tmp_path)], capsys)
    assert said in line


def test_a_readable_set_is_measured(tmp_path, capsys):
    (tmp_path / "batch.yaml").write_text(ITEM.format(split="dev", promises=MEMORY))
    (tmp_path / "verdicts.yaml").write_text(
        VERDICT.format(category="resource.memory", verdict="checked")
    )
    assert promise_eval(["--dir", str(tmp_path)]) == 0
    assert "== all: dev 1 items, holdout 0 items" in capsys.readouterr().out
    # no mirror: the verdict bench says what it needs, having read the labels
    assert verdict_eval(["--dir", str(tmp_path)]) == 0
    assert "no mirror of o/r given or found" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("main", "name", "text", "said"),
    [
        (
            promise_eval,
            "dev.yaml",
            "- id: o/r#1\n  promises: [{category: speed, quote: x}]\n",
            "agreement/dev.yaml: item 1 (o/r#1): category 'speed' is not one of",
        ),
        (
            verdict_eval,
            "verdicts.yaml",
            VERDICT.format(category="state", verdict="maybe"),
            "agreement/verdicts.yaml: item 1 (o/r#1): verdict 'maybe' is not one of",
        ),
    ],
)
def test_a_second_readers_file_the_bench_cannot_read_is_refused_by_name(
    tmp_path, capsys, main, name, text, said
):
    # both ended in a traceback: only a second reader's unknown item was refused
    (tmp_path / "batch.yaml").write_text(ITEM.format(split="dev", promises=MEMORY))
    (tmp_path / "verdicts.yaml").write_text(VERDICT.format(category="state", verdict="checked"))
    (tmp_path / "agreement").mkdir()
    (tmp_path / "agreement" / name).write_text(text)
    line = refusal(main, ["--dir", str(tmp_path), "--agreement"], capsys)
    assert said in line

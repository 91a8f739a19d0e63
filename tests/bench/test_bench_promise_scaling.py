"""bench/promise_eval.py --scaling: the descriptions it times, and its table."""

from __future__ import annotations

from bench.promise_eval import (
    SCALING_KIB,
    LabelledItem,
    main,
    scaling_bodies,
    scaling_report,
)
from probe_builder.promises.extract import extract_promises
from task_registry.types import PromiseCategory

ITEMS = [
    LabelledItem("o/r#1", "dev", "Cut memory", "Reduce the peak memory of the logits.", ()),
    LabelledItem("o/r#2", "holdout", "Sealed", "A sealed description is never timed.", ()),
]


def test_the_timed_descriptions_fill_their_size_from_dev_alone():
    bodies = scaling_bodies(ITEMS, 8)
    for body in bodies.values():
        assert 8 * 1024 - 80 < len(body) <= 8 * 1024
    assert "sealed" not in bodies["dev descriptions"]


def test_the_distinct_promises_restate_none_of_one_another():
    # the merge's worst case only if every bullet stays a promise of its own
    body = scaling_bodies(ITEMS, 8)["distinct promises"]
    memory = [p for p in extract_promises("x", body) if p.category is PromiseCategory.memory]
    assert len(memory) == body.count("\n") + 1


def test_the_table_gives_each_size_and_the_ratio_of_time_per_kib():
    table = scaling_report(ITEMS, extractor=lambda title, body: [])
    rows = table.splitlines()
    assert len(rows) == 1 + 2 * (len(SCALING_KIB) + 1)
    assert sum("time per KiB, 64 KiB against 8:" in row for row in rows) == 2


def test_the_flag_prints_the_table(capsys, tmp_path):
    (tmp_path / "dev.yaml").write_text(
        "- id: o/r#1\n  split: dev\n  title: Cut memory\n"
        "  description: Reduce the peak memory of the logits.\n  promises: []\n"
    )
    assert main(["--dir", str(tmp_path), "--scaling"]) == 0
    assert "distinct promises  time per KiB" in capsys.readouterr().out

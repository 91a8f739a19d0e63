"""The useful rate of what a comment shows, from labelled survivors of real PRs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bench.survivor_eval import (
    figures,
    load_labels,
    split_of,
    survivor_key,
    survivors_of,
    write_unlabelled,
)

REPO = "acme/widgets"


def item(line: int, where: str, operator: str = "compare_flip") -> dict:
    return {
        "path": "w/core.py",
        "line": line,
        "operator": operator,
        "hunk": f"-a{line}\n+b",
        "description": "flip",
        "where": where,
    }


RUNS = [
    {
        "number": 7,
        "title": "Faster widgets",
        "summary": "tests check 1 of 2",
        "survivor_list": [
            item(1, "comment"),
            item(2, "comment"),
            item(3, "task page"),
            item(4, "set aside: same outputs"),
            item(5, "no missed promise"),
        ],
    },
    {
        "number": 9,
        "title": "Cache",
        "summary": "no report: validation did not finish",
        "survivor_list": [item(1, "comment")],
    },
]


def key(number: int, line: int) -> str:
    it = item(line, "")
    return survivor_key(f"acme__widgets-{number}", it["path"], line, it["operator"], it["hunk"])


LABELS = {
    key(7, 1): {"label": "real_gap", "split": "holdout"},
    key(7, 2): {"label": "trivial", "split": "holdout"},
    key(7, 3): {"label": "real_gap", "split": "holdout"},
    key(7, 4): {"label": "real_gap", "split": "holdout"},
    key(7, 5): {"label": "equivalent", "split": "holdout"},
    key(9, 1): {"label": "real_gap", "split": "dev"},
}


def test_useful_rate_counts_the_comment_and_kept_counts_the_task_page_too() -> None:
    survivors = survivors_of(RUNS, REPO)
    holdout = figures(survivors, LABELS, "holdout")
    assert (holdout.shown_in_comment, holdout.comment_real) == (2, 1)
    assert holdout.useful_rate == pytest.approx(0.5)
    # three real gaps: one in the comment, one on the task page, one set aside
    assert (holdout.real, holdout.real_kept, holdout.real_set_aside) == (3, 2, 1)
    assert holdout.kept_rate == pytest.approx(2 / 3)


def test_a_pr_without_a_report_shows_nothing() -> None:
    dev = figures(survivors_of(RUNS, REPO), LABELS, "dev")
    assert (dev.shown_in_comment, dev.real, dev.real_kept) == (0, 1, 0)


def test_unlabelled_survivors_are_written_without_their_place(tmp_path: Path) -> None:
    out = tmp_path / "todo.yaml"
    known = {k: v for k, v in LABELS.items() if k not in (key(7, 5), key(9, 1))}
    assert write_unlabelled([(REPO, RUNS)], known, out) == 2
    written = {item["key"]: item for item in yaml.safe_load(out.read_text())["items"]}
    assert set(written) == {key(7, 5), key(9, 1)}
    assert all("where" not in item for item in written.values())
    # a new PR's split is drawn from its id
    assert written[key(9, 1)]["split"] == split_of("acme__widgets-9")


def test_a_survivor_of_a_pr_labelled_before_keeps_that_prs_split(tmp_path: Path) -> None:
    drawn = split_of("acme__widgets-7")
    by_hand = "dev" if drawn == "holdout" else "holdout"  # the first PRs were split by hand
    known = {
        k: {**v, "pr": f"{REPO}#7", "split": by_hand}
        for k, v in LABELS.items()
        if k not in (key(7, 5), key(9, 1))
    }
    out = tmp_path / "todo.yaml"
    write_unlabelled([(REPO, RUNS)], known, out)
    written = {item["key"]: item for item in yaml.safe_load(out.read_text())["items"]}
    assert written[key(7, 5)]["split"] == by_hand


def test_a_new_prs_split_is_drawn_from_its_id_about_one_in_three_dev() -> None:
    splits = [split_of(f"acme__widgets-{n}") for n in range(300)]
    assert split_of("acme__widgets-7") == split_of("acme__widgets-7")
    assert 70 <= splits.count("dev") <= 130 and set(splits) == {"dev", "holdout"}


def test_a_label_outside_the_three_values_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "labels.yaml"
    path.write_text(yaml.safe_dump({"items": [{"key": "x", "label": "maybe"}]}))
    with pytest.raises(ValueError, match="label must be one of"):
        load_labels(path)


def test_a_survivors_key_ignores_the_context_shown_around_its_change() -> None:
    bare = survivor_key("acme__widgets-7", "w/core.py", 3, "compare_flip", "-a < b\n+a <= b")
    shown = survivor_key(
        "acme__widgets-7", "w/core.py", 3, "compare_flip", " x = 1\n-a < b\n+a <= b\n y = 2"
    )
    other = survivor_key("acme__widgets-7", "w/core.py", 3, "compare_flip", "-a < b\n+a > b")
    assert bare == shown != other


def test_every_pr_of_the_labelled_set_has_one_split() -> None:
    from bench.survivor_eval import LABELS as LABELLED

    splits: dict[str, set[str]] = {}
    for item in load_labels(LABELLED).values():
        splits.setdefault(item["pr"], set()).add(item["split"])
    assert splits and {pr: s for pr, s in splits.items() if len(s) > 1} == {}

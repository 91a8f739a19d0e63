"""How much of what a report shows is a real gap: surviving patches of real PRs, labelled.

Reads the JSON that ``bench/real_prs.py`` writes (each validated PR's surviving patches,
with where a maintainer meets each one: the comment, the task page, or set aside as likely
equivalent) and the labels in
``tests/data/survivors/labels.yaml`` (``real_gap``, ``equivalent`` or ``trivial``, given
from the mutation alone, before its place was known). Per split:

- *useful rate*: of the patches the comment shows, the share that are real gaps
  (Google's "not useful" is one minus it);
- *kept*: of the real gaps, the share shown somewhere (comment or task page);
- what the equivalence check set aside that was a real gap.

    python -m bench.survivor_eval --runs out-verl.json --runs out-megatron.json \\
        --repo volcengine/verl --repo NVIDIA/Megatron-LM

A patch is matched to its label by :func:`survivor_key` (the PR, the place and a hash
of the mutation), so the labels hold no upstream code. ``--unlabelled FILE`` writes the
survivors that have no label yet, without their places, for labelling blind.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml

from task_registry.swebench import instance_id_for

LABELS = Path(__file__).resolve().parent.parent / "tests" / "data" / "survivors" / "labels.yaml"
LABEL_VALUES = ("real_gap", "equivalent", "trivial")
SHOWN = ("comment", "task page")
DEV, HOLDOUT = "dev", "holdout"


def survivor_key(instance: str, path: str, line: int | None, operator: str, hunk: str) -> str:
    """A patch's identity across runs: mechanical patches are made the same way each time.
    Only the hunk's changed lines count, not the context shown around them."""
    changed = "\n".join(row for row in hunk.splitlines() if row[:1] in ("-", "+"))
    digest = hashlib.sha256(f"{path}\n{line}\n{operator}\n{changed}".encode()).hexdigest()
    return f"{instance}:{digest[:12]}"


def split_of(instance: str) -> str:
    """A new PR's split, drawn from its instance id before its survivors are read."""
    return DEV if int(hashlib.sha256(instance.encode()).hexdigest(), 16) % 3 == 0 else HOLDOUT


@dataclass(frozen=True)
class Survivor:
    key: str
    instance: str
    where: str  # comment | task page | set aside: … | no report
    operator: str


@dataclass(frozen=True)
class Figures:
    labelled: int
    shown_in_comment: int
    comment_real: int
    real: int
    real_kept: int
    real_set_aside: int
    prs: int

    @property
    def useful_rate(self) -> float | None:
        return self.comment_real / self.shown_in_comment if self.shown_in_comment else None

    @property
    def kept_rate(self) -> float | None:
        return self.real_kept / self.real if self.real else None


def survivors_of(runs: list[dict], repo: str) -> list[Survivor]:
    found = []
    for row in runs:
        instance = instance_id_for(repo, int(row["number"]))
        reported = not str(row.get("summary", "")).startswith("no report")
        for item in row.get("survivor_list", []):
            key = survivor_key(instance, item["path"], item["line"], item["operator"], item["hunk"])
            where = item["where"] if reported else "no report"
            found.append(Survivor(key, instance, where, item["operator"]))
    return found


def load_labels(path: Path) -> dict[str, dict]:
    document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    labels = {}
    for item in document.get("items", []):
        if item.get("label") not in LABEL_VALUES:
            raise ValueError(f"{path}: {item.get('key')}: label must be one of {LABEL_VALUES}")
        labels[item["key"]] = item
    return labels


def figures(survivors: list[Survivor], labels: dict[str, dict], split: str | None) -> Figures:
    chosen = [
        (s, labels[s.key])
        for s in survivors
        if s.key in labels and (split is None or labels[s.key].get("split") == split)
    ]
    comment = [(s, lab) for s, lab in chosen if s.where == "comment"]
    real = [(s, lab) for s, lab in chosen if lab["label"] == "real_gap"]
    return Figures(
        labelled=len(chosen),
        shown_in_comment=len(comment),
        comment_real=sum(1 for _, lab in comment if lab["label"] == "real_gap"),
        real=len(real),
        real_kept=sum(1 for s, _ in real if s.where in SHOWN),
        real_set_aside=sum(1 for s, _ in real if s.where.startswith("set aside")),
        prs=len({s.instance for s, _ in chosen}),
    )


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def print_figures(survivors: list[Survivor], labels: dict[str, dict]) -> None:
    print(
        "| split | PRs | labelled | in comment | real gaps in comment | useful rate | "
        "real gaps | shown somewhere | kept | real gaps set aside |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for split in (DEV, HOLDOUT, None):
        f = figures(survivors, labels, split)
        print(
            f"| {split or 'all'} | {f.prs} | {f.labelled} | {f.shown_in_comment} | "
            f"{f.comment_real} | {_rate(f.useful_rate)} | {f.real} | {f.real_kept} | "
            f"{_rate(f.kept_rate)} | {f.real_set_aside} |"
        )
    counts = Counter(labels[s.key]["label"] for s in survivors if s.key in labels)
    places = Counter(s.where.split(":", 1)[0] for s in survivors)
    print(
        f"\nlabels: {dict(counts)}; places: {dict(places)}; "
        f"unlabelled: {sum(1 for s in survivors if s.key not in labels)}"
    )


def write_unlabelled(runs: list[tuple[str, list[dict]]], labels: dict[str, dict], out: Path) -> int:
    """The survivors without a label, with what a labeller needs and not where they landed.
    A PR's patches all share one split: a PR labelled before keeps the split its labels have
    (the first PRs were split by hand), a new one gets :func:`split_of`."""
    splits = {str(lab["pr"]): str(lab["split"]) for lab in labels.values() if "pr" in lab}
    items = []
    for repo, rows in runs:
        for row in rows:
            instance = instance_id_for(repo, int(row["number"]))
            split = splits.get(f"{repo}#{row['number']}") or split_of(instance)
            for item in row.get("survivor_list", []):
                key = survivor_key(
                    instance, item["path"], item["line"], item["operator"], item["hunk"]
                )
                if key in labels:
                    continue
                items.append(
                    {
                        "key": key,
                        "pr": f"{repo}#{row['number']}",
                        "title": row.get("title", ""),
                        "path": item["path"],
                        "line": item["line"],
                        "operator": item["operator"],
                        "description": item["description"],
                        "hunk": item["hunk"],
                        "split": split,
                    }
                )
    out.write_text(yaml.safe_dump({"items": items}, sort_keys=False, allow_unicode=True))
    return len(items)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs",
        type=Path,
        action="append",
        required=True,
        help="a JSON file bench/real_prs.py wrote (repeat, one per --repo)",
    )
    parser.add_argument("--repo", action="append", required=True, help="OWNER/NAME of each --runs")
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--unlabelled", type=Path, help="write the survivors without a label")
    args = parser.parse_args(argv)
    if len(args.runs) != len(args.repo):
        print("give one --repo per --runs file, in the same order", file=sys.stderr)
        return 2
    runs = [
        (repo, json.loads(path.read_text()))
        for repo, path in zip(args.repo, args.runs, strict=True)
    ]
    labels = load_labels(args.labels) if args.labels.is_file() else {}
    survivors = [s for repo, rows in runs for s in survivors_of(rows, repo)]
    if args.unlabelled:
        count = write_unlabelled(runs, labels, args.unlabelled)
        print(f"{count} survivors without a label written to {args.unlabelled}")
    print_figures(survivors, labels)
    return 0


if __name__ == "__main__":
    sys.exit(main())

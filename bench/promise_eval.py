"""Precision and recall of the promise extractor per category on the labelled set.

An extracted promise matches a labelled one when the categories agree and
their quotes share at least 60% of the content words of the shorter quote;
matching is one-to-one, best overlap first. Usage::

    python -m bench.promise_eval [--dir tests/data/promises] [--split dev|holdout|all] [--misses]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from probe_builder.promises.extract import ExtractedPromise, content_words, extract_promises
from task_registry.types import PromiseCategory

DEFAULT_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "promises"
MATCH_OVERLAP = 0.6
Extractor = Callable[[str, str], Sequence[ExtractedPromise]]


@dataclass(frozen=True)
class LabelledPromise:
    category: PromiseCategory
    quote: str


@dataclass(frozen=True)
class LabelledItem:
    id: str
    split: str
    title: str
    description: str
    promises: tuple[LabelledPromise, ...]


@dataclass
class CategoryScore:
    true_positives: int = 0
    extracted: int = 0
    labelled: int = 0

    @property
    def precision(self) -> float:
        return self.true_positives / self.extracted if self.extracted else 1.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.labelled if self.labelled else 1.0


@dataclass
class Evaluation:
    per_category: dict[PromiseCategory, CategoryScore] = field(
        default_factory=lambda: {c: CategoryScore() for c in PromiseCategory}
    )
    misses: list[str] = field(default_factory=list)

    def total(self) -> CategoryScore:
        scores = self.per_category.values()
        return CategoryScore(
            sum(s.true_positives for s in scores),
            sum(s.extracted for s in scores),
            sum(s.labelled for s in scores),
        )


def load_labelled_set(directory: Path = DEFAULT_DIR, split: str = "all") -> list[LabelledItem]:
    items = []
    for path in sorted(directory.glob("*.yaml")):
        for raw in yaml.safe_load(path.read_text(encoding="utf-8")):
            if split not in ("all", raw["split"]):
                continue
            promises = tuple(
                LabelledPromise(PromiseCategory(p["category"]), p["quote"]) for p in raw["promises"]
            )
            items.append(
                LabelledItem(
                    raw["id"], raw["split"], raw["title"], raw["description"] or "", promises
                )
            )
    return items


def overlap(a: str, b: str) -> float:
    wa, wb = content_words(a), content_words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / min(len(wa), len(wb))


def _match(
    extracted: Sequence[ExtractedPromise], labelled: Sequence[LabelledPromise]
) -> set[tuple[int, int]]:
    pairs = sorted(
        (
            (overlap(e.quote, lab.quote), i, j)
            for i, e in enumerate(extracted)
            for j, lab in enumerate(labelled)
            if e.category == lab.category
        ),
        reverse=True,
    )
    used_e: set[int] = set()
    used_l: set[int] = set()
    matched = set()
    for score, i, j in pairs:
        if score >= MATCH_OVERLAP and i not in used_e and j not in used_l:
            matched.add((i, j))
            used_e.add(i)
            used_l.add(j)
    return matched


def evaluate(items: Sequence[LabelledItem], extractor: Extractor = extract_promises) -> Evaluation:
    evaluation = Evaluation()
    for item in items:
        extracted = list(extractor(item.title, item.description))
        matched = _match(extracted, item.promises)
        for i, promise in enumerate(extracted):
            score = evaluation.per_category[promise.category]
            score.extracted += 1
            if any(i == m[0] for m in matched):
                score.true_positives += 1
            else:
                evaluation.misses.append(f"{item.id} FP {promise.category}: {promise.quote[:90]}")
        for j, label in enumerate(item.promises):
            evaluation.per_category[label.category].labelled += 1
            if not any(j == m[1] for m in matched):
                evaluation.misses.append(f"{item.id} FN {label.category}: {label.quote[:90]}")
    return evaluation


def render(evaluation: Evaluation, title: str) -> str:
    lines = [
        title,
        f"{'category':18s} {'labelled':>8s} {'extracted':>9s} {'TP':>4s}"
        f" {'precision':>9s} {'recall':>7s}",
    ]
    rows = [*evaluation.per_category.items(), ("all", evaluation.total())]
    for category, s in rows:
        lines.append(
            f"{category!s:18s} {s.labelled:8d} {s.extracted:9d} {s.true_positives:4d} "
            f"{s.precision:9.2f} {s.recall:7.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--split", choices=["dev", "holdout", "all"], default="all")
    parser.add_argument("--misses", action="store_true", help="list false positives and negatives")
    args = parser.parse_args(argv)
    items = load_labelled_set(args.dir, args.split)
    evaluation = evaluate(items)
    n_promises = sum(len(i.promises) for i in items)
    print(
        render(
            evaluation,
            f"{len(items)} descriptions, {n_promises} labelled promises (split: {args.split})",
        )
    )
    if args.misses:
        print("\n" + "\n".join(evaluation.misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())

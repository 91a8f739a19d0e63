"""Precision and recall of the promise extractor on the labelled set, dev beside holdout.

Two levels, per category. Promise level: an extracted promise matches a
labelled one when the categories agree and their quotes share at least 60%
of the content words of the shorter quote (whitespace and line wrapping do
not count); matching is one-to-one, best overlap first. PR level: does the
PR promise memory / time / traffic / state / mode / numeric at all, as
labelled and as extracted. Each table is printed for the whole set, for each
repository and for the title-only slice (items with an empty description).

The holdout was sealed when it was labelled: its figures may be printed, its
misses may not be read while rules change, so ``--misses`` lists dev misses
only, and ``--split dev`` scores dev alone (its holdout columns stay empty).

``--agreement`` scores a second labeller's promises for a subset of both
splits (``agreement/dev.yaml``, ``agreement/holdout.yaml``, labelled blind to
the set's labels) against the set's labels, with the same matching rule, and
the extractor on the same items beside it: how far two people reading the
same descriptions agree is the most any extractor can be expected to reach
against one of them.

``--file NAME`` scores the items of one item file alone: a batch labelled
blind is measured this way once, before any rule reads it, and that first
figure is the extractor's on PRs nobody tuned it on. Usage::

    python -m bench.promise_eval [--dir tests/data/promises] [--file NAME]
        [--misses | --agreement | --learned words|rules] [--intervals]

``--confusion`` prints, per split, where the extractor and the labels part by category:
each extracted promise against the labelled promise it matches, else against the labelled
promise of another category whose quote it says (the same overlap, best first, one to one),
else against none; each labelled promise left over against none. Its off-diagonal cells
tell a category the readers would have named otherwise (a boundary between two categories)
from a sentence that promises nothing and a promise nothing found. Counts only, so the
holdout's matrix may be printed too.

``--learned words|rules`` scores, instead, a logistic model learned from the dev labels
(words and word pairs of each sentence; ``rules``: with the rules' reading of it beside
them) on dev by five folds over PRs and on the holdout, the rules' table beside it
(``--threshold``, ``--top N``: its heaviest features); see the section below.

``--scaling`` times the extractor instead, on descriptions of 8 to 64 KiB (the dev
descriptions one after another, and distinct one-line promises of one category, the merging
of restatements at its worst), and prints the time per KiB at 64 KiB against that at 8:
about 1 when extraction grows with the text, 8 when it grows with its square.

``--intervals`` adds, for each slice, each figure's 90% interval over PRs
drawn again with replacement (``bench/resample.py``): how far a figure could
move on other PRs like these, which tells a real change of a rule from the
luck of the draw.
"""

from __future__ import annotations

import argparse
import itertools
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from bench.args import non_negative, share
from bench.resample import LEVEL, RESAMPLES, Pair, intervals, render_interval
from probe_builder.material.description import Origin
from probe_builder.promises.extract import (
    MAX_QUOTE_CHARS,
    ExtractedPromise,
    RuledSentence,
    content_words,
    extract_promises,
    merge_restatements,
    ruled_sentences,
)
from task_registry.types import PromiseCategory

DEFAULT_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "promises"
MATCH_OVERLAP = 0.6
VERDICTS_FILE = "verdicts.yaml"  # the PR's own tests' verdict on each labelled promise
Extractor = Callable[[str, str], Sequence[ExtractedPromise]]
DEV, HOLDOUT = "dev", "holdout"
SPECIFIC_CATEGORIES = tuple(c for c in PromiseCategory if c is not PromiseCategory.functional)
MISSES_REFUSED = "--misses lists dev misses only: the holdout is sealed while rules change"
AGREEMENT_DIR = "agreement"  # a second labeller's promises, one file per split
UNKNOWN_FILE = "--file {name}: no such item file in {directory} (name one of: {known})"
UNKNOWN_ITEM = (
    "{path}: item {id!r} is not in the labelled set of split {split!r} "
    "(label only items of that split's item files)"
)
NO_ITEM_FILES = "no item files (*.yaml) in {directory} (pass --dir the labelled set's folder)"
_REPOSITORY = re.compile(r"^[^#!@]+")


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

    @property
    def repository(self) -> str:
        match = _REPOSITORY.match(self.id)
        return match.group(0) if match else self.id

    @property
    def title_only(self) -> bool:
        return not self.description.strip()


@dataclass
class Score:
    true_positives: int = 0
    extracted: int = 0
    labelled: int = 0

    @property
    def precision(self) -> float:
        return self.true_positives / self.extracted if self.extracted else 1.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.labelled if self.labelled else 1.0

    def __add__(self, other: Score) -> Score:
        return Score(
            self.true_positives + other.true_positives,
            self.extracted + other.extracted,
            self.labelled + other.labelled,
        )


CategoryScore = Score  # the promise-level name used by earlier callers


def _per_category() -> dict[PromiseCategory, Score]:
    return {c: Score() for c in PromiseCategory}


NONE = "none"  # no promise on that side of a confusion cell
Confusion = Counter[tuple[str, str]]  # (said, labelled) -> promises


@dataclass
class Evaluation:
    per_category: dict[PromiseCategory, Score] = field(default_factory=_per_category)
    pr_level: dict[PromiseCategory, Score] = field(default_factory=_per_category)
    items: int = 0
    misses: list[str] = field(default_factory=list)
    confusion: Confusion = field(default_factory=Counter)  # see ``confusion_item``
    per_item: list[Evaluation] = field(default_factory=list)  # one item's scores each

    def add(self, one: Evaluation) -> None:
        """An item's scores, added into the whole and kept apart for resampling."""
        for mine, theirs in ((self.per_category, one.per_category), (self.pr_level, one.pr_level)):
            for category, score in theirs.items():
                mine[category] = mine[category] + score
        self.items += one.items
        self.misses += one.misses
        self.confusion += one.confusion
        self.per_item.append(one)

    def total(self) -> Score:
        return sum(self.per_category.values(), Score())


def item_files(directory: Path = DEFAULT_DIR) -> list[Path]:
    """The item files of the labelled set (the verdicts file is not one)."""
    return [p for p in sorted(directory.glob("*.yaml")) if p.name != VERDICTS_FILE]


class LabelError(ValueError):
    """A labelled file the benches cannot read, said in one line: the file, the item and
    what to fix."""


CATEGORY_VALUES = frozenset(c.value for c in PromiseCategory)


def shown(path: Path) -> str:
    """A labelled file as its errors name it: a second labeller's with its folder, since
    ``agreement/verdicts.yaml`` and ``verdicts.yaml`` differ."""
    return f"{AGREEMENT_DIR}/{path.name}" if path.parent.name == AGREEMENT_DIR else path.name


def item_name(path: Path, index: int, raw: Mapping[str, Any]) -> str:
    """An item as an error names it: its file, its place there and its id."""
    return f"{shown(path)}: item {index + 1} ({raw.get('id', 'no id')})"


def read_labels(path: Path) -> list[dict[str, Any]]:
    """A labelled file's items: a YAML list of mappings (an empty file holds none)."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or "unreadable"
        raise LabelError(
            f"{shown(path)}: not valid YAML{where} ({problem}); fix the file"
        ) from None
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        raise LabelError(f"{shown(path)}: expected a list of items (- id: ..., split: ..., ...)")
    return raw


def check_item(path: Path, index: int, raw: Mapping[str, Any], keys: Sequence[str]) -> None:
    """LabelError, naming what is wrong, unless the item has ``keys``, a known split (where
    it must have one) and a list of promises, each a mapping with a known category and a
    quote."""
    name = item_name(path, index, raw)
    missing = [key for key in keys if key not in raw]
    if missing:
        raise LabelError(f"{name}: missing {missing[0]!r} (each item needs {', '.join(keys)})")
    if "split" in keys and raw["split"] not in (DEV, HOLDOUT):
        raise LabelError(f"{name}: split {raw['split']!r} is neither {DEV!r} nor {HOLDOUT!r}")
    promises = raw["promises"] or []
    if not isinstance(promises, list) or not all(isinstance(p, dict) for p in promises):
        raise LabelError(f"{name}: promises must be a list of {{category, quote}} mappings")
    for promise in promises:
        if promise.get("category") not in CATEGORY_VALUES:
            known = ", ".join(c.value for c in PromiseCategory)
            raise LabelError(f"{name}: category {promise.get('category')!r} is not one of {known}")
        if not isinstance(promise.get("quote"), str) or not promise["quote"].strip():
            raise LabelError(f"{name}: a {promise['category']} promise has no quote")


ITEM_KEYS = ("id", "split", "title", "promises")


def load_labelled_set(
    directory: Path = DEFAULT_DIR, split: str = "all", only: str | None = None
) -> list[LabelledItem]:
    """The labelled items of every repository's file, or of the one item file ``only``;
    LabelError for a folder without item files or an item the benches cannot read."""
    paths = item_files(directory)
    if not paths:
        raise LabelError(NO_ITEM_FILES.format(directory=directory))
    items = []
    for path in paths:
        if only is not None and path.name != only:
            continue
        for index, raw in enumerate(read_labels(path)):
            check_item(path, index, raw, ITEM_KEYS)
            if split not in ("all", raw["split"]):
                continue
            promises = tuple(
                LabelledPromise(PromiseCategory(p["category"]), p["quote"])
                for p in raw["promises"] or ()
            )
            items.append(
                LabelledItem(
                    str(raw["id"]),
                    raw["split"],
                    str(raw["title"]),
                    raw.get("description") or "",
                    promises,
                )
            )
    return items


def normalise_quote(text: str) -> str:
    """One space for every run of whitespace; a hyphen at a line break keeps its compound whole."""
    return " ".join(re.sub(r"(\w)-\s*\n\s*(\w)", r"\1-\2", text).split())


def overlap(a: str, b: str) -> float:
    wa, wb = content_words(normalise_quote(a)), content_words(normalise_quote(b))
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / min(len(wa), len(wb))


def _match(
    extracted: Sequence[ExtractedPromise],
    labelled: Sequence[LabelledPromise],
    *,
    any_category: bool = False,
) -> set[tuple[int, int]]:
    """Pairs (extracted, labelled) of the same category (of any, with ``any_category``)
    whose quotes overlap enough, one to one, best overlap first."""
    pairs = sorted(
        (
            (overlap(e.quote, lab.quote), i, j)
            for i, e in enumerate(extracted)
            for j, lab in enumerate(labelled)
            if any_category or e.category == lab.category
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


def _score_promises(
    evaluation: Evaluation, item: LabelledItem, extracted: Sequence[ExtractedPromise]
) -> None:
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


def _score_pr(
    evaluation: Evaluation, item: LabelledItem, extracted: Sequence[ExtractedPromise]
) -> None:
    said = {p.category for p in extracted}
    labelled = {p.category for p in item.promises}
    for category, score in evaluation.pr_level.items():
        score.extracted += category in said
        score.labelled += category in labelled
        score.true_positives += category in said and category in labelled


def evaluate_item(item: LabelledItem, extractor: Extractor = extract_promises) -> Evaluation:
    """One item's scores: what the extractor finds in it against its labels."""
    return _scored(item, list(extractor(item.title, item.description)))


def _scored(item: LabelledItem, extracted: Sequence[ExtractedPromise]) -> Evaluation:
    one = Evaluation(items=1, confusion=confusion_item(item, extracted))
    _score_promises(one, item, extracted)
    _score_pr(one, item, extracted)
    return one


def confusion_item(item: LabelledItem, extracted: Sequence[ExtractedPromise]) -> Confusion:
    """One item's (said, labelled) counts: matched promises on the diagonal, an unmatched
    extracted promise against the unmatched labelled promise of another category its quote
    says (the same matching, any category), what is left against none."""
    matched = _match(extracted, item.promises)
    said = [i for i in range(len(extracted)) if all(i != m[0] for m in matched)]
    left = [j for j in range(len(item.promises)) if all(j != m[1] for m in matched)]
    across = _match(
        [extracted[i] for i in said], [item.promises[j] for j in left], any_category=True
    )
    pairs = matched | {(said[i], left[j]) for i, j in across}
    counts: Confusion = Counter(
        (str(extracted[i].category), str(item.promises[j].category)) for i, j in pairs
    )
    paired_said, paired_left = {i for i, _ in pairs}, {j for _, j in pairs}
    counts.update((str(extracted[i].category), NONE) for i in said if i not in paired_said)
    counts.update((NONE, str(item.promises[j].category)) for j in left if j not in paired_left)
    return counts


def render_confusion(name: str, counts: Confusion) -> str:
    """Rows: the category said; columns: the category labelled; ``none`` on either side."""
    names = [str(c) for c in PromiseCategory] + [NONE]
    short = {n: n.removeprefix("resource.")[:8] for n in names}
    lines = [
        f"== {name}: rows said, columns labelled",
        f"{'':18s}" + "".join(f"{short[n]:>9s}" for n in names),
    ]
    for said in names:
        lines.append(f"{said:18s}" + "".join(f"{counts[(said, n)]:9d}" for n in names))
    return "\n".join(lines)


def combined(ones: Iterable[Evaluation]) -> Evaluation:
    """Items' scores added up, each kept apart for resampling."""
    evaluation = Evaluation()
    for one in ones:
        evaluation.add(one)
    return evaluation


def evaluate(items: Sequence[LabelledItem], extractor: Extractor = extract_promises) -> Evaluation:
    return combined(evaluate_item(item, extractor) for item in items)


def _ratios(evaluation: Evaluation) -> dict[str, list[Pair]]:
    """Each table ratio as one (numerator, denominator) pair per item, for resampling."""
    ratios: dict[str, list[Pair]] = {}
    levels = (
        ("promise", "per_category", tuple(PromiseCategory)),
        ("PR", "pr_level", SPECIFIC_CATEGORIES),
    )
    for level, attribute, categories in levels:
        for category in categories:
            scores = [getattr(one, attribute)[category] for one in evaluation.per_item]
            ratios[f"{level} {category} P"] = [(s.true_positives, s.extracted) for s in scores]
            ratios[f"{level} {category} R"] = [(s.true_positives, s.labelled) for s in scores]
    totals = [one.total() for one in evaluation.per_item]
    ratios["promise all P"] = [(s.true_positives, s.extracted) for s in totals]
    ratios["promise all R"] = [(s.true_positives, s.labelled) for s in totals]
    return ratios


def render_intervals(dev: Evaluation, holdout: Evaluation, name: str = "all") -> str:
    """The middle 90% of each ratio over PRs drawn again from each split: how far a figure
    could move on other PRs like these."""
    bounds = [intervals(_ratios(e)) for e in (dev, holdout)]
    lines = [
        f"== {name}, {LEVEL:.0%} intervals over PRs resampled ({RESAMPLES} draws): "
        f"dev {dev.items} items, holdout {holdout.items} items",
        f"{'':18s} {'promise level':^47s} | {'PR level':^47s}",
        f"{'category':18s} {'dev P':^11s} {'dev R':^11s} {'hold P':^11s} {'hold R':^11s} | "
        f"{'dev P':^11s} {'dev R':^11s} {'hold P':^11s} {'hold R':^11s}",
    ]
    for category in [*PromiseCategory, "all"]:
        cells = []
        for level in ("promise", "PR"):
            keys = [f"{level} {category} {m}" for m in ("P", "R")]
            cells.append(
                " ".join(render_interval(b.get(k)) for b in bounds for k in keys)
                if keys[0] in bounds[0]
                else ""
            )
        lines.append(f"{category!s:18s} {cells[0]} | {cells[1]}")
    return "\n".join(lines)


def slices(items: Sequence[LabelledItem]) -> dict[str, list[LabelledItem]]:
    """The whole set, each repository, and the items whose description is empty."""
    named = {"all": list(items)}
    for repository in sorted({i.repository for i in items}):
        named[repository] = [i for i in items if i.repository == repository]
    named["title-only"] = [i for i in items if i.title_only]
    return named


def _cell(score: Score) -> str:
    # a precision of nothing extracted, or a recall of nothing labelled, is no figure
    precision = f"{score.precision:4.2f}" if score.extracted else " n/a"
    recall = f"{score.recall:4.2f}" if score.labelled else " n/a"
    return f"{precision} {recall} {score.labelled:3d} {score.extracted:3d}"


def render_side_by_side(name: str, dev: Evaluation, holdout: Evaluation) -> str:
    """Promise- and PR-level P / R / labelled / extracted per category, dev | holdout."""
    head = f"{'P':>4s} {'R':>4s} {'lab':>3s} {'ext':>3s}"
    lines = [
        f"== {name}: dev {dev.items} items, holdout {holdout.items} items",
        f"{'':18s} {'promise level':^37s} | {'PR level':^37s}",
        f"{'category':18s} {'dev':^17s}   {'holdout':^17s} | {'dev':^17s}   {'holdout':^17s}",
        f"{'':18s} {head}   {head} | {head}   {head}",
    ]
    for category in PromiseCategory:
        pr_cells = (
            f"{_cell(dev.pr_level[category])}   {_cell(holdout.pr_level[category])}"
            if category in SPECIFIC_CATEGORIES
            else ""
        )
        lines.append(
            f"{category!s:18s} {_cell(dev.per_category[category])}   "
            f"{_cell(holdout.per_category[category])} | {pr_cells}"
        )
    lines.append(f"{'all':18s} {_cell(dev.total())}   {_cell(holdout.total())} |")
    return "\n".join(lines)


def render(evaluation: Evaluation, title: str) -> str:
    """One evaluation's promise-level table (used in failure messages)."""
    lines = [title, f"{'category':18s} {'P':>4s} {'R':>4s} {'lab':>3s} {'ext':>3s}"]
    rows = [*evaluation.per_category.items(), ("all", evaluation.total())]
    lines += [f"{category!s:18s} {_cell(score)}" for category, score in rows]
    lines += [
        f"PR {category!s:15s} {_cell(evaluation.pr_level[category])}"
        for category in SPECIFIC_CATEGORIES
    ]
    return "\n".join(lines)


SlicedEvaluations = dict[str, tuple[Evaluation, Evaluation]]


def evaluate_slices(
    items: Sequence[LabelledItem], extractor: Extractor = extract_promises
) -> SlicedEvaluations:
    """Dev and holdout scores of every slice (``slices``); each item is scored once and its
    scores added into every slice that holds it."""
    one = {item.id: evaluate_item(item, extractor) for item in items}
    dev = [i for i in items if i.split == DEV]
    holdout = [i for i in items if i.split == HOLDOUT]
    dev_slices, holdout_slices = slices(dev), slices(holdout)
    return {
        name: (
            combined(one[i.id] for i in dev_slices.get(name, [])),
            combined(one[i.id] for i in holdout_slices.get(name, [])),
        )
        for name in {**dev_slices, **holdout_slices}
    }


def render_slices(sliced: SlicedEvaluations) -> str:
    return "\n\n".join(
        render_side_by_side(name, dev, holdout) for name, (dev, holdout) in sliced.items()
    )


def report(items: Sequence[LabelledItem], extractor: Extractor = extract_promises) -> str:
    return render_slices(evaluate_slices(items, extractor))


class AgreementError(LabelError):
    """A second labeller's file names an item the labelled set does not hold."""


def load_second_labeller(
    items: Sequence[LabelledItem], directory: Path = DEFAULT_DIR
) -> dict[str, dict[str, tuple[LabelledPromise, ...]]]:
    """Per split, the second labeller's promises by item id (only splits with a file)."""
    by_split: dict[str, dict[str, tuple[LabelledPromise, ...]]] = {}
    for split in (DEV, HOLDOUT):
        path = directory / AGREEMENT_DIR / f"{split}.yaml"
        if not path.exists():
            continue
        known = {i.id for i in items if i.split == split}
        labels: dict[str, tuple[LabelledPromise, ...]] = {}
        for index, raw in enumerate(read_labels(path)):
            check_item(path, index, raw, ("id", "promises"))
            if raw["id"] not in known:
                raise AgreementError(UNKNOWN_ITEM.format(path=path.name, id=raw["id"], split=split))
            labels[raw["id"]] = tuple(
                LabelledPromise(PromiseCategory(p["category"]), p["quote"])
                for p in raw["promises"] or ()
            )
        by_split[split] = labels
    return by_split


def _as_extracted(promises: Sequence[LabelledPromise]) -> list[ExtractedPromise]:
    return [ExtractedPromise(category=p.category, quote=p.quote) for p in promises]


def evaluate_labeller(
    items: Sequence[LabelledItem], labels: dict[str, tuple[LabelledPromise, ...]]
) -> Evaluation:
    """The second labeller's promises scored as if they were extracted."""
    return combined(_scored(item, _as_extracted(labels[item.id])) for item in items)


def agreement_report(
    items: Sequence[LabelledItem],
    second: dict[str, dict[str, tuple[LabelledPromise, ...]]],
    extractor: Extractor = extract_promises,
) -> str:
    """The second labeller against the set's labels, then the extractor on the same items
    against each of the two."""
    subsets = {
        split: [i for i in items if i.split == split and i.id in second.get(split, {})]
        for split in (DEV, HOLDOUT)
    }
    labeller = {s: evaluate_labeller(subsets[s], second.get(s, {})) for s in subsets}
    extracted = {s: evaluate(subsets[s], extractor) for s in subsets}
    relabelled = {
        s: evaluate([replace(i, promises=second[s][i.id]) for i in subsets[s]], extractor)
        for s in subsets
    }
    return "\n\n".join(
        (
            render_side_by_side("second labeller vs the set's labels", *labeller.values()),
            render_side_by_side("extractor vs the set's labels, same items", *extracted.values()),
            render_side_by_side("extractor vs the second labeller", *relabelled.values()),
        )
    )


# A learned alternative to the phrase tables (``--learned``), measured as the extractor is.
#
# Each sentence of a description (:func:`probe_builder.promises.extract.ruled_sentences`) is
# a row; its label, per category, is whether a labelled promise of that category says it
# (the matching rule above). One logistic model per category reads the sentence's words and
# word pairs (seen in at least two training sentences), whether it comes from the title,
# whether it is a list item, and, in the ``rules`` variant, whether the rules may take it as
# a promise and the categories they give it. A sentence whose probability for a category
# reaches the threshold promises that category (``functional`` only when no other category
# does), restatements are merged as the extractor merges them, and the result is scored as
# the rules are: on dev by five folds over PRs (each PR's sentences train or test together),
# on the holdout trained on the whole of dev. Every weight is a word's or a reading's, so
# ``--top N`` prints what each category's model leans on. A measurement, not a second
# extractor: it says whether words learned from the labelled set carry to PRs the rules were
# never tuned on better than the rules do.

FOLDS = 5
SEED = 20261205
MIN_COUNT = 2  # a word or pair seen in fewer training sentences is not a feature
THRESHOLD = 0.35
L2 = 1.0  # the L2 penalty on the summed log loss (C = 1 in the usual terms)
STEPS = 300
LEARNING_RATE = 0.5
READING_WEIGHT = 3.0  # a rule's reading stands out beside dozens of words
VARIANTS = ("words", "rules")
_TOKEN = re.compile(r"[a-z][a-z0-9_]+")
ORDER = tuple(PromiseCategory)


def tokens(ruled: RuledSentence, variant: str) -> list[str]:
    """The sentence's features: its words and word pairs, where it stands, and (``rules``)
    the rules' reading of it."""
    words = _TOKEN.findall(ruled.sentence.text.lower())
    found = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
    found.append("<title>" if ruled.sentence.origin is Origin.pr_title else "<body>")
    if ruled.sentence.listed:
        found.append("<listed>")
    if variant == "rules":
        found.append("<candidate>" if ruled.candidate else "<not a candidate>")
        found += [f"<rule {c.value}>" for c in ruled.categories]
    return found


def said_by(item: LabelledItem, ruled: RuledSentence) -> frozenset[PromiseCategory]:
    """The categories of the labelled promises the sentence says."""
    return frozenset(
        p.category for p in item.promises if overlap(ruled.sentence.text, p.quote) >= MATCH_OVERLAP
    )


@dataclass(frozen=True)
class Rows:
    """Sentences as sparse rows: row ``r``'s features are ``indices[indptr[r]:indptr[r+1]]``,
    each with its value (1, or ``READING_WEIGHT`` for a rule's reading)."""

    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray

    @cached_property
    def owners(self) -> np.ndarray:
        """The row each stored feature belongs to."""
        return np.repeat(np.arange(len(self.indptr) - 1), np.diff(self.indptr))

    def times(self, weights: np.ndarray) -> np.ndarray:
        """Rows times ``weights`` (categories x features): rows x categories."""
        out = np.zeros((len(self.indptr) - 1, weights.shape[0]))
        np.add.at(out, self.owners, (weights[:, self.indices] * self.values).T)
        return out


@dataclass
class SentenceModel:
    """One logistic model per category over a shared vocabulary."""

    variant: str
    vocabulary: dict[str, int]
    weights: np.ndarray  # categories x features
    bias: np.ndarray  # one per category

    def rows(self, ruled: Sequence[RuledSentence]) -> Rows:
        return _rows([tokens(r, self.variant) for r in ruled], self.vocabulary)

    def chances(self, ruled: Sequence[RuledSentence]) -> np.ndarray:
        """Each sentence's probability of saying each category: sentences x categories."""
        return _sigmoid(self.rows(ruled).times(self.weights) + self.bias)

    def leaning(self, top: int) -> dict[PromiseCategory, list[tuple[str, float]]]:
        """Each category's ``top`` features by weight."""
        names = sorted(self.vocabulary, key=self.vocabulary.__getitem__)
        return {
            category: [
                (names[i], float(self.weights[c, i])) for i in np.argsort(-self.weights[c])[:top]
            ]
            for c, category in enumerate(ORDER)
        }


def _rows(features: list[list[str]], vocabulary: dict[str, int]) -> Rows:
    indptr, indices, values = [0], [], []
    for row in features:
        known = sorted({(vocabulary[t], t) for t in row if t in vocabulary})
        indices += [i for i, _ in known]
        values += [READING_WEIGHT if t.startswith("<rule") else 1.0 for _, t in known]
        indptr.append(len(indices))
    return Rows(
        np.asarray(indptr, dtype=np.int64),
        np.asarray(indices, dtype=np.int64),
        np.asarray(values, dtype=float),
    )


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -30, 30)))


def fit(items: Sequence[LabelledItem], variant: str) -> SentenceModel:
    """Logistic models fitted by gradient descent on the mean log loss (AdaGrad steps, an
    L2 penalty)."""
    ruled, labels = [], []
    for item in items:
        for sentence in ruled_sentences(item.title, item.description):
            ruled.append(sentence)
            labels.append(said_by(item, sentence))
    features = [tokens(r, variant) for r in ruled]
    counts = Counter(t for row in features for t in set(row))
    vocabulary = {
        t: i for i, t in enumerate(sorted(t for t, n in counts.items() if n >= MIN_COUNT))
    }
    rows = _rows(features, vocabulary)
    targets = np.array([[c in said for c in ORDER] for said in labels], dtype=float)
    weights = np.zeros((len(ORDER), len(vocabulary)))
    bias = np.zeros(len(ORDER))
    squared_w, squared_b = np.full_like(weights, 1e-8), np.full_like(bias, 1e-8)
    owners, n = rows.owners, max(1, len(ruled))
    for _ in range(STEPS):
        error = (_sigmoid(rows.times(weights) + bias) - targets) / n
        gradient = (
            np.stack(
                [
                    np.bincount(rows.indices, error[owners, c] * rows.values, len(vocabulary))
                    for c in range(len(ORDER))
                ]
            )
            + (L2 / n) * weights
        )
        bias_gradient = error.sum(axis=0)
        squared_w += gradient**2
        squared_b += bias_gradient**2
        weights -= LEARNING_RATE * gradient / np.sqrt(squared_w)
        bias -= LEARNING_RATE * bias_gradient / np.sqrt(squared_b)
    return SentenceModel(variant, vocabulary, weights, bias)


def as_extractor(model: SentenceModel, threshold: float = THRESHOLD) -> Extractor:
    """The model read as an extractor: each sentence promises every specific category whose
    probability reaches ``threshold``, else ``functional`` if that does; restatements merged."""

    def extract(title: str, body: str) -> list[ExtractedPromise]:
        ruled = ruled_sentences(title, body)
        if not ruled:
            return []
        promises = []
        for chances, sentence in zip(model.chances(ruled), ruled, strict=True):
            said = [c for c, p in zip(ORDER, chances, strict=True) if p >= threshold]
            specific = [c for c in said if c is not PromiseCategory.functional]
            for category in specific or said:
                promises.append(
                    ExtractedPromise(
                        category=category,
                        quote=sentence.sentence.text[:MAX_QUOTE_CHARS],
                        position=sentence.sentence.position,
                    )
                )
        return merge_restatements(promises)

    return extract


def folds(
    items: Sequence[LabelledItem], count: int = FOLDS, seed: int = SEED
) -> list[list[LabelledItem]]:
    """The items dealt into ``count`` folds after a seeded shuffle: one PR, one fold."""
    shuffled = list(items)
    random.Random(seed).shuffle(shuffled)
    return [shuffled[i::count] for i in range(count)]


def cross_validated(
    items: Sequence[LabelledItem], variant: str, threshold: float = THRESHOLD
) -> Evaluation:
    """Each fold scored by a model fitted on the others."""
    dealt = folds(items)
    scored = []
    for i, held in enumerate(dealt):
        training = [item for j, fold in enumerate(dealt) if j != i for item in fold]
        scored.append(evaluate(held, as_extractor(fit(training, variant), threshold)))
    return combined(scored)


def learned_report(
    items: Sequence[LabelledItem], variant: str, threshold: float = THRESHOLD, top: int = 0
) -> str:
    """The learned model's table (dev by folds, holdout trained on dev), the rules' beside it,
    and with ``top`` each category's heaviest features."""
    dev = [i for i in items if i.split == DEV]
    holdout = [i for i in items if i.split == HOLDOUT]
    model = fit(dev, variant)
    name = f"{variant} model at {threshold} (dev: {FOLDS} folds over PRs)"
    lines = [
        render_side_by_side(
            name,
            cross_validated(dev, variant, threshold),
            evaluate(holdout, as_extractor(model, threshold)),
        ),
        render_side_by_side("rules (tuned on dev)", evaluate(dev), evaluate(holdout)),
    ]
    for category, heaviest in model.leaning(top).items() if top > 0 else ():
        lines.append(f"{category!s:18s} " + ", ".join(f"{t} {w:+.2f}" for t, w in heaviest))
    return "\n".join(lines)


SCALING_KIB = (8, 16, 32, 64)  # 64 KiB: GitHub's limit on a PR description
SCALING_RUNS = 3


def scaling_bodies(items: Sequence[LabelledItem], kib: int) -> dict[str, str]:
    """Two descriptions of ``kib`` KiB: the dev descriptions one after another (what a
    release's notes or a long squash message read like), and distinct one-line memory
    promises (the merging of restatements at its worst: none restates another, so each is
    a candidate for all the others)."""
    size = kib * 1024
    described, length = [], 0
    for item in itertools.cycle([i for i in items if i.split == DEV and i.description]):
        if length >= size:
            break
        described.append(item.description)
        length += len(item.description) + 2
    names = ("".join(p) for p in itertools.product("bcdfghjklmnpqrstvwxz", repeat=3))
    bullets, length = [], -1  # the first bullet has no line break before it
    while True:
        bullet = f"- Reduce the peak memory of {' '.join(itertools.islice(names, 4))}"
        length += len(bullet) + 1
        if length > size:
            break
        bullets.append(bullet)
    return {
        "dev descriptions": "\n\n".join(described)[:size],
        "distinct promises": "\n".join(bullets),
    }


def scaling_report(items: Sequence[LabelledItem], extractor: Extractor = extract_promises) -> str:
    """Extraction time by description size, best of :data:`SCALING_RUNS`, and the ratio of
    the time per KiB at the largest size to that at the smallest: 1 when the time grows with
    the text, the size ratio (8) when it grows with its square."""
    lines = [f"{'description':<18} {'KiB':>4} {'promises':>8} {'seconds':>8} {'ms/KiB':>7}"]
    bodies = {kib: scaling_bodies(items, kib) for kib in SCALING_KIB}
    for kind in ("dev descriptions", "distinct promises"):
        per_kib = []
        for kib in SCALING_KIB:
            body = bodies[kib][kind]
            timings = []
            for _ in range(SCALING_RUNS):
                start = time.perf_counter()
                found = extractor("Merge dev into main", body)
                timings.append(time.perf_counter() - start)
            best = min(timings)
            per_kib.append(best / kib)
            lines.append(
                f"{kind:<18} {kib:>4} {len(found):>8} {best:>8.2f} {best / kib * 1000:>7.1f}"
            )
        ratio = per_kib[-1] / per_kib[0] if per_kib[0] else float("nan")
        lines.append(
            f"{kind:<18} time per KiB, {SCALING_KIB[-1]} KiB against {SCALING_KIB[0]}: {ratio:.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--split", choices=[DEV, HOLDOUT, "all"], default="all")
    parser.add_argument(
        "--file",
        metavar="NAME",
        help="only the items of this item file (a new batch's first measurement)",
    )
    parser.add_argument("--misses", action="store_true", help="list dev false positives/negatives")
    parser.add_argument(
        "--agreement", action="store_true", help="a second labeller against the set's labels"
    )
    parser.add_argument(
        "--intervals",
        action="store_true",
        help="also each figure's 90%% interval over PRs resampled, per slice",
    )
    parser.add_argument(
        "--confusion",
        action="store_true",
        help="also, per split, the categories said against the categories labelled",
    )
    parser.add_argument(
        "--learned",
        choices=VARIANTS,
        help="score a logistic model learned from the dev labels beside the rules instead",
    )
    parser.add_argument("--threshold", type=share, default=THRESHOLD, help="with --learned")
    parser.add_argument(
        "--top",
        type=non_negative,
        default=0,
        help="with --learned: each category's N heaviest features",
    )
    parser.add_argument(
        "--scaling",
        action="store_true",
        help="time the extractor on descriptions of 8 to 64 KiB instead",
    )
    args = parser.parse_args(argv)
    if args.misses and args.split != DEV:
        parser.error(MISSES_REFUSED)
    known = [p.name for p in item_files(args.dir)]
    if args.file is not None and args.file not in known:
        parser.error(
            UNKNOWN_FILE.format(name=args.file, directory=args.dir, known=", ".join(known))
        )
    try:
        items = load_labelled_set(args.dir, only=args.file)
    except LabelError as error:
        parser.error(str(error))
    if args.agreement:
        try:
            print(agreement_report(items, load_second_labeller(items, args.dir)))
        except LabelError as error:  # an item it does not hold, or one it cannot read
            parser.error(str(error))
        return 0
    if args.scaling:
        print(scaling_report(items))
        return 0
    if args.learned:
        if not any(i.split == DEV for i in items):
            parser.error(f"{args.dir}: no dev items to learn from (point --dir at a labelled set)")
        print(learned_report(items, args.learned, args.threshold, args.top))
        return 0
    # --split dev scores dev alone: the holdout stays sealed while rules change
    chosen = [i for i in items if args.split in ("all", i.split)]
    sliced = evaluate_slices(chosen)
    print(render_slices(sliced))
    if args.intervals:
        for name, (dev, holdout) in sliced.items():
            print("\n" + render_intervals(dev, holdout, name))
    if args.confusion:
        dev, holdout = sliced["all"]
        for split, evaluation in ((DEV, dev), (HOLDOUT, holdout)):
            if args.split in ("all", split):
                print("\n" + render_confusion(split, evaluation.confusion))
    if args.misses:  # only with --split dev: the dev items of the whole set
        print("\n" + "\n".join(sliced["all"][0].misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A learned alternative to the phrase tables, measured as the extractor is: dev beside holdout.

Each sentence of a description (:func:`probe_builder.promises.extract.ruled_sentences`)
is a row; its label, per category, is whether a labelled promise of that category says
it (the bench's matching rule: 60% of the shorter quote's content words). One logistic
model per category reads the sentence's words and word pairs (seen in at least two
training sentences), whether it comes from the title, whether it is a list item, and, in
the ``rules`` variant, whether the rules may take it as a promise and the categories
they give it. A sentence whose probability for a category reaches the threshold promises
that category (``functional`` only when no other category does), restatements are
merged as the extractor merges them, and the result is scored with
``bench.promise_eval``: on dev by five folds over PRs (each PR's sentences train or test
together, never both), on the holdout trained on the whole of dev. Every weight is a
word's or a reading's, so ``--top N`` prints what each category's model leans on.

This is a measurement, not a second extractor: it says whether words learned from the
labelled set carry to PRs the rules were never tuned on better than the rules do.
Usage::

    python -m bench.sentence_model [--dir tests/data/promises] [--variant words|rules]
        [--threshold 0.35] [--top N]
"""

from __future__ import annotations

import argparse
import itertools
import random
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.promise_eval import (
    DEFAULT_DIR,
    DEV,
    HOLDOUT,
    MATCH_OVERLAP,
    Evaluation,
    LabelledItem,
    combined,
    evaluate,
    load_labelled_set,
    overlap,
    render_side_by_side,
)
from probe_builder.material.description import Origin
from probe_builder.promises.extract import (
    MAX_QUOTE_CHARS,
    ExtractedPromise,
    RuledSentence,
    merge_restatements,
    ruled_sentences,
)
from task_registry.types import PromiseCategory

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
Extractor = Callable[[str, str], list[ExtractedPromise]]


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

    @property
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
    counts = Counter(t for r in ruled for t in set(tokens(r, variant)))
    vocabulary = {
        t: i for i, t in enumerate(sorted(t for t, n in counts.items() if n >= MIN_COUNT))
    }
    rows = _rows([tokens(r, variant) for r in ruled], vocabulary)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--variant", choices=VARIANTS, default="rules")
    parser.add_argument("--threshold", type=_share, default=THRESHOLD)
    parser.add_argument(
        "--top", type=int, default=0, help="print each category's N heaviest features"
    )
    args = parser.parse_args(argv)
    items = load_labelled_set(args.dir)
    dev = [i for i in items if i.split == DEV]
    holdout = [i for i in items if i.split == HOLDOUT]
    if not dev:
        parser.error(f"{args.dir}: no dev items to learn from (point --dir at a labelled set)")
    model = fit(dev, args.variant)
    name = f"{args.variant} model at {args.threshold} (dev: {FOLDS} folds over PRs)"
    print(
        render_side_by_side(
            name,
            cross_validated(dev, args.variant, args.threshold),
            evaluate(holdout, as_extractor(model, args.threshold)),
        )
    )
    print(render_side_by_side("rules (tuned on dev)", evaluate(dev), evaluate(holdout)))
    if args.top:
        for category, heaviest in model.leaning(args.top).items():
            print(f"{category!s:18s} " + ", ".join(f"{t} {w:+.2f}" for t, w in heaviest))
    return 0


def _share(value: str) -> float:
    try:
        share = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number: give one like 0.35") from None
    if not 0 < share < 1:
        raise argparse.ArgumentTypeError(f"{share} is not between 0 and 1: give one like 0.35")
    return share


if __name__ == "__main__":
    sys.exit(main())

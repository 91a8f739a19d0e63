"""No rule of the extractor or the verdicts names a labelled PR or quotes a labelled sentence.

The rules (``probe_builder/promises/``) are judged on labelled real PRs; a rule
that names one of them, or a comment or pattern that copies a run of words of
one of their titles, descriptions or quotes, would score that PR and say
nothing of others. Six words in a row are a quote; fewer are a phrase of the
trade ("time to first token").
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import probe_builder.promises
from bench.promise_eval import LabelledItem, LabelledPromise, load_labelled_set
from task_registry.types import PromiseCategory

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

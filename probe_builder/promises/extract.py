"""Rule-based promise extraction from a PR's title and description.

Each sentence of the cleaned description (see :mod:`probe_builder.material.description`)
is matched against phrase patterns per category; a sentence may carry several
specific categories (memory and mode, say), and is ``functional`` only when
it claims behaviour and no specific category fits. Measuring or logging a
resource is not a promise about it (fixing an OOM met while measuring is), the
speed or memory of a kernel for a number format promises nothing about the
numbers, memory a kernel reads through (global memory, bandwidth) is no memory
held, and a stated limitation is not a promise;
neither is an account of the code before the change ("Currently ..."), a
benchmark's readout line, a cost or a scope the change admits ("may use more
memory", "only compatible with ..."), or a change of the code's shape with no
purpose said ("Refactor X into a mixin").
The patterns are data tables; their precision and recall on a labelled set
of real descriptions is printed by ``bench/promise_eval.py``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pydantic import BaseModel, ConfigDict

from probe_builder.material.description import (
    Origin,
    Sentence,
    clean_title,
    description_sentences,
)
from probe_builder.promises.phrases import (
    BEHAVIOUR_CLAIM,
    CAVEAT_SECTIONS,
    COMMAND_LINE,
    CONVERGENCE,
    COST,
    CUES,
    DOCS_ONLY_TITLE,
    DOCS_SECTIONS,
    DOCS_WORDS,
    ERROR_CLAIM,
    FAILURE_FIXED,
    FEATURE_VERB,
    HOUSEKEEPING_CLAUSE,
    LATER_SECTIONS,
    LIMITATION,
    LISTED_COMPONENT,
    LONG_DECIMAL,
    MEASURING,
    MEMORY_FOOTPRINT,
    MEMORY_HIERARCHY,
    MODE_CLAIM,
    NAMED_INTERFACE,
    NOT_A_PROMISE,
    NUMBER_TOKEN,
    NUMERIC_CLAIM,
    PROBLEM_OPENING,
    PROBLEM_SECTIONS,
    PURPOSE,
    QUANTITY,
    READOUT_GAIN,
    READOUT_PAIR,
    RESTRUCTURE,
    SCOPE_LIMIT,
    SHORTFALL_FIXED,
    SLOWER_ADMITTED,
    SOLUTION_OPENING,
    STATE_BEHAVIOUR,
    TEST_SECTIONS,
    TEST_WORDS,
    TIME_CUT_FOR_MEASURING,
    TITLE_CLAUSE,
    TITLE_CUES,
    TITLE_TAGS,
    TRAFFIC_CUT_FOR_MEASURING,
    heading_name,
)
from task_registry.types import PromiseCategory

MAX_QUOTE_CHARS = 400


class ExtractedPromise(BaseModel):
    model_config = ConfigDict(frozen=True)

    category: PromiseCategory
    quote: str
    quantity: str | None = None
    position: int = 0  # sentence index; the title is 0


RESOURCE_CATEGORIES = (PromiseCategory.memory, PromiseCategory.time, PromiseCategory.traffic)
# The share of the shorter sentence's words two sentences share when they say one thing.
RESTATEMENT = 0.7
TITLE_RESTATEMENT = 0.8
_WORD = re.compile(r"[a-z0-9]+")
_INFLECTION = re.compile(r"(ing|ed|es|s|d)$")
_STOP = frozenset(
    "a an the to of in for and or on with by is are be this that pr it as at from".split()  # noqa: SIM905
)


LEAD_IN_WORDS = 4  # "Change details:", "Key changes include:": a lead-in to a list


def _is_promise_candidate(sentence: Sentence) -> bool:
    """Sentences about tests, docs or housekeeping, commands and test reports promise nothing."""
    text = sentence.text
    # A heading names what follows ("New components", "Fix", "Change details:"); the
    # sentences under it promise. So does a question put to the reviewers.
    heading = sentence.origin is Origin.body and (
        len(text.split()) < 2
        or text.lower() == sentence.section
        or (text.rstrip().endswith(":") and len(text.split()) <= LEAD_IN_WORDS)
        or text.rstrip().endswith("?")
    )
    section = heading_name(sentence.section)
    return not (
        heading
        or TEST_SECTIONS.match(section)
        or PROBLEM_SECTIONS.match(section)
        or CAVEAT_SECTIONS.match(section)
        or LATER_SECTIONS.match(section)
        or DOCS_SECTIONS.search(sentence.section)
        or NOT_A_PROMISE.search(text)
        or COMMAND_LINE.match(text)
        or _readout(text)
    )


READOUT_PAIRS = 3  # this many "name: value" pairs is a table row, gain or not
READOUT_NUMBERS = 0.3  # the share of a sentence's words that are numbers in a readout


def _readout(text: str) -> bool:
    """A benchmark's output line: several "name: value" pairs, or a measured value (a pair, a
    long decimal, mostly numbers) that says nothing about what got better."""
    pairs = len(READOUT_PAIR.findall(text))
    if pairs >= READOUT_PAIRS:
        return True
    words = text.split()
    numbers = sum(bool(NUMBER_TOKEN.match(w.strip(",;()[]|"))) for w in words)
    measured = pairs > 0 or LONG_DECIMAL.search(text) or numbers >= READOUT_NUMBERS * len(words)
    return bool(measured) and not READOUT_GAIN.search(text)


def _code_clauses(sentences: list[Sentence]) -> list[Sentence]:
    """A title that lists a docs change beside code changes ("improve docs, fix X and optimize
    Y") promises what its code clauses say: the docs clause goes. So does a body sentence
    about tests or docs that also names a change of its own ("This PR adds an FP8 path and
    updates the docs"), when a code clause opens with a change verb."""
    return [_without_housekeeping(s) for s in sentences]


def _housekeeping(clause: str) -> bool:
    return bool(
        DOCS_WORDS.search(clause) or TEST_WORDS.search(clause) or NOT_A_PROMISE.search(clause)
    )


def _without_housekeeping(sentence: Sentence) -> Sentence:
    title = sentence.origin is Origin.pr_title
    if not title and not NOT_A_PROMISE.search(sentence.text):
        return sentence
    clauses = TITLE_CLAUSE.split(sentence.text)
    if title:
        code = [c for c in clauses if not (DOCS_WORDS.search(c) or NOT_A_PROMISE.search(c))]
    else:
        code = [c for c in clauses if not _housekeeping(c)]
        if not any(FEATURE_VERB.search(c) for c in code):
            return sentence  # nothing but housekeeping: the sentence goes whole
    if len(clauses) < 2 or len(code) in (0, len(clauses)):
        return sentence
    return replace(sentence, text=", ".join(code))


def _outside_problem_accounts(sentences: Sequence[Sentence]) -> list[Sentence]:
    """The sentences that are not part of an account of the code before the change.

    An account opens with "Currently ...", "However, there are ...", "The root cause is ..."
    and runs on through its section until a sentence turns to what the change does ("This PR
    ...", "We now ...", "To fix this ...", or a change verb: "Update to use ..."). An error
    the account reports stays: the fix promises it no longer happens."""
    kept: list[Sentence] = []
    in_account, section = False, ""
    for sentence in sentences:
        if sentence.origin is Origin.pr_title or sentence.section != section:
            in_account, section = False, sentence.section
        text = sentence.text.lstrip("*_ ")
        if SOLUTION_OPENING.search(text) or FEATURE_VERB.search(text):
            in_account = False
        elif PROBLEM_OPENING.search(text):
            in_account = True
        if not in_account or ERROR_CLAIM.search(text):  # the fix promises the error away
            kept.append(sentence)
    return kept


def _cued(category: PromiseCategory, sentence: Sentence, text: str) -> bool:
    """``text`` (the sentence's, or a part of it) carries a cue of ``category``; a title
    also its own jargon (:data:`TITLE_CUES`)."""
    title_cue = TITLE_CUES.get(category) if sentence.origin is Origin.pr_title else None
    return bool(CUES[category].search(text) or (title_cue and title_cue.search(text)))


# A resource a sentence about measuring still promises: the measuring's own cost, cut.
CUT_FOR_MEASURING = (
    (PromiseCategory.traffic, TRAFFIC_CUT_FOR_MEASURING),
    (PromiseCategory.time, TIME_CUT_FOR_MEASURING),
)


def _categories(sentence: Sentence) -> list[PromiseCategory]:
    text = sentence.text
    found = [category for category in CUES if _cued(category, sentence, text)]
    if (
        sentence.origin is Origin.body
        and PromiseCategory.mode in found
        and not MODE_CLAIM.search(text)
    ):
        found.remove(PromiseCategory.mode)  # a mode named in passing
    if (
        PromiseCategory.time in found
        and PromiseCategory.state in found
        and not STATE_BEHAVIOUR.search(text)
    ):
        found.remove(PromiseCategory.state)  # the speed of a state operation, not its state
    if (
        {PromiseCategory.time, PromiseCategory.memory} & set(found)
        and PromiseCategory.numeric in found
        and not NUMERIC_CLAIM.search(text)
    ):
        found.remove(PromiseCategory.numeric)  # the speed or memory of a number format's kernel
    if (
        PromiseCategory.memory in found
        and MEMORY_HIERARCHY.search(text)
        and not MEMORY_FOOTPRINT.search(text)
    ):
        found.remove(PromiseCategory.memory)  # memory a kernel reads through, not memory held
    if PromiseCategory.time in found and not _cued(
        PromiseCategory.time, sentence, CONVERGENCE.sub(" ", text)
    ):
        found.remove(PromiseCategory.time)  # steps to converge, not time
    if MEASURING.search(text) and not FAILURE_FIXED.search(text):
        kept = [category for category, cut in CUT_FOR_MEASURING if cut.search(text)]
        found = [c for c in found if c not in RESOURCE_CATEGORIES or c in kept]
    if LIMITATION.search(text):  # what the change does not do, or not yet
        found = [c for c in found if c not in (PromiseCategory.mode, PromiseCategory.state)]
    found = _without_costs(text, found)
    if SLOWER_ADMITTED.search(text) and not SHORTFALL_FIXED.search(text):
        found = [c for c in found if c is not PromiseCategory.time]  # a shortfall admitted
    if not found and _claims_behaviour(sentence):
        found = [PromiseCategory.functional]
    return found


def _restructure_only(text: str) -> bool:
    """A change of the code's shape with no purpose said: it promises no behaviour."""
    return (
        bool(RESTRUCTURE.search(text.lstrip("*_ ")))
        and not PURPOSE.search(text)
        and not BEHAVIOUR_CLAIM.search(text)
    )


def _without_costs(text: str, found: list[PromiseCategory]) -> list[PromiseCategory]:
    """A resource named only in the cost a sentence admits is not promised, nor is anything
    named only in the scope it admits ("... is only compatible with checkpoint load")."""
    for caveat, spent in ((COST, RESOURCE_CATEGORIES), (SCOPE_LIMIT, tuple(PromiseCategory))):
        match = caveat.search(text)
        if match is None:
            continue
        before = text[: match.start()]
        found = [c for c in found if c not in spent or CUES[c].search(before) is not None]
    return found


# Content words a sentence needs before the cost it admits to promise a behaviour of its own
# ("Add FP8 support for MoE layers, which may use more memory"; not "Enabling it may ...").
COST_CLAUSE_WORDS = 4


def _claims_behaviour(sentence: Sentence) -> bool:
    if LIMITATION.search(sentence.text):
        return False
    if _restructure_only(sentence.text):
        return False
    cost = COST.search(sentence.text)
    if cost is not None and len(content_words(sentence.text[: cost.start()])) < COST_CLAUSE_WORDS:
        return False
    if sentence.origin is Origin.pr_title:
        return True
    text = sentence.text
    return bool(
        FEATURE_VERB.search(text)
        or BEHAVIOUR_CLAIM.search(text)
        or ERROR_CLAIM.search(text)
        or NAMED_INTERFACE.search(text)
        or (sentence.listed and LISTED_COMPONENT.search(text))
    )


def content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP)


def _inflected(words: frozenset[str]) -> frozenset[str]:
    """Content words without their inflection, so "reduces" restates "reduced"."""
    return frozenset(_INFLECTION.sub("", w) if len(w) > 4 else w for w in words)


@dataclass(frozen=True)
class _Worded:
    """A promise with the stems of its quote, read once however many it is compared with."""

    promise: ExtractedPromise
    words: frozenset[str]
    stems: frozenset[str]

    @classmethod
    def of(cls, promise: ExtractedPromise) -> _Worded:
        words = content_words(promise.quote)
        return cls(promise, words, _inflected(words))

    def restates(self, other: _Worded) -> bool:
        """Same category and most words shared; a body sentence restates the title only when
        it repeats it nearly word for word (the body usually says more than the title)."""
        mine, theirs = self.promise, other.promise
        if mine.category != theirs.category:
            return False
        shorter = min(len(self.stems), len(other.stems))
        threshold = TITLE_RESTATEMENT if 0 in (mine.position, theirs.position) else RESTATEMENT
        return shorter > 0 and len(self.stems & other.stems) / shorter >= threshold


def _restates(promise: ExtractedPromise, other: ExtractedPromise) -> bool:
    return _Worded.of(promise).restates(_Worded.of(other))


def merge_restatements(promises: list[ExtractedPromise]) -> list[ExtractedPromise]:
    """One behaviour, one promise: of the sentences that say the same, keep the longest (it
    carries the most of what was said). A description of thousands of sentences (a release's
    notes, a long squash message) is merged in seconds: each quote is read once and compared
    only with the kept promises it may restate (:class:`_Restated`)."""
    worded = sorted(map(_Worded.of, promises), key=lambda w: -len(w.words))
    restated = _Restated(worded)
    for promise in worded:
        restated.keep(promise)
    return sorted(
        (w.promise for w in restated.kept),
        key=lambda p: (p.position, list(PromiseCategory).index(p.category)),
    )


class _Restated:
    """The kept promises, indexed so that a new one is compared only with those it may
    restate. Two quotes restate each other only when they share at least a share
    (:data:`RESTATEMENT` at the least) of the shorter's stems; then the shorter's rarest
    stems (all but that share, less one) cannot all be missing from the other. So each kept
    promise is filed under every stem and, apart, under its rarest ones; a new one is looked
    up by its own rarest stems in the first and by every stem in the second."""

    def __init__(self, worded: Sequence[_Worded]) -> None:
        self._seen = Counter(stem for w in worded for stem in w.stems)
        self.kept: list[_Worded] = []
        self._every: dict[tuple[PromiseCategory, str], list[int]] = {}
        self._rarest: dict[tuple[PromiseCategory, str], list[int]] = {}

    def _rarest_of(self, worded: _Worded) -> list[str]:
        stems = sorted(worded.stems, key=lambda stem: (self._seen[stem], stem))
        if not stems:
            return []
        # the fewest stems shared that restate, reckoned as :meth:`_Worded.restates` does
        threshold = min(RESTATEMENT, TITLE_RESTATEMENT)
        shared = next(k for k in range(1, len(stems) + 1) if k / len(stems) >= threshold)
        return stems[: len(stems) - shared + 1]

    def keep(self, worded: _Worded) -> None:
        """Keeps ``worded`` unless a kept promise restates it."""
        category, rarest = worded.promise.category, self._rarest_of(worded)
        near = {i for stem in rarest for i in self._every.get((category, stem), ())}
        near |= {i for stem in worded.stems for i in self._rarest.get((category, stem), ())}
        if any(worded.restates(self.kept[i]) for i in sorted(near)):
            return
        index = len(self.kept)
        self.kept.append(worded)
        for stem in worded.stems:
            self._every.setdefault((category, stem), []).append(index)
        for stem in rarest:
            self._rarest.setdefault((category, stem), []).append(index)


def _quantity(text: str, category: PromiseCategory) -> str | None:
    if category not in RESOURCE_CATEGORIES:
        return None
    match = QUANTITY.search(text)
    return match.group(0).strip() if match else None


def _tagged_title(title: str, promises: list[ExtractedPromise]) -> list[ExtractedPromise]:
    """A title tagged [Perf] promises time unless the PR names the time or memory it saves
    (fewer copies or collectives are how a change gets faster, not what it is for) or the
    title is about measuring (a profiler, a metric: the tag names the tooling); one tagged
    [torch.compile] promises the mode unless a sentence already does."""
    said = {p.category for p in promises}
    quote = clean_title(title)
    if MEASURING.search(quote):
        said |= set(RESOURCE_CATEGORIES)
    return [
        ExtractedPromise(category=category, quote=quote[:MAX_QUOTE_CHARS])
        for category, pattern in TITLE_TAGS.items()
        if pattern.search(title) and not _said(category, said)
    ]


# What a performance tag stands for once the PR says it (traffic saved is a means to time).
PERFORMANCE_SAID = frozenset({PromiseCategory.time, PromiseCategory.memory})


def _said(category: PromiseCategory, said: set[PromiseCategory]) -> bool:
    if category in RESOURCE_CATEGORIES:
        return bool(said & PERFORMANCE_SAID)
    return category in said


def _docs_only(title: str) -> bool:
    """A docs or CI title, unless another of its clauses names code work ("improve docs, fix
    X and optimize Y"): that clause promises like any title. So is a title every clause of
    which is about the PR's tests or tidying ("Perf tests", "lint fewer files and run the
    tests on push")."""
    clauses = TITLE_CLAUSE.split(clean_title(title))
    if all(HOUSEKEEPING_CLAUSE.search(c) or DOCS_ONLY_TITLE.search(c) for c in clauses):
        return True
    if not DOCS_ONLY_TITLE.search(title):
        return False
    return len(clauses) < 2 or not any(
        FEATURE_VERB.search(c) and not DOCS_ONLY_TITLE.search(c) and not DOCS_WORDS.search(c)
        for c in clauses
    )


def extract_promises(title: str, body: str) -> list[ExtractedPromise]:
    """Promises of a PR, one per behaviour and category, in description order."""
    if _docs_only(title):
        return []  # documentation and CI changes promise nothing a probe could check
    promises = [
        ExtractedPromise(
            category=category,
            quote=ruled.sentence.text[:MAX_QUOTE_CHARS],
            quantity=_quantity(ruled.sentence.text, category),
            position=ruled.sentence.position,
        )
        for ruled in ruled_sentences(title, body)
        for category in ruled.categories
    ]
    tagged = _tagged_title(title, promises)
    if tagged:  # the tag's category replaces the title's generic functional promise
        promises = [
            p for p in promises if p.position or p.category is not PromiseCategory.functional
        ]
    return merge_restatements(tagged + promises)


@dataclass(frozen=True)
class RuledSentence:
    """A sentence of a description as the rules read it: whether it may promise at all (not
    about tests or docs, not an account of the code before the change) and the categories
    they give it (none when it may not)."""

    sentence: Sentence
    candidate: bool
    categories: tuple[PromiseCategory, ...]


def ruled_sentences(title: str, body: str) -> list[RuledSentence]:
    """Every sentence of the title and description, with the rules' reading of it (before
    title tags and the merging of restatements): what a learned model is given beside the
    words, and what it is measured against."""
    sentences = _code_clauses(description_sentences(title, body))
    docs_only = _docs_only(title)
    kept = {id(s) for s in _outside_problem_accounts(sentences)}
    ruled = []
    for sentence in sentences:
        candidate = not docs_only and id(sentence) in kept and _is_promise_candidate(sentence)
        categories = tuple(_categories(sentence)) if candidate else ()
        ruled.append(RuledSentence(sentence, candidate, categories))
    return ruled


def promises_by_category(
    promises: Sequence[ExtractedPromise],
) -> dict[PromiseCategory, list[ExtractedPromise]]:
    grouped: dict[PromiseCategory, list[ExtractedPromise]] = {}
    for promise in promises:
        grouped.setdefault(promise.category, []).append(promise)
    return grouped


def with_proposed(
    found: Sequence[ExtractedPromise],
    proposed: Sequence[ExtractedPromise],
    title: str,
    body: str,
) -> tuple[ExtractedPromise, ...]:
    """The rule-based promises with a model's proposals beside them: a proposal that restates
    a promise already found is dropped; the others take the position of the sentence that
    holds their quote (after the last sentence when none does) and their quantity."""
    sentences = description_sentences(title, body)
    kept = list(found)
    for promise in proposed:
        quote = " ".join(promise.quote.split())
        position = next(
            (s.position for s in sentences if quote in " ".join(s.text.split())), len(sentences)
        )
        placed = promise.model_copy(
            update={"position": position, "quantity": _quantity(quote, promise.category)}
        )
        if not any(_restates(placed, k) or _same_span(placed, k) for k in kept):
            kept.append(placed)
    return tuple(sorted(kept, key=lambda p: (p.position, list(PromiseCategory).index(p.category))))


def _same_span(promise: ExtractedPromise, other: ExtractedPromise) -> bool:
    a, b = " ".join(promise.quote.split()), " ".join(other.quote.split())
    return promise.category == other.category and (a in b or b in a)

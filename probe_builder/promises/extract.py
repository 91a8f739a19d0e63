"""Rule-based promise extraction from a PR's title and description.

Each sentence of the cleaned description (see :mod:`probe_builder.material.description`)
is matched against phrase patterns per category; a sentence may carry several
specific categories (memory and mode, say), and is ``functional`` only when
it claims behaviour and no specific category fits. Measuring or logging a
resource is not a promise about it, and a stated limitation is not a promise.
The patterns are data tables; their precision and recall on a labelled set
of real descriptions is printed by ``bench/promise_eval.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from probe_builder.material.description import Origin, Sentence, description_sentences
from task_registry.types import PromiseCategory

MAX_QUOTE_CHARS = 400


class ExtractedPromise(BaseModel):
    model_config = ConfigDict(frozen=True)

    category: PromiseCategory
    quote: str
    quantity: str | None = None
    position: int = 0  # sentence index; the title is 0


def _rx(*alternatives: str) -> re.Pattern[str]:
    """One case-insensitive pattern from alternatives kept short enough to read."""
    return re.compile("|".join(alternatives), re.I)


CUES: dict[PromiseCategory, re.Pattern[str]] = {
    PromiseCategory.memory: _rx(
        r"\bmemory[- ](efficient|optimi[sz]ed|saving)",
        r"\b(peak|activation)\s+memory\b",
        r"\bmemory (footprint|usage|consumption|issue|leak|pressure)",
        r"\b(reduc|sav|lower|decreas|optimi[sz]|free(s|d)?|secur|releas|minimi[sz])\w*\b[^.]{0,40}"
        r"\b(memory|footprint|allocations?|scratch space|workspace|buffer size)\b",
        r"\b(memory|footprint)\b[^.]{0,30}\b(reduc|sav|lower|decreas|constant|bound)\w*",
        r"\b(OOM|out[- ]of[- ]memory)\b",
        r"\boffload(s|ed|ing)?\b",
    ),
    PromiseCategory.time: _rx(
        r"\bspeed[- ]?ups?\b|\bfaster\b|\baccelerat\w*|\bthroughput\b|\blatency\b",
        r"\b(improv|better|boost|optimi[sz])\w*\s+(\w+\s+){0,3}performance\b",
        r"\bperformance (improvement|gain|optimi[sz]ation)",
        r"^perf\b|^optimi[sz]e\b(?![^.]*\bmemory\b)",
        r"\boverlap(s|ped|ping)?\b[^.]{0,40}\b(comput\w*|communication)",
        r"\b(grad|gradient|communication|param)\w* overlap\b",
        r"\b(reduc|sav|avoid|eliminat|remov)\w*\b[^.]{0,30}"
        r"\b(computation|compute|overhead|cpu usage)s?\b",
        r"\bcpu usage\b[^.]{0,60}\breduc",
        r"\b(concurrently|at the same time|in parallel with)\b",
    ),
    PromiseCategory.traffic: _rx(
        r"\b(data )?(transmission|traffic|bandwidth)\b",
        r"\b(reduc|remov|avoid|skip|fewer|less|eliminat|only)\w*\b[^.]{0,40}"
        r"\b(communication volume|transfers?|copy|copying|copies|data collect|send|bytes)\b",
        r"\b(number|count) of (calls|bytes|collectives|messages|transfers)\b",
        r"\b\d+\s+(all-to-all|all[-_ ]?reduce|all[-_ ]?gather|broadcast|reduce[-_ ]scatter)s?\b",
        r"\ball[-_ ]?reduce\b[^.]{0,40}\bonly\b|\bonly\b[^.]{0,30}\ball[-_ ]?reduce",
    ),
    PromiseCategory.state: _rx(
        r"\b(reset|resets|resetting)\b|\binvalidat\w*|\blifecycle\b",
        r"\b(prefix|kv|refit)[- ]cache\b|^cache\b",
        r"\bcache (snapshots?|hits?|entries|invalidation)\b",
        r"\b(onload|reload)\w*\b|\bwake[-_ ]?up\b|\bawake\b|\bsleep\b",
        r"\bresum(e|ed|ing)\b|\brestor\w*",
        r"\b(after|before) (each |every |the )?(validation|abort|sleep|wake|reset|restart|step)\b",
        r"\bsave\w*\b[^.]{0,40}\blatest",
        r"\bacross (steps|calls|iterations|epochs)\b|\brepeated(ly)?\b",
    ),
    PromiseCategory.mode: _rx(
        r"\bcuda[-_ ]?graphs?\b|\bcudagraph\w*",
        r"\btorch\.compile\b|\bcompile mode\b|\bgraph (capture|replay)\b",
        r"\benforce[_ ]eager\b|\beager (mode|execution)\b",
    ),
    PromiseCategory.numeric: _rx(
        r"\bnumeric(al|ally)?\b|\bprecision\b|\bNaNs?\b",
        r"\bstabl(e|ize|ilize|ility)\b|\binstabilit\w*",
        r"\bdeterminis\w*|\blossless\b|\bbitwise\b|\bclamp\w*|\bgrad(ient)? norm\b",
        r"\bscal(e|es|ed|ing)\b[^.]{0,30}\b(once|twice|by|loss\w*)\b",
        r"\bnormali[sz]\w*|\bdivisor\b|\bdenominator\b",
        r"\b(mean|average|sum)\b[^.]{0,40}\b(loss|metric|gradient|micro-?batch)\w*",
        r"\b(loss|gradient|metric)\w*\b[^.]{0,40}"
        r"\b(mean|average|aggregat\w*|scal\w*|normali\w*|calculation)",
        r"\bcorrectly all-?reduced\b|\breduce\b[^.]{0,20}\bloss\b[^.]{0,60}\bgroup\b",
        r"\baligns? with\b|\bmatch(es|ing)? (the )?(reference|baseline|bf16|fp32)\b",
        r"\b(fp32|bf16|fp16|fp8)\b[^.]{0,40}\b(reconstruct|accumulat|master)\w*",
    ),
}

# A sentence about measuring a resource promises nothing about the resource itself.
MEASURING = _rx(
    r"\b(log(s|ging|ged)?|logger|profil\w*|visuali[sz]\w*|monitor\w*|metrics?|trac(e|ing))\b",
    r"\bsnapshots? (dump|visuali)\w*",
)
RESOURCE_CATEGORIES = (PromiseCategory.memory, PromiseCategory.time, PromiseCategory.traffic)
LIMITATION = re.compile(
    r"\b(might|may|could) not\b|\bnot (be )?(compatible|supported|applicable)\b", re.I
)
FEATURE_VERB = re.compile(
    r"^(this pr\s+)?(add|adds|added|support|supports|introduc\w+|implement\w*|integrat\w+|enabl\w+"
    r"|provid\w+|fix|fixes|fixed|make|makes|allow\w*|use|uses|mov(e|es|ed)|mark\w*|refactor\w*"
    r"|unif\w+|chang\w+|updat\w+|replac\w+|remov\w+|renam\w+|expos\w+|log|logs|deprecat\w+"
    r"|resolv\w+|prevent\w*|ensur\w+)\b",
    re.I,
)
ERROR_CLAIM = re.compile(
    r"\b(raises?|throws?|triggers?) (an? |the )?(\w+ )?(error|exception)\b|\bTypeError\b", re.I
)
NAMED_INTERFACE = re.compile(
    r"^`?[A-Za-z_][\w.]*`?\s+(contextmanager|decorator|function|class|method|option|flag)\b"
    r"|^configurable (via|with|through)\b",
    re.I,
)
DOCS_ONLY_TITLE = re.compile(
    r"\[(doc|docs|ci)\]|^\s*(doc|docs|ci)\s*:|\breadme\b|\bdocumentation\b|\btypos?\b", re.I
)
QUANTITY = _rx(
    r"(?:up to\s+)?\d+(?:\.\d+)?\s*"
    r"(?:[x\u00d7](?![a-z])|%|percent\b|[GMK]i?B\b|ms\b|seconds?\b|times\b)",
    r"\ban order of magnitude\b|\bconstant amount\b",
)
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an the to of in for and or on with by is are be this that pr it as at from".split()  # noqa: SIM905
)


def _categories(sentence: Sentence) -> list[PromiseCategory]:
    text = sentence.text
    found = [category for category, pattern in CUES.items() if pattern.search(text)]
    if MEASURING.search(text):
        found = [c for c in found if c not in RESOURCE_CATEGORIES]
    if LIMITATION.search(text):
        found = [c for c in found if c is not PromiseCategory.mode]
    if not found and _claims_behaviour(sentence):
        found = [PromiseCategory.functional]
    return found


def _claims_behaviour(sentence: Sentence) -> bool:
    if LIMITATION.search(sentence.text):
        return False
    if sentence.origin is Origin.pr_title:
        return True
    text = sentence.text
    return bool(
        FEATURE_VERB.search(text) or ERROR_CLAIM.search(text) or NAMED_INTERFACE.search(text)
    )


def content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP)


def _deduplicate(promises: list[ExtractedPromise]) -> list[ExtractedPromise]:
    """Drop a promise whose words are all in another promise of the same category."""
    kept: list[ExtractedPromise] = []
    for promise in sorted(promises, key=lambda p: -len(content_words(p.quote))):
        words = content_words(promise.quote)
        if not any(
            k.category == promise.category and words <= content_words(k.quote) for k in kept
        ):
            kept.append(promise)
    return sorted(kept, key=lambda p: (p.position, list(PromiseCategory).index(p.category)))


def _quantity(text: str, category: PromiseCategory) -> str | None:
    if category not in RESOURCE_CATEGORIES:
        return None
    match = QUANTITY.search(text)
    return match.group(0).strip() if match else None


def extract_promises(title: str, body: str) -> list[ExtractedPromise]:
    """Promises of a PR, one per (sentence, category), in description order."""
    if DOCS_ONLY_TITLE.search(title):
        return []  # documentation and CI changes promise nothing a probe could check
    promises = []
    for sentence in description_sentences(title, body):
        for category in _categories(sentence):
            quote = sentence.text[:MAX_QUOTE_CHARS]
            promises.append(
                ExtractedPromise(
                    category=category,
                    quote=quote,
                    quantity=_quantity(sentence.text, category),
                    position=sentence.position,
                )
            )
    return _deduplicate(promises)


def promises_by_category(
    promises: Sequence[ExtractedPromise],
) -> dict[PromiseCategory, list[ExtractedPromise]]:
    grouped: dict[PromiseCategory, list[ExtractedPromise]] = {}
    for promise in promises:
        grouped.setdefault(promise.category, []).append(promise)
    return grouped

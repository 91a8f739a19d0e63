"""Which gaps a maintainer reads first: ranking, and how much a comment shows.

A comment shows at most ``max_entries`` gaps (``.github/probewatch.yml``, default
:data:`DEFAULT_MAX_ENTRIES`); the rest are on the task page. The order:

1. a gap a hidden probe confirms (a probe written for the promise rejects the patch);
2. a gap in code the promise concerns: the words of the promise's quote meet the words
   of the mutated place (file, function and the changed line's names, split at ``_``,
   ``.`` and case);
3. a gap whose operator maintainers found useful: a prior per operator (how often that
   kind of edit shows a real gap: a judgement moved by the dev split of the labelled
   survivors of real PRs), moved by the repository's own feedback
   (``/probewatch useful N`` / ``not-useful N``) as a Beta posterior, so a few votes
   shift it and many outweigh it;
4. a gap some accepted probe catches, then by file and line.

A comment shows each gap once: a patch that makes the edit an earlier entry makes (the
same line copied into another trainer, say), or that mutates a line an earlier entry's hunk
already shows (the same line, the other half of a statement, the body of a branch the entry
forces off) shows the same gap again, and stays on the task page, as Google's tool reported
at most one mutant per line.

An operator whose posterior usefulness falls under :data:`SUPPRESS_BELOW` after at least
:data:`SUPPRESS_AFTER` votes in a repository is not shown in that repository's comments
(the task page still lists it), as Google's diff-based mutation testing suppressed the
operators its developers marked "not useful".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bot.report.evidence import HUNK_CONTEXT, Gap

DEFAULT_MAX_ENTRIES = 3
PRIOR_STRENGTH = 4.0  # the prior counts as this many votes
SUPPRESS_AFTER = 5
SUPPRESS_BELOW = 0.35

# How often a surviving edit of this kind shows a real gap, by judgement alone: deleting a
# reset or a collective, or holding what the PR frees, matters more than nudging a constant.
JUDGED_PRIOR: Mapping[str, float] = {
    "keep_alive": 0.7,
    "repeat_collective": 0.7,
    "repeat_work": 0.6,
    "hold_result": 0.6,
    "drop_compile": 0.7,
    "delete_call": 0.7,
    "bypass_cache": 0.7,
    "mean_sum": 0.65,
    "drop_division": 0.65,
    "early_return": 0.6,
    "force_branch": 0.55,
    "drop_clone": 0.55,
    "compare_flip": 0.5,
    "arith_swap": 0.5,
    "bool_flip": 0.4,
    "constant": 0.3,
}
# The prior before any repository's feedback: the judgement moved by the labels of the dev
# split of the labelled survivors of real PRs (``tests/data/survivors``), as if each label
# were a maintainer's vote: (judged * PRIOR_STRENGTH + real gaps) / (PRIOR_STRENGTH +
# labelled), rounded to two places. An operator with no dev label keeps its judgement.
# The holdout split never moves it.
OPERATOR_PRIOR: Mapping[str, float] = {
    "keep_alive": 0.7,
    "repeat_collective": 0.7,
    "repeat_work": 0.6,
    "hold_result": 0.6,
    "drop_compile": 0.7,
    "delete_call": 0.7,
    "bypass_cache": 0.7,
    "mean_sum": 0.6,
    "drop_division": 0.65,
    "early_return": 0.94,
    "force_branch": 0.68,
    "drop_clone": 0.55,
    "compare_flip": 0.86,
    "arith_swap": 0.57,
    "bool_flip": 0.43,
    "constant": 0.28,
}
UNKNOWN_OPERATOR_PRIOR = 0.5  # an authored patch, or an operator added later
_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_IGNORED = frozenset({"py", "self", "the", "and", "for", "to", "of", "in", "a", "is", "if"})


@dataclass(frozen=True)
class Votes:
    """Maintainers' feedback on one operator in one repository."""

    useful: int = 0
    not_useful: int = 0

    @property
    def total(self) -> int:
        return self.useful + self.not_useful


def posterior(prior: float, votes: Votes) -> float:
    """A prior usefulness moved by votes: the mean of a Beta that counts the prior as
    :data:`PRIOR_STRENGTH` votes."""
    return (prior * PRIOR_STRENGTH + votes.useful) / (PRIOR_STRENGTH + votes.total)


def usefulness(operator: str, votes: Votes | None = None) -> float:
    """The operator's prior, moved by the repository's votes."""
    return posterior(OPERATOR_PRIOR.get(operator, UNKNOWN_OPERATOR_PRIOR), votes or Votes())


def suppressed(operator: str, votes: Votes | None) -> bool:
    """Whether maintainers have said often enough that this operator is not useful here."""
    return (
        votes is not None
        and votes.total >= SUPPRESS_AFTER
        and usefulness(operator, votes) < SUPPRESS_BELOW
    )


def words(text: str) -> frozenset[str]:
    """Lower-case name parts: ``rollout_cache.resetPrefix`` → rollout, cache, reset, prefix."""
    found = (part.lower() for part in _PART.findall(text))
    return frozenset(w for w in found if len(w) > 2 and w not in _IGNORED)


def concern(gap: Gap) -> int:
    """How many words the promises' quotes share with the mutated place."""
    place = words(" ".join([gap.patch.path, *gap.patch.symbols, gap.patch.description]))
    quoted = words(" ".join(p.quote for p in gap.promises))
    return len(place & quoted)


def rank(found: Iterable[Gap], feedback: Mapping[str, Votes] | None = None) -> list[Gap]:
    """``found`` in the order a maintainer should read them."""
    feedback = feedback or {}

    def key(gap: Gap) -> tuple[bool, int, float, bool, str, int]:
        weight = usefulness(gap.patch.operator, feedback.get(gap.patch.operator))
        return (
            not gap.confirmed,
            -concern(gap),
            -weight,
            not gap.caught,
            gap.patch.path,
            gap.patch.line or 0,
        )

    return sorted(found, key=key)


def same_edit(gap: Gap, other: Gap) -> bool:
    """The same edit of the same code: a line copied into several files, mutated alike."""
    a, b = gap.patch, other.patch
    return bool(a.description) and a.description == b.description and a.operator == b.operator


def in_hunk(gap: Gap, other: Gap) -> bool:
    """An edit of a line ``other``'s hunk shows: the same line, the other half of one
    statement, the body of a branch ``other`` forces off."""
    a, b = gap.patch, other.patch
    if a.path != b.path or a.line is None or b.line is None:
        return False
    return abs(a.line - b.line) <= HUNK_CONTEXT


def for_the_comment(
    ranked: Sequence[Gap], feedback: Mapping[str, Votes] | None, max_entries: int
) -> list[Gap]:
    """The gaps a comment shows: the first ``max_entries`` whose operator the repository has
    not marked not useful often enough (a confirmed gap is always eligible), each showing a
    gap no earlier one shows.

    The code an entry's hunk shows is seen, and so is each copy of it: an edit of a line
    there shows the same gap, and so does the same edit of its copies. A gap shown again
    shows no hunk of its own, so the lines around it may still hold another gap."""
    feedback = feedback or {}
    chosen: list[Gap] = []
    seen: list[Gap] = []  # the chosen and the copies of what they show: their hunks are seen
    again: list[Gap] = []  # the gaps shown again: the same edit elsewhere shows them again
    for gap in ranked:
        if len(chosen) == max_entries:
            break
        if not gap.confirmed and suppressed(gap.patch.operator, feedback.get(gap.patch.operator)):
            continue
        if any(same_edit(gap, earlier) for earlier in seen):
            seen.append(gap)  # a copy of code an entry shows
        elif any(same_edit(gap, earlier) for earlier in again) or any(
            in_hunk(gap, earlier) for earlier in seen
        ):
            again.append(gap)
        else:
            chosen.append(gap)
            seen.append(gap)
    return chosen

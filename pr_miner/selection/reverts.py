"""Revert detection and follow-ups over mainline history.

A later change reverts an earlier one when its subject (or, for merge
commits, its title) is ``Revert "<subject>"``, when its body says ``This
reverts commit <sha>``, or when it is GitHub's revert PR (body ``Reverts
owner/repo#N``). ``Reapply "<subject>"`` (what git writes when a revert is
reverted) reverts the ``Revert "<subject>"`` change. A change is reverted when
at least one of its reverts is not itself reverted, so a re-reverted PR is
restored. Later changes that name a PR (``#N``, or ``!N`` for GitLab) are
its follow-ups, shown to curators next to its reverts and reapplies.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pr_miner.types import FollowUp, FollowUpRelation, HistoryEntry, MergedPR, PRRef
from task_registry.types import PRKind

SQUASH_SUFFIX = re.compile(r"\s*\((?:#|!)\d+\)$")
QUOTED_SUBJECT = re.compile(r'^(?P<verb>Revert|Reapply) "(?P<inner>.*)"$')
REVERTS_SHA = re.compile(r"\bThis reverts commit (?P<sha>[0-9a-f]{7,40})\b")
REVERTS_PR = re.compile(r"^Reverts (?:[\w.-]+/[\w.-]+)?#(?P<number>\d+)\b", re.MULTILINE)
# "#N" names a GitHub PR (or issue), "!N" a GitLab merge request; "owner/repo#N" and
# "GROUP/PROJECT!N" are left out on purpose: they may name another repository.
# The sign comes first so the engine can scan for it; the look-behind then checks the
# character before it.
MENTION = re.compile(r"([#!])(?<![\w/#!&][#!])(\d+)\b")
MENTION_KINDS = {"#": PRKind.github, "!": PRKind.gitlab}


def normalise_subject(text: str) -> str:
    """A subject without its ``(#N)`` suffix: the PR title, which revert subjects quote."""
    return SQUASH_SUFFIX.sub("", text.strip())


@dataclass(frozen=True, slots=True)
class _Node:
    entry: HistoryEntry
    index: int


class RevertIndex:
    """Reverts, reapplies and mentions among history entries, resolved once."""

    def __init__(self, history: Iterable[HistoryEntry]) -> None:
        # Stable sort: entries of one second keep the (oldest-first) order they were given in.
        entries = sorted(_unique(history), key=lambda entry: entry.at)
        self._entries = entries
        self._by_sha = {entry.sha: index for index, entry in enumerate(entries) if entry.sha}
        self._by_ref: dict[PRRef, int] = {}
        self._reverts: dict[int, list[int]] = {}  # target -> later entries reverting it
        self._targets: dict[int, list[int]] = {}  # revert entry -> what it reverts
        self._mentions: dict[PRRef, list[int]] = {}
        self._link(entries)
        self._reverted = self._resolve()

    # --- building ----------------------------------------------------------------------

    def _link(self, entries: list[HistoryEntry]) -> None:
        by_subject: dict[str, int] = {}
        for index, entry in enumerate(entries):
            targets = sorted(set(self._targets_of(entry, by_subject)))
            if targets:
                self._targets[index] = targets
                for target in targets:
                    self._reverts.setdefault(target, []).append(index)
            for ref in _mentioned(entry):
                self._mentions.setdefault(ref, []).append(index)
            for key in {normalise_subject(entry.subject), normalise_subject(entry.title)}:
                by_subject[key] = index
            if entry.ref is not None:
                self._by_ref[entry.ref] = index

    def _targets_of(self, entry: HistoryEntry, by_subject: dict[str, int]) -> Iterator[int]:
        for text in {normalise_subject(entry.title), normalise_subject(entry.subject)}:
            match = QUOTED_SUBJECT.match(text)
            if match is None:
                continue
            inner = match["inner"]
            wanted = f'Revert "{inner}"' if match["verb"] == "Reapply" else inner
            if normalise_subject(wanted) in by_subject:
                yield by_subject[normalise_subject(wanted)]
        for sha_match in REVERTS_SHA.finditer(entry.body):
            found = self._find_sha(sha_match["sha"])
            if found is not None:
                yield found
        for pr_match in REVERTS_PR.finditer(entry.body):
            found = self._by_ref.get(PRRef(PRKind.github, int(pr_match["number"])))
            if found is not None:
                yield found

    def _find_sha(self, sha: str) -> int | None:
        if len(sha) == 40:
            return self._by_sha.get(sha)
        matches = [index for full, index in self._by_sha.items() if full.startswith(sha)]
        return matches[0] if len(matches) == 1 else None

    def _resolve(self) -> list[bool]:
        """reverted[i]: some revert of entry i is itself not reverted (newest first)."""
        reverted = [False] * len(self._entries)
        for index in range(len(self._entries) - 1, -1, -1):
            later = self._reverts.get(index, [])
            reverted[index] = any(not reverted[r] for r in later if r > index)
        return reverted

    # --- queries -----------------------------------------------------------------------

    def _index_of(self, pr: MergedPR) -> int | None:
        if pr.merge_sha and pr.merge_sha in self._by_sha:
            return self._by_sha[pr.merge_sha]
        return self._by_ref.get(pr.ref)

    def reverts(self, pr: MergedPR) -> list[HistoryEntry]:
        """What this PR itself reverts (or reapplies); empty for an ordinary PR."""
        index = self._index_of(pr)
        if index is None:
            return []
        return [self._entries[target] for target in self._targets.get(index, [])]

    def reverted_by(self, pr: MergedPR) -> HistoryEntry | None:
        """The revert that stands (is not itself reverted), if any."""
        index = self._index_of(pr)
        if index is None or not self._reverted[index]:
            return None
        standing = [r for r in self._reverts.get(index, []) if not self._reverted[r]]
        return self._entries[standing[-1]]

    def follow_ups(self, pr: MergedPR) -> tuple[FollowUp, ...]:
        """Later reverts, reapplies (reverts of its reverts) and mentions, oldest first."""
        index = self._index_of(pr)
        if index is None:
            return ()
        found: dict[int, FollowUpRelation] = {}
        for revert in self._reverts.get(index, []):
            found[revert] = FollowUpRelation.revert
            for reapply in self._reverts.get(revert, []):
                found.setdefault(reapply, FollowUpRelation.reapply)
        for mention in self._mentions.get(pr.ref, []):
            if mention > index:
                found.setdefault(mention, FollowUpRelation.mention)
        return tuple(self._follow_up(i, found[i]) for i in sorted(found) if i != index)

    def _follow_up(self, index: int, relation: FollowUpRelation) -> FollowUp:
        entry = self._entries[index]
        return FollowUp(relation, entry.subject, entry.at, sha=entry.sha, ref=entry.ref)


def _unique(history: Iterable[HistoryEntry]) -> list[HistoryEntry]:
    """One entry per sha (the first given wins), entries without a sha kept as they are."""
    seen: set[str] = set()
    unique: list[HistoryEntry] = []
    for entry in history:
        if entry.sha is not None:
            if entry.sha in seen:
                continue
            seen.add(entry.sha)
        unique.append(entry)
    return unique


def _mentioned(entry: HistoryEntry) -> set[PRRef]:
    text = f"{normalise_subject(entry.title)}\n{entry.body}"
    refs = {PRRef(MENTION_KINDS[sign], int(number)) for sign, number in MENTION.findall(text)}
    return refs - {entry.ref}

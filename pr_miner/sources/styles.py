"""Recognise a merged PR in a mainline commit message, in the three styles used upstream.

The styles are data (:data:`STYLES`), tried in order: a GitHub merge commit
(``Merge pull request #N from ...``, title on the first body line), a GitLab
merge request (body line ``See merge request GROUP/PROJECT!N``, kind
``gitlab`` so its number never collides with a GitHub PR), and a squash
merge (subject ending ``(#N)``). The description is what remains of the
body once the title and trailers (sign-offs, co-authors, the merge-request
line) are gone; nothing left means the project squashes without the PR
description, which is then recorded as missing for the GitHub source to
fill in.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pr_miner.types import PRRef, PRStyle
from task_registry.types import DescriptionSource, PRKind

TRAILER = re.compile(
    r"^(?:signed-off-by|co-authored-by|reviewed-by|acked-by|tested-by|reported-by|"
    r"approved-by|suggested-by|helped-by|change-id|see merge request)\b.*$",
    re.IGNORECASE | re.MULTILINE,
)
SQUASH_SUFFIX = re.compile(r"\s*\(#(\d+)\)$")
GITHUB_MERGE = re.compile(r"^Merge pull request #(\d+) from \S+")
GITLAB_REQUEST = re.compile(r"^See merge request \S+!(\d+)\s*$", re.MULTILINE)
GITLAB_MERGE_SUBJECT = re.compile(r"^Merge branch '.*' into '.*'$")


@dataclass(frozen=True, slots=True)
class Recognised:
    ref: PRRef
    style: PRStyle
    title: str
    description: str

    @property
    def description_source(self) -> DescriptionSource:
        return DescriptionSource.commit if self.description else DescriptionSource.none


def description_of(text: str) -> str:
    """The body without trailers and surrounding blank lines."""
    return TRAILER.sub("", text).strip()


def _split_title(body: str) -> tuple[str, str]:
    """First non-empty line of a merge commit's body (the PR title) and the rest."""
    stripped = body.strip()
    title, _, rest = stripped.partition("\n")
    return title.strip(), rest


def _github_merge(subject: str, body: str) -> Recognised | None:
    match = GITHUB_MERGE.match(subject)
    if match is None:
        return None
    title, rest = _split_title(body)
    ref = PRRef(PRKind.github, int(match.group(1)))
    return Recognised(ref, PRStyle.merge_commit, title or subject, description_of(rest))


def _gitlab(subject: str, body: str) -> Recognised | None:
    if "See merge request" not in body:
        return None
    matches = GITLAB_REQUEST.findall(body)
    if not matches:
        return None
    ref = PRRef(PRKind.gitlab, int(matches[-1]))
    if GITLAB_MERGE_SUBJECT.match(subject):
        title, rest = _split_title(body)
        if title.startswith("See merge request"):
            title, rest = subject, ""
        return Recognised(ref, PRStyle.gitlab, title, description_of(rest))
    return Recognised(ref, PRStyle.gitlab, subject, description_of(body))


def _squash(subject: str, body: str) -> Recognised | None:
    match = SQUASH_SUFFIX.search(subject)
    if match is None:
        return None
    title = subject[: match.start()].strip()
    ref = PRRef(PRKind.github, int(match.group(1)))
    return Recognised(ref, PRStyle.squash, title, description_of(body))


STYLES: tuple[tuple[PRStyle, Callable[[str, str], Recognised | None]], ...] = (
    (PRStyle.merge_commit, _github_merge),
    (PRStyle.gitlab, _gitlab),
    (PRStyle.squash, _squash),
)


def recognise(message: str) -> Recognised | None:
    """The PR a commit message records, or None for a direct push."""
    subject, body = split_message(message)
    for _, recogniser in STYLES:
        found = recogniser(subject, body)
        if found is not None:
            return found
    return None


def split_message(message: str) -> tuple[str, str]:
    """Subject line and body of a commit message."""
    subject, _, body = message.strip().partition("\n")
    return subject.strip(), body.strip()

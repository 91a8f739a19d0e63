"""Repository names as GitHub spells them (``owner/name``), checked wherever one enters.

A repository name becomes a folder (the mirror), a database key, a job's dedupe key and
part of a URL; one that is not a plain ``owner/name`` (a shell word, a NUL, ``..``, a
60 KB string) is refused where it enters, with the reason, before anything is stored.
GitHub allows owners of up to 39 characters and names of up to 100.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from probewatch.errors import ConfigError

OWNER_MAX, NAME_MAX = 39, 100
REPO_NAME_MAX = OWNER_MAX + 1 + NAME_MAX
# No look-around: pydantic's regex engine (a URL query's check) has none.
REPO_NAME_PATTERN = (
    rf"^[A-Za-z0-9][A-Za-z0-9_.-]{{0,{OWNER_MAX - 1}}}/[A-Za-z0-9_.-]{{1,{NAME_MAX}}}$"
)
_REPO_NAME = re.compile(REPO_NAME_PATTERN)


class BadRepoName(ConfigError, ValueError):
    """A repository name that is not ``owner/name``; the message quotes it (shortened)."""


def check_repo_name(name: str) -> str:
    """``name`` when it is a plain ``owner/name``, else :class:`BadRepoName` saying why."""
    if _REPO_NAME.fullmatch(name) and name.split("/")[1].strip("."):
        return name  # a name of dots alone ("a/..") would be a folder above the mirror
    shown = repr(name[:60] + ("…" if len(name) > 60 else ""))
    raise BadRepoName(
        f"repository {shown} is not owner/name (letters, digits, '-', '_', '.'; "
        f"owner up to {OWNER_MAX} characters, name up to {NAME_MAX})"
    )


RepoName = Annotated[str, AfterValidator(check_repo_name)]

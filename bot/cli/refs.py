"""A task or a pull request as a user types it: ``OWNER__NAME-N`` or ``OWNER/NAME#N``.

The instance id (SWE-bench's name for a task) and the pull request GitHub shows name
the same thing, so every command that takes one takes both; :func:`pull_ref` is the
one parser, and a value that is neither is a usage error naming both forms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import typer

FORMS = "OWNER__NAME-N (the instance id) or OWNER/NAME#N"
TASK_METAVAR = "TASK"
TASK_HELP = f"The task or its pull request: {FORMS}."
# GitHub owners hold no underscore; a GitLab group may hold single ones (SWE-bench's rule).
_INSTANCE_ID = re.compile(
    r"^(?P<owner>[^_/#\s]+(?:_[^_/#\s]+)*)__(?P<name>[^/#\s]+)-(?P<number>\d+)$"
)
_PULL = re.compile(r"^(?P<owner>[^/#\s]+)/(?P<name>[^/#\s]+)#(?P<number>\d+)$")


@dataclass(frozen=True)
class PullRef:
    repo: str  # OWNER/NAME
    number: int

    @property
    def instance_id(self) -> str:
        """``owner__name-12``, as ``task_registry.swebench.instance_id_for`` names it."""
        return f"{self.repo.replace('/', '__')}-{self.number}"

    def __str__(self) -> str:
        return f"{self.repo}#{self.number}"


def parse_pull_ref(value: str) -> PullRef | None:
    """The pull request ``value`` names in either form; None when it is neither."""
    match = _INSTANCE_ID.match(value.strip()) or _PULL.match(value.strip())
    if match is None:
        return None
    return PullRef(f"{match['owner']}/{match['name']}", int(match["number"]))


def pull_ref(value: str, *, param_hint: str = TASK_METAVAR) -> PullRef:
    """:func:`parse_pull_ref`, or a usage error that names the value and both forms."""
    found = parse_pull_ref(value)
    if found is None:
        raise typer.BadParameter(f"{value!r} is not a task: give {FORMS}", param_hint=param_hint)
    return found

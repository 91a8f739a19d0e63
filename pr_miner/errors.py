"""Errors of the miner's sources; each message names the problem and, where there is one, the fix.

The CLI prints the message on one line and exits non-zero. Every one of
these is raised before the run stores anything that depends on the failing
input, or at a PR boundary after complete PRs were committed.
"""

from __future__ import annotations

from probewatch.errors import MinerError


class SourceError(MinerError):
    """The source (git repository or GitHub) cannot give what was asked."""


class NotAGitRepository(SourceError):
    pass


class UnknownBranch(SourceError):
    pass


class EmptyRange(SourceError):
    pass


class ShallowHistory(SourceError):
    pass


class CursorLost(SourceError):
    pass


class GitFailed(SourceError):
    pass


class GitHubAuthFailed(SourceError):
    pass


class UnknownRepository(SourceError):
    pass


class QuotaExhausted(SourceError):
    pass


class GitHubUnavailable(SourceError):
    pass


class BadCursor(MinerError):
    """A stored cursor this version cannot read (written by hand, or by another source)."""


class NotMerged(SourceError):
    """A pull request that was asked for as merged is not (open, or closed unmerged)."""

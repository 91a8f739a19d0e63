"""Running git: the one helper every stage uses for a short git command.

User configuration that would change git's output (signatures in logs, relative
diffs, quoted paths) is switched off on the command line, and the environment
never prompts or pages. Output is decoded as UTF-8 with surrogate escapes, so
bytes that are not UTF-8 (a patch to a Latin-1 file) round-trip unchanged.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from probewatch.errors import ProbewatchError

GIT_CONFIG = (
    "-c",
    "log.showSignature=false",
    "-c",
    "diff.relative=false",
    "-c",
    "core.quotePath=false",
)
ENCODING_ERRORS = "surrogateescape"


class GitError(ProbewatchError):
    """A git command failed; the message carries the command and git's stderr."""


def git_env() -> dict[str, str]:
    """The environment for git: never prompt, never page, messages in English."""
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C"}


def run_git(
    repo: Path, *args: str, stdin: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run one git command in ``repo``; with ``check``, a failure raises ``GitError``."""
    done = subprocess.run(
        ["git", "-C", str(repo), *GIT_CONFIG, *args],
        input=None if stdin is None else stdin.encode("utf-8", ENCODING_ERRORS),
        capture_output=True,
        env=git_env(),
        check=False,
    )
    result = subprocess.CompletedProcess(
        done.args,
        done.returncode,
        done.stdout.decode("utf-8", ENCODING_ERRORS),
        done.stderr.decode("utf-8", "replace"),
    )
    if check and result.returncode != 0:
        raise GitError(f"git {' '.join(args)} failed in {repo}: {result.stderr.strip()}")
    return result

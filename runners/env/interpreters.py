"""Which interpreter an environment is built on: the repository's ``requires-python`` decides.

A repository that moved to a newer Python (``requires-python = ">=3.12"``) cannot be
installed into an environment of the interpreter running probewatch when that one is
older: ``pip install -e .`` refuses it, and the tests never run. The runner offers the
interpreter running probewatch and those it names (``PROBEWATCH_RUNNER_PYTHONS``, or the
watch file's ``[runner] pythons``); the first that meets the specifier wins, the running
one first, then the oldest (closest to the era the repository was written in). None
meeting it is an error that names the need and the setting.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from runners.env.errors import EnvError
from runners.env.lock import Interpreter, interpreter


class NoInterpreterError(EnvError):
    """No interpreter this runner offers meets the repository's ``requires-python``."""


def choose_interpreter(
    requires_python: str | None, default: Path | None = None, offered: Sequence[Path] = ()
) -> Path:
    """The interpreter to build on: ``default`` (this process's) when it meets
    ``requires_python``, else the oldest of ``offered`` that does."""
    first = default or Path(sys.executable)
    if not requires_python:
        return first
    try:
        wanted = SpecifierSet(requires_python)
    except InvalidSpecifier:
        return first  # a specifier pip cannot read either: the install will say so
    own = _known(first)
    others = sorted(
        (i for i in map(_known, offered) if i is not None), key=lambda i: Version(i.version)
    )
    found = [own, *others] if own is not None else others
    for candidate in found:
        if wanted.contains(candidate.version, prereleases=True):
            return candidate.path
    versions = ", ".join(sorted({i.version for i in found})) or "none"
    raise NoInterpreterError(
        f"the repository needs Python {requires_python} (its requires-python); this runner "
        f"offers {versions}: name one that fits in PROBEWATCH_RUNNER_PYTHONS or the watch "
        "file's [runner] pythons"
    )


def _known(path: Path) -> Interpreter | None:
    try:
        return interpreter(path)
    except (OSError, subprocess.CalledProcessError, ValueError):  # not a Python that answers
        return None

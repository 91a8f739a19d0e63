"""Path globs with ``**`` semantics, for test, code, core, docs and exclude lists.

``fnmatch`` lets ``*`` cross ``/``, so ``tests/*.py`` would match ``tests/a/b.py``;
here ``*`` and ``?`` stay inside one path segment, ``**/`` spans zero or more
folders, and a trailing ``/**`` spans everything below a folder. Two shortcuts
follow gitignore: a pattern ending in ``/`` names a folder (everything under
it), and a pattern without any ``/`` matches the file name at any depth
(``*.lock`` is ``**/*.lock``); a leading ``/`` anchors such a pattern at the
root instead. Matching is on repository-relative POSIX paths.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from probewatch.errors import ConfigError


class GlobError(ConfigError, ValueError):
    """A glob that cannot be compiled; the message names the pattern."""


def normalise(pattern: str) -> str:
    """The pattern with the folder and file-name shortcuts spelled out."""
    pattern = pattern.strip()
    if not pattern:
        raise GlobError("empty glob")
    if pattern.endswith("/"):
        pattern += "**"
    if pattern.startswith("/"):
        return pattern.lstrip("/")
    if "/" not in pattern:
        return "**/" + pattern
    return pattern


@lru_cache(maxsize=1024)
def glob_to_regex(pattern: str) -> str:
    """Regular expression (without anchors) for one glob, after :func:`normalise`."""
    glob = normalise(pattern)
    out: list[str] = []
    index = 0
    while index < len(glob):
        piece, index = _translate_at(glob, index)
        out.append(piece)
    return "".join(out)


def _translate_at(glob: str, index: int) -> tuple[str, int]:
    """Regex for the glob token starting at ``index``, and the index after it."""
    if glob.startswith("**", index):
        return _double_star(glob, index)
    char = glob[index]
    if char == "*":
        return "[^/]*", index + 1
    if char == "?":
        return "[^/]", index + 1
    if char == "[":
        return _char_class(glob, index)
    return re.escape(char), index + 1


def _double_star(glob: str, index: int) -> tuple[str, int]:
    at_start = index == 0 or glob[index - 1] == "/"
    end = index + 2
    if at_start and glob.startswith("/", end):
        return "(?:[^/]*/)*", end + 1  # `**/`: zero or more whole folders
    if at_start and end == len(glob):
        return ".*", end  # trailing `**` (or the whole pattern): anything below
    return "[^/]*", end  # `a**b` is an ordinary star, as in gitignore


def _char_class(glob: str, index: int) -> tuple[str, int]:
    close = glob.find("]", index + 2)
    if close == -1:
        return re.escape("["), index + 1
    body = glob[index + 1 : close]
    if body.startswith("!"):
        body = "^" + body[1:]
    body = body.replace("\\", "\\\\")
    return f"(?!/)[{body}]", close + 1


class PathMatcher:
    """A set of globs compiled into one expression; ``matches`` is true if any glob matches."""

    __slots__ = ("_regex", "patterns")

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns: tuple[str, ...] = tuple(patterns)
        self._regex = _compile(self.patterns)

    def matches(self, path: str) -> bool:
        return self._regex is not None and self._regex.fullmatch(path) is not None

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def __repr__(self) -> str:
        return f"PathMatcher({list(self.patterns)!r})"


def _compile(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    alternatives = []
    for pattern in patterns:
        try:
            regex = glob_to_regex(pattern)
            re.compile(regex)
        except re.error as exc:
            raise GlobError(f"bad glob {pattern!r}: {exc}") from None
        alternatives.append(f"(?:{regex})")
    return re.compile("|".join(alternatives))

"""Unified diffs as typed records: parse git's output per file, render new ones.

Every patch probewatch stores (golden, test, hollow, adversarial) is git's
unified format, so the parser keeps each file's chunk byte for byte (a
re-joined patch applies exactly as the original) and records, per hunk,
which new-file lines were added. :func:`render_file_diff` writes a file's
diff from two texts in the form ``git apply`` accepts, end-of-file newline
markers included.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from probewatch.errors import BuildError

DEV_NULL = "/dev/null"
NO_NEWLINE = "\\ No newline at end of file"
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


class DiffParseError(BuildError, ValueError):
    """Text that is not a git unified diff (the message names the line)."""


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    lines: tuple[str, ...]  # body lines with their ' ', '+', '-' or '\' prefix

    def added_lines(self) -> list[int]:
        """New-file line numbers of the lines this hunk adds."""
        added, line = [], self.new_start
        for raw in self.lines:
            if raw.startswith("+"):
                added.append(line)
            if raw[:1] in ("+", " "):
                line += 1
        return added

    def deletion_anchors(self) -> list[int]:
        """New-file lines just before each place where this hunk deleted old lines.

        The line before, not after: a deletion at the end of a function body
        belongs to that function, not to whatever follows it.
        """
        anchors, line = [], self.new_start
        for raw in self.lines:
            if raw.startswith("-"):
                anchors.append(max(line - 1, 1))
            if raw[:1] in ("+", " "):
                line += 1
        return anchors


_GITLINK = re.compile(r"^(?:index \w+\.\.\w+|(?:new|deleted) file mode|new mode|old mode) 160000$")


@dataclass(frozen=True)
class FileDiff:
    """One file's part of a diff, with its exact text."""

    old_path: str | None  # None: the file is new
    new_path: str | None  # None: the file is deleted
    text: str
    hunks: tuple[Hunk, ...] = ()
    binary: bool = False
    header: tuple[str, ...] = field(default=(), repr=False)

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def is_new(self) -> bool:
        return self.old_path is None

    @property
    def is_deleted(self) -> bool:
        return self.new_path is None

    @property
    def is_python(self) -> bool:
        return self.path.endswith(".py") and not self.binary

    @property
    def is_submodule(self) -> bool:
        """A submodule's pointer (a gitlink, mode 160000), not a file."""
        return any(_GITLINK.search(line) for line in self.header)

    @property
    def new_mode(self) -> str | None:
        for line in self.header:
            if line.startswith("new file mode "):
                return line.split()[-1]
        return None

    def added_lines(self) -> frozenset[int]:
        return frozenset(n for hunk in self.hunks for n in hunk.added_lines())

    def changed_lines(self) -> frozenset[int]:
        """Added lines plus the new-file lines where something was deleted."""
        anchors = {n for hunk in self.hunks for n in hunk.deletion_anchors()}
        return self.added_lines() | anchors

    def line_counts(self) -> tuple[int, int]:
        """(added, removed) line counts."""
        body = [raw for hunk in self.hunks for raw in hunk.lines]
        return sum(r.startswith("+") for r in body), sum(r.startswith("-") for r in body)


def _unquote(path: str) -> str:
    if not (path.startswith('"') and path.endswith('"')):
        return path
    body, out, index = path[1:-1], bytearray(), 0
    while index < len(body):
        char = body[index]
        if char == "\\" and body[index + 1 : index + 4].isdigit():
            out.append(int(body[index + 1 : index + 4], 8))
            index += 4
            continue
        if char == "\\" and index + 1 < len(body):
            out.extend(_ESCAPES.get(body[index + 1], body[index + 1]).encode())
            index += 2
            continue
        out.extend(char.encode())
        index += 1
    return out.decode("utf-8", errors="surrogateescape")


def _strip_prefix(path: str) -> str | None:
    path = _unquote(path.split("\t")[0].rstrip())
    if path == DEV_NULL:
        return None
    return path[2:] if path[:2] in ("a/", "b/") else path


def _header_paths(first: str) -> tuple[str, str]:
    rest = first[len("diff --git ") :]
    if rest.startswith('"'):
        end = rest.index('"', 1) + 1
        return _strip_prefix(rest[:end]) or "", _strip_prefix(rest[end + 1 :]) or ""
    half = len(rest) // 2  # 'a/P b/P': the two halves are equal when the path is unchanged
    return rest[2:half], rest[half + 3 :]


def _paths(header: Sequence[str]) -> tuple[str | None, str | None]:
    old, new = _header_paths(header[0])
    old_path: str | None = old
    new_path: str | None = new
    for line in header[1:]:
        if line.startswith("--- "):
            old_path = _strip_prefix(line[4:])
        elif line.startswith("+++ "):
            new_path = _strip_prefix(line[4:])
        elif line.startswith(("rename from ", "copy from ")):
            old_path = _unquote(line.split(" ", 2)[2])
        elif line.startswith(("rename to ", "copy to ")):
            new_path = _unquote(line.split(" ", 2)[2])
        elif line.startswith("new file mode"):
            old_path = None
        elif line.startswith("deleted file mode"):
            new_path = None
    return old_path, new_path


def _parse_hunks(lines: Sequence[str], start: int) -> tuple[Hunk, ...]:
    hunks: list[Hunk] = []
    index = start
    while index < len(lines):
        match = _HUNK_HEADER.match(lines[index])
        if match is None:
            raise DiffParseError(f"expected a hunk header, got {lines[index]!r}")
        old_start, old_len, new_start, new_len = (
            int(g) if g is not None else 1 for g in match.groups()
        )
        body, old_left, new_left = [], old_len, new_len
        index += 1
        while index < len(lines) and (old_left > 0 or new_left > 0 or lines[index] == NO_NEWLINE):
            raw = lines[index]
            if raw[:1] in (" ", "-", ""):
                old_left -= 1
            if raw[:1] in (" ", "+", ""):
                new_left -= 1
            body.append(raw if raw else " ")
            index += 1
        hunks.append(Hunk(old_start, old_len, new_start, new_len, tuple(body)))
    return tuple(hunks)


def _parse_file(chunk: str) -> FileDiff:
    lines = chunk.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    first_hunk = next((i for i, line in enumerate(lines) if line.startswith("@@ ")), len(lines))
    header = tuple(lines[:first_hunk])
    binary = any(line.startswith(("Binary files", "GIT binary patch")) for line in header)
    old_path, new_path = _paths(header)
    hunks = () if binary else _parse_hunks(lines, first_hunk)
    return FileDiff(old_path, new_path, chunk, hunks, binary, header)


def parse_diff(text: str) -> tuple[FileDiff, ...]:
    """Split a ``git diff`` into per-file records; text before the first file is ignored."""
    starts = [m.start() for m in re.finditer(r"^diff --git ", text, flags=re.M)]
    if not starts and text.strip():
        raise DiffParseError("no 'diff --git' header: not a git unified diff")
    bounds = [*starts, len(text)]
    return tuple(_parse_file(text[a:b]) for a, b in itertools.pairwise(bounds))


def join_diffs(files: Iterable[FileDiff | str]) -> str:
    """Concatenate file diffs back into one patch."""
    parts = [f if isinstance(f, str) else f.text for f in files]
    return "".join(p if p.endswith("\n") else p + "\n" for p in parts if p)


def _body_lines(lines: Iterable[str]) -> Iterable[str]:
    for line in lines:
        if line.endswith("\n"):
            yield line
        else:
            yield line + "\n" + NO_NEWLINE + "\n"


def render_file_diff(
    path: str, before: str | None, after: str | None, *, new_mode: str = "100644", context: int = 3
) -> str:
    """A git-style diff of one file from its old and new text (None: absent)."""
    if before == after:
        return ""
    old_label = DEV_NULL if before is None else f"a/{path}"
    new_label = DEV_NULL if after is None else f"b/{path}"
    header = [f"diff --git a/{path} b/{path}\n"]
    if before is None:
        header.append(f"new file mode {new_mode}\n")
    elif after is None:
        header.append("deleted file mode 100644\n")
    body = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        (after or "").splitlines(keepends=True),
        fromfile=old_label,
        tofile=new_label,
        n=context,
    )
    lines = list(body)
    if not lines:  # an empty new or deleted file has no hunk at all
        return "".join(header)
    lines[0], lines[1] = f"--- {old_label}\n", f"+++ {new_label}\n"
    return "".join(header) + "".join(lines[:2]) + "".join(_body_lines(lines[2:]))


# --- how two patches of one base differ ---------------------------------------------------


def patch_difference(
    base_patch: str, patch: str, path: str | None = None, context: int = 0
) -> list[list[str]] | None:
    """Where ``patch`` differs from ``base_patch``, both diffs against the same base (an
    adversarial and the golden patch): each differing region as diff lines (``-`` what
    ``base_patch`` leaves there, ``+`` what ``patch`` does) with ``context`` lines of
    ``base_patch``'s result around it, in ``path`` or in every file ``patch`` touches.
    None when ``patch`` cannot be read or does not touch ``path``.

    The two diffs' hunks need not line up (a change next to a golden hunk merges it with
    its neighbour, or makes one of its own), so each patch's result is laid out over the
    base lines either diff shows and the two are compared line by line."""
    mine = _edits_by_path(patch)
    if mine is None or (path is not None and path not in mine):
        return None
    base = _edits_by_path(base_patch) or {}
    regions = []
    for name in [path] if path is not None else list(mine):
        regions += _regions(base.get(name, _Edits({}, {})), mine[name], context)
    return regions


@dataclass(frozen=True)
class _Edits:
    """One patch of one file, over the base: the base lines its hunks show, by number, and
    what it puts in place of each: ``(n, 0)`` replaces base line n (``[]`` removes it),
    ``(n, -1)`` and ``(n, 1)`` insert before and after it."""

    base: dict[int, str]
    lines: dict[tuple[int, int], list[str]]


def _edits_by_path(patch: str) -> dict[str, _Edits] | None:
    try:
        files = PatchSet(patch)
    except (UnidiffParseError, ValueError):
        return None
    found = {}
    for changed in files:
        base: dict[int, str] = {}
        lines: dict[tuple[int, int], list[str]] = {}
        for hunk in changed:
            # added lines before the hunk's first base line go before it; a hunk with no
            # base line at all ("-n,0") inserts after line n
            at = (hunk.source_start, -1) if hunk.source_length else (hunk.source_start, 1)
            for line in hunk:
                text = line.value.rstrip("\n")
                if line.is_added:
                    lines.setdefault(at, []).append(text)
                    continue
                if line.source_line_no is None:  # "\ No newline at end of file"
                    continue
                n = line.source_line_no
                base[n] = text
                lines[(n, 0)] = [] if line.is_removed else [text]
                at = (n, 1)
        path = changed.path
        found[path[2:] if path.startswith(("a/", "b/")) else path] = _Edits(base, lines)
    return found


def _regions(before: _Edits, after: _Edits, context: int) -> list[list[str]]:
    base = {**before.base, **after.base}
    keys = sorted(set(before.lines) | set(after.lines) | {(n, 0) for n in base})
    old, new = _image(before, base, keys), _image(after, base, keys)
    regions = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        lines = [f" {text}" for text in old[max(0, i1 - context) : i1] if text is not None]
        lines += [f"-{text}" for text in old[i1:i2] if text is not None]
        lines += [f"+{text}" for text in new[j1:j2] if text is not None]
        lines += [f" {text}" for text in old[i2 : i2 + context] if text is not None]
        regions.append(lines)
    return regions


def _image(
    edits: _Edits, base: Mapping[int, str], keys: Sequence[tuple[int, int]]
) -> list[str | None]:
    """The patch's result over ``keys``; ``None`` stands for base lines neither patch shows,
    where the two results cannot differ."""
    image: list[str | None] = []
    last: int | None = None
    for key in keys:
        n, slot = key
        if last is not None and n > last + 1:
            image.append(None)
        last = n
        if key in edits.lines:
            image.extend(edits.lines[key])
        elif slot == 0:
            image.append(base[n])
    return image

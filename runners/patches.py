"""Strict patch application: refuse unsafe diffs before touching disk, then ``git apply``.

A diff over the size cap (:data:`MAX_PATCH_BYTES` unless the caller sets another)
is refused before it is parsed. A diff is then read twice without writing
anything: by unidiff (modes, symlink targets, binary hunks) and by ``git apply
--numstat`` (the exact paths git would write, so a header unidiff reads
differently cannot smuggle a path past the checks). Every path is checked
against the tree: no escape, nothing under ``.git``, no writing through a
symlink (present in the tree or created by the same diff), no symlink pointing
outside, no binary hunk unless allowed, no test file when the policy forbids
it, no absolute header path (git would re-root ``+++ /tmp/x`` into the tree)
and no control character (a newline) in a path. Only then does ``git apply
--check`` run, and ``git apply --index`` (the index follows the tree, so a
later ``git diff --cached`` or a stacked patch sees the patched state). A diff
with CRLF line endings that git cannot apply says so in its reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from unidiff import PatchedFile, PatchSet
from unidiff.errors import UnidiffParseError

from probewatch.errors import RunnerError
from probewatch.testfiles import TestFiles
from runners.types import MAX_PATCH_BYTES, PatchSpec
from runners.workspace import git

SYMLINK_MODE = "120000"
GITLINK_MODE = "160000"
_DEV_NULL = "/dev/null"
_APPLY = ("apply", "--index", "--whitespace=nowarn")
CRLF_HINT = "the patch's lines end in CRLF: if the tree's files end in LF, convert it with dos2unix"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class PatchError(RunnerError):
    """A patch that cannot be applied; ``str()`` is the reason, naming the patch."""


class PatchRefused(PatchError):
    """The diff is unsafe or against policy: refused before touching disk."""


class PatchUnappliable(PatchError):
    """The diff does not apply to the tree (git's reason) or cannot be read."""


@dataclass(frozen=True)
class FileChange:
    """One file entry of a diff, as far as the safety checks need it."""

    source: str | None  # path before, None for a new file
    target: str | None  # path after, None for a deletion
    new_mode: str | None
    binary: bool
    added_text: str  # the added lines, joined: a symlink's new target
    header_names: tuple[str, ...] = ()  # the ---/+++ names as written, /dev/null left out

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(p for p in (self.source, self.target) if p is not None)


def apply_patches(
    tree: Path, patches: Sequence[PatchSpec], *, max_bytes: int = MAX_PATCH_BYTES
) -> None:
    """Apply ``patches`` in order; PatchRefused / PatchUnappliable on the first that fails."""
    for spec in patches:
        apply_patch(tree, spec, max_bytes=max_bytes)


def apply_patch(tree: Path, spec: PatchSpec, *, max_bytes: int = MAX_PATCH_BYTES) -> None:
    check_patch(tree, spec, max_bytes=max_bytes)
    diff = _with_final_newline(spec.diff)
    for extra in (("--check",), ()):
        done = git([*_APPLY, *extra, "-"], cwd=tree, stdin=diff, check=False)
        if done.returncode != 0:
            raise PatchUnappliable(f"{spec.name}: {_apply_failure(done.stderr, diff)}")


def _apply_failure(stderr: str, diff: str) -> str:
    """git's reason on one line, with a hint when the diff's line endings are CRLF."""
    reason = "; ".join(line for line in stderr.strip().splitlines() if line) or "git apply failed"
    return f"{reason} ({CRLF_HINT})" if "\r\n" in diff else reason


def check_patch(
    tree: Path, spec: PatchSpec, *, max_bytes: int = MAX_PATCH_BYTES
) -> tuple[FileChange, ...]:
    """The diff's file changes, or PatchRefused naming the first unsafe one. Writes nothing."""
    if not spec.diff.strip():
        raise PatchUnappliable(f"{spec.name}: the patch is empty")
    changes = parse_changes(spec, max_bytes=max_bytes)
    created_links = {c.target for c in changes if c.target is not None and _is_link(c)}
    test_files = TestFiles(spec.test_globs)
    for change in changes:
        reason = _refusal(tree, change, spec, created_links, test_files)
        if reason:
            raise PatchRefused(f"{spec.name}: {reason}")
    _check_git_agrees(tree, spec, changes)
    return changes


def parse_changes(spec: PatchSpec, *, max_bytes: int = MAX_PATCH_BYTES) -> tuple[FileChange, ...]:
    """The diff's file changes, read by unidiff; a diff over ``max_bytes`` is not read at all."""
    size = len(spec.diff) if len(spec.diff) > max_bytes else len(spec.diff.encode())
    if size > max_bytes:
        raise PatchRefused(
            f"{spec.name}: the patch is {size / 2**20:.1f} MiB, over the "
            f"{max_bytes / 2**20:.1f} MiB limit on a patch"
        )
    try:
        patch_set = PatchSet(_with_final_newline(spec.diff))
    except UnidiffParseError as exc:
        raise PatchUnappliable(f"{spec.name}: cannot parse the diff: {exc}") from exc
    changes = tuple(_change(f) for f in patch_set)
    if not changes:
        raise PatchUnappliable(f"{spec.name}: the diff names no file")
    return changes


def _change(patched: PatchedFile) -> FileChange:
    renames = dict(_rename_lines(patched.patch_info or ()))
    added = "".join(line.value for hunk in patched for line in hunk if line.is_added)
    return FileChange(
        source=renames.get("from") or _strip(patched.source_file),
        target=renames.get("to") or _strip(patched.target_file),
        new_mode=patched.target_mode,
        binary=patched.is_binary_file,
        added_text=added,
        header_names=tuple(
            name
            for name in (patched.source_file, patched.target_file)
            if name is not None and name.rstrip("\r") != _DEV_NULL
        ),
    )


def _rename_lines(info: Iterable[str]) -> Iterator[tuple[str, str]]:
    """git's ``rename from X`` / ``copy to Y`` headers, which name the real paths."""
    for line in info:
        match = re.match(r"^(?:rename|copy) (from|to) (.+?)\n?$", line)
        if match:
            yield match.group(1), _unquote(match.group(2))


def _strip(name: str | None) -> str | None:
    """The path ``git apply`` (``-p1``) reads from a header name: the first component dropped."""
    if name is None or name.rstrip("\r") == _DEV_NULL:
        return None
    return _unquote(name.rstrip("\r")).split("/", 1)[-1]  # a CRLF diff's CR ends no name


def _unquote(name: str) -> str:
    """Undo git's C-style quoting of unusual path names ("a/t\\303\\251st.py")."""
    if not (len(name) >= 2 and name[0] == name[-1] == '"'):
        return name
    raw = name[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    return raw.encode("latin-1").decode("utf-8", "replace")


def _check_git_agrees(tree: Path, spec: PatchSpec, changes: Sequence[FileChange]) -> None:
    """Every path git would write must be one the checks above have seen."""
    seen = {p for c in changes for p in c.paths}
    unread = sorted(set(git_paths(tree, spec)) - seen)
    if unread:
        raise PatchRefused(f"{spec.name}: the diff writes paths its headers hide: {unread}")


def git_paths(tree: Path, spec: PatchSpec) -> tuple[str, ...]:
    """The paths ``git apply`` would write for ``spec``, read without writing anything."""
    diff = _with_final_newline(spec.diff)
    done = git(["apply", "--numstat", "-z", "-"], cwd=tree, stdin=diff, check=False)
    if done.returncode != 0:
        raise PatchUnappliable(f"{spec.name}: {done.stderr.strip()}")
    return tuple(_numstat_paths(done.stdout))


def _numstat_paths(out: str) -> Iterator[str]:
    """Paths from ``git apply --numstat -z``: ``add\tdel\tpath\0``, or for a rename
    ``add\tdel\t\0src\0dst\0``."""
    fields = iter(out.split("\0"))
    for field in fields:
        if not field:
            continue
        path = field.split("\t", 2)[-1]
        if path:
            yield path
        else:
            yield next(fields, "")
            yield next(fields, "")


def _refusal(
    tree: Path,
    change: FileChange,
    spec: PatchSpec,
    created_links: set[str],
    test_files: TestFiles,
) -> str | None:
    for name in change.header_names:
        if name.startswith("/"):
            return f"header path {name!r} is absolute (a diff names files as a/… and b/…)"
    for path in change.paths:
        reason = unsafe_path_reason(tree, path) or _under_new_link(path, created_links)
        if reason:
            return reason
    if change.binary and not spec.allow_binary:
        return f"binary change to {change.paths[-1]} (binary patches are not allowed)"
    if change.new_mode == GITLINK_MODE:
        return f"submodule change at {change.paths[-1]} is not supported"
    if change.target and change.new_mode == SYMLINK_MODE:
        reason = _link_target_reason(tree, change.target, change.added_text, created_links)
        if reason:
            return reason
    if change.target and change.new_mode != SYMLINK_MODE and (tree / change.target).is_symlink():
        return f"{change.target} is a symlink in the tree: refusing to write through it"
    if spec.forbid_test_changes:
        hits = test_files.among(change.paths)
        if hits:
            return f"changes the test file {hits[0]} (test changes are not allowed)"
    return None


def _is_link(change: FileChange) -> bool:
    return change.new_mode == SYMLINK_MODE


def unsafe_path_reason(tree: Path, path: str) -> str | None:
    """Why writing ``path`` (relative to ``tree``) is unsafe, or None when it is safe."""
    parts = PurePosixPath(path).parts
    if not parts or path.startswith("/") or "\\" in path:
        return f"path {path!r} is not a plain relative path inside the tree"
    if ".." in parts:
        return f"path {path!r} leaves the tree"
    if _CONTROL.search(path):
        return f"path {path!r} holds a control character (a newline, a tab, a NUL)"
    if any(part.lower() == ".git" for part in parts):
        return f"path {path!r} writes into .git"
    for depth in range(1, len(parts)):
        if tree.joinpath(*parts[:depth]).is_symlink():
            return f"path {path!r} goes through the symlink {'/'.join(parts[:depth])}"
    return None


def _under_new_link(path: str, created_links: set[str]) -> str | None:
    for link in created_links:
        if path != link and path.startswith(link + "/"):
            return f"path {path!r} goes through the symlink {link} created by the same diff"
    return None


def _link_target_reason(
    tree: Path, link: str, target_text: str, created_links: set[str]
) -> str | None:
    """Why a symlink ``link -> target`` is unsafe: walked one component at a time, as the
    kernel resolves it, it must stay in the tree, out of ``.git`` and off other symlinks."""
    target = target_text.rstrip("\n")
    if not target or target.startswith("/"):
        return f"symlink {link} -> {target!r} points outside the tree"
    walked = list(PurePosixPath(link).parent.parts)
    for part in target.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not walked:
                return f"symlink {link} -> {target!r} points outside the tree"
            walked.pop()
            continue
        walked.append(part)
        here = "/".join(walked)
        if part.lower() == ".git":
            return f"symlink {link} -> {target!r} points into .git"
        if here in created_links or (tree / here).is_symlink():
            return f"symlink {link} -> {target!r} goes through the symlink {here}"
    return None


def _with_final_newline(diff: str) -> str:
    return diff if diff.endswith("\n") else diff + "\n"

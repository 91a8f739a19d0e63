"""The hollow patch: the golden patch's interface with bodies that raise at once.

Every function and method the golden patch adds or changes (the outermost
function around a changed line) keeps its decorators, signature and
docstring; everything after the docstring becomes one ``raise``. Module- and
class-level code stays as the golden patch left it, so imports, constants,
dataclass fields and config still exist. A probe that passes this patch only
checks that names exist. The result is a diff against the base commit and
every rewritten file must compile.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from probe_builder.gitio import TreeReader
from probe_builder.material.diffs import FileDiff, join_diffs, render_file_diff
from probe_builder.material.pysource import Definition, Edit, Source, apply_edits, touched_functions
from probewatch.errors import BuildError

HOLLOW_EXCEPTION = "NotImplementedError"


class HollowError(BuildError, ValueError):
    """A hollow patch that cannot be built or does not compile (names file and reason)."""


@dataclass(frozen=True)
class HollowedFunction:
    path: str
    qualname: str
    line: int


@dataclass(frozen=True)
class HollowPatch:
    patch: str  # unified diff against the base commit
    functions: tuple[HollowedFunction, ...]
    rewritten_files: tuple[str, ...]


def _raise_statement(qualname: str) -> str:
    return f'raise {HOLLOW_EXCEPTION}("hollow: {qualname}")'


def _has_docstring(body: Sequence[ast.stmt]) -> bool:
    first = body[0] if body else None
    return (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    )


def _statement_start(source: Source, stmt: ast.stmt) -> int:
    """Offset where ``stmt`` begins, its decorators included."""
    decorators = getattr(stmt, "decorator_list", [])
    if decorators:
        first = min(decorators, key=lambda d: (d.lineno, d.col_offset))
        return source.offset(first.lineno, 0) + len(source.indent_of(first.lineno))
    return source.offset(stmt.lineno, stmt.col_offset)


def _body_edit(source: Source, definition: Definition) -> Edit:
    node = definition.node
    statement = _raise_statement(definition.qualname)
    keep_doc = _has_docstring(node.body)
    rest = node.body[1:] if keep_doc else node.body
    if not rest:  # only a docstring: the raise goes right after it
        doc = node.body[0]
        _, end = source.span(doc)
        if source.starts_line(doc):
            return Edit(end, end, "\n" + source.indent_of(doc.lineno) + statement)
        return Edit(end, end, "; " + statement)
    start = _statement_start(source, rest[0])
    _, end = source.span(rest[-1])
    return Edit(start, end, statement)


def hollow_source(
    path: str, text: str, changed_lines: Iterable[int]
) -> tuple[str, tuple[HollowedFunction, ...]]:
    """Hollow every outermost function of ``text`` that holds a changed line."""
    source = Source(path, text)
    functions = touched_functions(source.tree, changed_lines)
    if not functions:
        return text, ()
    hollowed = apply_edits(text, [_body_edit(source, f) for f in functions])
    try:
        compile(hollowed, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise HollowError(
            f"{path}:{exc.lineno}: hollowed source does not compile: {exc.msg}"
        ) from None
    names = tuple(HollowedFunction(path, f.qualname, f.node.lineno) for f in functions)
    return hollowed, names


def _hollow_file(
    file: FileDiff, base: TreeReader, head: TreeReader
) -> tuple[str, tuple[HollowedFunction, ...]]:
    after = head.read(file.path)
    if after is None:
        raise HollowError(f"{file.path}: not in the post-change tree")
    hollowed, functions = hollow_source(file.path, after, file.changed_lines())
    if not functions:
        return file.text, ()
    before = None if file.is_new else base.read(file.old_path or file.path)
    if before is None and not file.is_new:
        raise HollowError(f"{file.old_path}: not in the base tree")
    mode = file.new_mode or "100644"
    return render_file_diff(file.path, before, hollowed, new_mode=mode), functions


def build_hollow_patch(
    golden_files: Sequence[FileDiff], *, base: TreeReader, head: TreeReader
) -> HollowPatch:
    """The hollow patch of a golden patch, as one diff against ``base``."""
    parts: list[str] = []
    functions: list[HollowedFunction] = []
    rewritten: list[str] = []
    for file in golden_files:
        if not file.is_python or file.is_deleted:
            parts.append(file.text)
            continue
        text, hollowed = _hollow_file(file, base, head)
        parts.append(text)
        functions.extend(hollowed)
        if hollowed:
            rewritten.append(file.path)
    return HollowPatch(join_diffs(parts), tuple(functions), tuple(rewritten))

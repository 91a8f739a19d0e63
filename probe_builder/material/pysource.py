"""Python source as a syntax tree with positions that map back to the text.

The hollow patch, the mutants and the contract all edit or read source by
node positions. ``ast`` reports columns in UTF-8 bytes, so :class:`Source`
converts them to character offsets before any text is cut; edits are applied
last-first so earlier offsets stay valid.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from probewatch.errors import BuildError
from probewatch.syntax import parse_module

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
DefNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


class UnparsableSource(BuildError, ValueError):
    """Source that does not parse; the message names the file and the line, ``where`` and
    ``why`` hold them apart (``tests/test_x.py:12``, ``invalid syntax``)."""

    def __init__(self, where: str, why: str) -> None:
        super().__init__(where, why)  # both, so that a copy made by pickle is whole
        self.where = where
        self.why = why

    def __str__(self) -> str:
        return f"{self.where}: does not parse: {self.why}"


@dataclass(frozen=True)
class Edit:
    start: int  # character offsets into the text
    end: int
    replacement: str


@dataclass(frozen=True)
class ImportBinding:
    """A name an import statement binds, and what it refers to.

    ``import torch.nn.functional as F`` binds ``F`` to the module ``torch.nn.functional``;
    ``import torch.nn`` binds ``torch`` to ``torch``; ``from a.b import c`` binds ``c`` to
    the attribute ``c`` of ``a.b``; ``from .ops import compute`` does the same one level up
    (``level`` 1, its module as written)."""

    name: str
    module: str  # "" for ``from . import x``
    attribute: str | None = None  # the name taken, for ``from ... import``
    level: int = 0  # the dots of a relative import

    @property
    def target(self) -> str:
        """What the name refers to, dotted: ``a.b.c`` for ``from a.b import c``, ``.ops.f``
        for ``from .ops import f`` (its leading dots the relative import's)."""
        dotted = ".".join(part for part in (self.module, self.attribute) if part)
        return "." * self.level + dotted

    @property
    def package(self) -> str:
        """The top-level package it comes from; "." for a relative import."""
        return "." if self.level else self.module.split(".")[0]


def import_bindings(tree: ast.AST) -> list[ImportBinding]:
    """Every name the imports of ``tree`` bind, at any depth, in the order written."""
    found: list[ImportBinding] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                module = alias.name if alias.asname else alias.name.split(".")[0]
                found.append(ImportBinding(alias.asname or module, module))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                name = alias.asname or alias.name
                found.append(ImportBinding(name, node.module or "", alias.name, node.level))
    return found


@dataclass
class Source:
    path: str
    text: str
    tree: ast.Module = field(init=False, repr=False)
    _line_starts: list[int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        try:
            self.tree = parse_module(self.text, filename=self.path)
        except (SyntaxError, ValueError) as exc:
            line = getattr(exc, "lineno", None)
            where = self.path if line is None else f"{self.path}:{line}"
            raise UnparsableSource(where, getattr(exc, "msg", None) or str(exc)) from None
        except RecursionError:  # an expression thousands of terms deep: a parse would overflow
            raise UnparsableSource(self.path, "nested too deeply for Python's parser") from None
        starts, total = [0], 0
        for line in self.text.splitlines(keepends=True):
            total += len(line)
            starts.append(total)
        self._line_starts = starts

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines(keepends=True)

    @cached_property
    def imported_from(self) -> Mapping[str, str]:
        """Each name the module binds by importing, at any depth, and the top-level package
        it comes from (``torch`` and ``F`` of ``import torch.nn.functional as F``: "torch";
        ``compute`` of ``from .ops import compute``: "." for a relative import)."""
        return {binding.name: binding.package for binding in import_bindings(self.tree)}

    @cached_property
    def imported_names(self) -> frozenset[str]:
        """The names the module binds by importing (:attr:`imported_from`)."""
        return frozenset(self.imported_from)

    def offset(self, lineno: int, col_bytes: int) -> int:
        """Character offset of (1-based line, UTF-8 byte column)."""
        start = self._line_starts[lineno - 1]
        line = (
            self.text[start : self._line_starts[lineno]] if lineno < len(self._line_starts) else ""
        )
        return start + len(line.encode("utf-8")[:col_bytes].decode("utf-8", "ignore"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def segment(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def line_text(self, lineno: int) -> str:
        return self.text[self._line_starts[lineno - 1] : self._line_starts[lineno]]

    def indent_of(self, lineno: int) -> str:
        line = self.line_text(lineno)
        return line[: len(line) - len(line.lstrip(" \t"))]

    def starts_line(self, node: ast.AST) -> bool:
        """True when nothing but indentation precedes ``node`` on its line."""
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        return self.text[self._line_starts[node.lineno - 1] : start].strip() == ""  # type: ignore[attr-defined]


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits (given in any order)."""
    out = text
    last_start = len(text) + 1
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        if edit.end > last_start:
            raise ValueError(f"overlapping edits at offset {edit.start}")
        out = out[: edit.start] + edit.replacement + out[edit.end :]
        last_start = edit.start
    return out


@dataclass(frozen=True)
class Definition:
    qualname: str
    node: DefNode
    parents: tuple[DefNode, ...]

    @property
    def first_line(self) -> int:
        """The first line of the definition, decorators included."""
        decorators = [d.lineno for d in self.node.decorator_list]
        return min([self.node.lineno, *decorators])

    @property
    def is_function(self) -> bool:
        return isinstance(self.node, ast.FunctionDef | ast.AsyncFunctionDef)

    @property
    def is_method(self) -> bool:
        return (
            self.is_function and bool(self.parents) and isinstance(self.parents[-1], ast.ClassDef)
        )

    def lines(self) -> range:
        return range(self.first_line, self.node.end_lineno + 1)  # type: ignore[operator]


Place = tuple[ast.AST, tuple[DefNode, ...], str]  # a node, its definitions, their prefix


def iter_definitions(tree: ast.AST) -> Iterator[Definition]:
    """Every function, method and class, outer before inner and in the order of the source,
    with qualified names. A stack rather than recursion: an ``elif`` chain a thousand
    branches long nests a thousand statements deep."""

    def inside(node: ast.AST, parents: tuple[DefNode, ...], prefix: str) -> list[Place]:
        children = [c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.expr)]
        return [(child, parents, prefix) for child in reversed(children)]

    stack = inside(tree, (), "")
    while stack:
        node, parents, prefix = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            qualname = f"{prefix}{node.name}"
            yield Definition(qualname, node, parents)
            parents, prefix = (*parents, node), qualname + "."
        stack += inside(node, parents, prefix)


def touched_functions(tree: ast.AST, lines: Iterable[int]) -> list[Definition]:
    """Outermost functions (not classes) whose span, decorators included, holds a line."""
    wanted = set(lines)
    found: list[Definition] = []
    for definition in iter_definitions(tree):
        if not definition.is_function:
            continue
        if any(isinstance(p, ast.FunctionDef | ast.AsyncFunctionDef) for p in definition.parents):
            continue  # an enclosing function is hollowed whole
        if wanted.intersection(definition.lines()):
            found.append(definition)
    return found


def dotted_name(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def call_name(node: ast.AST) -> str | None:
    """The dotted callee of a call (``torch.cuda.synchronize``), or its last attribute."""
    if not isinstance(node, ast.Call):
        return None
    name = dotted_name(node.func)
    if name is not None:
        return name
    return node.func.attr if isinstance(node.func, ast.Attribute) else None


def module_name(path: str) -> str:
    """``pkg/sub/mod.py`` -> ``pkg.sub.mod``; ``pkg/__init__.py`` -> ``pkg``."""
    parts = path[:-3].split("/") if path.endswith(".py") else path.split("/")
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)

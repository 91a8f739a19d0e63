"""Formatting-only PRs: code changes that leave every changed module's syntax tree as it was.

A formatter or linter pass over a repository (verl's move from yapf to ruff,
+10,651 -9,224 lines in 268 files; a shorter ruff line length) is large,
touches tests and code alike and promises nothing, yet passes the size and
test filters. Parsing each changed Python module before and after and
comparing the abstract syntax trees tells it from a real change without
trusting the title: comments, whitespace, quotes, line wrapping and redundant
parentheses leave the tree unchanged. Two more things formatters do are
compared as the same: the order of a run of imports (isort merges, splits
and sorts them) and how a docstring is wrapped. Any other change to code,
names or strings is a change.

A source that can read file contents at both commits (a local clone) offers
:class:`ProgramSource`; the filter is not applied where it cannot (the GitHub
API would cost two requests per file).
"""

from __future__ import annotations

import ast
import inspect
import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import CodeType
from typing import Protocol, runtime_checkable

from pr_miner.config import MiningConfig
from pr_miner.types import FileChange, MergedPR
from probewatch.syntax import parse_module

# Words and numbers; a string prefix (r"", f"") is not a word.
_WORDS = re.compile(r"""\b[A-Za-z_][A-Za-z0-9_]*\b(?!['"])|[0-9]+""")
WORD_SLACK = 16  # words a formatting pass may add or drop in one file


def _word_distance(before: str, after: str) -> int:
    old, new = Counter(_WORDS.findall(before)), Counter(_WORDS.findall(after))
    return (old - new).total() + (new - old).total()


# For each path asked about, in order and lazily: (path, its program is unchanged by the PR).
UnchangedPrograms = Callable[[Sequence[str]], Iterator[tuple[str, bool]]]


@runtime_checkable
class ProgramSource(Protocol):
    def unchanged_programs(
        self, pr: MergedPR, paths: Sequence[str]
    ) -> Iterator[tuple[str, bool]]: ...


def same_program(before: str, after: str) -> bool:
    """Whether two versions of a module are the same program, layout aside.

    Two quick screens settle most real changes before the costly tree comparison:
    formatting keeps nearly every word and number of a file (a split string's new
    prefix or a ``# noqa`` may come in), and it leaves the bytecode of every function
    and class body as it was (docstrings and asserts aside, which the tree compares).
    """
    if _word_distance(before, after) > WORD_SLACK:
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences in old code
            if _bytecode(before, optimize=0) == _bytecode(after, optimize=0):
                return True  # the same instructions and constants everywhere: no doubt
            if _bytecode(before) != _bytecode(after):
                return False
            return canonical(parse_module(before)) == canonical(parse_module(after))
    except (SyntaxError, ValueError):
        return False  # what does not parse cannot be shown unchanged


def _bytecode(source: str, optimize: int = 2) -> list[tuple[object, ...]]:
    """The bytecode of a module's code objects, without line numbers.

    ``optimize=0``: every code object, docstrings included; equal means the same
    program. ``optimize=2`` (docstrings and asserts dropped): functions only, since
    sorting imports changes the module's code and class bodies keep line-dependent
    details; unequal means a real change.
    """
    module = compile(source, "<module>", "exec", dont_inherit=True, optimize=optimize)
    everything = optimize == 0
    found: list[tuple[object, ...]] = []
    stack = [module]
    while stack:
        code = stack.pop()
        if everything or code.co_flags & inspect.CO_OPTIMIZED:  # a function's own code
            consts = tuple(c for c in code.co_consts if not isinstance(c, CodeType))
            found.append((code.co_qualname, code.co_code, code.co_names, code.co_varnames, consts))
        stack.extend(c for c in code.co_consts if isinstance(c, CodeType))
    return found


def canonical(tree: ast.Module) -> str:
    """The tree's dump with import runs sorted and docstrings' whitespace collapsed."""
    return ast.dump(_Canonical().visit(tree))


_SCOPES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_IMPORTS = (ast.Import, ast.ImportFrom)


class _Canonical(ast.NodeTransformer):
    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        if isinstance(node, _SCOPES) and node.body:
            _collapse_docstring(node.body[0])
        for name in ("body", "orelse", "finalbody"):
            statements = getattr(node, name, None)
            if isinstance(statements, list) and statements and isinstance(statements[0], ast.stmt):
                setattr(node, name, _sorted_import_runs(statements))
        return node


def _collapse_docstring(first: ast.stmt) -> None:
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        first.value.value = " ".join(first.value.value.split())


def _sorted_import_runs(statements: list[ast.stmt]) -> list[ast.stmt]:
    """Each run of consecutive imports as one statement naming its imports in sorted order."""
    out: list[ast.stmt] = []
    run: list[tuple[str, ...]] = []
    for statement in [*statements, None]:
        if isinstance(statement, _IMPORTS):
            run.extend(_imported(statement))
            continue
        if run:
            out.append(ast.Expr(ast.Constant(repr(sorted(set(run))))))
            run = []
        if statement is not None:
            out.append(statement)
    return out


def _imported(statement: ast.Import | ast.ImportFrom) -> list[tuple[str, ...]]:
    if isinstance(statement, ast.Import):
        return [("import", a.name, a.asname or "") for a in statement.names]
    module = "." * statement.level + (statement.module or "")
    return [("from", module, a.name, a.asname or "") for a in statement.names]


@dataclass(frozen=True, slots=True)
class LayoutShare:
    code_lines: int  # changed lines in non-test code files
    layout_lines: int  # of those, in Python modules whose syntax tree did not change
    layout_files: int

    @property
    def share(self) -> float:
        return self.layout_lines / self.code_lines if self.code_lines else 0.0


def python_code_changes(files: Sequence[FileChange], config: MiningConfig) -> list[FileChange]:
    """The changed non-test code files that are Python modules present on both sides."""
    found = []
    for change in files:
        kind = config.classify(change.path)
        if kind.excluded or kind.test or not kind.code or change.binary:
            continue
        if change.path.endswith(".py") and change.old_path is None:
            found.append(change)
    return found


def layout_share(
    files: Sequence[FileChange],
    config: MiningConfig,
    unchanged: UnchangedPrograms,
    code_lines: int,
    threshold: float = 1.0,
) -> LayoutShare:
    """How much of a PR's ``code_lines`` (its measured non-test code change) leaves the
    programs as they were.

    Modules are read largest change first, and reading stops once the share can no longer
    reach ``threshold``: a real change usually shows in its first or second module, so
    only formatting passes are read whole.
    """
    candidates = sorted(python_code_changes(files, config), key=lambda c: -c.lines)
    if len(candidates) < config.formatting_min_modules:
        return LayoutShare(code_lines, 0, 0)
    lines = {c.path: c.lines for c in candidates}
    allowed = code_lines * (1.0 - threshold)  # changed lines that may be real changes
    real = code_lines - sum(lines.values())  # non-Python code counts as real from the start
    layout_lines = layout_files = 0
    if candidates and real <= allowed:
        for path, same in unchanged([c.path for c in candidates]):
            if same:
                layout_lines += lines[path]
                layout_files += 1
            else:
                real += lines[path]
                if real > allowed:
                    break
    return LayoutShare(code_lines, layout_lines, layout_files)

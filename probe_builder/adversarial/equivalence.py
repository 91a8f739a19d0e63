"""Mutants that cannot break a promise, set aside before they are run: static rules.

Diff-based mutation testing at scale (Google's) found that most findings
developers call "not useful" come from a few shapes: a mutant equivalent to
the code for every input the code can see, or one in code no test could be
expected to pin. Each rule here reads the mutated line's syntax and the
candidate edit and gives a reason, or None; the first reason wins. A candidate
set aside makes way for the next operator on the same line
(:func:`probe_builder.adversarial.mutants.best_per_line`).

The rules, as data (:data:`RULES`):

- the sign of a reduction: ``x.sum() > 0`` and ``x.mean() > 0`` agree on every
  input, empty included (0 > 0 and nan > 0 are both false); a non-strict
  comparison (``>= 0``, ``== 0``) differs on an empty input and is kept;
- ``zip(..., strict=)`` flipped where the function already compares the zipped
  sequences' lengths: the flag is never exercised;
- a branch that only logs: forcing ``if verbose:`` changes what is printed;
- a default of a configuration class (a dataclass, a pydantic model, a class
  named ``...Config`` / ``...Preset`` / ``...Args`` / ``...Options``): no test
  can be expected to pin a preset's default, unless a promise names the field;
- a value that only feeds reported metrics: the edit is in a statement that
  stores into a metrics dict (``metrics["x"] = ...``, ``metrics.update(...)``),
  or it assigns a name whose every later use, followed through assignments and
  the branches it decides, ends in one; a return, a store elsewhere or a call
  for its effect keeps the mutant.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from probe_builder.adversarial.mutation_ops import (
    MEAN_SUM,
    Candidate,
    MutationOperator,
    arid_statement,
)
from probe_builder.material.pysource import Source, call_name, dotted_name

# Names of what a function reports rather than returns or keeps: metrics and timings.
METRIC_NAME = re.compile(r"(?:^|_)(?:metrics?|stats|statistics|timings?|timing_raw)$", re.I)
CONFIG_CLASS_NAME = re.compile(r"(?:Config|Configs|Preset|Presets|Args|Arguments|Options)$")
CONFIG_BASES = re.compile(r"(?:^|\.)(?:BaseModel|BaseSettings|NamedTuple|TypedDict)$")
_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class Scope:
    """One file's syntax with each node's parent, and the words the PR's promises use."""

    source: Source
    promise_words: frozenset[str] = frozenset()
    promise_text: str = ""
    parents: dict[int, ast.AST] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.parents = {
            id(child): node
            for node in ast.walk(self.source.tree)
            for child in ast.iter_child_nodes(node)
        }

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        parent = self.parents.get(id(node))
        while parent is not None:
            yield parent
            parent = self.parents.get(id(parent))

    def function_of(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The innermost function that holds ``node``."""
        return next(
            (
                a
                for a in self.ancestors(node)
                if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef)
            ),
            None,
        )

    def node_at(self, candidate: Candidate, kinds: tuple[type[ast.AST], ...]) -> ast.AST | None:
        """The innermost node of ``kinds`` whose span holds the candidate's edit. Only the
        nodes that hold it (a definition's decorators with it) are looked into: a class a
        thousand lines long is not walked whole for each edit."""
        found, found_start = None, -1
        todo: deque[ast.AST] = deque(
            top
            for top in self.source.tree.body
            if top.lineno <= candidate.line <= (top.end_lineno or top.lineno)
        )
        while todo:
            node = todo.popleft()
            if getattr(node, "lineno", None) is not None:
                start, end = self.source.span(node)
                inside = start <= candidate.start and candidate.end <= end
                if inside and isinstance(node, kinds) and start >= found_start:
                    found, found_start = node, start
                decorated = [self.source.span(d)[0] for d in getattr(node, "decorator_list", ())]
                if not min([start, *decorated]) <= candidate.start or not candidate.end <= end:
                    continue  # nothing under it holds the edit
            todo.extend(ast.iter_child_nodes(node))
        return found

    def names(self, name: str) -> bool:
        """Whether the promises name ``name`` (verbatim, or every word of it)."""
        if name in self.promise_text:
            return True
        words = _WORD.findall(name.lower())
        return bool(words) and all(w in self.promise_words for w in words)


Rule = Callable[[Scope, Candidate], str | None]


def set_aside(scope: Scope, candidate: Candidate) -> str | None:
    """Why ``candidate`` cannot break a promise, or None when it may."""
    for rule in RULES:
        reason = rule(scope, candidate)
        if reason is not None:
            return reason
    return None


def promise_scope(source: Source, quotes: Iterable[str]) -> Scope:
    text = "\n".join(quotes)
    return Scope(source, frozenset(_WORD.findall(text.lower())), text)


# --- the rules ---------------------------------------------------------------------------


def sign_of_a_reduction(scope: Scope, candidate: Candidate) -> str | None:
    if candidate.operator is not MutationOperator.mean_sum:
        return None
    call = scope.node_at(candidate, (ast.Call,))
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return None
    if call.func.attr not in MEAN_SUM:
        return None
    compare = scope.parents.get(id(call))
    if not isinstance(compare, ast.Compare) or len(compare.ops) != 1:
        return None
    other = compare.comparators[0] if compare.left is call else compare.left
    if isinstance(compare.ops[0], ast.Gt | ast.Lt) and _is_zero(other):
        return (
            "a sum and a mean of the same values have the same sign: a strict comparison "
            "with 0 cannot tell them apart"
        )
    return None


def zip_strict_where_lengths_are_checked(scope: Scope, candidate: Candidate) -> str | None:
    if candidate.operator is not MutationOperator.bool_flip:
        return None
    constant = scope.node_at(candidate, (ast.Constant,))
    keyword = scope.parents.get(id(constant)) if constant is not None else None
    if not isinstance(keyword, ast.keyword) or keyword.arg != "strict":
        return None
    call = scope.parents.get(id(keyword))
    if not isinstance(call, ast.Call) or call_name(call) != "zip":
        return None
    zipped = {scope.source.segment(arg) for arg in call.args}
    function = scope.function_of(call)
    if function is None or len(zipped) < 2:
        return None
    if any(zipped <= _compared_lengths(scope.source, node) for node in ast.walk(function)):
        return "zip(strict=) only matters when the lengths differ, and the function checks them"
    return None


def branch_that_only_logs(scope: Scope, candidate: Candidate) -> str | None:
    if candidate.operator not in (MutationOperator.force_branch, MutationOperator.bool_flip):
        return None
    node = scope.node_at(candidate, (ast.If,))
    if not isinstance(node, ast.If):
        return None
    start, end = scope.source.span(node.test)
    if not (start <= candidate.start and candidate.end <= end):
        return None  # an edit inside the body, not of the condition
    if all(arid_statement(s) for s in (*node.body, *node.orelse)):
        return "the branch only logs or asserts: forcing it changes what is printed"
    return None


def default_of_a_configuration(scope: Scope, candidate: Candidate) -> str | None:
    for node in scope.ancestors(_statement_at(scope, candidate)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return None
        if isinstance(node, ast.ClassDef):
            if not _is_configuration(node):
                return None
            statement = _statement_at(scope, candidate)
            name = _target_name(statement)
            if name is None or scope.names(name):
                return None
            return f"the default of {node.name}.{name}, a configuration field no promise names"
    return None


def value_that_only_feeds_metrics(scope: Scope, candidate: Candidate) -> str | None:
    statement = _statement_at(scope, candidate)
    if _metric_sink(statement):
        return "the edit only changes a reported metric"
    name = _target_name(statement)
    function = scope.function_of(statement)
    if name is None or function is None:
        return None
    if _feeds_only_metrics(function, statement, name):
        return f"{name} only feeds reported metrics"
    return None


RULES: tuple[Rule, ...] = (
    sign_of_a_reduction,
    zip_strict_where_lengths_are_checked,
    branch_that_only_logs,
    default_of_a_configuration,
    value_that_only_feeds_metrics,
)


# --- helpers -----------------------------------------------------------------------------


def _metric_name(node: ast.AST) -> bool:
    name = dotted_name(node)
    return name is not None and METRIC_NAME.search(name.rsplit(".", 1)[-1]) is not None


def _metric_sink(statement: ast.AST) -> bool:
    """A statement that stores into what the function reports: ``metrics[k] = v``,
    ``metrics.update(v)``, ``metrics = {...}``, a call of a ``log_metrics``-like function."""
    if isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return all(_metric_name(t.value if isinstance(t, ast.Subscript) else t) for t in targets)
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        receiver = func.value if isinstance(func, ast.Attribute) else None
        called = (call_name(statement.value) or "").rsplit(".", 1)[-1]
        return (receiver is not None and _metric_name(receiver)) or "metric" in called.lower()
    return False


def _reads(node: ast.AST, names: set[str]) -> bool:
    return any(
        isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names
        for n in ast.walk(node)
    )


def _feeds_only_metrics(function: ast.AST, statement: ast.AST, name: str) -> bool:
    """Whether every use of ``name`` after ``statement`` ends in a metric sink: followed
    through plain assignments and through the branches whose condition reads it."""
    tainted, used = {name}, False
    after = statement.end_lineno or statement.lineno  # type: ignore[attr-defined]
    later = sorted(
        (n for n in ast.walk(function) if isinstance(n, ast.stmt) and n.lineno > after),
        key=lambda n: n.lineno,
    )
    for node in later:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            if _reads(node, tainted):
                return False  # a closure carries it away
            continue
        if isinstance(node, ast.If | ast.While):
            if _reads(node.test, tainted):
                used = True
                tainted |= {t for s in node.body + node.orelse for t in _assigned(s)}
            continue
        if isinstance(node, ast.For | ast.AsyncFor):
            if _reads(node.iter, tainted):  # the loop's variable carries it on
                used = True
                tainted |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
            continue
        if isinstance(node, ast.With | ast.AsyncWith | ast.Try):
            if any(_reads(item.context_expr, tainted) for item in getattr(node, "items", ())):
                return False
            continue  # their statements are walked one by one
        if not _reads(node, tainted):
            continue
        used = True
        if _metric_sink(node):
            continue
        if isinstance(node, ast.Assign | ast.AnnAssign) and all(
            isinstance(t, ast.Name)
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        ):
            tainted |= _assigned(node)
            continue
        return False  # returned, stored elsewhere, or passed to a call for its effect
    return used


def _assigned(statement: ast.stmt) -> set[str]:
    """Plain names a statement (or the statements inside it) assigns."""
    found = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found |= {t.id for t in targets if isinstance(t, ast.Name)}
    return found


def _is_zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and not isinstance(node.value, bool) and node.value == 0


def _compared_lengths(source: Source, node: ast.AST) -> set[str]:
    """The arguments of ``len(...)`` on both sides of a comparison, if ``node`` is one."""
    if not isinstance(node, ast.Compare):
        return set()
    sides = [node.left, *node.comparators]
    found = set()
    for side in sides:
        if isinstance(side, ast.Call) and call_name(side) == "len" and len(side.args) == 1:
            found.add(source.segment(side.args[0]))
        else:
            return set()
    return found


def _statement_at(scope: Scope, candidate: Candidate) -> ast.AST:
    found = scope.node_at(candidate, (ast.stmt,))
    return found if found is not None else scope.source.tree


def _is_configuration(node: ast.ClassDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (dotted_name(target) or "").rsplit(".", 1)[-1] == "dataclass":
            return True
    if any(CONFIG_BASES.search(dotted_name(base) or "") for base in node.bases):
        return True
    return CONFIG_CLASS_NAME.search(node.name) is not None


def _target_name(statement: ast.AST) -> str | None:
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return statement.target.id
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        return target.id if isinstance(target, ast.Name) else None
    return None

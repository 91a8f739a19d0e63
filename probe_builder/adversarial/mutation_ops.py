"""Mutation operators: where on one added line a mechanical adversarial edit can go.

Each finder looks at the syntax nodes that begin on a line the golden patch
added and proposes one text edit (a :class:`Candidate`). Arid code — logging,
asserts, docstrings, imports, type hints, edits of ``__all__``, ``__repr__``-style
methods, f-string formatting, lines the PR only re-formatted — yields nothing: a mutant there
tells a maintainer nothing about a promise (Google's "arid node" rule).
"""

from __future__ import annotations

import ast
import re
import sys
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum

from probe_builder.material.pysource import Source, call_name, dotted_name, iter_definitions


class MutationOperator(StrEnum):
    delete_call = "delete_call"
    arith_swap = "arith_swap"
    drop_division = "drop_division"
    mean_sum = "mean_sum"
    compare_flip = "compare_flip"
    bool_flip = "bool_flip"
    constant = "constant"
    force_branch = "force_branch"
    early_return = "early_return"
    drop_clone = "drop_clone"
    bypass_cache = "bypass_cache"
    keep_alive = "keep_alive"
    repeat_collective = "repeat_collective"
    repeat_work = "repeat_work"
    hold_result = "hold_result"
    drop_compile = "drop_compile"


# Calls whose deletion most often breaks a promise (state, memory, traffic, numerics).
# Matched against the callee's last name, whole underscore-separated words only.
CRITICAL_CALL = re.compile(
    r"(?:^|_)(?:reset|invalidate|clear|free|offload|onload|release|synchronize|all_reduce|"
    r"allreduce|broadcast|all_gather|reduce_scatter|barrier|empty_cache|flush|evict|zero_grad|"
    r"sync|wait|copy_|update|refresh|unregister)(?:_|$)",
    re.I,
)
LOGGING_CALL = re.compile(
    r"^(print|pprint|breakpoint)$|(^|\.)(_?logger|_?log|logging|LOG|LOGGER|warnings|console)\."
    r"|\.(debug|info|warning|warn|error|exception|critical|log_metrics)$|^tqdm\.write$"
)
# Collectives that leave every rank's tensors as they were when run twice (the source sends
# the same data again): a second call is what an adversarial of a traffic promise adds.
IDEMPOTENT_COLLECTIVES = frozenset(
    {
        "broadcast",
        "broadcast_object_list",
        "all_gather",
        "all_gather_into_tensor",
        "all_gather_object",
        "_all_gather_base",
    }
)
# Callees that are not the same work done again when called twice: they draw random numbers,
# read a clock, an iterator or a file, send or receive, open a socket, a process or a group,
# touch the file system, or change an object (a model wrapped, sharded or patched in place) or
# a registry (whole underscore-separated words of the callee's last name; a trailing
# underscore is torch's in-place convention).
NOT_REPEATABLE = re.compile(
    r"(?:^|_)(?:rand|randn|randint|randperm|random|sample|shuffle|permutation|choice|multinomial"
    r"|bernoulli|dropout|seed|uuid\d?|time|perf_counter|monotonic|now|next|iter|open|input|read"
    r"|write|print|send|recv|put|get|pop|push|append|extend|insert|remove|add|update|set"
    r"|register|submit|launch|start|stop|wait|sleep|close|save|load|step|backward|emit|acquire"
    r"|release|init|initialize|create|new|allocate|spawn|connect|socket|listen|bind|accept"
    r"|popen|run|call|exec|system|fork|kill|mkdir|makedirs|unlink|rename|generate|forward"
    r"|apply|wrap|shard|patch|replace|inject|attach|enable|disable|freeze|prepare|offload"
    r"|onload|fill|zero|flush|commit|lock|unlock)(?:_|$)|_$",
    re.I,
)
# Arguments that make a call write into what it is given.
WRITING_KEYWORDS = frozenset({"out", "inplace"})
# Where a function first gives an object its attributes: releasing one there releases nothing.
CONSTRUCTORS = frozenset({"__init__", "__post_init__", "__new__", "setUp", "setup_method"})
KEPT = "_probewatch_kept"  # the module-level list a keep_alive mutant appends to
CACHE_NAME = re.compile(r"cache|memo|_hits?\b|lookup", re.I)
NORMALISER_NAME = re.compile(r"size|count|world|num|len|total|denom|n_|scale|steps", re.I)
ARID_FUNCTIONS = {"__repr__", "__str__", "__format__", "__rich_repr__", "__hash__", "extra_repr"}
STAR_EXPORTS = "__all__"  # the names `from module import *` takes
CLONE_METHODS = {"clone", "detach", "copy", "contiguous", "deepcopy"}
COMPILE = re.compile(r"(^|\.)torch\.compile$|^torch_compile$")
CACHE_DECORATORS = re.compile(r"(^|\.)(lru_cache|cache|cached_property|memoize)$")
MEAN_SUM = {
    "mean": "sum",
    "sum": "mean",
    "nanmean": "nansum",
    "nansum": "nanmean",
    "AVG": "SUM",
    "SUM": "AVG",
}

_BINOP_TOKEN: dict[type[ast.operator], tuple[str, str]] = {
    ast.Div: (r"(?<![/*])/(?![/=])", "*"),
    ast.Mult: (r"(?<![*])\*(?![*=])", "/"),
    ast.Add: (r"\+(?!=)", "-"),
    ast.Sub: (r"-(?!=)", "+"),
}
_AUGOP_TOKEN: dict[type[ast.operator], tuple[str, str]] = {
    ast.Add: (r"\+=", "-="),
    ast.Sub: (r"-=", "+="),
    ast.Mult: (r"\*=", "/="),
    ast.Div: (r"(?<!/)/=", "*="),
}
_COMPARE_TOKEN: dict[type[ast.cmpop], tuple[str, str]] = {
    ast.IsNot: (r"\bis\s+not\b", "is"),
    ast.NotIn: (r"\bnot\s+in\b", "in"),
    ast.Is: (r"\bis\b", "is not"),
    ast.In: (r"\bin\b", "not in"),
    ast.LtE: (r"<=", ">"),
    ast.GtE: (r">=", "<"),
    ast.Lt: (r"<(?!=)", ">="),
    ast.Gt: (r">(?!=)", "<="),
    ast.Eq: (r"==", "!="),
    ast.NotEq: (r"!=", "=="),
}


@dataclass(frozen=True)
class Candidate:
    operator: MutationOperator
    line: int
    start: int  # character offsets of the replaced text
    end: int
    replacement: str
    description: str
    critical: bool = False


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def is_logging_call(node: ast.AST) -> bool:
    name = call_name(node)
    return name is not None and LOGGING_CALL.search(name) is not None


def arid_statement(stmt: ast.stmt) -> bool:
    if isinstance(
        stmt, ast.Assert | ast.Import | ast.ImportFrom | ast.Pass | ast.Global | ast.Nonlocal
    ):
        return True
    if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
        return True
    if _edits_star_exports(stmt):
        return True
    return _is_docstring(stmt) or (isinstance(stmt, ast.Expr) and is_logging_call(stmt.value))


def assigned(node: ast.AST) -> list[ast.expr]:
    """The targets ``node`` assigns when it is an assignment (plain, augmented or annotated)."""
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        return [node.target]
    return []


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _edits_star_exports(stmt: ast.stmt) -> bool:
    """``__all__ = [...]``, ``__all__ += [...]``, ``__all__.append(...)``: what
    ``from module import *`` exports, never what the module does."""
    if isinstance(stmt, ast.Assign | ast.AugAssign | ast.AnnAssign):
        targets = assigned(stmt)
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        targets = [func.value] if isinstance(func, ast.Attribute) else []
    else:
        return False
    return bool(targets) and all(isinstance(t, ast.Name) and t.id == STAR_EXPORTS for t in targets)


def arid_lines(source: Source) -> set[int]:
    """Lines where no mutant is made."""
    arid: set[int] = set()
    for definition in iter_definitions(source.tree):
        if definition.node.name in ARID_FUNCTIONS:
            arid.update(definition.lines())
    for node in ast.walk(source.tree):
        if (
            isinstance(node, ast.If)
            and dotted_name(node.test)
            in (
                "TYPE_CHECKING",
                "typing.TYPE_CHECKING",
            )
        ) or (isinstance(node, ast.stmt) and arid_statement(node)):
            arid.update(range(node.lineno, node.end_lineno + 1))  # type: ignore[operator]
    return arid


def own_nodes(stmt: ast.stmt) -> list[ast.AST]:
    """``stmt`` and its nodes outside the statements nested in it (each of which is read on
    its own lines), outer before inner as :func:`ast.walk` gives them: an ``if`` at the head
    of a thousand-branch ``elif`` chain owns its test, not the chain."""
    found: list[ast.AST] = []
    todo: deque[ast.AST] = deque([stmt])
    while todo:
        node = todo.popleft()
        found.append(node)
        todo.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.stmt))
    return found


def _skipped_subtrees(nodes: Sequence[ast.AST]) -> set[int]:
    """ids of nodes under signatures, annotations, f-strings and logging calls."""
    roots: list[ast.AST] = []
    for node in nodes:
        if isinstance(node, ast.arg) and node.annotation is not None:
            roots.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            # Signatures (defaults included) are the contract, not the behaviour.
            roots.extend(
                [node.args, *node.decorator_list, *([node.returns] if node.returns else [])]
            )
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
        elif isinstance(node, ast.JoinedStr) or (
            isinstance(node, ast.Call) and is_logging_call(node)
        ):
            roots.append(node)
    return {id(sub) for root in roots for sub in ast.walk(root)}


def _token_edit(
    source: Source, lo: int, hi: int, pattern: str, replacement: str
) -> tuple[int, int, str] | None:
    match = re.search(pattern, source.text[lo:hi])
    if match is None:
        return None
    return lo + match.start(), lo + match.end(), replacement


def _candidate(
    op: MutationOperator, line: int, edit: tuple[int, int, str] | None, text: str, **kw: bool
) -> Candidate | None:
    if edit is None:
        return None
    return Candidate(op, line, edit[0], edit[1], edit[2], text, **kw)


def _binop(source: Source, node: ast.BinOp) -> Candidate | None:
    line, right = node.lineno, source.segment(node.right)
    if isinstance(node.op, ast.Div) and NORMALISER_NAME.search(right):
        start, end = source.span(node)
        left = source.segment(node.left)
        return Candidate(
            MutationOperator.drop_division,
            line,
            start,
            end,
            f"({left})",
            f"drop division by {right}",
        )
    token = _BINOP_TOKEN.get(type(node.op))
    if token is None:
        return None
    lo, hi = source.span(node.left)[1], source.span(node.right)[0]
    edit = _token_edit(source, lo, hi, token[0], token[1])
    return _candidate(MutationOperator.arith_swap, line, edit, f"swap operator to '{token[1]}'")


def _compare(source: Source, node: ast.Compare) -> Candidate | None:
    op = node.ops[0]
    token = _COMPARE_TOKEN.get(type(op))
    if token is None:
        return None
    lo, hi = source.span(node.left)[1], source.span(node.comparators[0])[0]
    edit = _token_edit(source, lo, hi, token[0], token[1])
    return _candidate(
        MutationOperator.compare_flip, node.lineno, edit, f"flip comparison to '{token[1]}'"
    )


def _boolean(source: Source, node: ast.AST) -> Candidate | None:
    line = node.lineno  # type: ignore[attr-defined]
    if isinstance(node, ast.BoolOp):
        word, other = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        lo, hi = source.span(node.values[0])[1], source.span(node.values[1])[0]
        edit = _token_edit(source, lo, hi, rf"\b{word}\b", other)
        return _candidate(MutationOperator.bool_flip, line, edit, f"'{word}' -> '{other}'")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        start, end = source.span(node)
        operand = source.segment(node.operand)
        return Candidate(MutationOperator.bool_flip, line, start, end, f"({operand})", "drop 'not'")
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        start, end = source.span(node)
        return Candidate(
            MutationOperator.bool_flip,
            line,
            start,
            end,
            str(not node.value),
            f"{node.value} -> {not node.value}",
        )
    return None


def _constant(source: Source, node: ast.Constant) -> Candidate | None:
    value = node.value
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    new: int | float = value + 1 if isinstance(value, int) else (value * 2 if value else 1.0)
    text = f"{source.segment(node)} -> {new!r}"
    return _replacing(MutationOperator.constant, source, node, repr(new), text)


def _replacing(
    operator: MutationOperator, source: Source, node: ast.expr, replacement: str, text: str
) -> Candidate:
    """``node``'s whole text replaced."""
    start, end = source.span(node)
    return Candidate(operator, node.lineno, start, end, replacement, text)


def _call(source: Source, node: ast.Call) -> Candidate | None:
    if COMPILE.search(call_name(node) or "") and node.args:
        compiled = source.segment(node.args[0])
        text = f"run {compiled} eagerly, not compiled"
        return _replacing(MutationOperator.drop_compile, source, node, compiled, text)
    func = node.func
    if not isinstance(func, ast.Attribute):
        return None
    receiver = source.segment(func.value)
    if func.attr in CLONE_METHODS and not node.args:
        text = f"drop .{func.attr}()"
        return _replacing(MutationOperator.drop_clone, source, node, f"({receiver})", text)
    if func.attr in MEAN_SUM:
        lo = source.span(func.value)[1]
        edit = _token_edit(
            source, lo, source.span(node)[1], rf"\b{func.attr}\b", MEAN_SUM[func.attr]
        )
        return _candidate(
            MutationOperator.mean_sum, node.lineno, edit, f".{func.attr} -> .{MEAN_SUM[func.attr]}"
        )
    if func.attr == "get" and CACHE_NAME.search(receiver):
        start, end = source.span(node)
        return Candidate(
            MutationOperator.bypass_cache,
            node.lineno,
            start,
            end,
            "None",
            f"bypass lookup in {receiver}",
        )
    return None


def _reduce_op(source: Source, node: ast.Attribute) -> Candidate | None:
    if node.attr not in ("AVG", "SUM") or "ReduceOp" not in source.segment(node.value):
        return None
    lo, hi = source.span(node.value)[1], source.span(node)[1]
    edit = _token_edit(source, lo, hi, node.attr, MEAN_SUM[node.attr])
    return _candidate(
        MutationOperator.mean_sum,
        node.lineno,
        edit,
        f"ReduceOp.{node.attr} -> {MEAN_SUM[node.attr]}",
    )


def expression_candidates(source: Source, stmt: ast.stmt, line: int) -> Iterator[Candidate]:
    """Edits of expressions that start on ``line`` in ``stmt`` itself (those of a statement
    nested in it are its own: :func:`own_nodes`)."""
    nodes = own_nodes(stmt)
    skipped = _skipped_subtrees(nodes)
    for node in nodes:
        if id(node) in skipped or getattr(node, "lineno", None) != line or node is stmt:
            continue
        found = _expression(source, node)
        if found is not None:
            yield found


def _expression(source: Source, node: ast.AST) -> Candidate | None:
    if isinstance(node, ast.BinOp):
        return _binop(source, node)
    if isinstance(node, ast.Compare):
        return _compare(source, node)
    if isinstance(node, ast.BoolOp | ast.UnaryOp):
        return _boolean(source, node)
    if isinstance(node, ast.Constant):
        return _boolean(source, node) if isinstance(node.value, bool) else _constant(source, node)
    if isinstance(node, ast.Call):
        return _call(source, node)
    if isinstance(node, ast.Attribute):
        return _reduce_op(source, node)
    return None


def _delete_call(source: Source, stmt: ast.Expr) -> Candidate | None:
    value = stmt.value.value if isinstance(stmt.value, ast.Await) else stmt.value
    if not isinstance(value, ast.Call):
        return None
    name = call_name(value) or source.segment(value.func)
    start, end = source.span(stmt)
    critical = CRITICAL_CALL.search(name.rsplit(".", 1)[-1]) is not None
    return Candidate(
        MutationOperator.delete_call,
        stmt.lineno,
        start,
        end,
        "pass",
        f"delete call {name}()",
        critical,
    )


def _repeat_collective(source: Source, stmt: ast.Expr) -> Candidate | None:
    """An idempotent collective run twice: every rank ends as before, with twice the bytes
    sent (a traffic promise broken and nothing else)."""
    if not isinstance(stmt.value, ast.Call):
        return None
    name = call_name(stmt.value) or source.segment(stmt.value.func)
    if name.rsplit(".", 1)[-1] not in IDEMPOTENT_COLLECTIVES:
        return None
    start, end = source.span(stmt)
    text = source.segment(stmt)
    return Candidate(
        MutationOperator.repeat_collective,
        stmt.lineno,
        start,
        end,
        f"{text}; {text}",
        f"run {name}() twice",
        critical=True,
    )


def _force_branch(source: Source, stmt: ast.If | ast.While) -> Candidate | None:
    if isinstance(stmt, ast.While):
        return None
    test_text = source.segment(stmt.test)
    start, end = source.span(stmt.test)
    if CACHE_NAME.search(test_text):
        return Candidate(
            MutationOperator.bypass_cache,
            stmt.lineno,
            start,
            end,
            "False",
            f"bypass cache check '{test_text}'",
        )
    forced = "True" if stmt.orelse else "False"
    return Candidate(
        MutationOperator.force_branch,
        stmt.lineno,
        start,
        end,
        forced,
        f"'if {test_text}:' -> 'if {forced}:'",
    )


def _cache_decorator(
    source: Source, stmt: ast.FunctionDef | ast.AsyncFunctionDef, line: int
) -> Candidate | None:
    """A caching decorator dropped (the work done again), or a compiling one (the function
    run eagerly)."""
    for decorator in stmt.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = dotted_name(target) or ""
        if decorator.lineno != line:
            continue
        start = source.offset(line, 0)
        end = source.offset(line + 1, 0) if line < len(source.lines) else len(source.text)
        if CACHE_DECORATORS.search(name):
            return Candidate(MutationOperator.bypass_cache, line, start, end, "", f"drop @{name}")
        if COMPILE.search(name):
            return Candidate(MutationOperator.drop_compile, line, start, end, "", f"drop @{name}")
    return None


def statement_candidates(source: Source, stmt: ast.stmt, line: int) -> Iterator[Candidate]:
    """Edits of the statement ``stmt`` itself when it starts on ``line``."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        found = _cache_decorator(source, stmt, line)
        if found is not None:
            yield found
    if stmt.lineno != line:
        return
    if isinstance(stmt, ast.Expr):
        found = _repeat_collective(source, stmt) or _delete_call(source, stmt)
    elif isinstance(stmt, ast.If | ast.While):
        found = _force_branch(source, stmt)
    elif isinstance(stmt, ast.AugAssign) and type(stmt.op) in _AUGOP_TOKEN:
        pattern, new = _AUGOP_TOKEN[type(stmt.op)]
        lo, hi = source.span(stmt.target)[1], source.span(stmt.value)[0]
        found = _candidate(
            MutationOperator.arith_swap,
            line,
            _token_edit(source, lo, hi, pattern, new),
            f"'{new}' update",
        )
    else:
        found = None
    if found is not None:
        yield found


def early_return(
    source: Source, function: ast.FunctionDef | ast.AsyncFunctionDef, line: int
) -> Candidate | None:
    """``return`` inserted before a later top-level statement of a procedure."""
    if any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(function)):
        return None  # a function with a value would only crash, not violate a promise
    if any(isinstance(n, ast.Yield | ast.YieldFrom) for n in ast.walk(function)):
        return None
    body = function.body[1:] if function.body and _is_docstring(function.body[0]) else function.body
    for index, stmt in enumerate(body[1:], 1):
        if stmt.lineno == line and source.starts_line(stmt) and not arid_statement(stmt):
            if function.name in CONSTRUCTORS and _sets_own_attribute(function, body[index:]):
                return None  # a half-built object: the first use of what is missing crashes
            at = source.offset(line, 0)
            indent = source.indent_of(line)
            return Candidate(
                MutationOperator.early_return,
                line,
                at,
                at,
                f"{indent}return\n",
                "return before this statement",
            )
    return None


def _sets_own_attribute(
    function: ast.FunctionDef | ast.AsyncFunctionDef, statements: list[ast.stmt]
) -> bool:
    """One of ``statements`` gives the object (the method's first parameter) an attribute."""
    params = [*function.args.posonlyargs, *function.args.args]
    if not params:
        return False
    own = params[0].arg
    return any(
        isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == own
        for stmt in statements
        for node in ast.walk(stmt)
        for t in assigned(node)
    )


HELD_TARGETS = (ast.Name, ast.Attribute, ast.Subscript)


def _released(stmt: ast.stmt) -> list[ast.expr]:
    """What ``stmt`` lets go of: the targets of ``del``, or of ``... = None``."""
    if isinstance(stmt, ast.Delete):
        found: list[ast.expr] = []
        for target in stmt.targets:
            found.extend(target.elts if isinstance(target, ast.Tuple | ast.List) else [target])
        return found
    if isinstance(stmt, ast.Assign) and _is_none(stmt.value):
        return list(stmt.targets)
    return []


def _binds(stmt: ast.stmt, name: str) -> bool:
    """``stmt`` itself gives ``name`` a value other than None (not in a branch inside it)."""
    if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
        given = stmt.value is not None and not (
            isinstance(stmt, ast.Assign) and _is_none(stmt.value)
        )
        targets = assigned(stmt) if given else []
    elif isinstance(stmt, ast.For | ast.AsyncFor):
        targets = [stmt.target]
    elif isinstance(stmt, ast.With | ast.AsyncWith):
        targets = [i.optional_vars for i in stmt.items if i.optional_vars is not None]
    else:
        return False
    names = [n for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return any(n.id == name for n in names)


def _path_to(body: list[ast.stmt], target: ast.stmt) -> list[tuple[list[ast.stmt], int]] | None:
    """The blocks from ``body`` down to ``target``, each with the index of the statement
    that holds it."""
    for index, stmt in enumerate(body):
        if stmt is target:
            return [(body, index)]
        blocks = [getattr(stmt, f, []) for f in ("body", "orelse", "finalbody")]
        blocks += [h.body for h in getattr(stmt, "handlers", [])]
        for block in blocks:
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                found = _path_to(block, target)
                if found is not None:
                    return [(body, index), *found]
    return None


def _bound_before(
    function: ast.FunctionDef | ast.AsyncFunctionDef, name: str, stmt: ast.stmt
) -> bool:
    """``name`` holds a value other than None whenever ``stmt`` runs: a parameter, or given
    one by a statement before it in its block or in a block around it (a loop over it, a
    ``with ... as`` it), not by one branch of an earlier ``if``."""
    arguments = function.args
    params = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    params += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    if any(a.arg == name for a in params):
        return True
    path = _path_to(function.body, stmt) or []
    for block, index in path:
        if any(_binds(earlier, name) for earlier in block[:index]):
            return True
        if block[index] is not stmt and _binds(block[index], name):
            return isinstance(block[index], ast.For | ast.AsyncFor | ast.With | ast.AsyncWith)
    return False


def _repeatable(source: Source, call: ast.Call, targets: set[str]) -> str | None:
    """The callee's dotted name when calling it again does the same work and changes
    nothing: a function (not a method of the object, nor a class, nor a callable object a
    name holds) that draws no random number and writes nothing, on arguments that make no
    call of their own and do not read what the statement assigns."""
    name = dotted_name(call.func)
    if name is None:
        return None
    root, last = name.split(".")[0], name.rsplit(".", 1)[-1]
    if root in ("self", "cls", "super") or last[:1].isupper() or NOT_REPEATABLE.search(last):
        return None
    if "_" not in last.strip("_") and root not in source.imported_names:
        return None  # ``model(x)``, ``fn(x)``: an object whose call may keep state
    if any(k.arg in WRITING_KEYWORDS for k in call.keywords):
        return None
    arguments = [*call.args, *(k.value for k in call.keywords)]
    for node in (n for a in arguments for n in ast.walk(a)):
        if isinstance(node, ast.Call | ast.Await | ast.Yield | ast.YieldFrom | ast.NamedExpr):
            return None
        if isinstance(node, ast.Lambda) or (isinstance(node, ast.Name) and node.id in targets):
            return None
    return name


def _assigned_call(
    source: Source, function: ast.FunctionDef | ast.AsyncFunctionDef, stmt: ast.stmt
) -> tuple[ast.Assign, ast.Call] | None:
    """The assignment and its call when ``stmt`` assigns a call's result, starts its line and
    is not in a constructor: where repeat_work and hold_result may add a line."""
    if function.name in CONSTRUCTORS or not source.starts_line(stmt):
        return None
    if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Call):
        return None
    return stmt, stmt.value


def repeat_work(
    source: Source, function: ast.FunctionDef | ast.AsyncFunctionDef, stmt: ast.stmt
) -> Candidate | None:
    """A computation the statement assigns (``w = compute_weights(a, b)``) done twice, the
    first result thrown away: the code computes the same and does the work again (a time
    promise broken, "computed once", "no redundant work", and nothing else). Only a call
    whose second run changes nothing (:func:`_repeatable`), assigned to plain names."""
    if (assigned := _assigned_call(source, function, stmt)) is None:
        return None
    assign, call = assigned
    names = [n for t in assign.targets for n in ast.walk(t)]
    plain = all(isinstance(n, ast.Name | ast.Tuple | ast.List | ast.Store) for n in names)
    if not plain:
        return None
    targets = {n.id for n in names if isinstance(n, ast.Name)}
    name = _repeatable(source, call, targets)
    if name is None:
        return None
    # on a line of its own before the statement: the diff shows the call added, nothing removed
    at = source.offset(stmt.lineno, 0)
    twice = f"{source.indent_of(stmt.lineno)}{source.segment(call)}\n"
    description = f"compute {name}() twice"
    return Candidate(MutationOperator.repeat_work, stmt.lineno, at, at, twice, description)


# A call that looks something up rather than computes it (``get_group()``, ``is_ready()``,
# ``len(x)``): its result is held elsewhere already, or is too small to matter.
LOOKUP = re.compile(r"^_*(get|is|has|current|default|find|lookup|len|count|num|size)(_|$)", re.I)
# A call that opens or starts something (a client, a process group, a remote actor, a loaded
# class): holding it keeps a connection or a process alive, more than memory.
OPENS = re.compile(
    r"(?:^|_)(?:create|new|open|connect|client|socket|spawn|remote|group|process|thread|pool"
    r"|session|server|launch|start|init|initialize|load|extern)(?:_|$)",
    re.I,
)


def _computed_by(source: Source, call: ast.Call) -> str | None:
    """The callee's dotted name when the call computes a new value: a function (not a class
    nor a class's factory) of a package the module imports, not of the standard library,
    that neither looks something up nor opens something."""
    name = dotted_name(call.func)
    if name is None:
        return None
    root, last = name.split(".")[0], name.rsplit(".", 1)[-1]
    package = source.imported_from.get(root)
    if package is None or package in sys.stdlib_module_names or package == "__future__":
        return None
    if root[:1].isupper() or last[:1].isupper() or LOOKUP.search(last) or OPENS.search(last):
        return None  # a class, its factory (``OmegaConf.create``), a lookup, something opened
    return name


def hold_result(
    source: Source, function: ast.FunctionDef | ast.AsyncFunctionDef, stmt: ast.stmt
) -> Candidate | None:
    """What the statement computes (``w = torch.exp(log_ratio)``) also appended to a
    module-level list: the code computes the same, and every call's result stays in memory
    (a memory promise broken, "memory-efficient", "no large intermediate tensors", and
    nothing else: the tensor kept for logging that holds a step's memory). Only a name
    assigned the result of a call that computes a new value (:func:`_computed_by`)."""
    if (assigned := _assigned_call(source, function, stmt)) is None:
        return None
    assign, call = assigned
    if len(assign.targets) != 1 or not isinstance(target := assign.targets[0], ast.Name):
        return None
    end = stmt.end_lineno or stmt.lineno
    line_end = source.offset(end, 0) + len(source.line_text(end))  # the next line's start
    after = source.text[source.span(stmt)[1] : line_end].strip()
    if after and not after.startswith("#"):
        return None  # ``w = f(x); return w``: a line after it may never run
    name = _computed_by(source, call)
    if name is None:
        return None
    # on a line of its own after the statement: the diff shows a line added, nothing removed
    text = (
        f'{source.indent_of(stmt.lineno)}globals().setdefault("{KEPT}", []).append({target.id})\n'
    )
    if source.text[line_end - 1 : line_end] != "\n":
        text = "\n" + text  # the statement ends the file without a newline
    description = f"hold every {name}() result alive"
    return Candidate(
        MutationOperator.hold_result, stmt.lineno, line_end, line_end, text, description
    )


def _read_back(source: Source, target: ast.expr, assigned: bool) -> str:
    """How the mutant reads what a statement releases. An attribute set to None may not
    be there yet (a reset before the first fill): read with a default, so the mutant does
    not fail where the golden code does not."""
    if assigned and isinstance(target, ast.Attribute):
        return f'getattr({source.segment(target.value)}, "{target.attr}", None)'
    return source.segment(target)


def keep_alive(
    source: Source, function: ast.FunctionDef | ast.AsyncFunctionDef, stmt: ast.stmt
) -> Candidate | None:
    """A reference ``stmt`` of the function releases (``del x``, ``self.buf = None``) kept
    in a module-level list instead: the code computes the same, and the memory stays held
    across calls (a memory promise broken and nothing else). Not in a constructor, where
    ``= None`` gives an attribute its first value, nor for a name with no earlier value."""
    if function.name in CONSTRUCTORS or not source.starts_line(stmt):
        return None
    targets = _released(stmt)
    if not targets or not all(isinstance(t, HELD_TARGETS) for t in targets):
        return None
    names = [t.id for t in targets if isinstance(t, ast.Name)]
    unbound = [n for n in names if not _bound_before(function, n, stmt)]
    if isinstance(stmt, ast.Assign) and unbound:
        return None
    kept = ", ".join(source.segment(t) for t in targets)
    read = ", ".join(_read_back(source, t, isinstance(stmt, ast.Assign)) for t in targets)
    at = source.span(stmt)[0]
    return Candidate(
        MutationOperator.keep_alive,
        stmt.lineno,
        at,
        at,
        f'globals().setdefault("{KEPT}", []).extend(({read},)); ',
        f"keep {kept} alive instead of releasing it",
    )

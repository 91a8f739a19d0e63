"""Assertion profile of a PR's test diff, read from the syntax tree.

Every assertion on an added line (``assert``, ``self.assert*``/``assert_*``
calls, ``pytest.raises`` blocks) is counted by kind: error path, resource
(it observes memory, time, bytes or call counts, directly or through a name
bound from such an API earlier in the same test; a profiler's trace observes which
kernels and collectives ran and, through its events' spans, when), numeric (allclose and
tolerances, a hand-written one too: a gap between two results under a small
number), structural (shape, dtype, attribute, type, None, a finite value) or functional.
Per test function the profile also records whether it drives one object
through repeated calls and a reset (state), and whether it captures, replays
or compiles, or switches such an option on (mode); a test reaches what it names
in code, in an import-path string, through a subclass its file defines, or through
what its class's set-up method builds, and an assertion depends on what a wrapper
installed on an object, or a call given it (for its effect, or writing into it through
the handle it returns), did to that object. The tables of API names are data.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from probe_builder.gitio import TreeReader
from probe_builder.material.diffs import FileDiff
from probe_builder.material.pysource import (
    Definition,
    ImportBinding,
    Source,
    UnparsableSource,
    call_name,
    dotted_name,
    import_bindings,
    iter_definitions,
)
from probewatch.testfiles import is_pytest_module


class AssertionKind(StrEnum):
    functional = "functional"
    structural = "structural"
    numeric = "numeric"
    error_path = "error_path"
    resource = "resource"


class Observable(StrEnum):
    """What a resource assertion measures."""

    memory = "memory"
    time = "time"
    bytes = "bytes"
    calls = "calls"


OBSERVABLE_CALLS: tuple[tuple[re.Pattern[str], Observable], ...] = (
    (
        re.compile(
            r"memory_(allocated|reserved|stats|info|usage|summary)|max_memory|mem_get_info|get_traced_memory|peak_memory|memory_snapshot"
        ),
        Observable.memory,
    ),
    (
        re.compile(
            r"(^|\.)(perf_counter|monotonic|process_time|elapsed_time|timeit|time_ns)$|^time\.time$|(^|\.)Timer$"
        ),
        Observable.time,
    ),
    (
        re.compile(
            r"(^|\.)(nbytes|element_size|num_bytes|bytes_sent|bytes_received|get_payload_size)$"
        ),
        Observable.bytes,
    ),
    # a profiler's trace: which kernels and collectives ran, how often (its events' times
    # and memory are read through the attributes below)
    (re.compile(r"^(torch\.)?(autograd\.)?(profiler\.)?profile$"), Observable.calls),
)
OBSERVABLE_ATTRS: dict[str, Observable] = {
    "call_count": Observable.calls,
    "called": Observable.calls,
    "await_count": Observable.calls,
    "mock_calls": Observable.calls,
    "call_args_list": Observable.calls,
    "nbytes": Observable.bytes,
    "ru_maxrss": Observable.memory,
    "rss": Observable.memory,
    # a profiler event's span and totals: when and how long a kernel or collective ran
    "time_range": Observable.time,
    "cuda_time_total": Observable.time,
    "self_cuda_time_total": Observable.time,
    "device_time_total": Observable.time,
    "self_device_time_total": Observable.time,
    "cpu_time_total": Observable.time,
    "self_cpu_time_total": Observable.time,
    "cuda_memory_usage": Observable.memory,
    "self_cuda_memory_usage": Observable.memory,
    "device_memory_usage": Observable.memory,
    "self_device_memory_usage": Observable.memory,
}
OBSERVABLE_NAME = re.compile(r"(^|_)(n?bytes|num_calls|calls_made|call_count)($|_)", re.I)
NUMERIC_CALLS = {
    "allclose",
    "isclose",
    "assert_close",
    "assert_allclose",
    "approx",
    "equal",
    "array_equal",
    "assert_array_equal",
    "assert_array_almost_equal",
    "assert_almost_equal",
    "assertAlmostEqual",
    "assertNotAlmostEqual",
    "assert_equal",
}
NOT_CLOSE_CALLS = {"assertNotAlmostEqual", "assert_not_close"}
STRUCTURAL_ATTRS = {
    "shape",
    "dtype",
    "device",
    "ndim",
    "layout",
    "is_cuda",
    "requires_grad",
    "is_leaf",
    "names",
}
KEY_CALLS = {"assertIn", "assertNotIn"}
STRUCTURAL_CALLS = {
    "isinstance",
    "issubclass",
    "hasattr",
    "callable",
    "len",
    "size",
    "dim",
    "type",
    "is_contiguous",
    "assertIsInstance",
    "assertIsNone",
    "assertIsNotNone",
    "assertIs",
    "assertIsNot",
    "assertHasAttr",
}
# A value that is finite (not NaN, not inf) is true of almost anything the code returns: it
# says no more of behaviour than a shape does ("assert torch.isfinite(out).all()",
# "assert _has_finite_grad(model)").
FINITE_CALL = re.compile(r"^(isfinite|isnan|isinf|isneginf|isposinf)$|finite", re.I)
RAISES_CALLS = re.compile(r"(^|\.)(raises|assertRaises\w*)$")
CALL_ASSERTS = re.compile(
    r"^(assert_(not_)?called\w*|assert_has_calls|assert_(not_)?awaited\w*|assert_any_call)$"
)
ASSERT_CALL = re.compile(r"^(assert\w*|fail)$")
RESET_METHODS = re.compile(
    r"^(reset\w*|clear\w*|invalidate\w*|reinit\w*|refresh\w*|refit\w*|evict\w*|restart|offload\w*|onload\w*|wake_up|sleep|resume|load_state_dict|zero_\w*|free\w*|release\w*|restore\w*)$"
)
# The key under which a module's bindings hold the names its imports bind to modules: no
# identifier can be it.
MODULE_NAMES = "<modules>"
# Receivers every call in a method goes through: binding through them would make every
# assertion depend on everything the test touches.
SHARED_RECEIVERS = frozenset({"self", "cls"})
# A save followed by a load: the state after it is the state the save kept.
SAVE_NAMES = re.compile(r"(^|_)(save|dump|serialize|write|checkpoint)(_|$)|^state_dict$", re.I)
LOAD_NAMES = re.compile(
    r"(^|_)(load|restore|deserialize|read|resume)(_|$)|^load_state_dict$|^from_pretrained$", re.I
)
# A call that carries one model's weights into another (``swap_model_weights(src, dst)``,
# ``sync_weights``, a refit): what is asserted on the receiver afterwards is state carried
# over, as after a save and a load.
TRANSFER_NAMES = re.compile(
    r"(^|_)(swap|sync|synchroni[sz]e|transfer|refit|broadcast|send|update|copy)_(\w+_)?"
    r"(weights?|params|parameters)(_|$)|(^|_)refit(_|$)",
    re.I,
)
# Functions pytest calls around tests, or a file's private helpers: not entry points.
FIXTURE = re.compile(r"^(_|setup|teardown|setUp|tearDown)")
# Methods pytest and unittest run before each test of their class: what they build
# (``self.model = GPTModel(...)``) is what the class's tests run.
SET_UP = ("setUp", "setup_method", "setup_class", "setUpClass", "setup")
# A mark that skips whatever it decorates every time (``skipif`` and ``skipUnless`` depend on
# the machine, so they do not count): the test never runs, so it reaches nothing.
SKIP_ALWAYS = re.compile(r"^(pytest\.mark|unittest)\.skip$|^skip$")
# Calls that capture, replay or compile: the code after them runs under the mode.
MODE_CALLS = re.compile(
    r"^torch\.compile$|^(?!re\.|regex\.)[\w.]+\.compile$|cuda\.graph$|(^|\.)CUDAGraph$"
    r"|make_graphed_callables|capture_begin|(^|[._])replay\w*$|_dynamo"
    r"|(?i:(create|capture|build|record|make|warmup)\w*(cuda_?graph|cudagraph))"
)
# A setting that switches the mode on (``cuda_graph_impl="local"``, ``enable_cuda_graph=True``).
MODE_SETTING = re.compile(r"cuda_?graph|cudagraph|compile", re.I)
OFF_VALUES = frozenset({"", "none", "false", "off", "no", "eager"})
COMM_NAMES = re.compile(
    r"all_reduce|allreduce|broadcast|all_gather|allgather|reduce_scatter|all_to_all|\bsend\b|\brecv\b|isend|irecv|p2p|transfer|sync_weights|update_weights|bucket"
)

# What a test that runs several ranks (processes of a group) refers to.
MULTI_RANK_NAMES = re.compile(
    r"init_process_group|initialize_model_parallel|initialize_distributed|world_size"
    r"|mp\.spawn|multiprocessing|start_processes|torchrun|spawn|new_group|DistributedTest"
    r"|MultiProcessTestCase|run_distributed|with_comms"
)


@dataclass(frozen=True)
class AssertionSite:
    path: str
    line: int
    test: str  # qualified name of the enclosing function, "" at module level
    kind: AssertionKind
    observables: tuple[Observable, ...]
    text: str  # first line of the assertion
    depends_on: frozenset[str] = frozenset()  # names its value is computed from
    across_calls: bool = False  # two results of one method, or a value and its earlier copy
    # true of any object built as the test built it: a literal it was given read back, or its
    # type the class it was built from (``isinstance(model, Model)`` after ``Model(...)``)
    echo: bool = False


@dataclass(frozen=True)
class TestTraits:
    __test__ = False
    path: str
    name: str
    line: int
    references: frozenset[str]  # every dotted name the function uses
    repeated_with_reset: bool  # one object: repeated calls, then a reset
    reset_line: int | None
    under_mode: bool  # captures, replays or compiles, or switches that option on
    talks_comm: bool  # mentions a communication primitive
    multi_rank: bool = False  # starts or joins a group of several ranks
    helpers: frozenset[str] = frozenset()  # functions of its own file it calls
    round_trip_line: int | None = None  # a load after a save, or weights carried over
    modules: frozenset[str] = frozenset()  # modules it takes names from, through its file's imports
    cases: tuple[str, ...] = ()  # the strings of its parametrization: its cases' ids


@dataclass(frozen=True)
class AssertionProfile:
    assertions: tuple[AssertionSite, ...]
    tests: tuple[TestTraits, ...]
    # test files this Python cannot parse, each as where and why (``tests/t.py:3: invalid syntax``)
    unparsed: tuple[str, ...] = ()
    # A helper's assertions seen from each call a test makes to it (see ``through_calls``).
    called: tuple[AssertionSite, ...] = ()

    def counts(self) -> dict[AssertionKind, int]:
        counter = Counter(a.kind for a in self.assertions)
        return {kind: counter.get(kind, 0) for kind in AssertionKind}

    def in_test(self, test: TestTraits) -> list[AssertionSite]:
        """The test's assertions, those of the helpers of its file that it calls, and those
        helpers' assertions as seen from the test's calls."""
        names = {test.name, *test.helpers}
        own = [a for a in self.assertions if a.path == test.path and a.test in names]
        return own + [a for a in self.called if a.path == test.path and a.test == test.name]


# What a file's helpers return a measurement of: by position in a returned tuple, or None
# for the whole value.
Returned = Mapping[str, Mapping[int | None, set[Observable]]]


def _observables(
    expr: ast.AST,
    taint: dict[str, set[Observable]],
    returned: Returned | None = None,
) -> set[Observable]:
    found: set[Observable] = set()
    for node in ast.walk(expr):
        name = call_name(node) if isinstance(node, ast.Call) else None
        if name:
            found.update(obs for pattern, obs in OBSERVABLE_CALLS if pattern.search(name))
            by_position = (returned or {}).get(name.rsplit(".", 1)[-1], {})
            found.update(*by_position.values())
            if CALL_ASSERTS.match(name.rsplit(".", 1)[-1]):
                found.add(Observable.calls)
        if isinstance(node, ast.Attribute) and node.attr in OBSERVABLE_ATTRS:
            found.add(OBSERVABLE_ATTRS[node.attr])
        dotted = dotted_name(node) if isinstance(node, ast.Name | ast.Attribute) else None
        if dotted is not None:
            found.update(taint.get(dotted, ()))
            if OBSERVABLE_NAME.search(dotted.rsplit(".", 1)[-1]):
                found.add(Observable.calls if "call" in dotted.lower() else Observable.bytes)
    return found


def _taint(function: ast.AST, returned: Returned | None = None) -> dict[str, set[Observable]]:
    """Names bound (possibly through other names) from resource-observing expressions; of a
    tuple a helper returns, only the names bound to its measured elements."""
    taint: dict[str, set[Observable]] = {}
    assigns = [
        n for n in ast.walk(function) if isinstance(n, ast.Assign | ast.AnnAssign | ast.AugAssign)
    ]
    withs = [
        item
        for n in ast.walk(function)
        if isinstance(n, ast.With | ast.AsyncWith)
        for item in n.items
    ]
    for _ in range(3):  # a short fixpoint: t1 = perf_counter(); dt = t1 - t0; ms = dt * 1e3
        for item in withs:  # ``with profile(...) as prof``: the name holds what it observes
            observed = _observables(item.context_expr, taint, returned)
            if observed and isinstance(item.optional_vars, ast.Name):
                taint.setdefault(item.optional_vars.id, set()).update(observed)
        for node in assigns:
            value = node.value
            if value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            unpacked = _unpacked(value, targets, returned or {})
            if unpacked is not None:
                for bound, measured in unpacked:
                    taint.setdefault(bound, set()).update(measured)
                continue
            observed = _observables(value, taint, returned)
            for target in targets:
                for sub in ast.walk(target):
                    name = dotted_name(sub) if isinstance(sub, ast.Name | ast.Attribute) else None
                    if name and observed:
                        taint.setdefault(name, set()).update(observed)
    return taint


def _helper_result(value: ast.AST, returned: Returned) -> Mapping[int | None, set[Observable]]:
    name = call_name(value) if isinstance(value, ast.Call) else None
    return returned.get(name.rsplit(".", 1)[-1], {}) if name else {}


def _unpacked(
    value: ast.AST, targets: Sequence[ast.AST], returned: Returned
) -> list[tuple[str, set[Observable]]] | None:
    """``logits, peak = run_step(...)`` where the helper returns a tuple: each name with what
    its element measures. None when the assignment is not of that shape."""
    by_position = _helper_result(value, returned)
    if not by_position or None in by_position:
        return None
    if len(targets) != 1 or not isinstance(targets[0], ast.Tuple | ast.List):
        return None
    bound = []
    for index, element in enumerate(targets[0].elts):
        dotted = dotted_name(element) if isinstance(element, ast.Name | ast.Attribute) else None
        if dotted and by_position.get(index):
            bound.append((dotted, by_position[index]))
    return bound


def returned_observables(
    functions: Mapping[str, ast.AST],
) -> dict[str, dict[int | None, set[Observable]]]:
    """What each function of a file returns a measurement of (a helper that runs a step and
    returns ``torch.cuda.max_memory_allocated()``, or a time), through helpers it calls; of a
    returned tuple, by position."""
    returned: dict[str, dict[int | None, set[Observable]]] = {}
    for _ in range(2):  # a helper returning another helper's measurement
        for name, function in functions.items():
            taint = _taint(function, returned)
            found: dict[int | None, set[Observable]] = {}
            for node in ast.walk(function):
                if not isinstance(node, ast.Return) or node.value is None:
                    continue
                parts = (
                    list(enumerate(node.value.elts))
                    if isinstance(node.value, ast.Tuple)
                    else [(None, node.value)]
                )
                for index, part in parts:
                    passed = _helper_result(part, returned) if index is None else None
                    if passed:  # ``return _run_step(...)``: the helper's tuple, as it is
                        for position, observed in passed.items():
                            found.setdefault(position, set()).update(observed)
                        continue
                    observed = _observables(part, taint, returned)
                    if observed:
                        found.setdefault(index, set()).update(observed)
            if found:
                returned[name.rsplit(".", 1)[-1]] = found
    return returned


def _names_called(expr: ast.AST) -> set[str]:
    return {n.rsplit(".", 1)[-1] for node in ast.walk(expr) if (n := call_name(node))}


def classify(
    expr: ast.AST,
    taint: dict[str, set[Observable]],
    returned: Returned | None = None,
) -> tuple[AssertionKind, set[Observable]]:
    """Kind of an assertion whose checked expression (or call) is ``expr``; of ``a and b``,
    the strongest of its parts (``hasattr(w, "dim") and w.dim == 0`` checks the value)."""
    if isinstance(expr, ast.BoolOp) and isinstance(expr.op, ast.And):
        parts = [classify(value, taint, returned) for value in expr.values]
        return max(parts, key=lambda part: CONJUNCT_STRENGTH.index(part[0]))
    observed = _observables(expr, taint, returned)
    if observed:
        return AssertionKind.resource, observed
    called = _names_called(expr)
    keywords = {
        k.arg for node in ast.walk(expr) if isinstance(node, ast.Call) for k in node.keywords
    }
    tolerance = keywords & {"atol", "rtol", "rel", "abs", "places", "delta"}
    if called & NUMERIC_CALLS or tolerance or _within_tolerance(expr):
        if _only_differs(expr):
            return AssertionKind.functional, set()  # something changed, not how close it is
        return AssertionKind.numeric, set()
    attrs = {n.attr for n in ast.walk(expr) if isinstance(n, ast.Attribute)}
    none_check = any(
        isinstance(n, ast.Compare)
        and any(isinstance(op, ast.Is | ast.IsNot) for op in n.ops)
        and not _identity_value(n)
        for n in ast.walk(expr)
    )
    finite = any(FINITE_CALL.search(name) for name in called)
    if (
        attrs & STRUCTURAL_ATTRS
        or called & STRUCTURAL_CALLS
        or none_check
        or finite
        or _key_presence(expr)
    ):
        return AssertionKind.structural, set()
    return AssertionKind.functional, set()


# The kinds of the parts of ``a and b``, weakest first: the assertion is as strong as its
# strongest part.
CONJUNCT_STRENGTH = (
    AssertionKind.structural,
    AssertionKind.error_path,
    AssertionKind.functional,
    AssertionKind.numeric,
    AssertionKind.resource,
)

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def _identity_value(compare: ast.Compare) -> bool:
    """``f(x) is True`` / ``is False``: the value a function returns for this input, not
    whether something exists (``is None`` after a reset tells a state apart, no more)."""
    if len(compare.ops) != 1 or not isinstance(compare.ops[0], ast.Is):
        return False
    right = compare.comparators[0]
    return isinstance(right, ast.Constant) and isinstance(right.value, bool)


# What a hand-written tolerance bounds: a difference, an error or a distance.
_GAP_NAME = re.compile(r"diff|err|delta|dist|gap|deviation|mismatch", re.I)
_GAP_CALLS = {"abs", "norm", "max", "amax", "mean", "sum", "sub", "fabs"}
LESS_CALLS = {"assertLess", "assertLessEqual", "assert_less"}


def _within_tolerance(expr: ast.AST) -> bool:
    """``assert rel_diff < 1e-2``, ``assert (a - b).abs().max() <= 1e-5``,
    ``assertLess(err, 1e-3)``: a gap between two results bounded by a small number."""
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
        gap, bound = expr.left, expr.comparators[0]
        if isinstance(expr.ops[0], ast.Gt | ast.GtE):
            gap, bound = bound, gap
        elif not isinstance(expr.ops[0], ast.Lt | ast.LtE):
            return False
    elif isinstance(expr, ast.Call) and (call_name(expr) or "").rsplit(".", 1)[-1] in LESS_CALLS:
        if len(expr.args) < 2:
            return False
        gap, bound = expr.args[0], expr.args[1]
    else:
        return False
    return _small(bound) and _is_gap(gap)


def _small(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, float) and 0 < node.value < 1


def _is_gap(node: ast.AST) -> bool:
    for child in ast.walk(node):
        if isinstance(child, ast.BinOp) and isinstance(child.op, ast.Sub):
            return True
        name = child.id if isinstance(child, ast.Name) else getattr(child, "attr", None)
        if isinstance(name, str) and (_GAP_NAME.search(name) or name in _GAP_CALLS):
            return True
    return False


def _only_differs(expr: ast.AST) -> bool:
    """``not torch.allclose(a, b)`` or ``assertNotAlmostEqual``: two values differ, which
    any change to either gives; no tolerance bounds a result."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        return True
    return (call_name(expr) or "").rsplit(".", 1)[-1] in NOT_CLOSE_CALLS


def _key_presence(expr: ast.AST) -> bool:
    """``"key" in result`` or ``assertIn("key", result)``: the key is there whatever its value
    (a literal with spaces or punctuation is text looked for in an output, a value check)."""
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
        left, op = expr.left, expr.ops[0]
        return isinstance(op, ast.In | ast.NotIn) and _is_key(left)
    if isinstance(expr, ast.Call) and (call_name(expr) or "").rsplit(".", 1)[-1] in KEY_CALLS:
        return bool(expr.args) and _is_key(expr.args[0])
    return False


def _is_key(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and _KEY.fullmatch(node.value) is not None
    )


def _assertion_nodes(function: ast.AST) -> Iterable[tuple[ast.AST, ast.AST, bool]]:
    """(node, checked expression, is_error_path) for each assertion in ``function``."""
    for node in ast.walk(function):
        if isinstance(node, ast.Assert):
            yield node, node.test, False
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            name = call_name(node.value) or ""
            last = name.rsplit(".", 1)[-1]
            if RAISES_CALLS.search(name):
                yield node, node.value, True
            elif ASSERT_CALL.match(last):
                yield node, node.value, False
        elif isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                if RAISES_CALLS.search(call_name(item.context_expr) or ""):
                    yield node, node, True  # what raises is the block's code


def _state_trait(function: ast.AST) -> tuple[bool, int | None]:
    calls: dict[str, list[tuple[str, int]]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = dotted_name(node.func.value)
            if receiver is not None:
                calls.setdefault(receiver, []).append((node.func.attr, node.lineno))
    for methods in calls.values():
        resets = [(name, line) for name, line in methods if RESET_METHODS.match(name)]
        others = len(methods) - len(resets)
        # used, reset and used again; or taken through a cycle (offloaded, then restored)
        cycle = len({name for name, _ in resets}) >= 2
        if resets and (others >= 2 or cycle):
            return True, min(line for _, line in resets)
    return False, None


def _switched_on(value: ast.AST) -> bool:
    """A setting's value that turns something on (a variable may: a parameter of the test)."""
    if not isinstance(value, ast.Constant):
        return True
    if isinstance(value.value, str):
        return value.value.strip().lower() not in OFF_VALUES
    return bool(value.value)


def switches_mode(function: ast.AST) -> bool:
    """The function captures, replays or compiles, or sets a graph/compile option on: a
    test that only reads graph bookkeeping (padding sizes, a lookup table) runs eagerly."""
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            if MODE_CALLS.search(call_name(node) or ""):
                return True
            for keyword in node.keywords:
                if keyword.arg and MODE_SETTING.search(keyword.arg) and _switched_on(keyword.value):
                    return True
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                name = target.attr if isinstance(target, ast.Attribute) else None
                name = target.id if isinstance(target, ast.Name) else name
                if name and MODE_SETTING.search(name) and _switched_on(node.value):
                    return True
    return False


def _round_trip_line(function: ast.AST) -> int | None:
    """The line of the first load-like call after a save-like call, or of the first call
    that carries weights from one model into another, if any."""
    calls = sorted(
        (node.lineno, (call_name(node) or "").rsplit(".", 1)[-1])
        for node in ast.walk(function)
        if isinstance(node, ast.Call)
    )
    saved = False
    for line, name in calls:
        if (saved and LOAD_NAMES.search(name)) or TRANSFER_NAMES.search(name):
            return line
        saved = saved or SAVE_NAMES.search(name) is not None
    return None


# A string that spells an import path (a Hydra ``_target_``, a registry's ``class_name``):
# whatever it names is built from it.
IMPORT_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def _references(function: ast.AST) -> frozenset[str]:
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name | ast.Attribute):
            dotted = dotted_name(node)
            if dotted:
                names.add(dotted)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and IMPORT_PATH.fullmatch(node.value)
        ):
            names.add(node.value)
    return frozenset(names)


def class_bases(tree: ast.Module) -> dict[str, frozenset[str]]:
    """For each class a file defines, the names its bases are built from, through the
    file's other classes (a test's ``class Probe(Changed)`` runs ``Changed``)."""
    direct = {
        node.name: frozenset(n for base in node.bases for n in mentioned_names(base))
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    }
    closed: dict[str, frozenset[str]] = {}
    for name in direct:
        seen, todo = set(), [name]
        while todo:
            for base in direct.get(todo.pop(), ()):
                if base not in seen:
                    seen.add(base)
                    todo.append(base)
        closed[name] = frozenset(seen)
    return closed


def mentioned_names(expr: ast.AST) -> set[str]:
    """Every name and attribute an expression mentions."""
    found: set[str] = set()
    for node in ast.walk(expr):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
    return found


def _bindings(
    function: ast.AST, modules: frozenset[str] = frozenset()
) -> list[tuple[set[str], ast.AST]]:
    """(names bound, the expression they are bound from) for every binding in ``function``;
    a call through a module (``torch.save(model.state_dict(), path)``) binds nothing to the
    module: it acts on what it is given, like a function's."""
    found: list[tuple[set[str], ast.AST]] = []
    spread = _spread_lists(function)
    given = _given_at_construction(function, spread)
    for node in ast.walk(function):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.append(({n for t in targets for n in mentioned_names(t)}, node.value))
            # cfg.use_fused = True: the object now carries the field it was given
            found += [
                ({root}, t)
                for t in targets
                if isinstance(t, ast.Attribute) and (root := _root_name(t)) is not None
            ]
        elif isinstance(node, ast.For | ast.AsyncFor):
            found.append((mentioned_names(node.target), node.iter))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            found.append((mentioned_names(node.optional_vars), node.context_expr))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func  # obj.update(x): obj now depends on update and x
            if isinstance(func, ast.Attribute) and _root_name(func) not in modules:
                # ...and what obj was built around: wrapper.install() patches the wrapped
                receiver = func.value.id if isinstance(func.value, ast.Name) else ""
                wrapped = given.get(receiver, set()) - modules
                found.append((mentioned_names(func.value) | wrapped, node.value))
            else:  # patch(model): a call for its effect acts on what it is given
                found.append((_argument_names(node.value, spread), func))
        narrowed = _narrowed(node)
        if narrowed is not None:
            found.append(narrowed)
    return found


def _narrowed(node: ast.AST) -> tuple[set[str], ast.AST] | None:
    """``assert isinstance(experts, TEGroupedMLP)``: from there on the test holds that
    ``experts`` is one of the class's objects (what a type checker narrows it to), so what is
    computed from it is computed from the class, however it was reached (``layer.experts``)."""
    if isinstance(node, ast.Assert):
        call = node.test
    elif isinstance(node, ast.Expr):
        call = node.value
    else:
        return None
    if not isinstance(call, ast.Call) or len(call.args) < 2:
        return None
    name = (call_name(call) or "").rsplit(".", 1)[-1]
    wanted = "isinstance" if isinstance(node, ast.Assert) else "assertIsInstance"
    subject = call.args[0]
    if name != wanted or not isinstance(subject, ast.Name):
        return None
    return {subject.id}, call.args[1]


def _spread_lists(function: ast.AST) -> dict[str, set[str]]:
    """For each name bound to a list or tuple written out, the objects its items are read
    from: ``args = [out, inp]`` then ``f(*args)`` gives ``f`` both."""
    found: dict[str, set[str]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.List | ast.Tuple):
            roots = {r for e in node.value.elts if (r := _root_name(e)) is not None}
            for t in node.targets:
                if isinstance(t, ast.Name):
                    found.setdefault(t.id, set()).update(roots)
    return found


def _bound_from_calls(
    function: ast.AST, *, attributes: bool = False
) -> Iterable[tuple[str, ast.Call]]:
    """(name, call) for every ``name = call(...)`` in ``function``; with ``attributes``, for
    every ``a.b = call(...)`` too, by its dotted name (``self.model`` in a set-up method)."""
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            for target in node.targets:
                name = dotted_name(target) if attributes else getattr(target, "id", None)
                if isinstance(name, str):
                    yield name, node.value


def _given_at_construction(
    function: ast.AST, spread: Mapping[str, set[str]]
) -> dict[str, set[str]]:
    """For each name bound from a call, the names passed to that call (``handle`` given
    ``out`` and ``inp`` by ``handle = reduce_scatter(out, inp)``, or by the same two spread
    from a list: ``handle.wait()`` then finishes writing into ``out``)."""
    found: dict[str, set[str]] = {}
    for name, call in _bound_from_calls(function):
        found.setdefault(name, set()).update(_argument_names(call, spread))
    return found


def _argument_names(call: ast.Call, spread: Mapping[str, set[str]]) -> set[str]:
    """The objects a call is given: a name, or the object a part of it is read from
    (``model`` in ``fully_shard(model.fc1)`` and in ``Adam(model.parameters())``), what an
    object built in place is given (``model`` in ``wrap(torch.optim.Adam(model.parameters()))``:
    the wrapper steps what the optimizer was built around), and the items of a list it is given
    as ``*args`` (``spread``, from :func:`_spread_lists`)."""
    values = [*call.args, *(k.value for k in call.keywords)]
    found = {root for v in values if (root := _root_name(v)) is not None}
    for value in values:
        if isinstance(value, ast.Call):
            found |= _argument_names(value, spread)
    for value in call.args:
        if isinstance(value, ast.Starred) and isinstance(value.value, ast.Name):
            found |= spread.get(value.value.id, set())
    return found


def _root_name(node: ast.AST) -> str | None:
    """The name an attribute, an item or a method's result is read from."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return None


def _given_values(function: ast.AST) -> dict[tuple[str, str], str]:
    """For each name (or attribute: ``self.model`` in a set-up method) bound from a call, the
    literal each keyword gave it: ``params = SamplingParams(stop_words=["A"])`` gives
    ``("params", "stop_words")``; and, under ``__class__``, the name of what was called."""
    found: dict[tuple[str, str], str] = {}
    for name, call in _bound_from_calls(function, attributes=True):
        called = call_name(call)
        if called is not None:
            found[(name, "__class__")] = called.rsplit(".", 1)[-1]
        for keyword in call.keywords:
            if keyword.arg is not None and _literal(keyword.value):
                found[(name, keyword.arg)] = ast.dump(keyword.value)
    return found


def _literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError):
        return False
    return True


EQUAL_CALLS = {"assertEqual", "assertEquals", "assert_equal"}


def _echoes(expr: ast.AST, given: Mapping[tuple[str, str], str]) -> bool:
    """``assert params.stop_words == ["A"]`` after ``params = SamplingParams(stop_words=["A"])``:
    the field read back is the literal just given, true of any object that stores it; and
    ``isinstance(params, SamplingParams)``: its type is the class it was built from."""
    if _instance_of_its_own_class(expr, given):
        return True
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and isinstance(expr.ops[0], ast.Eq):
        pair = (expr.left, expr.comparators[0])
    elif (
        isinstance(expr, ast.Call)
        and (call_name(expr) or "").rsplit(".", 1)[-1] in EQUAL_CALLS
        and len(expr.args) >= 2
    ):
        pair = (expr.args[0], expr.args[1])
    else:
        return False
    for field, value in (pair, pair[::-1]):
        if not isinstance(field, ast.Attribute):
            continue
        holder = dotted_name(field.value)
        if holder is not None and given.get((holder, field.attr)) == ast.dump(value):
            return True
    return False


def _instance_of_its_own_class(expr: ast.AST, given: Mapping[tuple[str, str], str]) -> bool:
    if not (
        isinstance(expr, ast.Call)
        and (call_name(expr) or "").rsplit(".", 1)[-1] in ("isinstance", "assertIsInstance")
        and len(expr.args) == 2
    ):
        return False
    built, cls = dotted_name(expr.args[0]), dotted_name(expr.args[1])
    if built is None or cls is None:
        return False
    return given.get((built, "__class__")) == cls.rsplit(".", 1)[-1]


def _call_results(function: ast.AST) -> dict[str, set[str]]:
    """For each name bound from a method call (``out = obj.step(x)``), the receiver and the
    method: ``{"out": {"obj.step"}}``."""
    found: dict[str, set[str]] = {}
    for name, call in _bound_from_calls(function):
        callee = dotted_name(call.func) if isinstance(call.func, ast.Attribute) else None
        if callee:
            found.setdefault(name, set()).add(callee)
    return found


def _across_calls(
    expr: ast.AST, results: Mapping[str, set[str]], snapshots: Mapping[str, str]
) -> bool:
    """The assertion uses two results of one method on one receiver: a later call is
    compared with an earlier one (what a cache or a reused state must give); or it compares
    a value with a copy of it taken earlier (``free_before = pool.free`` ... ``pool.free ==
    free_before``): the state after the calls between them with the state before."""
    callees = Counter(c for name in mentioned_names(expr) for c in results.get(name, ()))
    if any(n >= 2 for n in callees.values()):
        return True
    taken = {
        snapshots[n.id] for n in ast.walk(expr) if isinstance(n, ast.Name) and n.id in snapshots
    }
    return bool(taken) and any(
        ast.dump(node) in taken for node in ast.walk(expr) if not isinstance(node, ast.Name)
    )


# Calls that take a copy (or the size) of a value as it is now.
SNAPSHOT_COPIES = re.compile(r"^(deepcopy|copy|clone|detach|list|dict|set|tuple|len|int|float)$")


def _snapshots(function: ast.AST) -> dict[str, str]:
    """Names bound once from an attribute or a subscript of another object (through a copy):
    ``{"free_before": dump of pool.free}``."""
    bound: dict[str, list[ast.AST]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                bound.setdefault(target.id, []).append(node.value)
    found = {}
    for name, values in bound.items():
        if len(values) != 1:
            continue
        value = values[0]
        while isinstance(value, ast.Call) and SNAPSHOT_COPIES.match(
            (call_name(value) or "").rsplit(".", 1)[-1]
        ):
            if isinstance(value.func, ast.Attribute) and not value.args:
                value = value.func.value  # x.clone()
            elif len(value.args) == 1:
                value = value.args[0]  # copy.deepcopy(x)
            else:
                break
        if isinstance(value, ast.Attribute | ast.Subscript):
            found[name] = ast.dump(value)
    return found


def dependencies(
    function: ast.AST, outer: dict[str, set[str]] | None = None
) -> dict[str, set[str]]:
    """For each name bound in ``function``, the names its value is computed from (through
    the ``outer`` bindings, a module's, too)."""
    bindings = _bindings(function, frozenset((outer or {}).get(MODULE_NAMES, ())))
    depends: dict[str, set[str]] = {k: set(v) for k, v in (outer or {}).items()}
    for _ in range(3):  # a short fixpoint through chains of names
        for targets, value in bindings:
            used = mentioned_names(value)
            used |= {d for u in used for d in depends.get(u, ())}
            for target in targets - SHARED_RECEIVERS:
                depends.setdefault(target, set()).update(used)
    return depends


def depends_on(expr: ast.AST, depends: dict[str, set[str]]) -> frozenset[str]:
    used = mentioned_names(expr)
    return frozenset(used | {d for u in used for d in depends.get(u, ())})


def module_dependencies(tree: ast.Module) -> dict[str, set[str]]:
    """Names bound at module level (``fused = FusedThing()``) and what they are built from;
    a name an import anywhere in the file binds under another (``from pkg import
    DistributedDataParallel as DDP``) is built from the name it stands for. Under
    :data:`MODULE_NAMES`, the names its imports bind to modules (``torch``, ``dist`` of
    ``import torch.distributed as dist``)."""
    statements = [
        s
        for s in tree.body
        if not isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ]
    found = dependencies(ast.Module(body=statements, type_ignores=[]))
    imports = import_bindings(tree)
    for binding in imports:
        if binding.attribute and binding.attribute != binding.name:
            found.setdefault(binding.name, set()).add(binding.attribute)
    found[MODULE_NAMES] = {b.name for b in imports if b.attribute is None}
    return found


def imported_modules(tree: ast.Module) -> dict[str, frozenset[str]]:
    """For each name a file's imports bind (at any depth), the modules it may come from:
    ``from a.b import c`` binds ``c`` to ``a.b`` and to ``a.b.c`` (``c`` may be a module)."""
    bound: dict[str, set[str]] = {}
    for binding in import_bindings(tree):
        if binding.level or not binding.module:
            continue  # a relative import names no module a test file's path resolves
        bound.setdefault(binding.name, set()).update({binding.module, binding.target})
    return {name: frozenset(modules) for name, modules in bound.items()}


def _modules_used(references: frozenset[str], imports: dict[str, frozenset[str]]) -> frozenset[str]:
    """The modules a function's names come from; ``pkg.mod.f`` through ``import pkg`` names
    ``pkg.mod`` too."""
    used: set[str] = set()
    for reference in references:
        head, *rest = reference.split(".")
        for module in imports.get(head, ()):
            used.add(module)
            used.update(".".join([module, *rest[:i]]) for i in range(1, len(rest)))
    return frozenset(used)


def _traits(
    path: str,
    qualname: str,
    function: ast.AST,
    helpers: frozenset[str],
    module: dict[str, set[str]] | None = None,
    imports: dict[str, frozenset[str]] | None = None,
    bases: Mapping[str, frozenset[str]] | None = None,
) -> TestTraits:
    references = _references(function)
    if module:
        references |= {d for r in references for d in module.get(r, ())}
    if bases:
        owner = qualname.split(".")[:-1]
        used = {part for r in references for part in r.split(".")} | set(owner)
        references |= {b for name in used for b in bases.get(name, ())}
    repeated, reset_line = _state_trait(function)
    joined = " ".join(sorted(references))
    return TestTraits(
        path=path,
        name=qualname,
        line=function.lineno,  # type: ignore[attr-defined]
        references=references,
        repeated_with_reset=repeated,
        reset_line=reset_line,
        under_mode=switches_mode(function),
        talks_comm=COMM_NAMES.search(joined) is not None,
        multi_rank=MULTI_RANK_NAMES.search(joined) is not None,
        helpers=helpers,
        round_trip_line=_round_trip_line(function),
        modules=_modules_used(references, imports or {}),
        cases=_case_strings(function),
    )


def _case_strings(function: ast.AST) -> tuple[str, ...]:
    """The string values and ids of the function's ``parametrize`` decorators (pytest names
    each case after them: ``test_flops[mistral]``), in order, without repeats."""
    found: dict[str, None] = {}
    for decorator in getattr(function, "decorator_list", []):
        if not isinstance(decorator, ast.Call):
            continue
        if not (dotted_name(decorator.func) or "").endswith("parametrize"):
            continue
        for argument in (*decorator.args[1:], *(k.value for k in decorator.keywords)):
            for node in ast.walk(argument):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    found.setdefault(node.value, None)
    return tuple(found)


def _helpers_called(
    function: ast.AST, functions: dict[str, ast.AST], qualname: str
) -> frozenset[str]:
    """Functions of the same file ``function`` calls, transitively."""
    seen: set[str] = set()
    todo = [function]
    while todo:
        for helper, _ in _helper_calls(todo.pop(), functions, qualname):
            if helper not in seen:
                seen.add(helper)
                todo.append(functions[helper])
    return frozenset(seen)


def _merged(traits: TestTraits, helpers: Sequence[TestTraits]) -> TestTraits:
    """A test's traits with the references of the helpers it calls."""
    references = traits.references.union(*(h.references for h in helpers))
    joined = " ".join(sorted(references))
    return replace(
        traits,
        references=references,
        modules=traits.modules.union(*(h.modules for h in helpers)),
        under_mode=traits.under_mode or any(h.under_mode for h in helpers),
        talks_comm=COMM_NAMES.search(joined) is not None,
        multi_rank=MULTI_RANK_NAMES.search(joined) is not None,
    )


@dataclass(frozen=True)
class ImportedHelper:
    """A function of another test file that a test imports and calls: every assertion of it
    and of the helpers of its own file it calls, changed or not, and what it refers to."""

    sites: tuple[AssertionSite, ...]
    traits: TestTraits


# The helper a name imported into a test file stands for: (the importing file's path, the
# dotted name the import binds, a relative import's leading dots kept); None for anything
# that is not a function of another test file of the tree.
HelperLookup = Callable[[str, str], ImportedHelper | None]


def _function_definitions(tree: ast.Module) -> list[Definition]:
    """A file's functions and methods; nested functions are read with the function that
    encloses them."""
    return [
        d
        for d in iter_definitions(tree)
        if d.is_function and all(isinstance(p, ast.ClassDef) for p in d.parents)
    ]


def _by_name(definitions: Iterable[Definition]) -> dict[str, ast.AST]:
    """Functions by qualified name, and by bare name where that is free."""
    functions: dict[str, ast.AST] = {}
    for definition in definitions:
        functions[definition.qualname] = definition.node
        functions.setdefault(definition.node.name, definition.node)
    return functions


def imported_helper(source: Source, name: str) -> ImportedHelper | None:
    """The module-level function ``name`` of ``source`` as a checker another file imports;
    None when the file defines no such function, or when it asserts nothing (a builder a
    folder's tests share sets up; what the test reaches through it stays unknown)."""
    function = next(
        (
            s
            for s in source.tree.body
            if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == name
        ),
        None,
    )
    if function is None:
        return None
    module = module_dependencies(source.tree)
    imports = imported_modules(source.tree)
    functions = _by_name(_function_definitions(source.tree))
    returned = returned_observables(functions)
    helpers = _helpers_called(function, functions, name)
    sites = _sites(source, name, function, None, module, returned)
    for helper in sorted(helpers):
        sites += _sites(source, helper, functions[helper], None, module, returned)
    if not sites:
        return None
    own = _traits(source.path, name, function, helpers, module, imports)
    used = [
        _traits(source.path, h, functions[h], frozenset(), module, imports) for h in sorted(helpers)
    ]
    return ImportedHelper(tuple(_through_helpers(sites, functions, module)), _merged(own, used))


def _imported_calls(
    path: str,
    qualname: str,
    callers: Sequence[ast.AST],
    bindings: Mapping[str, ImportBinding],
    imported: HelperLookup,
    module: dict[str, set[str]],
) -> tuple[list[TestTraits], list[AssertionSite]]:
    """The helpers of other test files a test calls (itself or through a helper of its own
    file, ``callers``), and their assertions seen from the test's last few calls to each, as
    :func:`through_calls` sees a helper of the test's own file: at the call's line, computed
    from what the call passes too."""
    calls: dict[str, list[tuple[ast.Call, int, str]]] = {}
    for index, function in enumerate(callers):
        for node in ast.walk(function):
            name = call_name(node) if isinstance(node, ast.Call) else None
            if not name or not isinstance(node, ast.Call):
                continue
            first, _, rest = name.partition(".")
            binding = bindings.get(first)
            if binding is not None:
                target = ".".join(part for part in (binding.target, rest) if part)
                calls.setdefault(target, []).append((node, index, name))
    depends: dict[int, dict[str, set[str]]] = {}  # each calling function's, computed once
    traits: list[TestTraits] = []
    views: list[AssertionSite] = []
    for target, made in calls.items():
        helper = imported(path, target)
        if helper is None:
            continue
        traits.append(helper.traits)
        for call, index, name in sorted(made, key=lambda c: c[0].lineno)[-CALLS_SEEN:]:
            if index not in depends:
                depends[index] = dependencies(callers[index], module)
            values = [*call.args, *(k.value for k in call.keywords)]
            passed = depends_on(ast.Tuple(elts=values), depends[index])
            views += [
                replace(
                    site,
                    path=path,
                    line=call.lineno,
                    test=qualname,
                    text=f"{name}(...): {site.text}",
                    depends_on=site.depends_on | passed,
                )
                for site in helper.sites
            ]
    return traits, views


def profile_source(
    path: str,
    text: str,
    added_lines: Iterable[int] | None = None,
    imported: HelperLookup | None = None,
) -> AssertionProfile:
    """Profile one test file; ``added_lines`` None means every line is new.

    A test is a function named ``test*``, any other function on an added line that asserts
    (a check run from a script), or any function a test module adds (a script's ``main``);
    a helper of the file it calls counts as part of it, with every assertion of that helper
    whether or not the patch changed it, and so does its class's set-up method (what the
    set-up binds to ``self`` is built for the test). With ``imported``, so does a function
    of another test file it imports and calls (a checker a folder's tests share).
    """
    source = Source(path, text)
    added = None if added_lines is None else set(added_lines)
    module = module_dependencies(source.tree)
    imports = imported_modules(source.tree)
    bases = class_bases(source.tree)
    bindings = {b.name: b for b in import_bindings(source.tree)}
    sites: list[AssertionSite] = []
    definitions = _function_definitions(source.tree)
    functions = _by_name(definitions)
    returned = returned_observables(functions)
    skipped_module = _skips_always(source.tree)
    set_up_methods = {
        owner: _set_up_methods(owner, functions, bases) for owner in {_owner(n) for n in functions}
    }
    set_up = _set_up_dependencies(set_up_methods, functions, module)
    # what each class's set-up builds its objects with (``self.model = Model(size=4)``)
    set_up_given = {
        owner: {k: v for m in methods for k, v in _given_values(functions[m]).items()}
        for owner, methods in set_up_methods.items()
    }

    def set_up_of(qualname: str) -> list[str]:
        return [m for m in set_up_methods.get(_owner(qualname), []) if m != qualname]

    changed: list[Definition] = []
    for definition in definitions:
        if added is not None and not set(definition.lines()) & added:
            continue
        if skipped_module or any(_skips_always(d) for d in (*definition.parents, definition.node)):
            continue
        changed.append(definition)
    touched = [(definition.qualname, definition.node) for definition in changed]
    # A helper a new or changed test calls asserts on what the test gives it, changed or not:
    # a case added to a test that runs an existing checker is checked by that checker, and a
    # checker the patch also edits (its docstring, a new branch) checks with all its lines.
    done = {qualname for qualname, _ in touched}
    helpers_of = [_helpers_called(node, functions, qualname) for qualname, node in touched]
    kept = frozenset().union(*helpers_of)
    for definition in changed:
        outer = set_up.get(_owner(definition.qualname), module)
        # cases added to its parametrization only: its unchanged assertions check them
        whole = _new_cases_only(definition, added) or bool(
            {definition.qualname, definition.node.name} & kept
        )
        lines = None if whole else added
        given = set_up_given.get(_owner(definition.qualname), {})
        sites.extend(
            _sites(source, definition.qualname, definition.node, lines, outer, returned, given)
        )
    for definition in definitions:
        helper = {definition.qualname, definition.node.name}
        if skipped_module or definition.qualname in done or not helper & kept:
            continue
        outer = set_up.get(_owner(definition.qualname), module)
        given = set_up_given.get(_owner(definition.qualname), {})
        sites.extend(
            _sites(source, definition.qualname, definition.node, None, outer, returned, given)
        )
    asserting = {s.test for s in sites}
    called = {h for _, node in touched for h in _helpers_called(node, functions, "")}
    tests = []
    foreign: list[AssertionSite] = []
    for (qualname, node), helpers in zip(touched, helpers_of, strict=True):
        name = qualname.rsplit(".", 1)[-1]
        entry = is_pytest_module(path) and not {qualname, name} & called and not FIXTURE.match(name)
        if not (name.startswith("test") or qualname in asserting or entry):
            continue
        own = _traits(path, qualname, node, helpers, module, imports, bases)
        used = [
            _traits(path, h, functions[h], frozenset(), module, imports, bases)
            for h in (*sorted(helpers), *set_up_of(qualname))
        ]
        if imported is not None:
            callers = [node, *(functions[h] for h in sorted(helpers))]
            elsewhere, seen = _imported_calls(path, qualname, callers, bindings, imported, module)
            used += elsewhere
            foreign += seen
        tests.append(_merged(own, used))
    sites = _through_helpers(sites, functions, module)
    names = {t.name for t in tests}
    by_helper = by_function(sites)
    views = [
        view
        for qualname, node in touched
        if qualname in names
        for view in through_calls(qualname, node, by_helper, functions, module)
    ]
    return AssertionProfile(tuple(sites), tuple(tests), called=(*views, *foreign))


def _new_cases_only(definition: Definition, added: set[int] | None) -> bool:
    """The patch added lines to the test's decorators (a ``parametrize`` list's new cases)
    and none to its body: what its assertions check now runs on the new cases too."""
    if added is None or not definition.is_function:
        return False
    body = range(definition.node.lineno, definition.node.end_lineno + 1)  # type: ignore[operator]
    changed = set(definition.lines()) & added
    return bool(changed) and not changed & set(body)


def _owner(qualname: str) -> str:
    """The class a method is defined in ("" for a module-level function)."""
    return qualname.rsplit(".", 1)[0] if "." in qualname else ""


def _set_up_methods(
    owner: str, functions: Mapping[str, ast.AST], bases: Mapping[str, frozenset[str]]
) -> list[str]:
    """The set-up methods run before each test of the class ``owner``: its own, or else those
    of the first of its file's classes it derives from (by name) that has any."""
    if not owner:
        return []
    for cls in (owner, *sorted(bases.get(owner.rsplit(".", 1)[-1], ()))):
        found = [f"{cls}.{name}" for name in SET_UP if f"{cls}.{name}" in functions]
        if found:
            return found
    return []


def _set_up_dependencies(
    set_up_methods: Mapping[str, list[str]],
    functions: Mapping[str, ast.AST],
    module: dict[str, set[str]],
) -> dict[str, dict[str, set[str]]]:
    """For each class of the file with set-up methods (``set_up_methods``, by class, from
    :func:`_set_up_methods`), the module's bindings and those its set-up makes (``gpt_model``
    built from ``GPTModel`` in ``self.gpt_model = GPTModel(...)``): what the class's tests
    compute from ``self.gpt_model`` is computed from ``GPTModel``."""
    found: dict[str, dict[str, set[str]]] = {}
    for owner, methods in set_up_methods.items():
        depends: dict[str, set[str]] = {}
        for name in methods:
            for bound, used in dependencies(functions[name], module).items():
                depends.setdefault(bound, set()).update(used)
        if depends:
            found[owner] = depends
    return found


def _skips_always(node: ast.AST) -> bool:
    """Whether a test function or class is always skipped: an unconditional skip mark
    (``@pytest.mark.skip``, ``@unittest.skip("why")``), a bare ``pytest.skip()`` as its
    body's first statement, or, for a module, ``pytestmark = pytest.mark.skip``."""
    if isinstance(node, ast.Module):
        return any(
            isinstance(stmt, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets)
            and _is_skip_mark(stmt.value)
            for stmt in node.body
        )
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return False
    if any(_is_skip_mark(d) for d in node.decorator_list):
        return True
    first = node.body[0] if node.body else None
    return (
        not isinstance(node, ast.ClassDef)
        and isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Call)
        and call_name(first.value) == "pytest.skip"
    )


def _is_skip_mark(node: ast.AST) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    name = dotted_name(target)
    return name is not None and SKIP_ALWAYS.match(name) is not None


def by_function(sites: Iterable[AssertionSite]) -> dict[str, list[AssertionSite]]:
    """Assertion sites by the name of the function that holds them (a method's own name)."""
    found: dict[str, list[AssertionSite]] = {}
    for site in sites:
        found.setdefault(site.test.rsplit(".", 1)[-1], []).append(site)
    return found


def through_calls(
    qualname: str,
    function: ast.AST,
    by_helper: Mapping[str, Sequence[AssertionSite]],
    functions: Mapping[str, ast.AST],
    module: dict[str, set[str]],
) -> list[AssertionSite]:
    """The assertions of the helpers ``function`` calls (``by_helper``: :func:`by_function`
    of a file's sites, grouped once for all its tests), seen from each call: at the call's
    line, computed from what the test passes too. ``_check_restored(model, snapshot)`` after
    a save and a load asserts on the loaded model; the helper's own lines say neither. Only
    the last few calls of each helper are seen (a test that calls a checker a thousand times
    is judged on its last calls, in bounded time and memory)."""
    calls: dict[str, dict[int, tuple[str, ast.Call]]] = {}
    for helper, call in _helper_calls(function, functions, qualname):
        # a call that names its helper two ways ("mod.f" and "f") is one call
        calls.setdefault(helper.rsplit(".", 1)[-1], {}).setdefault(id(call), (helper, call))
    depends = dependencies(function, module)
    views = []
    for own, made in calls.items():
        for helper, call in sorted(made.values(), key=lambda c: c[1].lineno)[-CALLS_SEEN:]:
            values = [*call.args, *(k.value for k in call.keywords)]
            passed = depends_on(ast.Tuple(elts=values), depends)
            views += [
                replace(
                    site,
                    line=call.lineno,
                    test=qualname,
                    text=f"{helper}(...): {site.text}",
                    depends_on=site.depends_on | passed,
                )
                for site in by_helper.get(own, ())
            ]
    return views


CALLS_SEEN = 4


def _helper_calls(
    function: ast.AST, functions: Mapping[str, ast.AST], qualname: str
) -> Iterable[tuple[str, ast.Call]]:
    """(helper, call) for every call ``function`` makes to another function of its file, by
    the call's dotted name, then by its last part (``self._check`` is ``_check``)."""
    for node in ast.walk(function):
        name = call_name(node) if isinstance(node, ast.Call) else None
        if not name or not isinstance(node, ast.Call):
            continue
        for helper in dict.fromkeys((name, name.rsplit(".", 1)[-1])):
            if helper in functions and helper != qualname:
                yield helper, node


HELPER_DEPTH = 3  # helpers of helpers seen through, counting the one the test calls


def _through_helpers(
    sites: list[AssertionSite], functions: dict[str, ast.AST], module: dict[str, set[str]]
) -> list[AssertionSite]:
    """An assertion on a helper's result depends on what the helper uses (through the
    helpers it calls), and a name the module binds on what it is built from."""
    inside = {name: mentioned_names(node) - {name} for name, node in functions.items()}
    for _ in range(HELPER_DEPTH - 1):  # a helper's result built by another helper
        for names in inside.values():
            names |= {d for n in names & inside.keys() for d in inside[n]}
    widened = []
    for site in sites:
        names = set(site.depends_on)
        for name in site.depends_on & inside.keys():
            names |= inside[name]
        names |= {d for n in list(names) for d in module.get(n, ())}
        widened.append(replace(site, depends_on=frozenset(names)))
    return widened


def _sites(
    source: Source,
    qualname: str,
    function: ast.AST,
    added: set[int] | None,
    module: dict[str, set[str]],
    returned: Returned | None = None,
    set_up_given: Mapping[tuple[str, str], str] | None = None,
) -> list[AssertionSite]:
    """The assertions of ``function``; ``set_up_given`` holds the literals and classes its
    class's set-up built objects with (:func:`_given_values`): asserted back, they check
    nothing, like those the function gives itself."""
    taint = _taint(function, returned)
    depends = dependencies(function, module)
    results = _call_results(function)
    snapshots = _snapshots(function)
    given = {**(set_up_given or {}), **_given_values(function)}
    sites = []
    for node, expr, error_path in _assertion_nodes(function):
        line = node.lineno  # type: ignore[attr-defined]
        if added is not None and line not in added:
            continue
        kind, observed = (
            (AssertionKind.error_path, set()) if error_path else classify(expr, taint, returned)
        )
        echo = _echoes(expr, given)
        if kind is AssertionKind.functional and echo:
            kind = AssertionKind.structural
        first = source.segment(node).splitlines()[0].strip()
        sites.append(
            AssertionSite(
                source.path,
                line,
                qualname,
                kind,
                tuple(sorted(observed)),
                first,
                depends_on(expr, depends),
                _across_calls(expr, results, snapshots),
                echo,
            )
        )
    return sites


def profile_test_patch(
    test_files: Sequence[FileDiff], *, head: TreeReader, imported: HelperLookup | None = None
) -> AssertionProfile:
    """Profile the added assertions of every Python file of a PR's test patch (with
    ``imported``, the helpers of other test files its tests call)."""
    sites: list[AssertionSite] = []
    tests: list[TestTraits] = []
    called: list[AssertionSite] = []
    unparsed: list[str] = []
    for file in test_files:
        text = head.read(file.path) if file.is_python and not file.is_deleted else None
        if text is None:
            continue
        try:
            added = None if file.is_new else file.added_lines()
            profile = profile_source(file.path, text, added, imported)
        except UnparsableSource as error:
            unparsed.append(f"{error.where}: {error.why}")
            continue
        sites.extend(profile.assertions)
        tests.extend(profile.tests)
        called.extend(profile.called)
    return AssertionProfile(tuple(sites), tuple(tests), tuple(unparsed), tuple(called))

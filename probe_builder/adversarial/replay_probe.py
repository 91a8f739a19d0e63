"""Replay recorded inputs on the function a mutant changes, in the golden tree or the mutant's.

Written into a work tree as a probe file and run by pytest in the task's own environment
(standard library; torch and numpy when the environment has them). It reads what the
recorder wrote (``PW_REPLAY_IN``), calls each recorded function on every recorded input
and on edge inputs made from the first ones (each argument, and the attributes of
``self`` and other objects, made zero, negative, NaN, large or empty), and fingerprints
what comes back: the result (or the exception's type) and the arguments' state after the
call, tensors by dtype, shape and a digest of their bytes (NaNs made equal), and the
sequence of Python functions the call made (a transport called once per parameter instead
of once per changed one leaves the results alike, not the calls). With
``PW_REPLAY_MODE=golden`` it writes the fingerprints; with ``mutant`` it compares them with
the golden ones and writes, per function, how many calls it compared and which differed
(``PW_REPLAY_VERDICT``). The test itself always passes: the files are the answer.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import math
import os
import pickle
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Not PROBEWATCH_ nor PYTEST_: runs never see variables with those prefixes.
IN_ENV = "PW_REPLAY_IN"
MODE_ENV = "PW_REPLAY_MODE"
VERDICT_ENV = "PW_REPLAY_VERDICT"
GOLDEN_FILE = "golden.json"
FUNCTIONS_FILE = "functions.json"  # the recorder's (probewatch_recorder.FUNCTIONS_FILE)
EDGE_SOURCES = 2  # recorded calls edge inputs are made from
DEPTH = 5
EDGES = ("zero", "negative", "nan", "large", "empty")
MAX_TRACED = 100_000  # Python calls, and lines of the function, recorded per replayed call
OUTPUTS = 4  # a call's fingerprint: result, arguments after, calls made, their order; path


def test_replay() -> None:
    folder = Path(os.environ[IN_ENV])
    meta = json.loads((folder / FUNCTIONS_FILE).read_text(encoding="utf-8"))
    # Through JSON both ways, so the golden fingerprints and these compare alike.
    found = json.loads(json.dumps({key: _replay(info, folder) for key, info in meta.items()}))
    if os.environ.get(MODE_ENV) == "golden":
        (folder / GOLDEN_FILE).write_text(json.dumps(found), encoding="utf-8")
        return
    golden = json.loads((folder / GOLDEN_FILE).read_text(encoding="utf-8"))
    verdict = {key: _compare(golden.get(key), prints) for key, prints in found.items()}
    Path(os.environ[VERDICT_ENV]).write_text(json.dumps(verdict), encoding="utf-8")


def _replay(info: dict[str, Any], folder: Path) -> dict[str, Any]:
    try:
        function = _resolve(info["path"], info["qualname"])
    except Exception as exc:  # the function is not reachable by name: nothing to compare
        return {"error": f"{type(exc).__name__}: {exc}", "recorded": [], "edges": []}
    blobs = [(folder / name).read_bytes() for name in info["calls"]]
    recorded = [_call_with(function, blob, None) for blob in blobs]
    edges = [_call_with(function, blob, kind) for blob in blobs[:EDGE_SOURCES] for kind in EDGES]
    return {"error": "", "recorded": recorded, "edges": edges}


def _call_with(function: Callable[..., Any], blob: bytes, edge: str | None) -> Any:
    """The call on the recorded arguments (made ``edge`` when given); arguments this tree
    cannot load (a class the pre-change code lacks) are an outcome of their own."""
    try:
        arguments = pickle.loads(blob)
    except Exception as exc:
        return ["unloadable", type(exc).__name__]
    return _call(function, arguments if edge is None else _edge(arguments, edge))


def _compare(golden: dict[str, Any] | None, mutant: dict[str, Any]) -> dict[str, Any]:
    if golden is None or golden["error"] or mutant["error"]:
        why = (golden or {}).get("error") or mutant["error"] or "no golden replay"
        return {"compared": 0, "recorded": 0, "differs": [], "error": why}
    pairs = [
        (f"{kind.removesuffix('s')} input {index + 1}", g, m)
        for kind in ("recorded", "edges")
        for index, (g, m) in enumerate(zip(golden[kind], mutant[kind], strict=True))
    ]
    differs = [name for name, g, m in pairs if g[:OUTPUTS] != m[:OUTPUTS]]
    # The function took another path on the same input: the mutant did act there.
    diverged = [name for name, g, m in pairs if g[OUTPUTS:] != m[OUTPUTS:]]
    recorded = len(golden["recorded"])
    return {
        "compared": len(pairs),
        "recorded": recorded,
        "differs": differs,
        "diverged": diverged,
        "error": "",
    }


def _resolve(path: str, qualname: str) -> Callable[..., Any]:
    module = importlib.import_module(path[: -len(".py")].replace("/", "."))
    found: Any = module
    for part in qualname.split("."):
        if part == "<locals>":
            raise LookupError(f"{qualname} is defined inside a function")
        static = isinstance(found, type)
        found = inspect.getattr_static(found, part) if static else getattr(found, part)
    if isinstance(found, staticmethod | classmethod):
        found = found.__func__
    return found


def _call(function: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    """The result, the arguments' state after the call, and the Python functions it called
    in order: what a change does to traffic or work (a transport's ``send`` called for every
    parameter instead of the changed ones) leaves the results alike but not the calls."""
    args, kwargs = _bind(function, arguments)
    calls: list[str] = []
    lines: list[int] = []
    own = inspect.unwrap(function).__code__

    def profile(frame: Any, event: str, _arg: object) -> None:
        if event == "call" and len(calls) < MAX_TRACED:
            code = frame.f_code
            calls.append(f"{Path(code.co_filename).name}:{code.co_qualname}")

    def in_function(frame: Any, event: str, _arg: object) -> Any:
        if event == "line" and len(lines) < MAX_TRACED:
            lines.append(frame.f_lineno)
        return in_function

    def trace(frame: Any, _event: str, _arg: object) -> Any:
        return in_function if frame.f_code is own else None

    sys.setprofile(profile)
    sys.settrace(trace)
    try:
        result = function(*args, **kwargs)
    except BaseException as exc:  # the golden code may raise too: the type is compared
        result = _Raised(type(exc).__name__)
    finally:
        sys.settrace(None)
        sys.setprofile(None)
    traced = hashlib.sha256("\n".join(calls[1:]).encode()).hexdigest()  # [0]: the function
    path = hashlib.sha256(repr(lines).encode()).hexdigest()
    # Outputs first (OUTPUTS of them), then the path the function took through its lines.
    return [_fingerprint(result, 0), _fingerprint(arguments, 0), len(calls), traced, path]


class _Raised:
    def __init__(self, name: str) -> None:
        self.name = name


def _bind(
    function: Callable[..., Any], arguments: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if name not in arguments:
            continue
        value = arguments[name]
        if parameter.kind is parameter.VAR_POSITIONAL:
            args.extend(value)
        elif parameter.kind is parameter.VAR_KEYWORD:
            kwargs.update(value)
        elif parameter.kind is parameter.KEYWORD_ONLY:
            kwargs[name] = value
        else:
            args.append(value)
    return args, kwargs


# --- edge inputs -------------------------------------------------------------------------


def _edge(arguments: dict[str, Any], kind: str) -> dict[str, Any]:
    """Every argument made ``kind`` at its leaves, ``self``'s attributes included: a method's
    behaviour often hangs on the state it finds (a counter reset to 0 is 0 already)."""
    return {n: _leaves(v, kind, 0) for n, v in arguments.items()}


def _leaves(value: Any, kind: str, depth: int) -> Any:
    if depth > DEPTH:
        return value
    if isinstance(value, bool) or value is None or isinstance(value, str | bytes):
        return "" if kind == "empty" and isinstance(value, str) else value
    if isinstance(value, int | float):
        return _number(value, kind)
    if isinstance(value, list | tuple):
        if kind == "empty":
            return type(value)()
        return type(value)(_leaves(v, kind, depth + 1) for v in value)
    if isinstance(value, dict):
        return {k: _leaves(v, kind, depth + 1) for k, v in value.items()}
    if _is_tensor(value):
        return _tensor(value, kind)
    state = getattr(value, "__dict__", None)
    if isinstance(state, dict) and not isinstance(value, type) and not callable(value):
        for name, attribute in list(state.items()):
            try:
                setattr(value, name, _leaves(attribute, kind, depth + 1))
            except Exception:  # a read-only attribute keeps its value
                continue
    return value


def _number(value: float, kind: str) -> float:
    if kind == "zero" or kind == "empty":
        return type(value)(0)
    if kind == "negative":
        return -abs(value) if value else type(value)(-1)
    if kind == "nan":
        return math.nan if isinstance(value, float) else value
    return type(value)(2**31 - 1) if isinstance(value, int) else 1e30


def _is_tensor(value: Any) -> bool:
    return type(value).__module__.split(".")[0] in ("torch", "numpy") and hasattr(value, "shape")


def _tensor(value: Any, kind: str) -> Any:
    floating = "float" in str(value.dtype) or "complex" in str(value.dtype)
    boolean = "bool" in str(value.dtype)
    if kind == "empty":
        return value[:0] if len(value.shape) else value
    if kind == "zero":
        return value * 0 if not boolean else value & False
    if kind == "negative":
        return ~value if boolean else -abs(value)
    if kind == "nan":
        return value * math.nan if floating else value
    return value * 0 + 1e30 if floating else value


# --- fingerprints ------------------------------------------------------------------------


def _fingerprint(value: Any, depth: int) -> Any:
    if isinstance(value, _Raised):
        return ["raised", value.name]
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)
    if isinstance(value, bytes):
        return ["bytes", hashlib.sha256(value).hexdigest()]
    if depth > DEPTH:
        return ["deep", type(value).__name__]
    if _is_tensor(value):
        return _tensor_print(value)
    if isinstance(value, list | tuple):
        return [type(value).__name__, [_fingerprint(v, depth + 1) for v in value]]
    if isinstance(value, dict):
        items = sorted((repr(k), _fingerprint(v, depth + 1)) for k, v in value.items())
        return ["dict", items]
    state = getattr(value, "__dict__", None)
    if isinstance(state, dict):
        return [type(value).__name__, _fingerprint(state, depth + 1)]
    return ["object", type(value).__name__]


def _tensor_print(value: Any) -> Any:
    """dtype, shape and a digest of the values, NaNs equal wherever they are (their places
    digested apart); a tensor that cannot be read (a meta or sparse tensor) never equals
    another, so the mutant is kept."""
    try:
        array = value.detach().cpu() if hasattr(value, "detach") else value
        nans = array != array
        if hasattr(array, "is_floating_point") and array.is_floating_point():
            array = array.double().nan_to_num(0.0, posinf=math.inf, neginf=-math.inf)
        array = array.numpy() if hasattr(array, "numpy") else array
        nans = nans.numpy() if hasattr(nans, "numpy") else nans
        if "float" in str(array.dtype):
            array = array.copy()
            array[array != array] = 0
        digest = hashlib.sha256(array.tobytes()).hexdigest()
        places = hashlib.sha256(nans.tobytes()).hexdigest()
    except Exception:  # unreadable: unique, so it cannot vouch for equivalence
        digest, places = os.urandom(8).hex(), ""
    grad = getattr(value, "grad", None)  # a gradient is where a training step's effect lands
    gradient = _tensor_print(grad) if grad is not None and grad is not value else None
    return ["tensor", str(value.dtype), list(value.shape), digest, places, gradient]

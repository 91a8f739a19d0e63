"""Record the inputs of chosen functions while the PR's tests run.

Written into a work tree's root as a probe file and named first on pytest's command line,
so pytest imports it before the PR's test modules: on import it installs a profile hook
(this thread and new ones); at exit it writes what it saw. It runs in the task's own
environment, so it uses the standard library only, and holds no test. The targets are
``[path, line]`` pairs (``PW_RECORD_TARGETS``, JSON): the innermost function of the
post-change file that holds the line. Each target's arguments are pickled as it is
called, up to :data:`PER_FUNCTION` calls of at most :data:`MAX_BYTES` each; a call whose
arguments cannot be pickled (a process group, an open file) is skipped. At exit it writes
``functions.json`` and one pickle per call into ``PW_RECORD_OUT``. Nothing in the
repository is edited.
"""

from __future__ import annotations

import ast
import atexit
import json
import os
import pickle
import sys
import threading
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

# Not PROBEWATCH_ nor PYTEST_: runs never see variables with those prefixes.
TARGETS_ENV = "PW_RECORD_TARGETS"
OUT_ENV = "PW_RECORD_OUT"
FUNCTIONS_FILE = "functions.json"
PER_FUNCTION = 8
MAX_BYTES = 2_000_000
_VARARGS, _VARKEYWORDS = 0x04, 0x08


def function_at(source: str, line: int) -> tuple[str, int, str] | None:
    """The innermost function holding ``line``: (qualname, first line of its code object
    — its first decorator's, as Python counts it —, name); None outside any function,
    and for generators and coroutines (their return is not their result)."""
    best: tuple[str, int, str] | None = None

    def walk(node: ast.AST, prefix: str) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                end = child.end_lineno or child.lineno
                if child.lineno <= line <= end:
                    plain = isinstance(child, ast.FunctionDef) and not any(
                        isinstance(n, ast.Yield | ast.YieldFrom) for n in ast.walk(child)
                    )
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    best = (f"{prefix}{child.name}", first, child.name) if plain else None
                walk(child, f"{prefix}{child.name}.<locals>.")

    walk(ast.parse(source), "")
    return best


class Recorder:
    def __init__(self, root: Path, targets: list[list[Any]], out: Path) -> None:
        self.out = out
        self.wanted: dict[tuple[str, int, str], str] = {}  # a code object's place -> function
        self.functions: dict[str, dict[str, Any]] = {}  # function -> its path, name, calls
        self.targets: dict[str, str] = {}  # "path:line" -> the function that holds the line
        for path, line in targets:
            file = root / path
            try:
                found = function_at(file.read_text(encoding="utf-8"), int(line))
            except (OSError, SyntaxError, ValueError):
                continue
            if found is None:
                continue
            qualname, first, name = found
            function = f"{path}:{first}"
            self.wanted[(os.path.realpath(file), first, name)] = function
            self.functions.setdefault(function, {"path": path, "qualname": qualname, "calls": []})
            self.targets[f"{path}:{line}"] = function
        self.seen: dict[CodeType, str | None] = {}
        self.lock = threading.Lock()

    def _key(self, code: CodeType) -> str | None:
        if code not in self.seen:
            where = (os.path.realpath(code.co_filename), code.co_firstlineno, code.co_name)
            self.seen[code] = self.wanted.get(where)
        return self.seen[code]

    def profile(self, frame: FrameType, event: str, _arg: object) -> None:
        if event != "call":
            return
        key = self._key(frame.f_code)
        if key is None or len(self.functions[key]["calls"]) >= PER_FUNCTION:
            return
        code = frame.f_code
        count = code.co_argcount + code.co_kwonlyargcount
        count += bool(code.co_flags & _VARARGS) + bool(code.co_flags & _VARKEYWORDS)
        names = code.co_varnames[:count]
        try:
            blob = pickle.dumps({n: frame.f_locals[n] for n in names if n in frame.f_locals})
        except Exception:  # an argument that cannot travel: this call is not recorded
            return
        if len(blob) <= MAX_BYTES:
            with self.lock:
                self.functions[key]["calls"].append(blob)

    def write(self) -> None:
        """``functions.json``: per target (``path:line``) its function's path, qualified name
        and recorded calls (pickle files, shared by the targets of one function)."""
        self.out.mkdir(parents=True, exist_ok=True)
        files: dict[str, list[str]] = {}
        for index, (function, info) in enumerate(self.functions.items()):
            files[function] = []
            for number, blob in enumerate(info["calls"]):
                name = f"{index}-{number}.pkl"
                (self.out / name).write_bytes(blob)
                files[function].append(name)
        meta = {
            target: {
                "path": self.functions[function]["path"],
                "qualname": self.functions[function]["qualname"],
                "calls": files[function],
            }
            for target, function in self.targets.items()
        }
        (self.out / FUNCTIONS_FILE).write_text(json.dumps(meta), encoding="utf-8")


def install() -> Recorder | None:
    """Start recording when the run asks for it (both variables set)."""
    targets, out = os.environ.get(TARGETS_ENV), os.environ.get(OUT_ENV)
    if not targets or not out:
        return None
    recorder = Recorder(Path(__file__).resolve().parent, json.loads(targets), Path(out))
    sys.setprofile(recorder.profile)
    threading.setprofile(recorder.profile)
    atexit.register(recorder.write)
    return recorder


_RECORDER = install()

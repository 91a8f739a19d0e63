"""Python source to a syntax tree, one parse at a time in the process.

CPython 3.11's conversion of a parse into ``ast`` objects keeps its recursion depth in
state the threads share: two threads parsing at once (validation runs its controls in
threads, and each reads its test modules) fail with "AST constructor recursion depth
mismatch". Every parse on the host goes through :func:`parse_module`; code that runs
inside a test process (the probe kit, the replay recorder) is single-threaded there.
"""

from __future__ import annotations

import ast
import threading

_PARSING = threading.Lock()


def parse_module(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse`` under the process's parse lock; raises what it raises."""
    with _PARSING:
        return ast.parse(source, filename=filename)

"""Parses on the host happen one at a time: CPython 3.11's AST conversion shares its
recursion depth across threads, and concurrent parses failed validation runs."""

from __future__ import annotations

import ast
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from probe_builder.material.pysource import Source
from probewatch.syntax import parse_module
from runners.backends.placement import marked_gpus
from runners.env.setup_py import static_setup_requirements

MODULE = "import pytest\n\n@pytest.mark.probe_gpu(2)\ndef test_x():\n    assert 1\n"


def test_threads_that_parse_test_modules_and_sources_never_parse_at_once(monkeypatch) -> None:
    real_parse = ast.parse
    active, most = 0, 0
    count = threading.Lock()

    def slow_parse(*args: object, **kwargs: object) -> ast.Module:
        nonlocal active, most
        with count:
            active += 1
            most = max(most, active)
        time.sleep(0.01)
        try:
            return real_parse(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            with count:
                active -= 1

    monkeypatch.setattr(ast, "parse", slow_parse)
    calls: list[Callable[[], object]] = [
        lambda: marked_gpus(MODULE),
        lambda: Source("m.py", MODULE),
        lambda: static_setup_requirements("from setuptools import setup\nsetup(name='x')\n"),
    ] * 8
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda call: call(), calls))
    assert results[0] == 2 and most == 1


def test_a_module_that_does_not_parse_still_says_so() -> None:
    with pytest.raises(SyntaxError, match=r"broken\.py"):
        parse_module("def (:", "broken.py")

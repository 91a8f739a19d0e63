"""Assertion profile of a test diff (from the syntax tree) and per-promise verdicts."""

from __future__ import annotations

import textwrap

import pytest

from probe_builder.promises.assertions import (
    AssertionKind,
    Observable,
    profile_source,
    profile_test_patch,
)
from probe_builder.promises.extract import ExtractedPromise
from probe_builder.promises.verdicts import judge_promise, judge_promises
from task_registry.types import PromiseCategory, PromiseVerdict
from tests.probe_builder_support import make_pr


def _kinds(body: str) -> list[AssertionKind]:
    source = "import pytest, torch, time\n\n\ndef test_x(x, y, m):\n" + textwrap.indent(
        textwrap.dedent(body), "    "
    )
    return [a.kind for a in profile_source("tests/test_x.py", source).assertions]


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ("assert x\n", AssertionKind.functional),
        ("assert x == y\n", AssertionKind.functional),
        ("assert x.shape == (2, 3)\n", AssertionKind.structural),
        ("assert x.dtype == torch.float32\n", AssertionKind.structural),
        ("assert isinstance(x, dict)\n", AssertionKind.structural),
        ("assert x is not None\n", AssertionKind.structural),
        ("assert torch.allclose(x, y)\n", AssertionKind.numeric),
        ("torch.testing.assert_close(x, y, atol=1e-3, rtol=0)\n", AssertionKind.numeric),
        ("assert x == pytest.approx(y)\n", AssertionKind.numeric),
        ("with pytest.raises(ValueError):\n    x()\n", AssertionKind.error_path),
        ("assert torch.cuda.max_memory_allocated() < 10\n", AssertionKind.resource),
        ("m.assert_called_once_with(1)\n", AssertionKind.resource),
        ("assert m.call_count == 2\n", AssertionKind.resource),
        ("self.assertEqual(x, y)\n", AssertionKind.functional),
        ("self.assertAlmostEqual(x, y, places=3)\n", AssertionKind.numeric),
        ("self.assertRaises(KeyError, x)\n", AssertionKind.error_path),
    ],
)
def test_each_assertion_is_counted_by_kind(body, kind):
    assert _kinds(body) == [kind]


def test_a_bare_assert_is_not_a_resource_check():
    # A profile that counted every assertion as resource (or none as functional) fails here.
    assert _kinds("assert x\nassert y\n") == [AssertionKind.functional, AssertionKind.functional]


def test_resource_is_seen_through_names_bound_earlier_in_the_test():
    body = """
    start = time.perf_counter()
    x()
    elapsed = time.perf_counter() - start
    ms = elapsed * 1000
    assert ms < 50
    peak = torch.cuda.max_memory_allocated()
    assert peak <= y
    """
    profile = profile_source(
        "tests/test_x.py",
        "import time, torch\n\n\ndef test_x(x, y):\n"
        + textwrap.indent(textwrap.dedent(body), "    "),
    )
    assert [(a.kind, a.observables) for a in profile.assertions] == [
        (AssertionKind.resource, (Observable.time,)),
        (AssertionKind.resource, (Observable.memory,)),
    ]


def test_only_assertions_on_added_lines_are_counted(tmp_path):
    base = {"tests/test_a.py": "def test_old():\n    assert 1 == 1\n"}
    change = {
        "tests/test_a.py": "def test_old():\n    assert 1 == 1\n    assert [1].__len__() == 1\n\n\ndef test_new(x=1):\n    assert x is not None\n"
    }
    pr = make_pr(tmp_path, base, change)
    profile = profile_test_patch(pr.split.test_files, head=pr.head_tree)
    assert [(a.line, a.kind) for a in profile.assertions] == [
        (3, AssertionKind.functional),
        (7, AssertionKind.structural),
    ]
    assert profile.counts()[AssertionKind.structural] == 1
    assert [t.name for t in profile.tests] == ["test_old", "test_new"]


def _promise(category: PromiseCategory) -> ExtractedPromise:
    return ExtractedPromise(category=category, quote="q")


STATE_TEST = """
from pkg import Cache


def test_reset_clears():
    cache = Cache()
    cache.lookup("a")
    cache.lookup("a")
    cache.reset()
    assert cache.lookup("a") is None
"""
NO_RESET_TEST = """
from pkg import Cache


def test_lookup_twice():
    cache = Cache()
    cache.lookup("a")
    cache.lookup("a")
    assert cache.hits == 1
"""
MODE_TEST = """
import torch
from pkg import Cache


def test_under_graph():
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = Cache().lookup("a")
    g.replay()
    assert out is None
"""
TRAFFIC_TEST = """
from unittest import mock
from pkg import sync_weights


def test_sends_once():
    with mock.patch("torch.distributed.broadcast") as broadcast:
        sync_weights()
    assert broadcast.call_count == 1
"""
MEMORY_TEST = """
import torch
from pkg import Cache


def test_peak():
    torch.cuda.reset_peak_memory_stats()
    Cache().lookup("a")
    assert torch.cuda.max_memory_allocated() < 1024
"""


@pytest.mark.parametrize(
    ("source", "category", "verdict"),
    [
        (STATE_TEST, PromiseCategory.state, PromiseVerdict.checked),
        (NO_RESET_TEST, PromiseCategory.state, PromiseVerdict.exercised),
        (MODE_TEST, PromiseCategory.mode, PromiseVerdict.checked),
        (STATE_TEST, PromiseCategory.mode, PromiseVerdict.exercised),
        (TRAFFIC_TEST, PromiseCategory.traffic, PromiseVerdict.checked),
        (MEMORY_TEST, PromiseCategory.traffic, PromiseVerdict.exercised),
        (MEMORY_TEST, PromiseCategory.memory, PromiseVerdict.checked),
        (STATE_TEST, PromiseCategory.memory, PromiseVerdict.exercised),
        (MEMORY_TEST, PromiseCategory.time, PromiseVerdict.exercised),
        (STATE_TEST, PromiseCategory.numeric, PromiseVerdict.exercised),
        (STATE_TEST, PromiseCategory.functional, PromiseVerdict.checked),
    ],
)
def test_verdict_needs_an_assertion_on_the_promised_observable(source, category, verdict):
    profile = profile_source("tests/test_p.py", source.lstrip())
    assert judge_promise(_promise(category), profile).verdict is verdict


def test_a_counted_call_outside_communication_does_not_check_traffic():
    source = "def test_x(m):\n    m()\n    assert m.call_count == 1\n"
    profile = profile_source("tests/test_p.py", source)
    assert (
        judge_promise(_promise(PromiseCategory.traffic), profile).verdict
        is PromiseVerdict.exercised
    )


def test_reset_without_an_assertion_after_it_does_not_check_state():
    source = "def test_x(c):\n    c.get(1)\n    c.get(2)\n    assert c.n == 2\n    c.reset()\n"
    profile = profile_source("tests/test_p.py", source)
    assert (
        judge_promise(_promise(PromiseCategory.state), profile).verdict is PromiseVerdict.exercised
    )


def test_promises_are_unchecked_when_no_added_test_touches_the_changed_code():
    profile = profile_source("tests/test_p.py", MEMORY_TEST.lstrip())
    checks = judge_promises(
        [_promise(PromiseCategory.memory)], profile, changed_symbols=["pkg.other.Thing"]
    )
    assert checks[0].verdict is PromiseVerdict.unchecked
    checks = judge_promises(
        [_promise(PromiseCategory.memory)], profile, changed_symbols=["pkg.cache.Cache"]
    )
    assert checks[0].verdict is PromiseVerdict.checked
    assert "tests/test_p.py:8 test_peak" in checks[0].evidence

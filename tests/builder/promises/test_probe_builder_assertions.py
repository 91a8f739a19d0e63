"""Assertion profile of a test diff (from the syntax tree) and per-promise verdicts."""

from __future__ import annotations

import re
import textwrap

import pytest

from probe_builder.promises.assertions import (
    AssertionKind,
    Observable,
    profile_source,
    profile_test_patch,
)
from probe_builder.promises.extract import ExtractedPromise
from probe_builder.promises.linking import CodeUnderTest, changed_symbol, initialisms, link
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
        # a key is there whatever its value; text looked for in an output is a value check
        ('assert "aborted_count" in x\n', AssertionKind.structural),
        ('self.assertIn("aborted_count", x)\n', AssertionKind.structural),
        ('assert "request aborted" in x\n', AssertionKind.functional),
        ("assert y in x\n", AssertionKind.functional),
        # a gap between two results bounded by a small number is a hand-written tolerance
        ("assert rel_diff.item() < 1e-2\n", AssertionKind.numeric),
        ("assert (a - b).abs().max() <= 1e-5\n", AssertionKind.numeric),
        ("assert 1e-3 > torch.norm(a - b)\n", AssertionKind.numeric),
        ("self.assertLess(err, 0.01)\n", AssertionKind.numeric),
        # ... not a count under a bound, nor a gap under a large one
        ("assert dropped < 0.5\n", AssertionKind.functional),
        ("assert (a - b) < 5\n", AssertionKind.functional),
        ("assert (a - b) == 0.0\n", AssertionKind.functional),
        # a finite value is true of almost anything returned: no more than a shape
        ("assert torch.isfinite(x).all()\n", AssertionKind.structural),
        ("assert not torch.isnan(x).any()\n", AssertionKind.structural),
        ("assert _has_finite_grad(m)\n", AssertionKind.structural),
        ("assert m.finished_count == 2\n", AssertionKind.functional),
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


MEASURING_HELPER = """
import torch


def _run_step(model, batch):
    torch.cuda.reset_peak_memory_stats()
    logits = model(batch)
    peak = torch.cuda.max_memory_allocated()
    return logits, peak


def _timed(model, batch):
    return _run_step(model, batch)


def test_offload_saves_memory(model, offloaded, batch):
    base_logits, base_peak = _run_step(model, batch)
    off_logits, off_peak = _timed(offloaded, batch)
    assert torch.allclose(off_logits, base_logits)
    assert off_peak < base_peak
"""


def test_a_measurement_a_helper_returns_is_seen_at_its_element_only():
    # A profile blind to helpers misses the memory check; one that tainted the whole tuple
    # would call the allclose on the logits a memory check.
    profile = profile_source("tests/test_x.py", MEASURING_HELPER)
    tested = [(a.kind, a.observables) for a in profile.assertions if a.test.startswith("test")]
    assert tested == [
        (AssertionKind.numeric, ()),
        (AssertionKind.resource, (Observable.memory,)),
    ]


PROFILED_TEST = """
import torch
from torch.profiler import ProfilerActivity, profile


def _overlap(first, second):
    return first.time_range.start < second.time_range.end


def test_gradients_reduced_once_and_overlapped(model, batch):
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        model(batch).sum().backward()
    kernels = [e for e in prof.events() if e.device_type.name == "CUDA"]
    reduces = [e for e in kernels if "AllReduce" in e.name]
    gemms = [e for e in kernels if "gemm" in e.name]
    assert len(reduces) == 1
    assert any(_overlap(r, g) for r in reduces for g in gemms)
    assert model.weight.grad is not None
"""


def test_a_profiler_trace_observes_the_calls_and_times_of_what_ran():
    # A profile blind to the profiler calls both checks functional; one that tainted the
    # whole test would call the gradient check a resource check too.
    profile = profile_source("tests/test_x.py", PROFILED_TEST.lstrip())
    tested = [(a.kind, a.observables) for a in profile.assertions if a.test.startswith("test")]
    assert tested == [
        (AssertionKind.resource, (Observable.calls,)),
        (AssertionKind.resource, (Observable.calls, Observable.time)),
        (AssertionKind.structural, ()),
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
        # ``is None`` after a reset tells a state apart, not what a feature computes.
        (STATE_TEST, PromiseCategory.functional, PromiseVerdict.exercised),
        (NO_RESET_TEST, PromiseCategory.functional, PromiseVerdict.checked),
    ],
)
def test_verdict_needs_an_assertion_on_the_promised_observable(source, category, verdict):
    profile = profile_source("tests/test_p.py", source.lstrip())
    assert judge_promise(_promise(category), CodeUnderTest(profile)).verdict is verdict


def test_a_counted_call_outside_communication_does_not_check_traffic():
    source = "def test_x(m):\n    m()\n    assert m.call_count == 1\n"
    profile = profile_source("tests/test_p.py", source)
    assert (
        judge_promise(_promise(PromiseCategory.traffic), CodeUnderTest(profile)).verdict
        is PromiseVerdict.exercised
    )


@pytest.mark.parametrize(
    ("between", "verdict"),
    [
        ("mixer.refresh_cache()", PromiseVerdict.checked),  # rebuilt from the new weights
        ("mixer.refit(weights)", PromiseVerdict.checked),
        ("mixer.evict_blocks()", PromiseVerdict.checked),
        ("mixer.forward(x)", PromiseVerdict.exercised),  # a third call changes no state
    ],
)
def test_a_refresh_refit_or_eviction_between_calls_is_a_change_of_state(between, verdict):
    source = f"""
def test_cache_follows_the_weights(mixer, weights, x):
    mixer.train()
    mixer.eval()
    {between}
    assert mixer.cache_value() == 2
"""
    profile = profile_source("tests/test_p.py", source.lstrip())
    assert judge_promise(_promise(PromiseCategory.state), CodeUnderTest(profile)).verdict is (
        verdict
    )


@pytest.mark.parametrize(
    ("body", "verdict"),
    [
        # used twice, reset, and the state read after the reset: what the reset kept or dropped
        (
            'ctx.add_request("a")\nctx.add_request("a")\nctx.reset()\nassert ctx.cached == {}\n',
            PromiseVerdict.checked,
        ),
        # used once, then reset: the test of a phase counter ("reset starts a new phase")
        # reads a value any reset gives, not the cache the promise is about
        (
            'ctx.generate("a")\nctx.reset()\nassert ctx.tokens_generated == 0\n',
            PromiseVerdict.exercised,
        ),
        # a reset of an object nothing used first says nothing of what it keeps
        ("ctx.reset()\nassert ctx.cached == {}\n", PromiseVerdict.exercised),
        # ... but taking it through a cycle does: offloaded, restored, and read after both
        (
            "ctx.offload_buffers()\nctx.restore_buffers()\nassert ctx.sizes == [4, 4]\n",
            PromiseVerdict.checked,
        ),
        ("ctx.offload_buffers()\nassert ctx.sizes == {}\n", PromiseVerdict.exercised),
    ],
)
def test_a_state_check_needs_an_object_used_twice_before_its_reset_or_cycled(body, verdict):
    source = "def test_x(ctx):\n" + textwrap.indent(body, "    ")
    profile = profile_source("tests/test_p.py", source)
    assert judge_promise(_promise(PromiseCategory.state), CodeUnderTest(profile)).verdict is (
        verdict
    )


def test_reset_without_an_assertion_after_it_does_not_check_state():
    source = "def test_x(c):\n    c.get(1)\n    c.get(2)\n    assert c.n == 2\n    c.reset()\n"
    profile = profile_source("tests/test_p.py", source)
    assert (
        judge_promise(_promise(PromiseCategory.state), CodeUnderTest(profile)).verdict
        is PromiseVerdict.exercised
    )


SKIPPED_WORK_TEST = """
from unittest import mock
from pkg import log_rank


def test_rank_query_skipped_when_disabled(logger):
    with mock.patch("pkg.get_rank") as get_rank:
        log_rank(logger, "message")
    get_rank.assert_not_called()
"""


@pytest.mark.parametrize(
    ("quote", "verdict"),
    [
        # the work a promise says is skipped is observed by the call asserted not made
        ("Gate the expensive rank query behind the log level", PromiseVerdict.checked),
        ("Avoid the redundant rank lookup on every log call", PromiseVerdict.checked),
        # a call count says nothing of a speed-up that skips no work
        ("Faster logging with a new formatter", PromiseVerdict.exercised),
    ],
)
def test_a_call_asserted_not_made_checks_a_time_promise_that_work_is_skipped(quote, verdict):
    code = _code(SKIPPED_WORK_TEST, "log_rank")
    assert _verdict(PromiseCategory.time, f"{quote} in log_rank", code) is verdict


def _code(source: str, *symbols: str, docs: dict[str, str] | None = None) -> CodeUnderTest:
    profile = profile_source("tests/test_p.py", textwrap.dedent(source).lstrip())
    docs = docs or {}
    return CodeUnderTest(
        profile,
        tuple(changed_symbol(s, docs.get(s), s.split(".")[0] + ".py") for s in symbols),
    )


def _verdict(
    category: PromiseCategory, quote: str, code: CodeUnderTest, position: int = 0
) -> PromiseVerdict:
    promise = ExtractedPromise(category=category, quote=quote, position=position)
    return judge_promises([promise], code)[0].verdict


def test_promises_are_unchecked_when_no_added_test_touches_the_changed_code():
    code = _code(MEMORY_TEST, "other.Thing")
    assert _verdict(PromiseCategory.memory, "less memory", code) is PromiseVerdict.unchecked
    code = _code(MEMORY_TEST, "Cache")
    checks = judge_promises(
        [ExtractedPromise(category=PromiseCategory.memory, quote="Cache")], code
    )
    assert checks[0].verdict is PromiseVerdict.checked
    assert "tests/test_p.py:8 test_peak" in checks[0].evidence


NOT_NONE_TEST = """
from pkg import fused_loss


def test_fused_loss_runs():
    out = fused_loss(1)
    assert out is not None
"""
ALLCLOSE_TEST = """
import torch
from pkg import fused_loss, reference_loss


def test_fused_loss_matches_the_reference():
    out = fused_loss(1)
    assert torch.allclose(out, torch.ones(1))
"""
ALLCLOSE_ELSEWHERE_TEST = """
import torch
from pkg import fused_loss, reference_loss


def test_reference_only():
    fused_loss(1)
    assert torch.allclose(reference_loss(1), torch.ones(1))
"""


@pytest.mark.parametrize("category", [PromiseCategory.functional, PromiseCategory.memory])
def test_a_bare_not_none_assertion_checks_nothing(category):
    # A verdict that took any assertion in a test reaching the code as a check fails here.
    code = _code(NOT_NONE_TEST, "fused_loss")
    assert _verdict(category, "the fused_loss feature", code) is PromiseVerdict.exercised


SIGN_TEST = """
from pkg import sample_scores


def test_sample_scores():
    scores = sample_scores(4)
    {check}
"""


@pytest.mark.parametrize(
    ("check", "verdict"),
    [
        # a sign is true of nearly any scores the code returns
        ("assert scores.sum() > 0, 'scores'", PromiseVerdict.exercised),
        ("self.assertTrue(torch.all(scores >= 0))", PromiseVerdict.exercised),
        ("self.assertGreater(len(scores), 0)", PromiseVerdict.exercised),
        # a value the promise fixes is a check
        ("assert scores.sum() > 0.5", PromiseVerdict.checked),
        ("assert scores.sum() == 0", PromiseVerdict.checked),
    ],
)
def test_a_sign_check_is_no_check_of_a_feature(check, verdict):
    # A verdict that took an assertion that a value is above zero as a check fails the first
    # three; one that set aside every comparison with a number fails the last two.
    code = _code(SIGN_TEST.format(check=check), "sample_scores")
    assert _verdict(PromiseCategory.functional, "sample_scores returns scores", code) is verdict


def test_an_allclose_on_the_changed_functions_output_checks_a_numeric_promise():
    code = _code(ALLCLOSE_TEST, "fused_loss")
    assert _verdict(PromiseCategory.numeric, "fused loss is exact", code) is PromiseVerdict.checked


ZEROS_TEST = """
import torch
from pkg import pad_outputs


def test_padding_rows_are_zero():
    out = pad_outputs(torch.ones(2, 4), 3)
    assert {check}
"""


@pytest.mark.parametrize(
    ("quote", "check", "verdict"),
    [
        # zeroing is exact: that the padded rows are exactly zero is what pad_outputs promises
        (
            "pad_outputs zeroes out padding rows",
            "torch.all(out[2:] == 0.0)",
            PromiseVerdict.checked,
        ),
        (
            "pad_outputs zeroes out padding rows",
            "torch.count_nonzero(out[2:]) == 0",
            PromiseVerdict.checked,
        ),
        ("pad_outputs zeroes out padding rows", "not out[2:].any()", PromiseVerdict.checked),
        # a row count is no check of the values
        ("pad_outputs zeroes out padding rows", "out.size(0) == 3", PromiseVerdict.exercised),
        # a numeric promise of another kind needs its tolerance
        ("pad_outputs keeps outputs stable", "torch.all(out[2:] == 0.0)", PromiseVerdict.exercised),
    ],
)
def test_exact_zeros_check_a_numeric_promise_to_zero_or_mask_values(quote, check, verdict):
    code = _code(ZEROS_TEST.format(check=check), "pad_outputs")
    assert _verdict(PromiseCategory.numeric, quote, code) is verdict


ECHO_TEST = """
from pkg import StopParams


def test_stop_words_are_set():
    params = StopParams(stop_words=["STOP", "END"])
    out = params.apply("a STOP b")
    assert {check}
"""


ECHO_SET_UP_TEST = """
from pkg import StopParams


class TestStopParams:
    def setup_method(self):
        self.params = StopParams(stop_words=["STOP", "END"])

    def test_stop_words_are_set(self):
        out = self.params.apply("a STOP b")
        assert {check}
"""


@pytest.mark.parametrize("template", [ECHO_TEST, ECHO_SET_UP_TEST], ids=["test", "set-up"])
@pytest.mark.parametrize(
    ("check", "verdict"),
    [
        # the field read back is the literal just given (by the test or by its class's
        # set-up): any object that stores it passes
        ('{owner}.stop_words == ["STOP", "END"]', PromiseVerdict.exercised),
        ('["STOP", "END"] == {owner}.stop_words', PromiseVerdict.exercised),
        ('self.assertEqual({owner}.stop_words, ["STOP", "END"])', PromiseVerdict.exercised),
        # ... and so is its type, when it is the class the object was built from
        ("isinstance({owner}, StopParams)", PromiseVerdict.exercised),
        ("self.assertIsInstance({owner}, StopParams)", PromiseVerdict.exercised),
        # what the object does with it is a check, and so is the class of what it returns
        ('out == "a "', PromiseVerdict.checked),
        ('{owner}.stop_words == ["STOP"]', PromiseVerdict.checked),
        ("isinstance(out, StopParams)", PromiseVerdict.checked),
    ],
)
def test_reading_back_a_literal_just_given_checks_nothing(template, check, verdict):
    owner = "params" if template is ECHO_TEST else "self.params"
    code = _code(template.format(check=check.format(owner=owner)), "StopParams")
    assert _verdict(PromiseCategory.functional, "StopParams stop words support", code) is verdict


SKIPPED_TEST = """
import pytest
import unittest
from pkg import fused_loss

{module}


{mark}
def test_fused_loss_is_exact():
    {first}
    assert fused_loss(1) == 1
"""


@pytest.mark.parametrize(
    ("module", "mark", "first", "verdict"),
    [
        ("", "", "pass", PromiseVerdict.checked),
        # a test always skipped never runs: it reaches nothing
        ("", '@pytest.mark.skip(reason="local only")', "pass", PromiseVerdict.unchecked),
        ("", "@pytest.mark.skip", "pass", PromiseVerdict.unchecked),
        ("", '@unittest.skip("flaky")', "pass", PromiseVerdict.unchecked),
        ("", "", 'pytest.skip("needs a cluster")', PromiseVerdict.unchecked),
        ('pytestmark = pytest.mark.skip("broken")', "", "pass", PromiseVerdict.unchecked),
        # skipped on some machines only: it runs where it can
        ("", '@pytest.mark.skipif(not HAVE_GPU, reason="gpu")', "pass", PromiseVerdict.checked),
        ("", "", "if not HAVE_GPU: pytest.skip('gpu')", PromiseVerdict.checked),
        ('pytestmark = pytest.mark.skipif(True, reason="x")', "", "pass", PromiseVerdict.checked),
    ],
)
def test_a_test_always_skipped_reaches_nothing(module, mark, first, verdict):
    code = _code(SKIPPED_TEST.format(module=module, mark=mark, first=first), "fused_loss")
    assert _verdict(PromiseCategory.functional, "fused_loss is exact", code) is verdict


SKIPPED_CLASS_TEST = """
import unittest
from pkg import fused_loss


{mark}
class TestLoss(unittest.TestCase):
    def test_fused_loss_is_exact(self):
        self.assertEqual(fused_loss(1), 1)
"""


@pytest.mark.parametrize(
    ("mark", "verdict"),
    [("", PromiseVerdict.checked), ('@unittest.skip("later")', PromiseVerdict.unchecked)],
)
def test_a_class_always_skipped_skips_its_tests(mark, verdict):
    code = _code(SKIPPED_CLASS_TEST.format(mark=mark), "fused_loss")
    assert _verdict(PromiseCategory.functional, "fused_loss is exact", code) is verdict


MULTI_RANK_TEST = """
import torch
import torch.distributed as dist
from pkg import fused_loss


def test_fused_loss_over_two_ranks():
    dist.init_process_group("gloo", world_size=2)
    out = fused_loss(1)
    assert torch.allclose(out, torch.ones(1))
"""


@pytest.mark.parametrize(
    ("source", "verdict"),
    [(ALLCLOSE_TEST, PromiseVerdict.exercised), (MULTI_RANK_TEST, PromiseVerdict.checked)],
)
def test_a_numeric_promise_across_ranks_is_checked_only_by_a_test_on_several(source, verdict):
    # At one rank a mean and a sum over the data-parallel group are the same number.
    code = _code(source, "fused_loss")
    quote = "fused_loss averages over the data-parallel group"
    assert _verdict(PromiseCategory.numeric, quote, code) is verdict
    assert _verdict(PromiseCategory.numeric, "fused_loss is exact", code) is (
        PromiseVerdict.checked
    )


def test_an_allclose_on_another_value_does_not_check_the_promise():
    # The assertion runs in a test that calls the changed function, but its value does not
    # come from it: a verdict not tied to the assertion's inputs says checked.
    code = _code(ALLCLOSE_ELSEWHERE_TEST, "fused_loss")
    assert _verdict(PromiseCategory.numeric, "fused loss is exact", code) is (
        PromiseVerdict.exercised
    )


def test_a_promise_is_judged_on_the_tests_that_reach_the_symbols_it_names():
    # Two changed functions; the test checks only one. The promise about the other is
    # not checked by it, and no test reaches that one at all.
    code = _code(ALLCLOSE_TEST, "fused_loss", "other.offload_weights")
    assert _verdict(PromiseCategory.functional, "offload_weights to CPU", code) is (
        PromiseVerdict.unchecked
    )
    assert _verdict(PromiseCategory.functional, "add fused_loss", code) is PromiseVerdict.checked


@pytest.mark.parametrize(
    ("quote", "linked"),
    [
        # "inference" is a word of the flags' declaration too: the engine is what it concerns
        ("enable multi-node inference in the engine", {"InferenceEngine"}),
        # a promise that names the declaration itself still links to it
        ("_add_inference_args gains --inference-nodes", {"_add_inference_args"}),
    ],
)
def test_a_function_declaring_flags_is_linked_only_when_named(quote, linked):
    # A link by name words that took the flags' declaration would judge the promise on the
    # tests of argument parsing.
    code = _code(ALLCLOSE_TEST, "_add_inference_args", "InferenceEngine", "other.add_parser")
    assert link(quote, code).names == linked


@pytest.mark.parametrize("field_first", [True, False])
def test_a_name_two_definitions_share_links_by_the_better_of_them(field_first):
    # fused_norm_kernel is both a new function, whose name is all the quote says, and a field
    # of a config class, whose words dilute it as much as the flag's prefix dilutes
    # ddp_fused_norm_kernel. Scored by whichever definition comes last, the function's name
    # ties with the flag's, and the promise is judged on the flag's tests too.
    definitions = ["kernels.fused_norm_kernel", "NormalizationConfig.fused_norm_kernel"]
    if field_first:
        definitions.reverse()
    code = _code(ALLCLOSE_TEST, *definitions, "ddp_fused_norm_kernel")
    assert link("fused norm kernel", code).names == {"fused_norm_kernel"}


def test_a_docstring_links_a_promise_that_does_not_name_the_function():
    code = _code(
        ALLCLOSE_TEST,
        "fused_loss",
        "other.helper",
        docs={"fused_loss": "Cross entropy computed in chunks of the vocabulary."},
    )
    quote = "compute the cross entropy over vocabulary chunks"
    assert _verdict(PromiseCategory.numeric, quote, code) is PromiseVerdict.checked


def test_a_promise_that_names_no_changed_symbol_is_at_most_exercised():
    # Weak evidence: the test may run the code, nothing ties it to this promise.
    code = _code(ALLCLOSE_TEST, "fused_loss")
    quote = "improves stability for everyone"
    assert _verdict(PromiseCategory.numeric, quote, code) is PromiseVerdict.exercised


SIZES_TEST = """
from pkg import regroup


def test_regroup():
    chunks = regroup([1, 2, 3], 2)
    assert len(chunks) == 2
"""


@pytest.mark.parametrize(
    ("quote", "verdict"),
    [
        # a promise about how many or how large: a length is what it promises
        ("regroup pads the batch to a multiple of the chunk count", PromiseVerdict.checked),
        ("regroup limits the samples per rank", PromiseVerdict.checked),
        # a promise about something else: a length says nothing of it
        ("regroup supports custom reward functions", PromiseVerdict.exercised),
    ],
)
def test_a_length_asserted_checks_a_functional_promise_about_sizes(quote, verdict):
    # A verdict that took no length as a check fails the first two; one that took any length
    # for any promise fails the third.
    code = _code(SIZES_TEST, "regroup")
    assert _verdict(PromiseCategory.functional, quote, code) is verdict


def test_an_existence_check_is_no_size_check():
    code = _code(SIZES_TEST.replace("len(chunks) == 2", "isinstance(chunks, list)"), "regroup")
    quote = "regroup pads the batch to a multiple of the chunk count"
    assert _verdict(PromiseCategory.functional, quote, code) is PromiseVerdict.exercised


DTYPE_TEST = """
import torch
from pkg import lm_head


def test_lm_head():
    logits = lm_head(torch.ones(2))
    assert logits.dtype == torch.float32
"""


@pytest.mark.parametrize(
    ("category", "quote", "verdict"),
    [
        # a precision promised: the dtype is what it promises
        (PromiseCategory.numeric, "lm_head returns FP32 logits", PromiseVerdict.checked),
        (PromiseCategory.functional, "lm_head supports a dtype override", PromiseVerdict.checked),
        # a numeric promise about something else: a dtype is no tolerance
        (PromiseCategory.numeric, "lm_head matches the reference", PromiseVerdict.exercised),
    ],
)
def test_a_dtype_asserted_checks_a_promise_about_precision(category, quote, verdict):
    # A verdict that took no dtype as a check fails the first two; one that took a dtype
    # for any numeric promise fails the third.
    code = _code(DTYPE_TEST, "lm_head")
    assert _verdict(category, quote, code) is verdict


TITLE_TEST = """
from pkg import engine_step


def test_inference_step_returns_tokens():
    assert engine_step([1, 2]) == [3]
"""


@pytest.mark.parametrize(
    ("position", "quote", "verdict"),
    [
        # a squash commit's subject speaks for the whole change: a test of the changed code
        # bearing on a word of it checks it
        (0, "Inference fixes", PromiseVerdict.checked),
        # ... a word of it however inflected ("stepping", test_inference_step_...)
        (0, "Stepping fixes", PromiseVerdict.checked),
        # the same words in the body name one behaviour among others: too weak a link
        (1, "Inference fixes", PromiseVerdict.exercised),
        # a title whose words no assertion bears on
        (0, "Tokenizer cleanup", PromiseVerdict.exercised),
    ],
)
def test_a_titles_functional_promise_is_checked_by_a_test_of_the_change_bearing_on_it(
    position, quote, verdict
):
    # A verdict that never read a title as the whole change fails the first case; one that
    # took any assertion on the change for any weak promise fails the other two.
    code = _code(TITLE_TEST, "engine_step")
    promise = ExtractedPromise(category=PromiseCategory.functional, quote=quote, position=position)
    assert judge_promises([promise], code)[0].verdict is verdict


ROUND_TRIP_TEST = """
from pkg import Store


def test_state_survives_save_and_load(tmp_path):
    store = Store()
    store.put("a", 1)
    store.save_checkpoint(tmp_path)
    restored = Store.load_checkpoint(tmp_path)
    assert restored.get("a") == 1
"""
SAVE_ONLY_TEST = """
from pkg import Store


def test_save_writes(tmp_path):
    store = Store()
    store.put("a", 1)
    assert store.get("a") == 1
    store.save_checkpoint(tmp_path)
"""


def test_a_value_asserted_after_a_save_and_load_checks_a_state_promise():
    code = _code(ROUND_TRIP_TEST, "Store.save_checkpoint", "Store.load_checkpoint")
    quote = "load_checkpoint resumes what save_checkpoint wrote"
    assert _verdict(PromiseCategory.state, quote, code) is PromiseVerdict.checked
    code = _code(SAVE_ONLY_TEST, "Store.save_checkpoint", "Store.load_checkpoint")
    assert _verdict(PromiseCategory.state, quote, code) is PromiseVerdict.exercised


WEIGHTS_CARRIED_TEST = """
import torch
from pkg import build_model, swap_model_weights


def test_weights_land_in_another_layout():
    src, dst = build_model(tp=1), build_model(tp=2)
    {before}
    swap_model_weights([src], [dst])
    {after}
"""


@pytest.mark.parametrize(
    ("before", "after", "verdict"),
    [
        # the receiver's outputs compared after the weights were carried into it
        ("pass", "assert torch.allclose(dst(1), src(1))", PromiseVerdict.checked),
        # the same comparison before the transfer says nothing of it
        ("assert torch.allclose(dst(1), src(1))", "pass", PromiseVerdict.exercised),
    ],
)
def test_a_value_asserted_after_weights_are_carried_into_another_model_checks_state(
    before, after, verdict
):
    # A verdict that took only a save then a load as a round trip says exercised for both.
    source = WEIGHTS_CARRIED_TEST.format(before=before, after=after)
    code = _code(source, "swap_model_weights", "build_model")
    quote = "swap_model_weights refits the destination model"
    assert _verdict(PromiseCategory.state, quote, code) is verdict


HELPER_AFTER_LOAD_TEST = """
from pkg import Store


def _assert_holds(store, key, value):
    assert store.get(key) == value


def test_state_survives_save_and_load(tmp_path):
    store = Store()
    store.put("a", 1)
    {before}
    store.save_checkpoint(tmp_path)
    restored = Store.load_checkpoint(tmp_path)
    {after}
"""


@pytest.mark.parametrize(
    ("before", "after", "verdict"),
    [
        # the helper asserts on the restored store: its assertion, seen from the call
        ("pass", '_assert_holds(restored, "a", 1)', PromiseVerdict.checked),
        # called before the save, on the store as it was: nothing after the load
        ('_assert_holds(store, "a", 1)', "pass", PromiseVerdict.exercised),
    ],
)
def test_a_helper_called_after_a_save_and_load_asserts_on_what_it_is_given(before, after, verdict):
    # The helper's own line precedes the test and names neither the load nor the store: a
    # verdict that reads helpers only where they are defined says exercised for both.
    source = HELPER_AFTER_LOAD_TEST.format(before=before, after=after)
    code = _code(source, "Store.save_checkpoint", "Store.load_checkpoint")
    quote = "load_checkpoint resumes what save_checkpoint wrote"
    assert _verdict(PromiseCategory.state, quote, code) is verdict


def test_a_helper_called_many_times_is_seen_from_its_last_calls_only():
    from probe_builder.promises.assertions import CALLS_SEEN

    helper = "def _check(x):\n    assert x.a() == 1\n    assert x.b() == 2\n\n\n"
    test = "def test_many(obj):\n" + "    _check(obj)\n" * 500
    profile = profile_source("tests/test_h.py", helper + test)
    assert len(profile.called) == 2 * CALLS_SEEN  # not 2 * 500
    last = 6 + 500  # the test's first line, then one call a line
    assert max(v.line for v in profile.called) == last


def test_a_helpers_assertions_seen_from_its_calls_reach_the_verdict_of_a_real_patch(tmp_path):
    # The same through the patch: profile_test_patch carries every file's views of helpers.
    store = "class Store:\n    def save_checkpoint(self, path):\n        pass\n"
    change = {
        "pkg/__init__.py": "from pkg.store import Store\n",
        "pkg/store.py": store + "\n    @classmethod\n    def load_checkpoint(cls, path):\n"
        "        return cls()\n",
        "tests/test_store.py": HELPER_AFTER_LOAD_TEST.format(
            before="pass", after='_assert_holds(restored, "a", 1)'
        ),
    }
    pr = make_pr(tmp_path, {"pkg/__init__.py": "", "pkg/store.py": store}, change)
    code = pr.code_under_test()
    assert code.profile.called, "the helper's assertion, seen from the test's call"
    quote = "load_checkpoint resumes what save_checkpoint wrote"
    assert _verdict(PromiseCategory.state, quote, code) is PromiseVerdict.checked


HELPER_TEST = """
import torch
from pkg import fused_loss


def run_fused():
    return fused_loss(1)


def verify_correctness():
    torch.testing.assert_close(run_fused(), torch.ones(1), atol=1e-4, rtol=0)
"""


def test_a_check_run_from_a_script_counts_with_the_helpers_it_calls():
    # No function is named test_*; the asserting function is the test, and its assertion
    # depends on fused_loss through the helper.
    code = _code(HELPER_TEST, "fused_loss")
    assert [t.name for t in code.profile.tests] == ["verify_correctness"]
    assert _verdict(PromiseCategory.numeric, "fused_loss is exact", code) is (
        PromiseVerdict.checked
    )


def test_a_launch_script_that_sets_the_new_flag_exercises_the_promise(tmp_path):
    config = "from dataclasses import dataclass\n\n\n@dataclass\nclass TrainConfig:\n    lr: float = 1.0\n"
    base = {
        "pkg/__init__.py": "",
        "pkg/cfg.py": config,
        "pkg/kern.py": "def fast_kernel():\n    pass\n",
    }
    change = {
        "pkg/cfg.py": config + "    use_fused: bool = False\n",
        "pkg/kern.py": "def fast_kernel():\n    return 1\n",
        "tests/e2e/run.sh": "python -m pkg.train use_fused=True\n",
    }
    pr = make_pr(tmp_path, base, change)
    code = pr.code_under_test()
    quote = "add the option use_fused"
    assert _verdict(PromiseCategory.functional, quote, code) is PromiseVerdict.exercised
    quote = "fast_kernel is faster"
    assert _verdict(PromiseCategory.time, quote, code) is PromiseVerdict.unchecked


def test_a_launch_script_naming_another_change_of_the_same_file_exercises_the_promise():
    from probe_builder.promises.linking import TestScript

    symbols = (
        changed_symbol("Trainer.resume_mode", None, "pkg/trainer.py"),
        changed_symbol("Trainer._restore_optimizer_state", None, "pkg/trainer.py"),
        changed_symbol("fused_kernel", None, "pkg/kern.py"),
    )
    script = TestScript("tests/e2e/run_resume.sh", frozenset({"resume_mode", "python"}))
    code = CodeUnderTest(profile_source("tests/test_p.py", "x = 1\n"), symbols, (script,))
    quote = "restore the optimizer state on resume"
    assert _verdict(PromiseCategory.state, quote, code) is PromiseVerdict.exercised
    # a script that names nothing of the promised code's file does not reach it
    quote = "the fused kernel is faster"
    assert _verdict(PromiseCategory.time, quote, code) is PromiseVerdict.unchecked


MODULE_TEST = """
from pkg.engine import run_all
from other import helper


def test_runs_the_engine():
    assert run_all([1, 2]) == 3
"""


def _module_code(*symbols: tuple[str, str]) -> CodeUnderTest:
    profile = profile_source("tests/test_p.py", textwrap.dedent(MODULE_TEST).lstrip())
    return CodeUnderTest(profile, tuple(changed_symbol(q, None, path) for q, path in symbols))


@pytest.mark.parametrize(
    ("path", "verdict"),
    [
        ("pkg/engine.py", PromiseVerdict.exercised),  # the module the test imports
        ("src/pkg/engine.py", PromiseVerdict.exercised),  # the same under a source root
        ("pkg/engine/schedule.py", PromiseVerdict.exercised),  # re-exported by its package
        ("pkg/other_engine.py", PromiseVerdict.unchecked),  # a module the test never uses
        ("pkg/engine/deep/schedule.py", PromiseVerdict.unchecked),  # not its package's own
    ],
)
def test_a_test_using_the_promised_codes_module_exercises_it(path, verdict):
    # The changed function is reached only through run_all, which the PR did not change.
    code = _module_code(("Scheduler.overlap_steps", path), ("unrelated_fn", "pkg/misc.py"))
    quote = "overlap_steps hides the communication"
    assert _verdict(PromiseCategory.time, quote, code) is verdict


BESIDE_TEST = """
from pkg.router import build_routes
from other import count_padding


def test_{name}():
    routes = build_routes(4)
    assert {assertion}
"""


@pytest.mark.parametrize(
    ("category", "name", "assertion", "verdict"),
    [
        # the changed function beside the promised method, asserted on the quote's words
        (PromiseCategory.functional, "routes", "routes.padded == 0", PromiseVerdict.checked),
        (PromiseCategory.numeric, "routes", "routes.padding.sum() == 0", PromiseVerdict.checked),
        # ... on something else it computes: the test may not run the promised code at all
        (PromiseCategory.functional, "routes", "routes.count == 4", PromiseVerdict.exercised),
        (PromiseCategory.numeric, "routes", "routes.weights.sum() == 0", PromiseVerdict.exercised),
        # ... or the quote's words on a value no changed code computes
        (PromiseCategory.functional, "padded", "count_padding() == 0", PromiseVerdict.exercised),
    ],
)
def test_a_test_of_the_code_beside_checks_only_on_the_promises_own_words(
    category, name, assertion, verdict
):
    source = BESIDE_TEST.format(name=name, assertion=assertion)
    profile = profile_source("tests/test_p.py", textwrap.dedent(source).lstrip())
    symbols = ("Router.route", "build_routes")
    code = CodeUnderTest(profile, tuple(changed_symbol(q, None, "pkg/router.py") for q in symbols))
    quote = "Router.route zeroes the padded slots"
    assert _verdict(category, quote, code) is verdict


def test_imports_name_their_modules_at_any_depth():
    source = """
    import pkg.sub.mod
    import numpy as np


    def test_x():
        from pkg.cfg import Config
        assert pkg.sub.mod.f(np.ones(1), Config()) == 1
    """
    profile = profile_source("tests/test_p.py", textwrap.dedent(source).lstrip())
    (test,) = profile.tests
    assert {"pkg.sub.mod", "numpy", "pkg.cfg", "pkg.cfg.Config"} <= test.modules


@pytest.mark.parametrize(
    ("statement", "name", "target", "package"),
    [
        ("import torch.nn.functional as F", "F", "torch.nn.functional", "torch"),
        ("import torch.nn", "torch", "torch", "torch"),
        ("from a.b import c as d", "d", "a.b.c", "a"),
        ("from .ops import compute", "compute", ".ops.compute", "."),
        ("from ..cfg import Config", "Config", "..cfg.Config", "."),
        ("from . import ops", "ops", ".ops", "."),
    ],
)
def test_one_reader_of_imports_serves_every_view_of_them(statement, name, target, package):
    # The contract's aliases, the test profile's modules and the mutants' packages all read
    # these bindings: a reader that bound the dotted path of ``import torch.nn`` to ``torch.nn``
    # or took a relative import for a package fails here.
    import ast

    from probe_builder.material.contract import _import_aliases
    from probe_builder.material.pysource import Source, import_bindings
    from probe_builder.promises.assertions import imported_modules

    tree = ast.parse(statement)
    (binding,) = import_bindings(tree)
    assert (binding.name, binding.target, binding.package) == (name, target, package)
    assert Source("m.py", statement).imported_from == {name: package}
    absolute = package != "."
    assert _import_aliases(tree) == ({name: target} if absolute else {})
    assert (name in imported_modules(tree)) is absolute


def test_a_launch_script_key_that_is_part_of_a_longer_flag_exercises_it():
    from probe_builder.promises.linking import TestScript, link, reaching_scripts

    script = TestScript("tests/e2e/run.sh", frozenset({"python", "use_dynamic_bsz", "bsz"}))
    symbols = (
        changed_symbol("log_prob_use_dynamic_bsz", None, "pkg/cfg.py"),
        changed_symbol("check_bsz", None, "pkg/cfg.py"),
    )
    code = CodeUnderTest(profile_source("tests/test_p.py", ""), symbols, (script,))
    long_flag = link("log_prob_use_dynamic_bsz balances the batches", code)
    assert reaching_scripts(long_flag, code) == [script]
    # a short key ("bsz") inside a longer name is a coincidence, not the flag
    assert reaching_scripts(link("check_bsz validates", code), code) == []


# bench/verdict_eval on a repository built here: one PR, one labelled promise per split.
BENCH_ITEMS = """
- id: "acme/lib#7"
  split: dev
  title: "Fused loss"
  description: ""
  promises:
    - {category: numeric, quote: "fused_loss matches the reference"}
- id: "acme/lib#8"
  split: holdout
  title: "Missing"
  description: ""
  promises:
    - {category: functional, quote: "something"}
"""
BENCH_VERDICTS = """
- id: "acme/lib#7"
  split: dev
  promises:
    - {category: numeric, quote: "fused_loss matches the reference", verdict: checked,
       evidence: "tests/test_p.py allclose"}
- id: "acme/lib#8"
  split: holdout
  promises:
    - {category: functional, quote: "something", verdict: unchecked, evidence: "none"}
"""


def _bench_repo(tmp_path):
    from tests.probe_builder_support import git

    repo = tmp_path / "lib"
    (repo / "pkg").mkdir(parents=True)
    git(repo, "init", "--quiet", "--initial-branch=main")
    (repo / "pkg" / "__init__.py").write_text("def fused_loss(x):\n    return x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "base")
    (repo / "pkg" / "__init__.py").write_text("def fused_loss(x):\n    return x * 1\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_p.py").write_text(textwrap.dedent(ALLCLOSE_TEST).lstrip())
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "Fused loss (#7)")
    data = tmp_path / "data"
    data.mkdir()
    (data / "lib.yaml").write_text(BENCH_ITEMS)
    (data / "verdicts.yaml").write_text(BENCH_VERDICTS)
    return repo, data


def test_verdict_bench_judges_the_labelled_promises_at_the_merge_commit(tmp_path):
    from bench.verdict_eval import evaluate, load_verdict_items

    repo, data = _bench_repo(tmp_path)
    items = load_verdict_items(data)
    dev = evaluate([i for i in items if i.split == "dev"], {"acme/lib": repo})
    assert (dev.items, dev.skipped) == (1, 0)
    assert (dev.agreement.agree, dev.agreement.total) == (1, 1)
    assert (dev.checked_right.agree, dev.checked_right.total) == (1, 1)
    # the check is found on a test of the linked function, and counted there only
    by_step = {step: (t.agree, t.total) for step, t in dev.checked_via.items()}
    assert by_step == {
        "linked": (1, 1),
        "behind": (0, 0),
        "caller": (0, 0),
        "beside": (0, 0),
        "other changes": (0, 0),
        "named for": (0, 0),
        "title": (0, 0),
        "golden values": (0, 0),
    }
    holdout = evaluate([i for i in items if i.split == "holdout"], {"acme/lib": repo})
    assert (holdout.items, holdout.skipped) == (0, 1)  # its commit is not in the mirror


def test_verdict_bench_counts_the_report_claim_on_resource_state_and_mode_only():
    from bench.verdict_eval import LabelledVerdict, VerdictItem, VerdictScore

    score = VerdictScore()
    item = VerdictItem("acme/lib#1", "dev", "t", ())
    memory = LabelledVerdict(PromiseCategory.memory, "q", PromiseVerdict.checked)
    state = LabelledVerdict(PromiseCategory.state, "q", PromiseVerdict.unchecked)
    functional = LabelledVerdict(PromiseCategory.functional, "q", PromiseVerdict.checked)
    score.add(item, memory, PromiseVerdict.exercised)  # "not checked" said, wrongly
    score.add(item, state, PromiseVerdict.exercised)  # "not checked" said, rightly
    score.add(item, functional, PromiseVerdict.exercised)  # not part of the claim
    assert (score.claim_precision.agree, score.claim_precision.total) == (1, 2)
    assert (score.claim_recall.agree, score.claim_recall.total) == (1, 1)
    assert score.agreement.total == 3 and len(score.misses) == 3


def test_verdict_bench_parts_checked_right_into_found_and_false():
    from bench.verdict_eval import LabelledVerdict, VerdictItem, VerdictScore, false_rate_for

    score = VerdictScore()
    item = VerdictItem("acme/lib#1", "dev", "t", ())
    checked = LabelledVerdict(PromiseCategory.functional, "q", PromiseVerdict.checked)
    exercised = LabelledVerdict(PromiseCategory.state, "q", PromiseVerdict.exercised)
    for said in [PromiseVerdict.checked] * 9 + [PromiseVerdict.exercised]:
        score.add(item, checked, said)
    for said in [PromiseVerdict.checked] + [PromiseVerdict.unchecked] * 9:
        score.add(item, exercised, said)
    assert (score.checked_labelled.agree, score.checked_labelled.total) == (10, 20)
    assert (score.checked_found.agree, score.checked_found.total) == (9, 10)
    assert (score.checked_false.agree, score.checked_false.total) == (1, 10)
    # at this found rate and share labelled checked, one false "checked" in ten is the most
    # that leaves "checked" right 0.90 of the times: the bound is where the two meet
    assert score.checked_right.rate == pytest.approx(0.9)
    assert false_rate_for(0.9, score) == pytest.approx(score.checked_false.rate)
    # the fewer promises the tests check, the fewer false checks the same target allows
    fewer = VerdictScore()
    for said in [PromiseVerdict.checked] * 9 + [PromiseVerdict.exercised]:
        fewer.add(item, checked, said)
    for _ in range(30):
        fewer.add(item, exercised, PromiseVerdict.unchecked)
    assert false_rate_for(0.9, fewer) == pytest.approx(0.1 / 3)
    assert false_rate_for(0.9, VerdictScore()) is None  # nothing judged


def test_verdict_bench_counts_which_way_the_rules_part_from_the_labels():
    from bench.verdict_eval import LabelledVerdict, VerdictItem, VerdictScore, render

    score = VerdictScore()
    item = VerdictItem("acme/lib#1", "dev", "t", ())
    checked = LabelledVerdict(PromiseCategory.functional, "q", PromiseVerdict.checked)
    unchecked = LabelledVerdict(PromiseCategory.memory, "q", PromiseVerdict.unchecked)
    score.add(item, checked, PromiseVerdict.exercised)
    score.add(item, checked, PromiseVerdict.exercised)
    score.add(item, unchecked, PromiseVerdict.checked)
    score.add(item, checked, PromiseVerdict.checked)
    V = PromiseVerdict
    assert score.confusion == {
        (V.exercised, V.checked): 2,
        (V.checked, V.unchecked): 1,
        (V.checked, V.checked): 1,
    }
    table = render(score, VerdictScore()).splitlines()
    rows = {line.split()[0]: line.split() for line in table if line.split()[0] in set(V)}
    # rows said, columns labelled (checked, exercised, unchecked), dev then holdout
    assert rows["checked"][1:4] == ["1", "0", "1"]
    assert rows["exercised"][1:4] == ["2", "0", "0"]
    assert rows["unchecked"][1:8] == ["0", "0", "0", "|", "0", "0", "0"]


def test_verdict_bench_without_mirrors_says_so_and_refuses_holdout_misses(tmp_path, capsys):
    from bench.verdict_eval import main

    _, data = _bench_repo(tmp_path)
    assert main(["--dir", str(data), "--mirror", f"acme/lib={tmp_path / 'absent'}"]) == 0
    assert "no mirror of acme/lib" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--dir", str(data), "--misses"])


def test_verdict_bench_prints_dev_misses_beside_the_table(tmp_path, capsys):
    from bench.verdict_eval import main

    repo, data = _bench_repo(tmp_path)
    args = ["--dir", str(data), "--mirror", f"acme/lib={repo}", "--split", "dev", "--misses"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "agreement            1.00   1/1" in out
    assert "'checked' right" in out


def test_verdict_bench_prints_the_same_table_from_readings_kept_between_runs(
    tmp_path, capsys, monkeypatch
):
    from bench import readings
    from bench.verdict_eval import main

    repo, data = _bench_repo(tmp_path)
    args = ["--dir", str(data), "--mirror", f"acme/lib={repo}", "--split", "dev"]
    assert main(args) == 0
    plain = capsys.readouterr().out
    cached = [*args, "--cache", str(tmp_path / "cache"), "--jobs", "2"]
    assert main(cached) == 0
    assert capsys.readouterr().out == plain
    assert len(list((tmp_path / "cache").iterdir())) == 1

    def unread(job):
        raise AssertionError(f"read again: {job}")

    monkeypatch.setattr(readings, "_read", unread)  # the second run reads nothing
    assert main(cached) == 0
    assert capsys.readouterr().out == plain


def test_verdict_bench_lists_a_disagreement_with_each_sides_evidence(tmp_path, capsys):
    from bench.verdict_eval import main

    repo, data = _bench_repo(tmp_path)
    labels = data / "verdicts.yaml"
    labels.write_text(
        labels.read_text().replace(
            'verdict: checked,\n       evidence: "tests/test_p.py allclose"',
            'verdict: unchecked,\n       evidence: "the reader saw no test of it"',
        )
    )
    args = ["--dir", str(data), "--mirror", f"acme/lib={repo}", "--split", "dev", "--misses"]
    assert main(args) == 0
    out = capsys.readouterr().out
    miss = out[out.index("acme/lib#7 numeric said checked, labelled unchecked") :].splitlines()
    assert miss[1].startswith("    rules: tests/test_p.py:")  # the assertion that checks it
    assert "allclose" in miss[1]
    assert miss[2] == "    label: the reader saw no test of it"


def test_verdict_bench_prints_each_repository_beside_the_whole(tmp_path, capsys):
    import shutil

    from bench.verdict_eval import main

    repo, data = _bench_repo(tmp_path)
    other = tmp_path / "other"
    shutil.copytree(repo, other)  # the same PR, under a second repository's name
    (data / "other.yaml").write_text(BENCH_ITEMS.replace("acme/lib", "acme/other"))
    with (data / "verdicts.yaml").open("a") as verdicts:
        verdicts.write(BENCH_VERDICTS.replace("acme/lib", "acme/other"))
    mirrors = ["--mirror", f"acme/lib={repo}", "--mirror", f"acme/other={other}"]
    assert main(["--dir", str(data), *mirrors, "--split", "dev"]) == 0
    tables = capsys.readouterr().out.split("\n== ")
    assert [t.splitlines()[0] for t in tables[1:]] == ["acme/lib", "acme/other"]
    assert "items judged: dev 2 (skipped 0)" in tables[0]
    assert all("items judged: dev 1 (skipped 0)" in t for t in tables[1:])
    # one repository: its table is the whole, printed once
    assert main(["--dir", str(data), "--mirror", f"acme/lib={repo}", "--split", "dev"]) == 0
    assert "\n== " not in capsys.readouterr().out


SECOND_READER = """
- id: "acme/lib#7"
  split: dev
  promises:
    - {category: numeric, quote: "fused_loss matches the reference", verdict: exercised,
       evidence: "tests/test_p.py runs it"}
"""


def test_verdict_bench_puts_a_second_reader_beside_the_labels_and_the_rules(tmp_path, capsys):
    from bench.verdict_eval import main

    repo, data = _bench_repo(tmp_path)
    (data / "agreement").mkdir()
    (data / "agreement" / "verdicts.yaml").write_text(SECOND_READER)
    assert main(["--dir", str(data), "--mirror", f"acme/lib={repo}", "--agreement"]) == 0
    tables = capsys.readouterr().out.split("== ")[1:]
    assert [t.splitlines()[0] for t in tables] == [
        "second reader vs the set's labels",
        "rules vs the set's labels, same promises",
        "rules vs the second reader",
    ]
    agreement = [re.search(r"agreement\s+\S+\s+(\d+/\d+)", t).group(1) for t in tables]
    assert agreement == ["0/1", "1/1", "0/1"]  # the reader says exercised, rules and labels checked
    # without a mirror only the readers are compared
    assert main(["--dir", str(data), "--agreement"]) == 0
    assert capsys.readouterr().out.count("== ") == 1


@pytest.mark.parametrize(
    ("second", "message"),
    [
        (SECOND_READER.replace("#7", "#9"), "verdicts.yaml: item 'acme/lib#9' has no labelled"),
        (SECOND_READER.replace("split: dev", "split: holdout"), "in split 'holdout'"),
        (
            SECOND_READER.replace("matches the reference", "is fast"),
            "must carry exactly the labelled promises",
        ),
    ],
)
def test_verdict_bench_refuses_a_second_reader_off_the_labelled_promises(
    tmp_path, capsys, second, message
):
    from bench.verdict_eval import main

    _, data = _bench_repo(tmp_path)
    (data / "agreement").mkdir()
    (data / "agreement" / "verdicts.yaml").write_text(second)
    with pytest.raises(SystemExit) as exit_:
        main(["--dir", str(data), "--agreement"])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_verdict_bench_agreement_without_a_second_reader_says_where_to_label(tmp_path, capsys):
    from bench.verdict_eval import main

    _, data = _bench_repo(tmp_path)
    with pytest.raises(SystemExit):
        main(["--dir", str(data), "--agreement"])
    assert "no second reader's verdicts in" in capsys.readouterr().err


def test_verdict_bench_judges_one_item_file_alone_and_refuses_an_unknown_one(tmp_path, capsys):
    from bench.verdict_eval import main

    repo, data = _bench_repo(tmp_path)
    (data / "other.yaml").write_text(BENCH_ITEMS.replace("acme/lib#7", "acme/lib#70"))
    mirror = ["--mirror", f"acme/lib={repo}"]
    assert main(["--dir", str(data), *mirror, "--file", "lib.yaml"]) == 0
    assert "items judged: dev 1 (skipped 0), holdout 0 (skipped 1)" in capsys.readouterr().out
    assert main(["--dir", str(data), *mirror, "--file", "other.yaml"]) == 0
    assert "items judged: dev 0 (skipped 0)" in capsys.readouterr().out  # #70 has no verdicts
    with pytest.raises(SystemExit) as exit_:
        main(["--dir", str(data), *mirror, "--file", "verdicts.yaml"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--file verdicts.yaml: no such item file" in err and "lib.yaml, other.yaml" in err


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ("assert m(x) is True\n", AssertionKind.functional),  # what m returns for x
        ("assert m(x) is False\n", AssertionKind.functional),
        ("assert m(x) is None\n", AssertionKind.structural),  # tells a state apart, no more
        ("assert m(x) is not None\n", AssertionKind.structural),
    ],
)
def test_a_result_compared_by_identity_with_a_constant_is_a_value(body, kind):
    assert _kinds(body) == [kind]


GRAPH_BOOKKEEPING = """
from pkg import Engine


def test_padding_matches_a_graph_size():
    engine = Engine({setting})
    sizes = engine.cuda_graph_batch_sizes
    assert engine.padded_size(3) == sizes[0]
"""


@pytest.mark.parametrize(
    ("setting", "verdict"),
    [
        ("", PromiseVerdict.exercised),  # reads graph bookkeeping, runs eagerly
        ('cuda_graph_impl="local"', PromiseVerdict.checked),
        ("enable_cuda_graph=True", PromiseVerdict.checked),
        ("enable_cuda_graph=False", PromiseVerdict.exercised),
        ('cuda_graph_impl="none"', PromiseVerdict.exercised),
    ],
)
def test_a_mode_promise_needs_a_test_that_switches_the_mode_on(setting, verdict):
    code = _code(GRAPH_BOOKKEEPING.format(setting=setting), "Engine")
    assert _verdict(PromiseCategory.mode, "Engine pads to a CUDA graph size", code) is verdict


@pytest.mark.parametrize(
    ("check", "verdict"),
    [
        ("engine.padded_size(3) == 4", PromiseVerdict.checked),
        # true of any engine built so, in the mode or not
        ("isinstance(engine, Engine)", PromiseVerdict.exercised),
        ('engine.cuda_graph_impl == "local"', PromiseVerdict.exercised),
    ],
)
def test_in_the_mode_an_assertion_true_of_any_object_so_built_checks_nothing(check, verdict):
    source = f"""
from pkg import Engine


def test_engine_in_graph_mode():
    engine = Engine(cuda_graph_impl="local")
    assert {check}
"""
    code = _code(source, "Engine")
    assert _verdict(PromiseCategory.mode, "Engine pads to a CUDA graph size", code) is verdict


@pytest.mark.parametrize(
    ("text", "spelled", "not_spelled"),
    [
        ("TestMixtureOfExperts", {"moe", "tmo", "tmoe"}, {"tm", "me", "toe"}),
        ("mixture_of_experts_layer", {"moe", "moel"}, {"me"}),
        ("gated_delta_net(x) == fp8_gdn", {"gdn"}, {"fg"}),
    ],
)
def test_the_acronyms_a_name_spells_are_the_initials_of_three_to_five_of_its_words(
    text, spelled, not_spelled
):
    found = initialisms(text)
    assert spelled <= found
    assert not not_spelled & found


def test_a_regular_expression_compiled_in_a_test_is_not_torch_compile():
    source = (
        "import re\n\ndef test_x(m):\n    pattern = re.compile('a')\n    assert m(pattern) == 1\n"
    )
    profile = profile_source("tests/test_p.py", source)
    assert not profile.tests[0].under_mode


@pytest.mark.parametrize(
    ("second", "verdict"),
    [
        ("later = skip.generate(batch)", PromiseVerdict.checked),  # the same call again
        ("later = skip.regenerate(batch)", PromiseVerdict.exercised),  # another method
    ],
)
def test_a_later_call_compared_with_an_earlier_one_checks_state(second, verdict):
    source = f"""
    from pkg import RolloutSkip


    def test_second_run_reuses_the_dump(batch):
        skip = RolloutSkip(batch)
        first = skip.generate(batch)
        {second}
        assert later == first
    """
    code = _code(source, "RolloutSkip")
    assert _verdict(PromiseCategory.state, "RolloutSkip reuses the dumped rollout", code) is (
        verdict
    )


@pytest.mark.parametrize(
    ("taken", "asserted", "verdict"),
    [
        ("before = pool.free_count", "pool.free_count == before", PromiseVerdict.checked),
        ("before = pool.slots.clone()", "torch.equal(pool.slots, before)", PromiseVerdict.checked),
        ("before = len(pool.slots)", "len(pool.slots) == before", PromiseVerdict.checked),
        # the copy is of another value than the one asserted
        ("before = pool.free_count", "pool.used_count == before", PromiseVerdict.exercised),
        # a constant named, not a value taken before the calls
        ("before = 3", "pool.free_count == before", PromiseVerdict.exercised),
    ],
)
def test_a_value_compared_with_its_copy_taken_before_the_calls_checks_state(
    taken, asserted, verdict
):
    source = f"""
    import torch
    from pkg import SlotPool


    def test_failed_allocation_leaves_the_pool(requests):
        pool = SlotPool(4)
        {taken}
        pool.try_allocate(requests)
        assert {asserted}
    """
    code = _code(source, "SlotPool")
    quote = "SlotPool allocation is all or nothing"
    assert _verdict(PromiseCategory.state, quote, code) is verdict


def test_two_calls_agreeing_do_not_check_a_promised_reset():
    # A cache hit between two calls says nothing about the cache being cleared on reset.
    source = """
    from pkg import RolloutEngine


    def test_repeated_prompt_hits_the_cache(prompt):
        engine = RolloutEngine()
        first = engine.generate(prompt)
        second = engine.generate(prompt)
        assert second == first
    """
    code = _code(source, "RolloutEngine")
    reused = _verdict(PromiseCategory.state, "RolloutEngine reuses the cached prefix", code)
    reset = _verdict(PromiseCategory.state, "RolloutEngine's cache is invalidated on reset", code)
    assert (reused, reset) == (PromiseVerdict.checked, PromiseVerdict.exercised)


@pytest.mark.parametrize(
    ("install", "verdict"),
    [
        ("skip.wrap_generate()", PromiseVerdict.checked),  # patches the worker it was given
        ("", PromiseVerdict.exercised),  # built, never installed: the worker is untouched
    ],
)
def test_a_wrapper_installed_on_an_object_reaches_what_the_object_returns(install, verdict):
    source = f"""
    from pkg import RolloutSkip


    def test_wrapped_worker_returns_the_dump(config, worker):
        skip = RolloutSkip(config, worker)
        {install}
        result = worker.generate()
        assert result == 3
    """
    code = _code(source, "RolloutSkip")
    assert _verdict(PromiseCategory.functional, "RolloutSkip returns the dump", code) is verdict


@pytest.mark.parametrize(
    ("call", "verdict"),
    [
        ("apply_fused_kernels(model)", PromiseVerdict.checked),  # called for its effect
        ("kernels = apply_fused_kernels(None)", PromiseVerdict.exercised),
    ],
)
def test_a_call_for_its_effect_acts_on_what_it_is_given(call, verdict):
    source = f"""
    from pkg import apply_fused_kernels


    def test_patched_model(model, x):
        {call}
        out = model(x)
        assert out == 2
    """
    code = _code(source, "apply_fused_kernels")
    assert _verdict(PromiseCategory.functional, "apply_fused_kernels patches", code) is verdict


@pytest.mark.parametrize(
    ("call", "verdict"),
    [
        # the output it writes into is given, finished through the handle it returns
        ("handle = reduce_scatter_fp32(out, inp)\n        handle.wait()", PromiseVerdict.checked),
        # the same arguments, spread from a list
        ("args = [out[:4], inp]\n        reduce_scatter_fp32(*args)", PromiseVerdict.checked),
        (
            "args = [out[:4], inp]\n        handle = reduce_scatter_fp32(*args)\n        handle.wait()",
            PromiseVerdict.checked,
        ),
        # the output is not among them: it is compared untouched
        (
            "args = [inp]\n        handle = reduce_scatter_fp32(*args)\n        handle.wait()",
            PromiseVerdict.exercised,
        ),
        ("handle = reduce_scatter_fp32(inp)\n        handle.wait()", PromiseVerdict.exercised),
    ],
)
def test_a_call_writes_into_the_objects_it_is_given_spread_from_a_list(call, verdict):
    source = f"""
    import torch
    from pkg import reduce_scatter_fp32


    def test_matches_the_reference(out, inp, expected):
        {call}
        assert torch.allclose(out, expected)
    """
    code = _code(source, "reduce_scatter_fp32")
    quote = "reduce_scatter_fp32 accumulates in FP32"
    assert _verdict(PromiseCategory.numeric, quote, code) is verdict


@pytest.mark.parametrize(
    ("set_up", "verdict"),
    [
        ("def setup_method(self):", PromiseVerdict.checked),  # pytest's, before each test
        ("def setUp(self):", PromiseVerdict.checked),  # unittest's
        ("def _build(self):", PromiseVerdict.unchecked),  # a helper nobody calls: never run
    ],
)
def test_a_test_method_runs_what_its_class_sets_up(set_up, verdict):
    # The test names nothing of the change: the model it runs is built before it, by the
    # class's set-up, which the patch left alone.
    source = f"""
    import torch
    from pkg import PaddedModel


    class TestPadding:
        {set_up}
            self.model = PaddedModel(hidden=8)

        def test_padding_logits_are_zero(self):
            logits = self.model(torch.ones(3))
            assert torch.all(logits[2:] == 0.0)
    """
    code = _code(source, "PaddedModel")
    quote = "PaddedModel zeroes the logits of padding tokens"
    assert _verdict(PromiseCategory.numeric, quote, code) is verdict


def test_a_test_method_runs_what_a_base_class_of_its_file_sets_up():
    source = """
    import torch
    from pkg import PaddedModel


    class PaddingCase:
        def setup_method(self):
            self.model = PaddedModel(hidden=8)


    class TestPadding(PaddingCase):
        def test_padding_logits_are_zero(self):
            logits = self.model(torch.ones(3))
            assert torch.all(logits[2:] == 0.0)
    """
    code = _code(source, "PaddedModel")
    quote = "PaddedModel zeroes the logits of padding tokens"
    assert _verdict(PromiseCategory.numeric, quote, code) is PromiseVerdict.checked


@pytest.mark.parametrize(
    ("calls", "verdict"),
    [
        # given a part of the model: the model is what it acts on
        (["shard_layers(model.fc1)"], PromiseVerdict.checked),
        # given the optimizer built around the model's parameters: its step moves the model
        (
            [
                "optimizer = Adam(model.parameters())",
                "shard_layers(optimizer)",
                "optimizer.step()",
            ],
            PromiseVerdict.checked,
        ),
        # an optimizer built around something else: the model is untouched
        (
            ["optimizer = Adam(other.parameters())", "shard_layers(optimizer)", "optimizer.step()"],
            PromiseVerdict.exercised,
        ),
    ],
)
def test_a_call_acts_on_the_object_a_part_it_is_given_belongs_to(calls, verdict):
    body = "\n        ".join(calls)
    source = f"""
    from pkg import Adam, shard_layers


    def test_sharded_model(model, other, x):
        {body}
        out = model(x)
        assert out == 2
    """
    code = _code(source, "shard_layers")
    assert _verdict(PromiseCategory.functional, "shard_layers shards", code) is verdict


@pytest.mark.parametrize(
    ("target", "verdict"),
    [
        ('"tests.test_p.ProbeLoop"', PromiseVerdict.exercised),  # runs the subclass
        ('"tests.test_p.OtherLoop"', PromiseVerdict.unchecked),
    ],
)
def test_a_subclass_named_by_its_import_path_reaches_its_base(target, verdict):
    source = f"""
    from pkg import ReactAgentLoop, run_agents


    class ProbeLoop(ReactAgentLoop):
        pass


    def test_agent_loop():
        config = {{"_target_": {target}}}
        result = run_agents(config)
        assert len(result) == 2
    """
    code = _code(source, "ReactAgentLoop")
    assert _verdict(PromiseCategory.functional, "add a ReactAgentLoop", code) is verdict


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ("assert torch.allclose(x, y)\n", AssertionKind.numeric),
        ("assert not torch.allclose(x, y)\n", AssertionKind.functional),  # only: they differ
        ("self.assertNotAlmostEqual(x, y, places=3)\n", AssertionKind.functional),
    ],
)
def test_values_that_only_differ_are_not_a_numeric_check(body, kind):
    assert _kinds(body) == [kind]


# The code behind what a promise names: a changed function that reads the promised flag, the
# changed helper a promised class calls. The PR's tests often run that code, not the name; an
# assertion on it checks the promise only where it bears on what the quote says beyond the
# name (its text, its test's name or its inputs use a word of that); otherwise it checks the
# helper, and the promise is exercised.
_MUON_CONFIG = (
    "from dataclasses import dataclass\n\n\n@dataclass\nclass MuonConfig:\n    lr: float = 1.0\n"
)
BEHIND_BASE = {
    "pkg/__init__.py": "",
    "pkg/cfg.py": _MUON_CONFIG,
    "pkg/ortho.py": "def orthogonalize(x, cfg):\n    return x\n",
    "pkg/perm.py": "def permute_tokens(x):\n    return x\n",
}
BEHIND_CHANGE = {
    "pkg/cfg.py": _MUON_CONFIG + "    tp_mode: str = 'duplicated'\n",
    # reads the new flag
    "pkg/ortho.py": (
        "def orthogonalize(x, cfg):\n"
        "    if getattr(cfg, 'tp_mode') == 'blockwise':\n"
        "        return x * 2\n"
        "    return x\n"
    ),
    "pkg/kernels.py": "def grouped_gemm_kernel(x):\n    return x + 1\n",
    "pkg/perm.py": "def permute_tokens(x):\n    return x[::-1]\n",
    "pkg/moe.py": (
        "from pkg.kernels import grouped_gemm_kernel\n\n\n"
        "class GroupedGemmBackend:\n"
        "    def apply(self, x):\n"
        "        return grouped_gemm_kernel(x)\n"
    ),
    "tests/test_ortho.py": (
        "from pkg.ortho import orthogonalize\n\n\n"
        "def test_blockwise_doubles():\n"
        "    assert orthogonalize(1, object()) == 1\n"
    ),
    "pkg/warm.py": "def warmup_factor(n):\n    return n / 4\n\n\ndef ramp_factor(n):\n    return n / 2\n",
    "pkg/sched.py": (
        "from pkg.warm import ramp_factor, warmup_factor\n\n\n"
        "class ClippedScheduler:\n"
        "    def step(self, n):\n"
        "        return warmup_factor(n)\n\n\n"
        "class LinearScheduler:\n"
        "    def step(self, n):\n"
        "        return ramp_factor(n)\n"
    ),
    "tests/test_warm.py": (
        "from pkg.warm import ramp_factor, warmup_factor\n\n\n"
        "def test_clipped_warmup_quarter():\n"
        "    assert warmup_factor(2) == 0.5\n\n\n"
        "def test_ramp_half():\n"
        "    assert ramp_factor(2) == 1\n"
    ),
    "tests/test_kernel.py": (
        "from pkg.kernels import grouped_gemm_kernel\n"
        "from pkg.perm import permute_tokens\n\n\n"
        "def test_kernel_adds_one():\n"
        "    assert grouped_gemm_kernel(1) == 2\n\n\n"
        "def test_permute_reverses():\n"
        "    assert permute_tokens([1, 2]) == [2, 1]\n"
    ),
}


@pytest.fixture(scope="module")
def behind_code(tmp_path_factory):
    pr = make_pr(tmp_path_factory.mktemp("behind"), BEHIND_BASE, BEHIND_CHANGE)
    return pr.code_under_test()


@pytest.mark.parametrize(
    ("category", "quote", "verdict"),
    [
        # the flag is read by orthogonalize, whose result test_blockwise_doubles asserts
        (PromiseCategory.functional, "support 'blockwise' tp_mode", PromiseVerdict.checked),
        # ... which says nothing of the other value of the flag
        (PromiseCategory.functional, "support 'duplicated' tp_mode", PromiseVerdict.exercised),
        # the class calls grouped_gemm_kernel (another file), whose result a test asserts: the
        # quote says nothing beyond the class's name, the test checks the kernel
        (PromiseCategory.functional, "Add a GroupedGemmBackend", PromiseVerdict.exercised),
        # ... and test_kernel_adds_one bears on what this quote says
        (
            PromiseCategory.functional,
            "GroupedGemmBackend adds one to each token",
            PromiseVerdict.checked,
        ),
        # ... and an acronym of the kernel the assertion is computed from (GGK) is a word of it
        (PromiseCategory.functional, "GroupedGemmBackend through GGK", PromiseVerdict.checked),
        (PromiseCategory.functional, "GroupedGemmBackend through GKG", PromiseVerdict.exercised),
        # the test of the helper behind the class is named for what the class's name adds to
        # the helper's ("clipped"): it was written for the promise ...
        (PromiseCategory.functional, "Add ClippedScheduler for short runs", PromiseVerdict.checked),
        # ... which a test named for the helper alone is not
        (
            PromiseCategory.functional,
            "Add LinearScheduler for short runs",
            PromiseVerdict.exercised,
        ),
        # what a test asserts on by name is checked
        (PromiseCategory.functional, "permute_tokens reverses", PromiseVerdict.checked),
        (PromiseCategory.functional, "MuonConfig gains an lr", PromiseVerdict.unchecked),
    ],
)
def test_a_test_of_the_code_behind_checks_the_promise_only_on_what_the_quote_says(
    behind_code, category, quote, verdict
):
    assert _verdict(category, quote, behind_code) is verdict


REST_OF_CHANGE_TEST = """
from pkg.workers import FusedWorker, make_group


def test_group_size():
    FusedWorker.register("actor")
    group = make_group(2)
    assert group.size == 2
"""


@pytest.mark.parametrize(
    ("quote", "changed", "verdict"),
    [
        # the test runs the promised class and asserts on what another changed function
        # makes, which the quote speaks of ("group")
        ("FusedWorker binds workers into a group", ("FusedWorker", "make_group"), "checked"),
        # ... which says nothing of what this quote promises
        ("FusedWorker runs on two devices", ("FusedWorker", "make_group"), "exercised"),
        # ... and code the patch left alone is not the change
        ("FusedWorker binds workers into a group", ("FusedWorker",), "exercised"),
    ],
)
def test_a_test_of_a_linked_symbol_checks_it_on_what_the_rest_of_the_change_makes(
    quote, changed, verdict
):
    # The assertion is computed from make_group, not from the linked FusedWorker: a verdict
    # that reads only assertions on linked names says exercised for the first row; one that
    # takes any assertion on the change says checked for the second.
    code = _code(REST_OF_CHANGE_TEST, *changed)
    promise = ExtractedPromise(category=PromiseCategory.functional, quote=quote)
    (check,) = judge_promises([promise], code)
    assert (check.verdict, check.via) == (
        PromiseVerdict(verdict),
        "other changes" if verdict == "checked" else "",
    )


def test_each_check_says_the_step_that_found_it(behind_code):
    # The verdict bench counts "checked" right per step: a check credited to the wrong step
    # (or to none) would hide which step's checks the readers dispute.
    def via(quote: str, code: CodeUnderTest, position: int = 0) -> str:
        promise = ExtractedPromise(
            category=PromiseCategory.functional, quote=quote, position=position
        )
        (check,) = judge_promises([promise], code)
        assert check.verdict is PromiseVerdict.checked
        return check.via

    assert via("permute_tokens reverses", behind_code) == "linked"
    assert via("support 'blockwise' tp_mode", behind_code) == "behind"
    named = _code(
        NAMED_FOR_TEST.format(name="tied_parameters_share_one_weight", value="shard.weight_count"),
        "Shard",
        "other.Unused",
    )
    assert via("Fix tied parameters", named, position=1) == "named for"
    assert via("Inference fixes", _code(TITLE_TEST, "engine_step")) == "title"
    unchecked = judge_promises(
        [ExtractedPromise(category=PromiseCategory.functional, quote="x")],
        _code(NOT_NONE_TEST, "other.thing"),
    )
    assert unchecked[0].via == ""


def test_the_code_behind_is_one_step_away_and_needs_a_strong_link(behind_code):
    from probe_builder.promises.linking import Link, behind, link

    named = link("Add a GroupedGemmBackend", behind_code)
    assert named.names == {"GroupedGemmBackend"}
    # the kernel it calls is behind it; permute_tokens, which it does not call, is not
    assert behind(named, behind_code).names == {"GroupedGemmBackend", "grouped_gemm_kernel"}
    flag = behind(link("support 'blockwise' tp_mode", behind_code), behind_code)
    assert flag.names == {"tp_mode", "MuonConfig", "orthogonalize"}  # its class and its reader
    weak = Link(frozenset({"tp_mode"}), False)
    assert behind(weak, behind_code) is weak


def test_short_or_generic_names_lead_to_no_code_behind():
    from probe_builder.promises.linking import Link, behind

    symbols = (
        changed_symbol("Engine", None, "pkg/e.py", frozenset({"run", "config", "fused_step"})),
        changed_symbol("run", None, "pkg/r.py"),  # short
        changed_symbol("config", None, "pkg/c.py"),  # a word every codebase uses
        changed_symbol("fused_step", None, "pkg/f.py"),
    )
    code = CodeUnderTest(profile_source("tests/test_p.py", ""), symbols)
    found = behind(Link(frozenset({"Engine"}), True), code)
    assert found.names == {"Engine", "fused_step"}


def test_a_promise_is_about_what_it_names_and_the_methods_behind_it_that_use_that():
    from probe_builder.promises.linking import Link, behind, concerned, link

    symbols = (
        changed_symbol("skip_rollout", None, "pkg/skip.py"),
        # a trainer whose changed fit() calls the promised function and whose changed
        # log_metrics() does not: the promise is about fit(), not the whole trainer
        changed_symbol("Trainer", None, "pkg/t.py", frozenset({"skip_rollout", "emit"})),
        changed_symbol("Trainer.fit", None, "pkg/t.py", frozenset({"skip_rollout"})),
        changed_symbol("Trainer.log_metrics", None, "pkg/t.py", frozenset({"emit"})),
        # a class behind with no changed method of its own counts whole
        changed_symbol("SkipConfig", None, "pkg/c.py", frozenset({"skip_rollout"})),
        # a constructor is placed by its class, not by a name every class has
        changed_symbol("Engine.__init__", None, "pkg/e.py", frozenset({"emit"})),
    )
    code = CodeUnderTest(profile_source("tests/test_p.py", ""), symbols)
    linked = link("skip_rollout reuses the dumped data", code)
    reached = behind(linked, code)
    # as if a quote had tied it by its name: it still places nothing
    reached = Link(reached.names | {"__init__"}, True)
    assert {"skip_rollout", "Trainer", "SkipConfig"} <= reached.names
    assert concerned(linked, reached, code) == {
        "skip_rollout",
        "Trainer.fit",
        "SkipConfig",
    }
    weak = Link(frozenset(s.name for s in symbols), False)
    assert concerned(weak, weak, code) == frozenset()  # about no place in particular


def test_a_definition_uses_its_names_attributes_keywords_and_string_keys():
    import ast

    from probe_builder.promises.linking import names_used

    node = ast.parse(
        "def f(cfg):\n    g(cfg.tp_mode, size=cfg.get('bucket_size'), note='not a key!')\n"
    )
    used = names_used(node)
    assert {"g", "cfg", "tp_mode", "size", "get", "bucket_size"} <= used
    assert "not a key!" not in used


RAISES_TEST = """
import pytest
from pkg import check_batch


def test_valid_batch_passes():
    assert check_batch(8, 4) == 2


def test_indivisible_batch():
    with pytest.raises(ValueError, match="divisible"):
        check_batch(7, 4)
"""
VALUE_ONLY_TEST = """
from pkg import check_batch


def test_valid_batch_passes():
    assert check_batch(8, 4) == 2
"""
ERROR_ONLY_TEST = """
import pytest
from pkg import check_batch


def test_indivisible_batch():
    with pytest.raises(ValueError, match="divisible"):
        check_batch(7, 4)
"""


@pytest.mark.parametrize(
    ("source", "quote", "verdict"),
    [
        (RAISES_TEST, "check_batch raises a clear error message", PromiseVerdict.checked),
        # a value of the happy path says nothing of the error promised
        (VALUE_ONLY_TEST, "check_batch raises a clear error message", PromiseVerdict.exercised),
        # a promise that a feature works is checked by its value
        (VALUE_ONLY_TEST, "check_batch splits the batch", PromiseVerdict.checked),
        # ... not by an error on a bad input; but what the code refuses, or how it copes
        # with a failure, is checked by the error a test expects
        (ERROR_ONLY_TEST, "check_batch splits the batch", PromiseVerdict.exercised),
        (ERROR_ONLY_TEST, "check_batch rejects an indivisible batch", PromiseVerdict.checked),
        (ERROR_ONLY_TEST, "check_batch no longer crashes on odd sizes", PromiseVerdict.checked),
        (ERROR_ONLY_TEST, "check_batch keeps its fields frozen", PromiseVerdict.checked),
    ],
)
def test_an_expected_error_checks_only_a_promised_error_or_refusal(source, quote, verdict):
    code = _code(source, "check_batch")
    assert _verdict(PromiseCategory.functional, quote, code) is verdict


@pytest.mark.parametrize(
    ("assertion", "verdict"),
    [
        # the class the builder chose for the pattern: a value of the change
        ("assert isinstance(block.layers[0], GatedDeltaNet)", PromiseVerdict.checked),
        ("self.assertIsInstance(block.layers[0], layers.GatedDeltaNet)", PromiseVerdict.checked),
        # a general type any layer, or any result, has: no more than ``is not None``
        ("assert isinstance(block.layers[0], torch.nn.Module)", PromiseVerdict.exercised),
        ("assert isinstance(block.layers[0], (GatedDeltaNet, Other))", PromiseVerdict.exercised),
        ("assert isinstance(block.layers, list)", PromiseVerdict.exercised),
        ("assert block.layers[0] is not None", PromiseVerdict.exercised),
    ],
)
@pytest.mark.parametrize(
    "quote",
    [
        "build_block builds gated delta-net layers",
        # what the code copes with: the class it falls back to is what it built
        "build_block falls back to gated delta-net layers on an invalid pattern",
    ],
)
def test_an_instance_of_one_of_the_codes_own_classes_checks_what_it_built(
    assertion, verdict, quote
):
    source = f"""
    import torch
    from pkg import GatedDeltaNet, Other, build_block, layers


    def test_builds_the_chosen_layer(self):
        block = build_block("G")
        {assertion}
    """
    code = _code(source, "build_block")
    assert _verdict(PromiseCategory.functional, quote, code) is verdict


def test_a_plural_of_a_generic_word_is_generic_too():
    from probe_builder.promises.linking import words_of

    # "args" loses its plural before the generic list is read: "arg" tied every promise that
    # says "args" to every test that passes **kwargs
    assert words_of("default args, kwargs and values") == frozenset()
    assert words_of("bucketed all-gathers") == {"bucketed", "gather"}


def test_a_name_with_its_number_is_a_word():
    from probe_builder.promises.linking import words_of

    assert words_of("FP8 params in bf16") == {"fp8", "param", "bf16"}
    assert words_of("Float16Module mxfp8_refit") == {
        "float",
        "float16",
        "module",
        "mxfp",
        "mxfp8",
        "refit",
    }


NAMED_FOR_TEST = """
from pkg import Shard


def test_{name}(model):
    shard = Shard(model)
    assert {value} == 1
"""


@pytest.mark.parametrize(
    ("name", "value", "verdict"),
    [
        # named for the promise, its value computed from the changed code
        ("tied_parameters_share_one_weight", "shard.weight_count", PromiseVerdict.checked),
        # one word of the quote is no name for it
        ("tied_once", "shard.weight_count", PromiseVerdict.exercised),
        # named for it, but its value is not computed from any changed code
        ("tied_parameters_share_one_weight", "len(model.layers)", PromiseVerdict.exercised),
    ],
)
def test_a_test_named_for_the_promise_checks_it_without_a_link(name, value, verdict):
    # "Fix tied parameters", a sentence of the body, names no changed symbol: the link is weak,
    # and only a test written for the promise (its name uses several of the quote's words) can
    # check it.
    code = _code(NAMED_FOR_TEST.format(name=name, value=value), "Shard", "other.Unused")
    quote = "Fix tied parameters"
    assert _verdict(PromiseCategory.functional, quote, code, position=1) is verdict


NAMED_CLASS_TEST = """
from pkg import Shard


class Test{cls}:
    def test_counts(self, model):
        shard = Shard(model)
        assert shard.weight_count == 1
"""


def _named(name: str) -> str:
    return NAMED_FOR_TEST.format(name=name, value="shard.weight_count")


def _in_class(cls: str) -> str:
    return NAMED_CLASS_TEST.format(cls=cls)


@pytest.mark.parametrize(
    ("source", "quote", "verdict"),
    [
        # the name says "invariant" and "sharding" where the quote says "invariance", "sharded"
        (
            _named("sharding_is_batch_invariant"),
            "Batch invariance of the sharded forward",
            "checked",
        ),
        (_named("sharding_is_batch_invariant"), "Batch sizes of the padded forward", "exercised"),
        # a doubled consonant before the ending: "deferred" and "defers"
        (_named("shard_defers_outer_reduce"), "Deferred outer gradient reduction", "checked"),
        # a number format is a word with its number: "fp32" in both, not "fp" and "32"
        (_named("sharded_fp32_residual_matches"), "Fixed fp32 residuals", "checked"),
        (_named("sharded_bf16_residual_matches"), "Fixed fp32 residuals", "exercised"),
        # the class the test lies in is named for the promise
        (_in_class("TiedParameters"), "Fix tied parameters", "checked"),
        (_in_class("Parameters"), "Fix tied parameters", "exercised"),
        # "mxfp" and "mxfp8" are one word of the quote, not two
        (_in_class("QuantizeToMXFP8"), "MXFP8 refit", "exercised"),
        (_in_class("MXFP8Refit"), "MXFP8 refit", "checked"),
        # a name that abbreviates what the quote spells out: "tpe", "mup"
        (_named("tpe_records_per_layer"), "Tokens per expert logging", "checked"),
        (_named("mup_scales_width"), "Maximal update parameterization", "checked"),
        # ... not of two words, which too many names abbreviate by chance
        (_named("tp_scales_width"), "Tensor parallel sharding", "exercised"),
    ],
)
def test_a_test_whose_name_or_class_uses_the_quotes_words_is_named_for_it(source, quote, verdict):
    code = _code(source, "Shard", "other.Unused")
    said = _verdict(PromiseCategory.functional, quote, code, position=1)  # a body sentence
    assert said is PromiseVerdict(verdict)


SHARD_ROUND_TRIP_TEST = """
from pkg import Shard, save, load


def test_shard_round_trip(model, path):
    shard = Shard(model)
    {before}
    {restored}
    assert shard.weight_count == 1
"""


@pytest.mark.parametrize(
    ("before", "restored", "verdict"),
    [
        # saved, loaded back, and a value of the changed code asserted after the load
        ("save(shard, path)", "load(shard, path)", PromiseVerdict.checked),
        # no load after the save: no state crossed anything
        ("save(shard, path)", "pass", PromiseVerdict.exercised),
        # loaded first and saved after: nothing read back what was saved
        ("load(shard, path)", "save(shard, path)", PromiseVerdict.exercised),
    ],
)
def test_a_state_promise_linked_to_nothing_is_checked_by_a_save_and_load_of_changed_code(
    before, restored, verdict
):
    # "Support single-moment checkpointing" names no changed symbol: the link is weak, and a
    # test not named for it checks it only by a round trip through the changed code.
    source = SHARD_ROUND_TRIP_TEST.format(before=before, restored=restored)
    code = _code(source, "Shard", "other.Unused")
    quote = "Support single-moment checkpointing"
    assert _verdict(PromiseCategory.state, quote, code) is verdict
    # a functional promise is not checked by the round trip's shape alone
    assert _verdict(PromiseCategory.functional, quote, code) is PromiseVerdict.exercised


CHECKPOINT_CONTENT_TEST = """
from pkg import Shard, save


def test_shard_emits_its_objects(model, path):
    shard = Shard(model)
    {before}
    objects = shard.sharded_objects()
    assert {value}
"""


@pytest.mark.parametrize(
    ("before", "value", "quote", "verdict"),
    [
        # what the code would save, read without a save: the checkpoint's state itself
        ("pass", "len(objects) == 1", "Fix checkpointing of sharded objects", "checked"),
        # a reset promised: only a value after the reset speaks for it
        ("pass", "len(objects) == 1", "Reset clears the sharded objects", "exercised"),
        # load balancing spreads work: no checkpoint is loaded
        ("pass", "len(objects) == 1", "Keep load balancing of sharded objects", "exercised"),
        # a test that saves is judged by its round trip, and nothing is loaded back
        (
            "save(shard, path)",
            "len(objects) == 1",
            "Fix checkpointing of sharded objects",
            "exercised",
        ),
        # an existence check says nothing of what is saved
        ("pass", "objects is not None", "Fix checkpointing of sharded objects", "exercised"),
    ],
)
def test_a_checkpoint_state_promise_is_checked_by_what_the_code_would_save(
    before, value, quote, verdict
):
    source = CHECKPOINT_CONTENT_TEST.format(before=before, value=value)
    code = _code(source, "Shard", "other.Unused")
    assert _verdict(PromiseCategory.state, quote, code) is PromiseVerdict(verdict)


GRID_HELPER_TEST = """
from pkg import add_grid_args, make_parser


def _parser():
    parser = make_parser()
    {helper_body}
    return parser


def _parsed(argv):
    return _parser().parse_args(argv)


def test_grid_sizes_are_read():
    {test_body}
    args = _parsed(["--grid", "4x4"])
    assert args.grid == (4, 4)
"""


@pytest.mark.parametrize(
    ("helper_body", "test_body", "verdict"),
    [
        # the helper of the test's helper calls the changed function: the value asserted is
        # computed from it
        ("add_grid_args(parser)", "pass", PromiseVerdict.checked),
        # the test calls it, but the value asserted comes from a helper that does not
        ("pass", "add_grid_args(make_parser())", PromiseVerdict.exercised),
    ],
)
def test_a_value_a_test_gets_through_its_helpers_is_computed_from_what_they_call(
    helper_body, test_body, verdict
):
    code = _code(
        GRID_HELPER_TEST.format(helper_body=helper_body, test_body=test_body), "add_grid_args"
    )
    quote = "Add `add_grid_args` for heterogeneous grid sizes"
    assert _verdict(PromiseCategory.functional, quote, code) is verdict


FIELD_SET_TEST = """
from pkg.train import TrainConfig, train


def test_one_step():
    cfg = TrainConfig()
    cfg.use_fused_loss = {value}
    loss = train(cfg)
    assert loss == 3.0
"""


@pytest.mark.parametrize(
    ("value", "verdict"),
    [
        ("True", PromiseVerdict.checked),  # the object given the flag is what the loss comes from
        ("flag_from_env()", PromiseVerdict.checked),
    ],
)
def test_a_field_set_on_an_object_makes_what_it_computes_depend_on_the_field(value, verdict):
    code = _code(FIELD_SET_TEST.format(value=value), "use_fused_loss")
    quote = "use_fused_loss computes the same loss"
    assert _verdict(PromiseCategory.functional, quote, code) is verdict
    # a value computed from another object does not depend on the field
    other = FIELD_SET_TEST.format(value="True").replace("train(cfg)", "train(TrainConfig())")
    assert _verdict(PromiseCategory.functional, quote, _code(other, "use_fused_loss")) is (
        PromiseVerdict.exercised
    )


CALLER_BASE = {
    "pkg/__init__.py": "",
    "pkg/score.py": "def _round_score(x):\n    return x\n",
    "pkg/api.py": (
        "from pkg.score import _round_score\n\n\n"
        "def compute_score(x):\n    return _round_score(x)\n"
    ),
    "tests/helpers.py": (
        "from pkg.score import _round_score\n\n\n"
        "def scored_twice(x):\n    return _round_score(_round_score(x))\n"
    ),
}
CALLER_TEST = """
from pkg.api import compute_score
from tests.helpers import scored_twice


def test_scores():
    assert {assertion}
"""


@pytest.mark.parametrize(
    ("assertion", "verdict", "via"),
    [
        # the test calls the function nobody changed that calls the fixed helper
        ("compute_score(1.234) == 1.23", PromiseVerdict.checked, "caller"),
        # ... and asserts nothing on its result: it runs the fix, no more
        ("compute_score(1.234) is not None", PromiseVerdict.exercised, ""),
        # a helper of the tests that calls the fix is not code the repository runs
        ("scored_twice(1.234) == 1.23", PromiseVerdict.unchecked, ""),
    ],
)
def test_a_test_of_the_code_that_calls_a_linked_symbol_checks_it_through_that_code(
    tmp_path, assertion, verdict, via
):
    # The PR fixes a private helper; its test calls the public function of another module
    # that the PR left alone. A verdict that looks only at tests naming the helper says
    # unchecked for the first row; one that counts a test's own helpers as callers says
    # checked for the last.
    change = {
        "pkg/score.py": "def _round_score(x):\n    return round(x, 2)\n",
        "tests/test_api.py": CALLER_TEST.format(assertion=assertion),
    }
    code = make_pr(tmp_path, CALLER_BASE, change).code_under_test()
    assert [c.name for c in code.callers] == ["compute_score"]
    promise = ExtractedPromise(
        category=PromiseCategory.functional, quote="_round_score rounds to two places"
    )
    check = judge_promises([promise], code)[0]
    assert (check.verdict, check.via) == (verdict, via)


TABLE_BASE = {
    "pkg/__init__.py": "",
    "pkg/flops.py": (
        "def _dense_flops(n):\n    return 6 * n\n\n\n"
        'ESTIMATORS = {{"dense": _dense_flops}}\n{table}\n\n'
        "class Counter:\n    def estimate(self, kind, n):\n"
        "        return {lookup}[kind](n)\n"
    ),
}


@pytest.mark.parametrize(
    ("table", "lookup", "verdict"),
    [
        # the counter looks the new estimator up in a module's table of functions by key
        ("", "ESTIMATORS", PromiseVerdict.checked),
        ("ALIASES = ESTIMATORS", "ALIASES", PromiseVerdict.checked),
        # a table that does not hold it leads nowhere: the test only uses its module
        ('OTHERS = {"dense": abs}', "OTHERS", PromiseVerdict.exercised),
    ],
)
def test_a_function_that_looks_a_changed_one_up_in_a_table_calls_it(
    tmp_path, table, lookup, verdict
):
    # The PR adds an estimator and registers it in a table; its test calls the method that
    # looks estimators up by key. A caller search that reads only calls by name finds no
    # function in front of the new estimator, and the test reaches none of the change.
    files = {path: text.format(table=table, lookup=lookup) for path, text in TABLE_BASE.items()}
    change = {
        "pkg/flops.py": files["pkg/flops.py"].replace(
            'ESTIMATORS = {"dense": _dense_flops}',
            "def _moe_flops(n):\n    return 2 * n\n\n\n"
            'ESTIMATORS = {"dense": _dense_flops, "moe": _moe_flops}',
        ),
        "tests/test_flops.py": (
            "from pkg.flops import Counter\n\n\n"
            "def test_moe():\n    counter = Counter()\n"
            '    assert counter.estimate("moe", 3) == 6\n'
        ),
    }
    code = make_pr(tmp_path, files, change).code_under_test()
    promise = ExtractedPromise(category=PromiseCategory.functional, quote="add _moe_flops")
    check = judge_promises([promise], code)[0]
    via = "caller" if verdict is PromiseVerdict.checked else ""
    assert (check.verdict, check.via) == (verdict, via)


CHECKER_TEST = """
import pytest
from pkg.dispatch import dispatch


def _check_restored(backend, tokens):
    restored = dispatch(backend, tokens)
    assert {checked} == tokens


@pytest.mark.parametrize("backend", [{backends}])
def test_dispatch_round_trip(backend):
    _check_restored(backend, [1, 2, 3])
"""


@pytest.mark.parametrize(
    ("checked", "verdict"),
    [
        # the checker the test has always called asserts on what the new backend returns
        ("restored", PromiseVerdict.checked),
        # ... or on something else: the new case runs the backend and checks nothing of it
        ("[1, 2, 3]", PromiseVerdict.exercised),
    ],
)
def test_a_case_added_to_a_test_is_checked_by_the_unchanged_checker_it_calls(
    tmp_path, checked, verdict
):
    # The PR adds a backend and one case to the test's parameters; the helper that asserts
    # is left alone. A profile of added lines alone finds no assertion for the new case and
    # says exercised for the first row.
    base = {
        "pkg/__init__.py": "",
        "pkg/dispatch.py": "def dispatch(backend, tokens):\n    return tokens\n",
        "tests/test_dispatch.py": CHECKER_TEST.format(checked=checked, backends='"deepep"'),
    }
    change = {
        "pkg/dispatch.py": (
            "def _hybrid_ep(tokens):\n    return list(tokens)\n\n\n"
            "def dispatch(backend, tokens):\n"
            '    return _hybrid_ep(tokens) if backend == "hybridep" else tokens\n'
        ),
        "tests/test_dispatch.py": CHECKER_TEST.format(
            checked=checked, backends='"deepep", "hybridep"'
        ),
    }
    code = make_pr(tmp_path, base, change).code_under_test()
    promise = ExtractedPromise(
        category=PromiseCategory.functional, quote="dispatch through the hybridep backend"
    )
    assert judge_promises([promise], code)[0].verdict is verdict


def test_a_tree_names_the_files_that_use_a_name_as_a_word(tmp_path):
    from probe_builder.gitio import MemoryTree, files_naming

    files = {"a/b.py": "run_step(x)\n", "a/c.py": "run_steps(x)\nload(y)\n"}
    below = make_pr(tmp_path, {"README": ""}, files).head_tree
    tree = MemoryTree({"d.py": "y = run_step\n", "e.txt": "run_step\n"}, below)
    assert files_naming(tree, ["run_step", "load"]) == {
        "run_step": {"a/b.py", "d.py"},
        "load": {"a/c.py"},
    }
    assert files_naming(tree, []) == {}


def test_a_test_runs_a_linked_symbol_through_the_changed_code_that_calls_it_and_its_caller(
    tmp_path,
):
    # compute_score (left alone) calls _score_batch (changed), which calls the fixed
    # _round_score: the test of compute_score runs the fix through both. Callers of the
    # linked symbol alone stop at _score_batch, which no test names.
    base = {
        "pkg/__init__.py": "",
        "pkg/score.py": (
            "def _round_score(x):\n    return x\n\n\n"
            "def _score_batch(xs):\n    return [x for x in xs]\n"
        ),
        "pkg/api.py": (
            "from pkg.score import _score_batch\n\n\n"
            "def compute_score(x):\n    return _score_batch([x])[0]\n"
        ),
    }
    change = {
        "pkg/score.py": (
            "def _round_score(x):\n    return round(x, 2)\n\n\n"
            "def _score_batch(xs):\n    return [_round_score(x) for x in xs]\n"
        ),
        "tests/test_api.py": (
            "from pkg.api import compute_score\n\n\n"
            "def test_scores():\n    assert compute_score(1.234) == 1.23\n"
        ),
    }
    code = make_pr(tmp_path, base, change).code_under_test()
    promise = ExtractedPromise(
        category=PromiseCategory.functional, quote="_round_score rounds to two places"
    )
    check = judge_promises([promise], code)[0]
    assert (check.verdict, check.via) == (PromiseVerdict.checked, "caller")


SHARED_CHECKER = """
from pkg.dispatch import dispatch


def check_round_trip(backend, tokens):
    restored = dispatch(backend, tokens)
    assert {checked} == tokens
"""

IMPORTING_TEST = """
{imports}


def test_dispatch_round_trip():
    {call}("hybridep", [1, 2, 3])
"""


@pytest.mark.parametrize(
    ("imports", "call", "folder_is_package", "checked", "verdict"),
    [
        # the checker a test folder shares asserts on what the new backend returns, by
        # whichever import the test takes it
        ("from tests.checks import check_round_trip", "check_round_trip", True, "restored", 1),
        ("from .checks import check_round_trip", "check_round_trip", True, "restored", 1),
        ("from checks import check_round_trip", "check_round_trip", False, "restored", 1),
        ("from tests import checks", "checks.check_round_trip", True, "restored", 1),
        # ... or on a constant: the test runs the backend and checks nothing of it
        ("from tests.checks import check_round_trip", "check_round_trip", True, "[1, 2, 3]", 0),
    ],
)
def test_a_test_is_checked_by_the_checker_it_imports_from_another_test_file(
    tmp_path, imports, call, folder_is_package, checked, verdict
):
    # The test names nothing of the change; only the shared checker, left alone by the
    # PR, runs the dispatcher and asserts. Read file by file, the test neither reaches
    # the changed code nor asserts.
    base = {
        "pkg/__init__.py": "",
        "pkg/dispatch.py": "def dispatch(backend, tokens):\n    return tokens\n",
        "tests/checks.py": SHARED_CHECKER.format(checked=checked),
        **({"tests/__init__.py": ""} if folder_is_package else {}),
    }
    change = {
        "pkg/dispatch.py": (
            "def _hybrid_ep(tokens):\n    return list(tokens)\n\n\n"
            "def dispatch(backend, tokens):\n"
            '    return _hybrid_ep(tokens) if backend == "hybridep" else tokens\n'
        ),
        "tests/test_dispatch.py": IMPORTING_TEST.format(imports=imports, call=call),
    }
    code = make_pr(tmp_path, base, change).code_under_test()
    promise = ExtractedPromise(
        category=PromiseCategory.functional, quote="dispatch through the hybridep backend"
    )
    said = judge_promises([promise], code)[0]
    expected = PromiseVerdict.checked if verdict else PromiseVerdict.exercised
    assert said.verdict is expected, said.evidence
    assert [t.name for t in code.profile.tests] == ["test_dispatch_round_trip"]


def test_a_function_of_the_library_a_test_imports_is_not_its_checker(tmp_path):
    # The same checker, but in the package under test: it is code the test runs, and its
    # assertion is the library's, not the test's.
    base = {
        "pkg/__init__.py": "",
        "pkg/dispatch.py": "def dispatch(backend, tokens):\n    return tokens\n",
        "pkg/checks.py": SHARED_CHECKER.format(checked="restored"),
    }
    change = {
        "pkg/dispatch.py": (
            "def _hybrid_ep(tokens):\n    return list(tokens)\n\n\n"
            "def dispatch(backend, tokens):\n"
            '    return _hybrid_ep(tokens) if backend == "hybridep" else tokens\n'
        ),
        "tests/test_dispatch.py": IMPORTING_TEST.format(
            imports="from pkg.checks import check_round_trip", call="check_round_trip"
        ),
    }
    code = make_pr(tmp_path, base, change).code_under_test()
    assert code.profile.called == ()
    promise = ExtractedPromise(
        category=PromiseCategory.functional, quote="dispatch through the hybridep backend"
    )
    assert judge_promises([promise], code)[0].verdict is not PromiseVerdict.checked


def test_a_shared_helper_that_asserts_nothing_is_no_checker():
    from probe_builder.material.pysource import Source
    from probe_builder.promises.assertions import imported_helper

    text = "def build(x):\n    return make(x)\n\n\ndef check(x):\n    assert build(x) == 1\n"
    source = Source("tests/utils.py", text)
    assert imported_helper(source, "build") is None  # a builder: it sets up, checks nothing
    assert imported_helper(source, "missing") is None
    checker = imported_helper(source, "check")
    assert checker is not None
    assert [s.text for s in checker.sites] == ["assert build(x) == 1"]
    assert "make" in checker.traits.references  # what it calls through its file's helpers


@pytest.mark.parametrize(
    ("imports", "verdict"),
    [
        # the changed class under a name of the test file's own choosing
        ("from pkg import BucketedSync as Sync", PromiseVerdict.checked),
        ("import pkg as Sync", PromiseVerdict.unchecked),
    ],
)
def test_a_name_an_import_binds_under_another_stands_for_the_name_it_imports(imports, verdict):
    source = f"""
    {imports}


    def test_sync_fills_the_buckets():
        sync = Sync(2)
        assert sync.bucket_sizes() == [2, 2]
    """
    code = _code(source, "BucketedSync")
    assert _verdict(PromiseCategory.functional, "BucketedSync splits into buckets", code) is (
        verdict
    )


@pytest.mark.parametrize(
    ("call", "verdict"),
    [
        # a call through a module acts on what it is given, not on the module: an assertion
        # that then reads the module is true or false whatever build_block builds
        ("torch.save(block.state_dict(), path)", PromiseVerdict.exercised),
        ("torch.cuda.synchronize(block)", PromiseVerdict.exercised),
        # a method of an object the test holds acts on that object, which a later read of it
        # depends on
        ("torch_runner.save(block.state_dict(), path)", PromiseVerdict.checked),
    ],
)
def test_a_call_through_a_module_binds_nothing_to_the_module(call, verdict):
    receiver = call.split(".")[0]
    source = f"""
    import torch
    from pkg import build_block


    def test_block_saves(path, torch_runner):
        block = build_block("G")
        {call}
        assert {receiver}.device_count() == 2
    """
    code = _code(source, "build_block")
    assert _verdict(PromiseCategory.functional, "build_block builds a block", code) is verdict


@pytest.mark.parametrize(
    ("quote", "assertion", "verdict"),
    [
        # what the code holds, read by the size of what it allocates
        ("Shrink the scratch buffer of the Sampler", "sampler.scratch.shape[0] == 64", "checked"),
        ("Fix over-provisioning of Sampler slots", "len(sampler.slots) == 8", "checked"),
        # ... not by the size of a tensor the test made itself
        ("Shrink the scratch buffer of the Sampler", "probe.shape[0] == 64", "exercised"),
        # a promise of less memory, naming nothing held, wants the memory measured
        ("Use less memory in the Sampler", "sampler.scratch.shape[0] == 64", "exercised"),
    ],
)
def test_a_memory_promise_about_what_the_code_holds_is_checked_by_its_size(
    quote, assertion, verdict
):
    source = f"""
    import torch
    from pkg import Sampler


    def test_sampler_sizes():
        sampler = Sampler(batch=8)
        probe = torch.zeros(64)
        sampler.step(probe)
        assert {assertion}
    """
    code = _code(source, "Sampler")
    assert _verdict(PromiseCategory.memory, quote, code) is PromiseVerdict(verdict)


NEW_CASES_TEST = """
import math

import pytest
from pkg import count_flops


@pytest.mark.parametrize(
    "model",
    [
        "llama",
        "mistral",
    ],
)
def test_counted_flops_match(model):
    expected = {"llama": 1.0, "mistral": 2.0}[model]
    assert math.isclose(count_flops(model), expected)
"""


@pytest.mark.parametrize(
    ("added", "kept"),
    [
        # a case added to the parametrization: the unchanged assertion checks it too
        ({11}, True),
        # a line of the body changed, not the assertion: only added assertions count
        ({15}, False),
    ],
)
def test_cases_added_to_a_tests_parametrization_are_checked_by_its_assertions(added, kept):
    # A profile that took only added assertion lines drops the first case's assertion.
    source = textwrap.dedent(NEW_CASES_TEST).lstrip()
    assert source.splitlines()[10].strip() == '"mistral",'
    profile = profile_source("tests/test_flops.py", source, added)
    assert bool(profile.in_test(profile.tests[0])) is kept
    code = CodeUnderTest(profile, (changed_symbol("count_flops", None, "pkg.py"),))
    quote = "count_flops supports mistral"
    said = _verdict(PromiseCategory.functional, quote, code, position=1)
    assert said is (PromiseVerdict.checked if kept else PromiseVerdict.exercised)


CASE_IDS_TEST = """
import pytest
from pkg import engine_step


@pytest.mark.parametrize("model", [{models}])
def test_step_returns_tokens(model):
    assert engine_step(model) == [3]
"""


@pytest.mark.parametrize(
    ("models", "verdict"),
    [
        # pytest names the case test_step_returns_tokens[mistral]: a test of the title's word
        ('"llama", "mistral"', PromiseVerdict.checked),
        ('"llama", "qwen"', PromiseVerdict.exercised),
    ],
)
def test_a_tests_case_ids_are_part_of_its_name(models, verdict):
    # A verdict that read only the test's function name says exercised for both.
    code = _code(CASE_IDS_TEST.format(models=models), "engine_step")
    promise = ExtractedPromise(category=PromiseCategory.functional, quote="Mistral support")
    assert judge_promises([promise], code)[0].verdict is verdict


REACHED_THROUGH_ATTRIBUTE_TEST = """
import torch
from pkg import MoELayer, GroupedExperts


def test_fused_experts_scale_the_bias():
    layer = MoELayer(config)
    experts = layer.experts
    {narrowing}
    output = experts(torch.zeros(3, 8), probs)
    torch.testing.assert_close(output, probs[:, None] * 2.0)
"""


@pytest.mark.parametrize(
    ("narrowing", "verdict"),
    [
        # the test states which class it holds: its outputs are that class's
        ("assert isinstance(experts, GroupedExperts)", PromiseVerdict.checked),
        ("self.assertIsInstance(experts, GroupedExperts)", PromiseVerdict.checked),
        # nothing ties the attribute to the changed class
        ("assert experts is not None", PromiseVerdict.unchecked),
        # a question asked, not a fact asserted: the class is used, the output is not its
        ("print(isinstance(experts, GroupedExperts))", PromiseVerdict.exercised),
    ],
)
def test_an_object_asserted_to_be_of_a_changed_class_is_computed_from_it(narrowing, verdict):
    # A verdict that follows only assignments sees the output computed from MoELayer, not
    # from the changed GroupedExperts, and says exercised for the first two rows too.
    source = REACHED_THROUGH_ATTRIBUTE_TEST.format(narrowing=narrowing)
    code = _code(source, "GroupedExperts", "GroupedExperts.forward")
    quote = "Numerical fix for GroupedExperts bias scales"
    assert _verdict(PromiseCategory.numeric, quote, code) is verdict


BUILT_IN_PLACE_TEST = """
import torch
from pkg import TinyModel, shard_optimizer


def test_one_step_moves_the_model():
    model = TinyModel()
    optimizer = {construction}
    loss = model(torch.ones(4)).sum()
    loss.backward()
    optimizer.step()
    torch.testing.assert_close(model(torch.ones(4)), torch.full((4,), 0.5))
"""


@pytest.mark.parametrize(
    ("construction", "verdict"),
    [
        # the wrapper is given an optimizer built around the model: its step moves the model
        ("shard_optimizer(torch.optim.Adam(model.parameters(), lr=0.1))", PromiseVerdict.checked),
        ("shard_optimizer(make_adam(model.parameters()))", PromiseVerdict.checked),
        # built around something else, its step says nothing of the model
        ("shard_optimizer(make_adam(torch.ones(2)))", PromiseVerdict.exercised),
        # a module the inner call is read through (torch) is not what it was built around
        ("shard_optimizer(torch.optim.Adam(torch.ones(2), lr=0.1))", PromiseVerdict.exercised),
    ],
)
def test_a_wrapper_steps_what_the_object_built_inside_it_was_given(construction, verdict):
    # A profile that reads only the names a call is given, not those of a call inside it,
    # never ties the model to the wrapper and says exercised for the second row; one that
    # takes the module an inner call is read through (torch) for what the optimizer was
    # built around ties every torch call to the wrapper and says checked for the last row.
    code = _code(BUILT_IN_PLACE_TEST.format(construction=construction), "shard_optimizer")
    quote = "Fix shard_optimizer under-updating parameters"
    assert _verdict(PromiseCategory.numeric, quote, code) is verdict


EDITED_CHECKER_TEST = """
import torch
from pkg import train


class TestLossCurves:
    def run_test(self, **kwargs):
        \"\"\"{docstring}\"\"\"
        losses = train(deferred=True, **kwargs)
        reference = train(deferred=False, **kwargs)
        torch.testing.assert_close(losses, reference)

    def test_existing(self):
        self.run_test(layers=2)

    def test_moe(self):
        self.run_test(layers=2, experts=2)
"""


@pytest.mark.parametrize(
    ("docstring", "added", "verdict"),
    [
        # a new test runs a checker whose docstring the patch also edits: the checker's
        # comparison runs on the new test's inputs
        ("Compare the loss curves of a small model.", {7, 15, 16}, PromiseVerdict.checked),
        # the checker edited, no test of the patch calls it: nothing new is run through it
        ("Compare the loss curves of a small model.", {7}, PromiseVerdict.exercised),
    ],
)
def test_a_checker_the_patch_edits_checks_with_all_its_lines(docstring, added, verdict):
    # A profile that counts only the added lines of an edited function drops the checker's
    # unchanged comparison and says exercised for the first row.
    source = textwrap.dedent(EDITED_CHECKER_TEST.format(docstring=docstring)).lstrip()
    assert source.splitlines()[14].strip() == "def test_moe(self):"
    profile = profile_source("tests/test_curves.py", source, added)
    code = CodeUnderTest(profile, (changed_symbol("train", None, "pkg.py"),))
    assert _verdict(PromiseCategory.numeric, "Fix train numerical issue", code) is verdict


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        # the attribute's presence, then its value: the value is what is checked
        ('assert hasattr(w, "partition_dim") and w.partition_dim == 0', AssertionKind.functional),
        ("assert x is not None and x.partition_stride == 1", AssertionKind.functional),
        ("assert x is not None and torch.allclose(x, y)", AssertionKind.numeric),
        # presence twice over checks no value
        (
            'assert hasattr(w, "partition_dim") and w.partition_dim is not None',
            AssertionKind.structural,
        ),
        # either of two: not a value the code must give
        ('assert hasattr(w, "partition_dim") or w.partition_dim == 0', AssertionKind.structural),
    ],
)
def test_an_assertion_of_several_conditions_is_as_strong_as_its_strongest(body, kind):
    # A classification that calls any assertion naming hasattr or "is not None" structural
    # gives structural for the first two rows.
    assert _kinds(body) == [kind]


def test_a_test_file_of_hundreds_of_tests_is_profiled_in_time_that_grows_with_it():
    import sys

    def builtin_calls(tests: int) -> int:
        """Calls of built-in functions while profiling a file of ``tests`` tests."""
        text = "".join(
            f"def test_{i}():\n" + "".join(f"    assert f({i}) == {j}\n" for j in range(12))
            for i in range(tests)
        )
        count = 0

        def tracer(frame, event, arg):
            nonlocal count
            count += event == "c_call"

        sys.setprofile(tracer)
        try:
            profile_source("tests/test_many.py", text)
        finally:
            sys.setprofile(None)
        return count

    # twice the tests, twice the work: grouping every assertion of the file again for each
    # test made it grow with the square of the file (2.34 times here; 3 s for 2,000 tests)
    assert builtin_calls(400) < 2.2 * builtin_calls(200)


OPTION_BASE = {
    "pkg/__init__.py": "",
    "pkg/sampler.py": (
        "from dataclasses import dataclass\n\n\n"
        "@dataclass\nclass SamplerConfig:\n    temperature: float = 1.0\n\n\n"
        "def sample(config, logits):\n    return max(logits) / config.temperature\n"
    ),
}
OPTION_CHANGE = (
    "from dataclasses import dataclass\n\n\n"
    "@dataclass\nclass SamplerConfig:\n    temperature: float = 1.0\n"
    "    fused_topk: bool = {default}\n\n\n"
    "def sample(config, logits):\n"
    "    if config.fused_topk:\n        return sorted(logits)[-1] / config.temperature\n"
    "    return max(logits) / config.temperature\n"
)
OPTION_TEST = (
    "from pkg.sampler import SamplerConfig, sample\n\n\n"
    "def test_sample():\n    config = SamplerConfig({given})\n"
    "    assert sample(config, [1.0, 3.0]) == 3.0\n"
)


@pytest.mark.parametrize(
    ("default", "given", "quote", "verdict"),
    [
        # the tests turn the option on: the promise is judged on their assertions
        ("False", "fused_topk=True", "add `fused_topk` to sample", PromiseVerdict.checked),
        # a new option, off by default, that no test sets: the fused path never runs
        ("False", "", "add `fused_topk` to sample", PromiseVerdict.unchecked),
        # one the tests set, but only off
        ("False", "fused_topk=False", "add `fused_topk` to sample", PromiseVerdict.unchecked),
        ("False", "**{'fused_topk': None}", "add fused_topk to sample", PromiseVerdict.unchecked),
        # an option on by default runs in every test that leaves it alone
        ("True", "", "add `fused_topk` to sample", PromiseVerdict.checked),
        # a quote about the option's off side is what a test setting it off runs
        ("True", "fused_topk=False", "sample without fused_topk", PromiseVerdict.checked),
    ],
)
def test_a_promise_about_an_option_the_tests_leave_off_is_unchecked(
    tmp_path, default, given, quote, verdict
):
    # The PR adds an option to a config class and a branch that reads it. A verdict that
    # looks only at the assertions of the tests reaching `sample` says checked in every row:
    # the second and third run the old branch alone.
    change = {
        "pkg/sampler.py": OPTION_CHANGE.format(default=default),
        "tests/test_sampler.py": OPTION_TEST.format(given=given),
    }
    code = make_pr(tmp_path, OPTION_BASE, change).code_under_test()
    assert [(o.key, o.default) for o in code.options] == [("fused_topk", default)]
    promise = ExtractedPromise(category=PromiseCategory.functional, quote=quote)
    check = judge_promises([promise], code)[0]
    assert check.verdict is verdict
    if verdict is PromiseVerdict.unchecked:
        assert "fused_topk" in check.evidence and "none runs what it adds" in check.evidence


def test_a_launch_script_that_turns_the_option_on_runs_it(tmp_path):
    change = {
        "pkg/sampler.py": OPTION_CHANGE.format(default="False"),
        "tests/test_sampler.py": OPTION_TEST.format(given=""),
        "tests/e2e/run_sampler.sh": "python -m pkg.sampler sampler.fused_topk=True\n",
    }
    code = make_pr(tmp_path, OPTION_BASE, change).code_under_test()
    promise = ExtractedPromise(category=PromiseCategory.functional, quote="add `fused_topk`")
    assert judge_promises([promise], code)[0].verdict is not PromiseVerdict.unchecked

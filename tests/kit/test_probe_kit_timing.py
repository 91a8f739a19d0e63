"""time_ratio: medians in one run; a work counter catches doubled work without timing noise."""

from __future__ import annotations

import time

import pytest
import torch

from probe_builder.kit import KitUsageError, time_ratio

pytest_plugins = ["pytester"]

PLUGIN_ARGS = ("-p", "probe_builder.kit.plugin", "-p", "no:probewatch_probes")

RECOMPUTE_PROBE = """
import torch
from probe_builder.kit import time_ratio

W = torch.ones(64, 64)
PROMPT = torch.ones(32, 64)

def full_recompute():
    return PROMPT @ W

def incremental():
    return PROMPT[-1:] @ W  # only the newest token

def recomputes_anyway():
    (PROMPT @ W)
    return PROMPT[-1:] @ W

def test_incremental_does_a_fraction_of_the_work():
    assert time_ratio(full_recompute, incremental, measure="flops").ratio <= 1 / 8

def test_recomputing_anyway_is_caught():
    assert time_ratio(full_recompute, recomputes_anyway, measure="flops").ratio <= 1 / 8
"""


def test_flop_counted_ratio_catches_a_candidate_that_still_recomputes_everything(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_recompute_probe=RECOMPUTE_PROBE)
    # A subprocess: the flop counter registers torch operator tables once per process.
    result = pytester.runpytest_subprocess(*PLUGIN_ARGS)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_recomputing_anyway_is_caught*", "*assert 1.03125 <= *"])


def test_wall_clock_medians_order_a_slow_candidate_after_a_fast_baseline() -> None:
    result = time_ratio(lambda: time.sleep(0.002), lambda: time.sleep(0.04), repeats=5)
    assert result.unit == "seconds"
    assert len(result.base_samples) == len(result.candidate_samples) == 5
    assert result.ratio > 4  # 20x nominal: a loaded runner still leaves a wide margin


class _AsyncDevice:
    """A stand-in for a GPU's queue: a call enqueues its kernel and returns; synchronize runs them."""

    def __init__(self) -> None:
        self.queue: list[float] = []

    def launch(self, seconds: float) -> None:
        self.queue.append(seconds)

    def synchronize(self, device: object = None) -> None:
        while self.queue:
            time.sleep(self.queue.pop())


def test_wall_clock_on_an_asynchronous_device_counts_the_queued_kernels_not_the_launch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    device = _AsyncDevice()
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", device.synchronize)
    result = time_ratio(lambda: device.launch(0.002), lambda: device.launch(0.04), repeats=5)
    # Timing the launches alone gives about 1: both return at once.
    assert result.ratio > 4


def test_a_work_counter_callable_is_read_around_each_call() -> None:
    work = {"tokens": 0}

    def full() -> None:
        work["tokens"] += 100

    def cached() -> None:
        work["tokens"] += 10

    result = time_ratio(full, cached, warmup=2, repeats=3, measure=lambda: work["tokens"])
    assert (result.base, result.candidate, result.ratio) == (100, 10, 0.1)
    assert work["tokens"] == 2 * 110 + 3 * 110


def test_flops_count_matrix_multiplies_exactly() -> None:
    a, b = torch.ones(8, 16), torch.ones(16, 4)
    result = time_ratio(lambda: a @ b, lambda: torch.cat([a, a]) @ b, measure="flops")
    assert (result.base, result.ratio) == (2 * 8 * 16 * 4, 2.0)


def test_a_zero_baseline_has_no_ratio() -> None:
    result = time_ratio(lambda: None, lambda: None, measure=lambda: 0)
    with pytest.raises(KitUsageError, match="measured 0"):
        _ = result.ratio


def test_an_unknown_measure_is_refused() -> None:
    with pytest.raises(KitUsageError, match="measure must be"):
        time_ratio(lambda: None, lambda: None, measure="cycles")  # type: ignore[arg-type]

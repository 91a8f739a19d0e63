"""peak_memory: an extra allocation is caught, a lean function passes, nothing is a silent 0."""

from __future__ import annotations

import pytest
import torch  # imported before any in-process pytester run: torch cannot be imported twice
import torch._dynamo  # an operator under a dispatch mode imports it: same reason

from probe_builder.kit import KitUsageError, ProbeUnsupported, measure_peak_memory, peak_memory
from probe_builder.kit.memory import resolve_device
from tests.kit.support import without_cuda

pytest_plugins = ["pytester"]

PLUGIN_ARGS = ("-p", "probe_builder.kit.plugin", "-p", "no:probewatch_probes")

PROBE = """
import torch
from probe_builder.kit import peak_memory

N = 1000

def lean(x):
    return (x * 2).sum()

def wasteful(x):
    scratch = torch.empty(4_000_000, dtype=torch.uint8)  # 4 MB it never needed
    scratch.fill_(0)
    return (x * 2).sum()

def check(fn):
    x = torch.ones(N)
    with peak_memory("cpu") as mem:
        fn(x)
    # One temporary of x's size plus the scalar result: well under 64 KiB.
    assert mem.peak_bytes <= 64 * 1024, mem.peak_bytes

def test_lean_passes():
    check(lean)

def test_wasteful_is_caught():
    check(wasteful)
"""


def test_peak_memory_catches_an_extra_allocation_and_passes_a_lean_function(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_memory_probe=PROBE)
    result = pytester.runpytest(*PLUGIN_ARGS)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_wasteful_is_caught*", "*AssertionError: 400*"])


UNSUPPORTED_PROBE = """
import torch
from probe_builder.kit import peak_memory

def test_cuda_peak():
    with peak_memory("cuda") as mem:
        torch.ones(10)
    assert mem.peak_bytes < 100
"""


@without_cuda
def test_cuda_peak_on_a_cpu_only_torch_is_skipped_with_its_reason_not_read_as_zero(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_cuda_probe=UNSUPPORTED_PROBE)
    result = pytester.runpytest(*PLUGIN_ARGS, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*probewatch: unsupported here: no usable CUDA device*"])


def test_a_freed_temporary_counts_in_the_peak_but_not_in_the_delta() -> None:
    with peak_memory("cpu") as mem:
        temporary = torch.zeros(250_000)  # 1,000,000 bytes
        kept = torch.zeros(1000)  # 4,000 bytes
        del temporary
    assert mem.peak_bytes == 1_004_000
    assert mem.delta_bytes == 4_000
    assert kept.numel() == 1000


def test_views_and_in_place_updates_of_existing_tensors_are_not_new_memory() -> None:
    existing = torch.zeros(1000)
    with peak_memory("cpu") as mem:
        existing.add_(1)
        existing.view(10, 100).mul_(2)
    assert mem.peak_bytes == 0


def test_growing_an_existing_tensor_counts_only_the_growth() -> None:
    existing = torch.zeros(100)  # 400 bytes
    with peak_memory("cpu") as mem:
        existing.resize_(300)  # 1,200 bytes
    assert mem.delta_bytes == 800


def test_a_block_that_runs_no_tensor_operation_is_unsupported_not_zero() -> None:
    with pytest.raises(ProbeUnsupported, match="saw no tensor operation"), peak_memory("cpu"):
        sum(range(10))


def test_reading_inside_the_block_is_refused() -> None:
    with peak_memory("cpu") as mem:
        torch.ones(3)
        with pytest.raises(KitUsageError, match="only after"):
            _ = mem.peak_bytes


def test_measure_peak_memory_warms_up_so_one_time_initialisation_is_not_counted() -> None:
    cache: list[torch.Tensor] = []

    def lazily_initialised() -> torch.Tensor:
        if not cache:
            cache.append(torch.zeros(100_000))  # built once, on the first call
        return cache[0][:10] + 1

    assert measure_peak_memory(lazily_initialised, device="cpu", warmup=1).peak_bytes == 40
    cache.clear()
    assert measure_peak_memory(lazily_initialised, device="cpu", warmup=0).peak_bytes >= 400_000


@without_cuda
def test_auto_device_is_cpu_on_a_cpu_only_torch() -> None:
    assert resolve_device("auto") == "cpu"

"""The kit's observables on a CUDA device: each catches the fault it exists for and passes the fix.

Skipped on a machine without a usable CUDA device (CI); run on a GPU runner.
Each test pairs a right implementation with a wrong one, so a kit that measures
nothing on CUDA (a silent 0, a launch timed instead of a kernel, a graph that
is never replayed) fails here.
"""

from __future__ import annotations

import pytest
import torch  # imported before any in-process pytester run: torch cannot be imported twice
import torch._dynamo  # an operator under a dispatch mode imports it: same reason
import torch.distributed as dist

from probe_builder.kit import (
    CompileCheckFailed,
    GraphReplayMismatch,
    comm_ledger,
    compile_check,
    graph_replay_check,
    measure_peak_memory,
    peak_memory,
    run_ranks,
    time_ratio,
)
from probe_builder.kit.memory import resolve_device
from tests.kit.support import needs_cuda

pytestmark = needs_cuda

pytest_plugins = ["pytester"]

PLUGIN_ARGS = ("-p", "probe_builder.kit.plugin", "-p", "no:probewatch_probes")

MEGABYTE = 1 << 20


def test_auto_device_is_cuda_where_cuda_is_usable() -> None:
    assert resolve_device("auto") == "cuda"


def test_cuda_peak_catches_four_extra_megabytes_and_passes_a_lean_function() -> None:
    x = torch.ones(1000, device="cuda")

    def lean() -> torch.Tensor:
        return (x * 2).sum()

    def wasteful() -> torch.Tensor:
        scratch = torch.empty(4 * MEGABYTE, dtype=torch.uint8, device="cuda")
        scratch.fill_(0)
        return (x * 2).sum()

    assert measure_peak_memory(lean, device="cuda").peak_bytes < MEGABYTE
    assert measure_peak_memory(wasteful, device="cuda").peak_bytes >= 4 * MEGABYTE


def test_cuda_delta_counts_what_the_block_keeps_and_not_what_it_freed() -> None:
    with peak_memory("cuda") as mem:
        temporary = torch.empty(8 * MEGABYTE, dtype=torch.uint8, device="cuda")
        kept = torch.empty(MEGABYTE, dtype=torch.uint8, device="cuda")
        del temporary
    assert mem.peak_bytes >= 9 * MEGABYTE
    assert mem.delta_bytes == MEGABYTE
    del kept


def _inputs(i: int) -> tuple[torch.Tensor]:
    return (torch.full((4,), float(i), device="cuda"),)


def test_graph_replay_passes_a_function_that_only_launches_kernels() -> None:
    graph_replay_check(lambda x: x * 2 + 1, _inputs)


def test_graph_replay_catches_host_state_frozen_at_capture() -> None:
    calls = [0]

    def counts_its_calls(x: torch.Tensor) -> torch.Tensor:
        calls[0] += 1  # host state: the captured graph keeps the multiplier of the capture call
        return x * calls[0]

    with pytest.raises(GraphReplayMismatch, match="replay 1 differs from eager"):
        graph_replay_check(counts_its_calls, _inputs)


def _sized(n: int) -> tuple[torch.Tensor]:
    return (torch.linspace(-1, 1, n, device="cuda"),)


def test_inductor_compile_check_on_cuda_gives_eagers_answers_without_recompiling() -> None:
    report = compile_check(
        lambda x: torch.nn.functional.gelu(x) * 2, [_sized(8), _sized(16), _sized(32)], "inductor"
    )
    assert report.compiles_per_call[0] >= 1
    assert report.recompiles == 0


def test_inductor_compile_check_on_cuda_catches_a_recompile_per_size() -> None:
    with pytest.raises(CompileCheckFailed, match="recompiles over 3 calls"):
        compile_check(
            lambda x: torch.nn.functional.gelu(x) * 2,
            [_sized(8), _sized(16), _sized(32)],
            "inductor",
            dynamic=False,
        )


def test_wall_clock_ratio_counts_kernel_time_not_launch_time() -> None:
    small = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
    large = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    # About 2 * 8192**3 flops against 2 * 256**3: the same one launch, a far longer kernel.
    result = time_ratio(lambda: small @ small, lambda: large @ large, warmup=2, repeats=7)
    assert result.ratio > 5  # 15.6 to 50 on an H200; timing the launches alone gave 1.04


def all_reduce_on_cuda(rank: int, world_size: int) -> tuple[float, int, int]:
    """One NCCL all-reduce of 1,024 float32s on this rank's GPU, under a ledger."""
    tensor = torch.full((1024,), float(rank + 1), device="cuda")
    with comm_ledger() as ledger:
        dist.all_reduce(tensor)
    torch.cuda.synchronize()
    return tensor[0].item(), ledger.count("all_reduce"), ledger.bytes("all_reduce")


def test_the_ledger_counts_an_nccl_all_reduce_of_cuda_tensors() -> None:
    [(value, calls, sent)] = run_ranks(all_reduce_on_cuda, world_size=1, backend="nccl")
    assert (value, calls, sent) == (1.0, 1, 1024 * 4)


def device_of_rank(rank: int, world_size: int) -> int:
    return torch.cuda.current_device()


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_each_nccl_rank_runs_on_its_own_gpu() -> None:
    # every rank on cuda:0 before: NCCL refuses two ranks on one device
    devices = torch.cuda.device_count()
    assert run_ranks(device_of_rank, world_size=devices, backend="nccl") == list(range(devices))


def test_a_probe_asks_for_one_gpu_more_than_the_machine_has_and_is_skipped_saying_so(
    pytester: pytest.Pytester,
) -> None:
    here = torch.cuda.device_count()
    pytester.makepyfile(
        test_needs=f"""
import pytest
import torch

@pytest.mark.probe_gpu({here + 1})
def test_more_gpus():
    pass

@pytest.mark.probe_gpu({here})
@pytest.mark.probe_cuda_graph
def test_these_gpus():
    assert torch.cuda.device_count() == {here}
"""
    )
    result = pytester.runpytest(*PLUGIN_ARGS, "--strict-markers", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [f"*SKIPPED*needs {here + 1} CUDA GPU(s); this machine has {here}*"]
    )

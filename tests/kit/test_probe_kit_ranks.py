"""run_ranks and the ranks fixture: two real gloo ranks, per-rank results, failures named, no hangs."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

# torch is imported before any in-process pytester run: it cannot be imported twice.
import torch.distributed as dist

from probe_builder.kit import KitUsageError, RankFailed, RankTimeout, run_ranks
from probe_builder.kit.ranks import rank_device

pytest_plugins = ["pytester"]

PLUGIN_ARGS = ("-p", "probe_builder.kit.plugin", "-p", "no:probewatch_probes")

DATA_PARALLEL_PROBE = """
import torch
import torch.distributed as dist

def sum_gradients(model):
    for p in model.parameters():
        dist.all_reduce(p.grad)

def average_gradients(model):
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad.div_(dist.get_world_size())

def local_batch(rank):
    return torch.full((4, 3), float(rank + 1)), torch.full((4, 1), float(rank))

def model_grads(rank, world_size, reduce):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    x, y = local_batch(rank)
    torch.nn.functional.mse_loss(model(x), y).backward()
    {"sum": sum_gradients, "mean": average_gradients}[reduce](model)
    return [p.grad.clone() for p in model.parameters()]

def full_batch_grads(world_size):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    losses = [torch.nn.functional.mse_loss(model(x), y) for x, y in map(local_batch, range(world_size))]
    (sum(losses) / world_size).backward()
    return [p.grad for p in model.parameters()]

def check(ranks, reduce):
    per_rank = ranks(model_grads, 2, timeout_s=60, args=(reduce,))
    for grads in per_rank:
        for got, want in zip(grads, full_batch_grads(2)):
            torch.testing.assert_close(got, want)

def test_averaging_passes(ranks):
    check(ranks, "mean")

def test_summing_is_caught(ranks):
    check(ranks, "sum")
"""


def test_two_gloo_ranks_catch_a_data_parallel_step_that_sums_instead_of_averaging(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_dp_probe=DATA_PARALLEL_PROBE)
    result = pytester.runpytest(*PLUGIN_ARGS)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_summing_is_caught*", "*Tensor-likes are not close*"])


FAILING_RANK_PROBE = """
import torch.distributed as dist
from probe_builder.kit import ProbeUnsupported

def second_rank_disagrees(rank, world_size):
    assert rank == 0, f"rank {rank} saw a different shard"

def second_rank_cannot_measure(rank, world_size):
    if rank == 1:
        raise ProbeUnsupported("this rank has no NVLink")
    dist.barrier()

def test_failure(ranks):
    ranks(second_rank_disagrees, 2, timeout_s=60)

def test_unsupported(ranks):
    ranks(second_rank_cannot_measure, 2, timeout_s=60)
"""


def test_a_rank_failure_fails_the_probe_naming_the_rank_and_unsupported_becomes_a_skip(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_failing_rank=FAILING_RANK_PROBE)
    result = pytester.runpytest(*PLUGIN_ARGS, "-rs")
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: rank 1 saw a different shard*",
            "*raised on rank 1 of 2; remote traceback:*",
            "*SKIPPED*probewatch: unsupported here: this rank has no NVLink*",
        ]
    )


def _rank_and_group(rank: int, world_size: int, tag: str) -> tuple[int, int, int, str]:
    return rank, dist.get_rank(), dist.get_world_size(), tag


def _hang_on_rank_one(rank: int, world_size: int, pid_dir: str) -> None:
    if rank == 1:
        (Path(pid_dir) / "hung.pid").write_text(str(os.getpid()))
        time.sleep(600)


def _die_silently_on_rank_one(rank: int, world_size: int) -> None:
    if rank == 1:
        os._exit(3)
    dist.barrier()


def _store_files(rank: int, world_size: int, store_dir: str) -> list[str]:
    dist.barrier()
    return sorted(os.listdir(store_dir))


def test_each_rank_returns_its_value_in_rank_order_from_a_real_process_group(tmp_path) -> None:
    results = run_ranks(_rank_and_group, 2, timeout_s=60, args=("x",), store_dir=tmp_path)
    assert results == [(0, 0, 2, "x"), (1, 1, 2, "x")]


def test_the_rendezvous_store_lives_under_the_given_folder_and_is_removed_afterwards(
    tmp_path,
) -> None:
    (seen,) = run_ranks(_store_files, 1, timeout_s=60, args=(str(tmp_path),), store_dir=tmp_path)
    assert len(seen) == 1 and seen[0].startswith("ranks-")
    assert list(tmp_path.iterdir()) == []


def test_a_hung_rank_is_killed_at_the_deadline_with_every_other_rank(tmp_path) -> None:
    started = time.monotonic()
    # 20 s: on a loaded runner, starting two ranks that import torch alone can take 10 s.
    with pytest.raises(RankTimeout, match=r"still running after 20s; all killed") as raised:
        run_ranks(_hang_on_rank_one, 2, timeout_s=20, args=(str(tmp_path),), store_dir=tmp_path)
    assert "1" in str(raised.value).split("still running")[0]
    assert time.monotonic() - started < 60
    hung = int((tmp_path / "hung.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(hung, 0)  # killed and reaped, not left sleeping


def test_a_rank_that_exits_without_reporting_is_named(tmp_path) -> None:
    with pytest.raises(RankFailed, match="rank 1: exited with code 3 without reporting"):
        run_ranks(_die_silently_on_rank_one, 2, timeout_s=60, store_dir=tmp_path)


def test_world_size_below_one_is_refused() -> None:
    with pytest.raises(KitUsageError, match="world_size"):
        run_ranks(_rank_and_group, 0)


def test_a_function_the_ranks_cannot_import_is_refused_before_spawning() -> None:
    with pytest.raises(KitUsageError, match="module-level function"):
        run_ranks(lambda rank, world_size: rank, 2)


def test_nccl_ranks_take_one_gpu_each_and_wrap_only_past_the_last() -> None:
    # every rank took cuda:0 before, which NCCL refuses for a second rank
    assert [rank_device(rank, 4) for rank in range(4)] == [0, 1, 2, 3]
    assert rank_device(5, 4) == 1 and rank_device(0, 0) == 0

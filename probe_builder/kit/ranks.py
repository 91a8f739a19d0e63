"""Run a function on several ranks of a real ``torch.distributed`` process group.

Each rank is a fresh process from the *spawn* context (forking a process that
may have initialised CUDA or OpenMP threads is unsafe), joined through a
``file://`` store in a private folder. The parent collects each rank's return
value in rank order. The first failure wins: the rank's own exception is
re-raised in the parent with a note naming the rank and carrying the remote
traceback, and every other rank is killed. A hard deadline kills every rank,
so a rank stuck in a collective whose peer died never hangs the test run.
"""

from __future__ import annotations

import multiprocessing as mp
import pickle
import queue
import shutil
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, Final

from probe_builder.kit.errors import KitUsageError, RankFailed, RankTimeout

POLL_S = 0.1
# After a rank exits, its result may still be in flight through the queue's pipe.
EXIT_GRACE_S = 1.0
SPAWN: Final = "spawn"


@dataclass(frozen=True)
class RankOutcome:
    """What one rank sends back: its return value, or its exception and traceback."""

    rank: int
    ok: bool
    value: bytes = b""  # pickled return value or pickled exception (empty if unpicklable)
    error: str = ""  # repr of the exception
    remote_traceback: str = ""


def run_ranks(
    fn: Callable[..., Any],
    world_size: int = 2,
    backend: str = "gloo",
    timeout_s: float = 60.0,
    *,
    args: Sequence[Any] = (),
    store_dir: Path | str | None = None,
) -> list[Any]:
    """Call ``fn(rank, world_size, *args)`` on every rank; return the values in rank order.

    ``fn`` must be importable by name (a module-level function): spawned ranks
    unpickle it. ``store_dir`` is where the rendezvous file goes (a test's
    ``tmp_path``); a temporary folder otherwise. Either way the private
    sub-folder is removed afterwards.
    """
    _check_usable(fn, world_size)
    workdir = Path(tempfile.mkdtemp(prefix="ranks-", dir=store_dir))
    context = mp.get_context(SPAWN)
    results: Any = context.Queue()
    init_method = f"file://{workdir / 'store'}"
    config = (world_size, backend, init_method, timeout_s)
    processes = [
        context.Process(target=_rank_main, args=(fn, rank, config, tuple(args), results))
        for rank in range(world_size)
    ]
    try:
        for process in processes:
            process.start()
        return _collect(processes, results, timeout_s)
    finally:
        _kill_all(processes)
        results.close()
        shutil.rmtree(workdir, ignore_errors=True)


def _check_usable(fn: Callable[..., Any], world_size: int) -> None:
    if world_size < 1:
        raise KitUsageError(f"world_size must be at least 1, got {world_size}")
    try:
        pickle.dumps(fn)
    except (pickle.PicklingError, AttributeError, TypeError) as exc:
        raise KitUsageError(
            f"run_ranks needs a module-level function that spawned ranks can import: {exc}"
        ) from None


def _rank_main(
    fn: Callable[..., Any],
    rank: int,
    config: tuple[int, str, str, float],
    args: tuple[Any, ...],
    results: Any,
) -> None:
    import torch
    import torch.distributed as dist

    world_size, backend, init_method, timeout_s = config
    if backend == "gloo":
        # world_size processes share this machine's cores; one thread each avoids thrashing.
        torch.set_num_threads(1)
    timeout = timedelta(seconds=timeout_s)
    try:
        if backend == "nccl":
            # NCCL refuses two ranks on one GPU: each rank takes its own before it joins.
            torch.cuda.set_device(rank_device(rank, torch.cuda.device_count()))
        dist.init_process_group(
            backend, init_method=init_method, rank=rank, world_size=world_size, timeout=timeout
        )
        # init_process_group does not wait for the slowest rank to finish connecting:
        # a rank whose fn returns at once could tear down under a peer still connecting.
        dist.barrier()
    except BaseException as exc:
        _report(results, _failure(rank, exc))
        return
    try:
        _report(results, _run_one(fn, rank, world_size, args))
    finally:
        dist.destroy_process_group()


def rank_device(rank: int, devices: int) -> int:
    """The CUDA device of ``rank`` when ``devices`` are visible: one each, round the
    devices again where there are more ranks (NCCL then refuses, saying so)."""
    return rank % devices if devices else 0


def _report(results: Any, outcome: RankOutcome) -> None:
    """Send ``outcome`` and wait until it is in the pipe, before this rank tears anything down.

    Otherwise a failing rank could close its connections first, its peers fail
    on the broken collective, and their consequential errors reach the parent
    before the root cause.
    """
    results.put(outcome)
    results.close()
    results.join_thread()


def _run_one(
    fn: Callable[..., Any], rank: int, world_size: int, args: tuple[Any, ...]
) -> RankOutcome:
    try:
        value = fn(rank, world_size, *args)
    except BaseException as exc:  # every failure, SystemExit included, must reach the parent
        return _failure(rank, exc)
    try:
        return RankOutcome(rank, True, pickle.dumps(value))
    except Exception as exc:
        return RankOutcome(rank, False, b"", f"return value cannot be pickled: {exc!r}")


def _failure(rank: int, exc: BaseException) -> RankOutcome:
    return RankOutcome(rank, False, _pickled(exc), repr(exc), traceback.format_exc())


def _pickled(exc: BaseException) -> bytes:
    try:
        payload = pickle.dumps(exc)
        pickle.loads(payload)  # some exceptions pickle but cannot be rebuilt
        return payload
    except Exception:
        return b""


def _collect(processes: Sequence[BaseProcess], results: Any, timeout_s: float) -> list[Any]:
    deadline = time.monotonic() + timeout_s
    values: dict[int, Any] = {}
    exited_at: dict[int, float] = {}
    while len(values) < len(processes):
        outcome = _next_outcome(results, deadline)
        if outcome is not None and outcome.ok:
            values[outcome.rank] = pickle.loads(outcome.value)
        elif outcome is not None:
            _raise_first_failure(outcome, processes, values, results)
        elif time.monotonic() >= deadline:
            running = [rank for rank in range(len(processes)) if rank not in values]
            raise RankTimeout(
                running[0], f"ranks {running} still running after {timeout_s:g}s; all killed"
            )
        else:
            _check_silent_exits(processes, values, exited_at)
    return [values[rank] for rank in range(len(processes))]


def _next_outcome(results: Any, deadline: float) -> RankOutcome | None:
    wait = max(min(POLL_S, deadline - time.monotonic()), 0.0)
    try:
        outcome: RankOutcome = results.get(timeout=wait)
    except queue.Empty:
        return None
    return outcome


def _check_silent_exits(
    processes: Sequence[BaseProcess], values: dict[int, Any], exited_at: dict[int, float]
) -> None:
    now = time.monotonic()
    for rank, process in enumerate(processes):
        if rank in values or process.exitcode is None:
            continue
        first_seen = exited_at.setdefault(rank, now)
        if now - first_seen >= EXIT_GRACE_S:
            raise RankFailed(rank, f"exited with code {process.exitcode} without reporting")


def _raise_first_failure(
    outcome: RankOutcome, processes: Sequence[BaseProcess], values: dict[int, Any], results: Any
) -> None:
    """Raise the root cause: a rank that died without a word beats the peers it broke."""
    reported = {outcome.rank} | set(values) | _drained_ranks(results)
    for rank, process in enumerate(processes):
        if rank not in reported and process.exitcode is not None:
            failure = RankFailed(rank, f"exited with code {process.exitcode} without reporting")
            failure.add_note(f"[probewatch] then rank {outcome.rank} failed: {outcome.error}")
            raise failure
    raise _rebuilt(outcome, len(processes))


def _drained_ranks(results: Any) -> set[int]:
    ranks: set[int] = set()
    while True:
        try:
            ranks.add(results.get_nowait().rank)
        except queue.Empty:
            return ranks


def _rebuilt(outcome: RankOutcome, world_size: int) -> BaseException:
    if not outcome.value:
        return RankFailed(outcome.rank, f"{outcome.error}\n{outcome.remote_traceback}")
    exc: BaseException = pickle.loads(outcome.value)
    where = f"raised on rank {outcome.rank} of {world_size}"
    exc.add_note(f"[probewatch] {where}; remote traceback:\n{outcome.remote_traceback}")
    return exc


def _kill_all(processes: Sequence[BaseProcess]) -> None:
    for process in processes:
        if process.pid is not None and process.exitcode is None:
            process.kill()
    for process in processes:
        if process.pid is not None:
            process.join()


@dataclass(frozen=True)
class RankRunner:
    """``run_ranks`` bound to a test's tmp folder: what the ``ranks`` fixture gives a probe."""

    store_dir: Path

    def __call__(
        self,
        fn: Callable[..., Any],
        world_size: int = 2,
        backend: str = "gloo",
        timeout_s: float = 60.0,
        *,
        args: Sequence[Any] = (),
    ) -> list[Any]:
        return run_ranks(fn, world_size, backend, timeout_s, args=args, store_dir=self.store_dir)

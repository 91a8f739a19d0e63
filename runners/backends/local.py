"""The local backend: test runs as subprocesses of this host, within CPU and GPU slot limits.

CPU-only runs share ``cpu_slots`` (a semaphore) and see no GPU
(``CUDA_VISIBLE_DEVICES`` empty, so they cannot take memory from GPU runs).
A run needing n GPUs waits until n GPUs each have a free slot, takes them all
at once (never some now and some later, which could deadlock two runs each
holding half of what they need) and sees only those. A run needing more GPUs
than the host has never waits: :func:`runners.execute.execute` answers it
*unschedulable* before it gets here. Every run is confined (runners/sandbox/) under this
backend's ``limits``.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from runners.execute import execute
from runners.inventory import local_inventory
from runners.sandbox.limits import DEFAULT_LIMITS, Limits
from runners.testrun.faults import DEFAULT_RETRIES
from runners.testrun.pytest_run import PytestInvocation, PytestReport, run_pytest
from runners.types import MAX_PATCH_BYTES, Capacity, Hardware, RunRequest, RunResult
from runners.workspace import WorkspaceMode


def default_cpu_slots() -> int:
    return max(1, (os.cpu_count() or 2) // 2)


def default_workspace_root() -> Path:
    return Path(tempfile.gettempdir()) / "probewatch-runs"


class Slots:
    """CPU slots and per-GPU slots; ``hold`` waits for what a run needs and gives it back."""

    def __init__(self, cpu_slots: int, gpu_indices: Sequence[int], runs_per_gpu: int = 1) -> None:
        if cpu_slots < 1 or runs_per_gpu < 1:
            raise ValueError("cpu_slots and runs_per_gpu must be at least 1")
        self._cpu = threading.BoundedSemaphore(cpu_slots)
        self._free = dict.fromkeys(gpu_indices, runs_per_gpu)
        self._changed = threading.Condition()

    @contextmanager
    def hold(self, gpus: int) -> Iterator[tuple[int, ...]]:
        """A CPU slot when ``gpus`` is 0, else ``gpus`` GPU indices, held for the block."""
        if gpus == 0:
            with self._cpu:
                yield ()
            return
        taken = self._take(gpus)
        try:
            yield taken
        finally:
            self._give(taken)

    def _take(self, gpus: int) -> tuple[int, ...]:
        if gpus > len(self._free):
            raise ValueError(f"{gpus} GPUs asked of a host with {len(self._free)}")
        with self._changed:
            self._changed.wait_for(lambda: len(self._open()) >= gpus)
            taken = tuple(sorted(self._open(), key=lambda i: (-self._free[i], i))[:gpus])
            for index in taken:
                self._free[index] -= 1
        return tuple(sorted(taken))

    def _open(self) -> list[int]:
        return [index for index, free in self._free.items() if free > 0]

    def _give(self, taken: tuple[int, ...]) -> None:
        with self._changed:
            for index in taken:
                self._free[index] += 1
            self._changed.notify_all()


class LocalBackend:
    """Runs on this host. GPU indices and type default to this host's NVML inventory."""

    name = "local"

    def __init__(
        self,
        *,
        workspace_root: Path | None = None,
        cpu_slots: int | None = None,
        gpu_indices: Sequence[int] | None = None,
        gpu_type: str | None = None,
        runs_per_gpu: int = 1,
        retries: int = DEFAULT_RETRIES,
        mode: WorkspaceMode = WorkspaceMode.worktree,
        labels: tuple[str, ...] = (),
        limits: Limits = DEFAULT_LIMITS,
        shared: tuple[Path, ...] = (),
        max_patch_bytes: int = MAX_PATCH_BYTES,
    ) -> None:
        if gpu_indices is None:
            gpu_indices, gpu_type = _host_gpus()
        self.workspace_root = workspace_root or default_workspace_root()
        self.retries = retries
        self.mode = mode
        self.limits = limits
        self.max_patch_bytes = max_patch_bytes
        # Host folders every run may write besides its own (where an operator collects what
        # runs report); never the registry's home nor a mirror.
        self.shared = shared
        self._capacity = Capacity(
            cpu_slots=cpu_slots or default_cpu_slots(),
            gpus=len(gpu_indices),
            gpu_type=gpu_type,
            labels=labels,
        )
        self._slots = Slots(self._capacity.cpu_slots, gpu_indices, runs_per_gpu)

    def capacity(self) -> Capacity:
        return self._capacity

    def run(self, request: RunRequest) -> RunResult:
        return execute(
            request, self, workspace_root=self.workspace_root, retries=self.retries, mode=self.mode
        )

    def run_tests(self, invocation: PytestInvocation, hardware: Hardware) -> PytestReport:
        with self._slots.hold(hardware.gpus) as gpus:
            env = {**invocation.env, "CUDA_VISIBLE_DEVICES": ",".join(map(str, gpus))}
            confinement = invocation.confinement
            if confinement is not None:
                confinement = replace(
                    confinement, shared=self.shared, gpus=bool(gpus), limits=self.limits
                )
            return run_pytest(
                replace(invocation, env=env, gpu_indices=gpus, confinement=confinement)
            )


def _host_gpus() -> tuple[tuple[int, ...], str | None]:
    """Indices and type of this host's whole GPUs of its most common type (none without NVML)."""
    inventory = local_inventory()
    capacity = inventory.capacity(cpu_slots=1)
    chosen = [g.index for g in inventory.whole_gpus if g.gpu_type == capacity.gpu_type]
    return tuple(chosen), capacity.gpu_type

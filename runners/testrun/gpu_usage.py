"""GPU memory and device names of one run, sampled through NVML (nvidia-ml-py) when present.

A run is a process group on given GPU indices; while it runs, a thread sums
the memory NVML reports for the group's processes on those GPUs and keeps the
peak. Without NVML (no library, no driver, no GPU) the sampler does nothing
and the run reports no GPU figures, rather than failing: most runs are CPU
runs on hosts without GPUs.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

SAMPLE_INTERVAL_S = 0.5


def load_nvml() -> Any | None:
    """The initialised ``pynvml`` module, or None when NVML cannot be used here."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    return pynvml


def process_status(pid: int) -> tuple[int, str] | None:
    """The process group and state letter (``R``, ``S``, ``Z``…) of ``pid`` from /proc, or
    None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ")".
    fields = stat.rpartition(")")[2].split()
    return int(fields[2]), fields[0]


def process_group_of(pid: int) -> int | None:
    status = process_status(pid)
    return status[0] if status else None


class GpuSampler:
    """Peak GPU memory of one process group on ``indices``; a context manager."""

    def __init__(
        self,
        indices: Sequence[int],
        *,
        nvml: Any | None = None,
        interval_s: float = SAMPLE_INTERVAL_S,
    ) -> None:
        self.indices = tuple(indices)
        self.interval_s = interval_s
        self.peak_bytes: int | None = None
        self.names: tuple[str, ...] = ()
        self._owns_nvml = nvml is None and bool(self.indices)
        self._nvml: Any = nvml if nvml is not None else (load_nvml() if self.indices else None)
        self._group: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, group: int) -> None:
        """Count the processes of ``group`` from now on (one group per command of the run)."""
        self._group = group

    def __enter__(self) -> GpuSampler:
        if self._nvml is not None and self.indices:
            try:
                self.names = tuple(self._name(i) for i in self.indices)
            except self._nvml.NVMLError:
                return self  # an index NVML does not know: no figures rather than no run
            self.peak_bytes = 0
            self._thread = threading.Thread(target=self._loop, name="gpu-sampler", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._owns_nvml and self._nvml is not None:
            self._nvml.nvmlShutdown()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def sample(self) -> None:
        if self._nvml is None or self._group is None:
            return
        used = sum(self._group_bytes(i) for i in self.indices)
        self.peak_bytes = max(self.peak_bytes or 0, used)

    def _group_bytes(self, index: int) -> int:
        nvml = self._nvml
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            processes = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        except nvml.NVMLError:
            return 0  # a device that stops answering mid-run reports nothing, not a crash
        return sum(
            int(p.usedGpuMemory or 0)
            for p in processes
            if process_group_of(int(p.pid)) == self._group
        )

    def _name(self, index: int) -> str:
        name = self._nvml.nvmlDeviceGetName(self._nvml.nvmlDeviceGetHandleByIndex(index))
        return name.decode() if isinstance(name, bytes) else str(name)

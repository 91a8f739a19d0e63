"""Peak memory of a block of code, in bytes over the resting baseline.

On CUDA the caching allocator's own statistics are read (allocated, never
reserved: reserved memory includes cache the code did not ask for). On CPU
there are no such statistics, so a dispatch mode watches every tensor storage
the block creates or grows and drops it again when the storage is freed: the
peak is the largest sum of live storage bytes seen after any operator. Where
neither can measure, ``ProbeUnsupported`` is raised, never a silent 0: a
CPU-only torch answers 0 to ``torch.cuda.max_memory_allocated()`` without
complaint, which would let any memory promise pass.
"""

from __future__ import annotations

import functools
import gc
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from probe_builder.kit.devices import cuda_usable
from probe_builder.kit.errors import KitUsageError, ProbeUnsupported

AUTO = "auto"


@dataclass
class MemoryReading:
    """Bytes over the baseline taken when the block was entered; filled in when it exits."""

    device: str
    baseline_bytes: int = 0
    _peak: int | None = None
    _end: int | None = None

    @property
    def peak_bytes(self) -> int:
        """Highest allocation over the baseline at any point inside the block."""
        return self._read(self._peak)

    @property
    def delta_bytes(self) -> int:
        """Allocation over the baseline left when the block exited."""
        return self._read(self._end)

    def _read(self, value: int | None) -> int:
        if value is None:
            raise KitUsageError("peak_memory readings exist only after the with-block exits")
        return value


def resolve_device(device: str) -> str:
    """``auto`` means CUDA where a CUDA device is usable, else CPU."""
    if device == AUTO:
        return "cuda" if cuda_usable() else "cpu"
    return device


@contextmanager
def peak_memory(device: str = AUTO) -> Iterator[MemoryReading]:
    """Measure peak and remaining allocation of the block on ``device`` (cpu, cuda[:i], auto)."""
    resolved = resolve_device(device)
    kind = torch.device(resolved).type
    if kind == "cuda":
        with _cuda_peak(resolved) as reading:
            yield reading
    elif kind == "cpu":
        with _cpu_peak() as reading:
            yield reading
    else:
        raise ProbeUnsupported(f"peak_memory cannot measure device {resolved!r}")


def measure_peak_memory(
    fn: Callable[[], Any], *, device: str = AUTO, warmup: int = 1
) -> MemoryReading:
    """Run ``fn`` ``warmup`` times (lazy initialisation, autotuning), then measure one call."""
    for _ in range(warmup):
        fn()
    with peak_memory(device) as reading:
        fn()
    return reading


@contextmanager
def _cuda_peak(device: str) -> Iterator[MemoryReading]:
    if not cuda_usable():
        # A CPU-only build reports 0 for every CUDA statistic instead of failing.
        raise ProbeUnsupported(f"no usable CUDA device for peak_memory({device!r})")
    torch.cuda.synchronize(device)
    gc.collect()
    torch.cuda.reset_peak_memory_stats(device)
    reading = MemoryReading(device=device, baseline_bytes=torch.cuda.memory_allocated(device))
    yield reading
    torch.cuda.synchronize(device)
    reading._peak = torch.cuda.max_memory_allocated(device) - reading.baseline_bytes
    reading._end = torch.cuda.memory_allocated(device) - reading.baseline_bytes


@contextmanager
def _cpu_peak() -> Iterator[MemoryReading]:
    gc.collect()  # storages in dead reference cycles would otherwise be freed mid-block
    tracker = StorageTracker("cpu")
    reading = MemoryReading(device="cpu")
    with tracker:
        yield reading
    if tracker.operators == 0:
        raise ProbeUnsupported("peak_memory saw no tensor operation on cpu: nothing was measured")
    reading._peak, reading._end = tracker.peak, tracker.live


@dataclass
class _Entry:
    base: int  # bytes the storage already had when first seen as an input (0 when created here)
    size: int

    @property
    def counted(self) -> int:
        return max(self.size - self.base, 0)


class StorageTracker(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Live bytes of tensor storages created or grown under this mode, and their peak.

    Storages that existed before the mode are first met as operator inputs and
    count only for what they grow by (``resize_``). A weak reference per
    storage subtracts its bytes the moment it is freed; torch keeps one Python
    object per live storage, so the reference dies with the storage itself.
    """

    def __init__(self, device_type: str) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.device_type = device_type
        self.live = 0
        self.peak = 0
        self.operators = 0
        self._entries: dict[int, _Entry] = {}
        self._refs: dict[int, weakref.ref[torch.UntypedStorage]] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        for storage in self._storages((args, kwargs)):
            self._adopt(storage, base=storage.nbytes())
        out = func(*args, **kwargs)
        self.operators += 1
        for storage in self._storages((out, args, kwargs)):
            self._adopt(storage, base=0)
            self._resize(storage)
        self.peak = max(self.peak, self.live)
        return out

    def _storages(self, tree: Any) -> Iterator[torch.UntypedStorage]:
        for leaf in pytree.tree_leaves(tree):
            if isinstance(leaf, torch.Tensor) and leaf.layout == torch.strided:
                storage = leaf.untyped_storage()
                if storage.device.type == self.device_type:
                    yield storage

    def _adopt(self, storage: torch.UntypedStorage, *, base: int) -> None:
        key = id(storage)
        if key in self._entries:
            return
        entry = _Entry(base=base, size=storage.nbytes())
        self._entries[key] = entry
        self._refs[key] = weakref.ref(storage, functools.partial(self._free, key))
        self.live += entry.counted

    def _resize(self, storage: torch.UntypedStorage) -> None:
        entry = self._entries[id(storage)]
        before = entry.counted
        entry.size = storage.nbytes()
        self.live += entry.counted - before

    def _free(self, key: int, _dead: object = None) -> None:
        entry = self._entries.pop(key, None)
        self._refs.pop(key, None)
        if entry is not None:
            self.live -= entry.counted

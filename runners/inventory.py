"""GPU inventory of this host through NVML (nvidia-ml-py): names, memory, MIG.

The inventory says plainly when there are no GPUs and why (no NVML library, no
driver, no device), because "no GPUs" decides where a task may run: a task
that needs more GPUs than any runner offers is unschedulable, never failed.
MIG-enabled GPUs are listed with their instances but do not count as whole
GPUs in the capacity, since a multi-GPU test needs full devices.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from runners.types import Capacity

# Words in NVML device names that say nothing about the model.
_VENDOR_WORDS = frozenset({"NVIDIA", "TESLA", "GEFORCE", "QUADRO"})
# Families whose model number is the second word ("RTX 4090", "RTX A6000").
_TWO_WORD_FAMILIES = frozenset({"RTX", "GTX", "TITAN"})


@dataclass(frozen=True)
class MigInstance:
    index: int
    name: str
    uuid: str
    memory_total_bytes: int


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str  # NVML's name, e.g. "NVIDIA H100 80GB HBM3"
    uuid: str
    memory_total_bytes: int
    mig_enabled: bool | None = None  # None: the GPU does not support MIG
    mig_instances: tuple[MigInstance, ...] = ()

    @property
    def gpu_type(self) -> str:
        return gpu_type_of(self.name)


@dataclass(frozen=True)
class Inventory:
    gpus: tuple[GpuInfo, ...] = ()
    driver_version: str | None = None
    unavailable: str | None = None  # why NVML could not be read, when it could not

    @property
    def whole_gpus(self) -> tuple[GpuInfo, ...]:
        return tuple(gpu for gpu in self.gpus if not gpu.mig_enabled)

    def summary(self) -> str:
        """One line: what this host offers, or why it offers no GPUs."""
        if self.unavailable is not None:
            return f"no NVIDIA GPUs: {self.unavailable}"
        if not self.gpus:
            return f"no NVIDIA GPUs: NVML reports 0 devices (driver {self.driver_version})"
        counts = Counter(gpu.gpu_type for gpu in self.gpus)
        kinds = ", ".join(f"{n}x{kind}" for kind, n in sorted(counts.items()))
        mig = sum(1 for gpu in self.gpus if gpu.mig_enabled)
        note = f"; {mig} in MIG mode" if mig else ""
        return f"{len(self.gpus)} NVIDIA GPU(s): {kinds} (driver {self.driver_version}){note}"

    def capacity(self, cpu_slots: int, labels: tuple[str, ...] = ()) -> Capacity:
        """Whole GPUs of the most common type (a mixed host is scheduled as its largest group)."""
        counts = Counter(gpu.gpu_type for gpu in self.whole_gpus)
        if not counts:
            return Capacity(cpu_slots=cpu_slots, gpus=0, labels=labels)
        kind, count = counts.most_common(1)[0]
        return Capacity(cpu_slots=cpu_slots, gpus=count, gpu_type=kind, labels=labels)


def gpu_type_of(name: str) -> str:
    """The model in an NVML device name: "NVIDIA A100-SXM4-80GB" -> "A100"."""
    words = [w for w in name.replace("-", " ").split() if w.upper() not in _VENDOR_WORDS]
    if not words:
        return name.strip()
    if words[0].upper() in _TWO_WORD_FAMILIES and len(words) > 1:
        return f"{words[0]}{words[1]}".upper()
    return words[0].upper()


def local_inventory(nvml: Any = None) -> Inventory:
    """Read this host's GPUs; ``nvml`` is the ``pynvml`` module unless one is given."""
    if nvml is None:
        try:
            import pynvml
        except ImportError as exc:
            return Inventory(unavailable=f"NVML not available (nvidia-ml-py not installed: {exc})")
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        return Inventory(unavailable=f"NVML not available ({exc})")
    try:
        return _read(nvml)
    except nvml.NVMLError as exc:
        return Inventory(unavailable=f"NVML query failed ({exc})")
    finally:
        nvml.nvmlShutdown()


def _read(nvml: Any) -> Inventory:
    count = nvml.nvmlDeviceGetCount()
    gpus = tuple(_gpu(nvml, index) for index in range(count))
    return Inventory(gpus=gpus, driver_version=_text(nvml.nvmlSystemGetDriverVersion()))


def _gpu(nvml: Any, index: int) -> GpuInfo:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    enabled = _mig_mode(nvml, handle)
    return GpuInfo(
        index=index,
        name=_text(nvml.nvmlDeviceGetName(handle)),
        uuid=_text(nvml.nvmlDeviceGetUUID(handle)),
        memory_total_bytes=int(nvml.nvmlDeviceGetMemoryInfo(handle).total),
        mig_enabled=enabled,
        mig_instances=_mig_instances(nvml, handle) if enabled else (),
    )


def _mig_mode(nvml: Any, handle: Any) -> bool | None:
    try:
        current, _pending = nvml.nvmlDeviceGetMigMode(handle)
    except (nvml.NVMLError_NotSupported, nvml.NVMLError_FunctionNotFound):
        return None  # pre-Ampere GPUs and old drivers have no MIG at all
    return bool(current == nvml.NVML_DEVICE_MIG_ENABLE)


def _mig_instances(nvml: Any, handle: Any) -> tuple[MigInstance, ...]:
    found = []
    for slot in range(nvml.nvmlDeviceGetMaxMigDeviceCount(handle)):
        try:
            mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        except nvml.NVMLError_NotFound:
            continue  # slots are sparse: an unused slot is not an error
        found.append(
            MigInstance(
                index=slot,
                name=_text(nvml.nvmlDeviceGetName(mig)),
                uuid=_text(nvml.nvmlDeviceGetUUID(mig)),
                memory_total_bytes=int(nvml.nvmlDeviceGetMemoryInfo(mig).total),
            )
        )
    return tuple(found)


def _text(value: str | bytes) -> str:
    # nvidia-ml-py returned bytes before 11.5; a runner may carry an old one.
    return value.decode() if isinstance(value, bytes) else str(value)

"""GPU inventory: the real NVML where it is (this machine has none: the "none" path is real), and
an NVML stand-in for hosts with GPUs. The stand-in replaces the one thing that cannot run here, the
driver library, at its boundary: it implements the pynvml calls the inventory makes and raises
pynvml's own error classes, the way the driver does on a GPU without MIG or an empty MIG slot.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace

import pynvml
import pytest

from runners.inventory import GpuInfo, Inventory, gpu_type_of, local_inventory

GiB = 1024**3


@dataclass
class FakeDevice:
    name: str
    memory: int
    mig: int | None = None  # None: MIG not supported; else the current mode
    instances: dict[int, FakeDevice] = field(default_factory=dict)
    uuid: str = "GPU-0"


class FakeNvml:
    """The pynvml calls local_inventory makes, answering from a list of devices."""

    NVMLError = pynvml.NVMLError
    NVMLError_NotSupported = pynvml.NVMLError_NotSupported
    NVMLError_FunctionNotFound = pynvml.NVMLError_FunctionNotFound
    NVMLError_NotFound = pynvml.NVMLError_NotFound
    NVML_DEVICE_MIG_ENABLE = pynvml.NVML_DEVICE_MIG_ENABLE

    def __init__(self, devices: Sequence[FakeDevice], *, fail_init: bool = False) -> None:
        self.devices = list(devices)
        self.fail_init = fail_init
        self.shutdowns = 0

    def nvmlInit(self) -> None:
        if self.fail_init:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self) -> bytes:
        return b"550.54.15"  # old bindings answer bytes

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeDevice:
        return self.devices[index]

    def nvmlDeviceGetName(self, handle: FakeDevice) -> str:
        return handle.name

    def nvmlDeviceGetUUID(self, handle: FakeDevice) -> str:
        return handle.uuid

    def nvmlDeviceGetMemoryInfo(self, handle: FakeDevice) -> SimpleNamespace:
        return SimpleNamespace(total=handle.memory, used=0, free=handle.memory)

    def nvmlDeviceGetMigMode(self, handle: FakeDevice) -> list[int]:
        if handle.mig is None:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return [handle.mig, handle.mig]

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: FakeDevice) -> int:
        return 7

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: FakeDevice, index: int) -> FakeDevice:
        if index not in handle.instances:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return handle.instances[index]


def h100(index: int, mig: int | None = 0) -> FakeDevice:
    return FakeDevice("NVIDIA H100 80GB HBM3", 80 * GiB, mig=mig, uuid=f"GPU-{index}")


def test_this_host_without_nvml_says_plainly_there_are_no_gpus() -> None:
    found = local_inventory()
    assert found.gpus == ()
    assert found.summary().startswith("no NVIDIA GPUs: NVML not available (")
    assert "Library Not Found" in found.summary()
    assert found.capacity(cpu_slots=2).gpus == 0


def test_driver_that_does_not_load_is_reported_as_the_reason() -> None:
    nvml = FakeNvml([], fail_init=True)
    found = local_inventory(nvml)
    assert found.summary() == "no NVIDIA GPUs: NVML not available (Driver Not Loaded)"
    assert nvml.shutdowns == 0  # nothing to shut down after a failed init


def test_zero_devices_is_no_gpus_with_the_driver_named() -> None:
    found = local_inventory(FakeNvml([]))
    assert found.summary() == "no NVIDIA GPUs: NVML reports 0 devices (driver 550.54.15)"


def test_eight_h100s_are_listed_with_memory_and_counted() -> None:
    nvml = FakeNvml([h100(i) for i in range(8)])
    found = local_inventory(nvml)
    assert [g.index for g in found.gpus] == list(range(8))
    assert found.gpus[3] == GpuInfo(3, "NVIDIA H100 80GB HBM3", "GPU-3", 80 * GiB, False, ())
    assert found.summary() == "8 NVIDIA GPU(s): 8xH100 (driver 550.54.15)"
    capacity = found.capacity(cpu_slots=4, labels=("local",))
    assert (capacity.gpus, capacity.gpu_type, capacity.labels) == (8, "H100", ("local",))
    assert nvml.shutdowns == 1


def test_mig_instances_are_listed_and_mig_gpus_are_not_whole_gpus() -> None:
    slice_ = FakeDevice("NVIDIA H100 80GB HBM3 MIG 3g.40gb", 40 * GiB, uuid="MIG-a")
    other = FakeDevice("NVIDIA H100 80GB HBM3 MIG 3g.40gb", 40 * GiB, uuid="MIG-b")
    mig_gpu = FakeDevice(
        "NVIDIA H100 80GB HBM3",
        80 * GiB,
        mig=pynvml.NVML_DEVICE_MIG_ENABLE,
        instances={0: slice_, 4: other},
        uuid="GPU-1",
    )
    found = local_inventory(FakeNvml([h100(0), mig_gpu]))
    assert found.gpus[1].mig_enabled is True
    assert [(m.index, m.uuid, m.memory_total_bytes) for m in found.gpus[1].mig_instances] == [
        (0, "MIG-a", 40 * GiB),
        (4, "MIG-b", 40 * GiB),
    ]
    assert found.capacity(cpu_slots=1).gpus == 1
    assert found.summary().endswith("; 1 in MIG mode")


def test_gpus_without_mig_support_say_so() -> None:
    t4 = FakeDevice("Tesla T4", 16 * GiB, mig=None)
    found = local_inventory(FakeNvml([t4]))
    assert found.gpus[0].mig_enabled is None
    assert found.gpus[0].gpu_type == "T4"
    assert found.capacity(cpu_slots=1).gpus == 1


def test_mixed_host_is_scheduled_as_its_largest_group() -> None:
    devices = [h100(0), h100(1), FakeDevice("NVIDIA A100-SXM4-80GB", 80 * GiB, mig=0)]
    capacity = local_inventory(FakeNvml(devices)).capacity(cpu_slots=1)
    assert (capacity.gpus, capacity.gpu_type) == (2, "H100")


def test_a_query_failing_midway_is_reported_not_raised() -> None:
    class Broken(FakeNvml):
        def nvmlDeviceGetMemoryInfo(self, handle: FakeDevice) -> SimpleNamespace:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)

    nvml = Broken([h100(0)])
    found = local_inventory(nvml)
    assert found.summary() == "no NVIDIA GPUs: NVML query failed (GPU is lost)"
    assert nvml.shutdowns == 1


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("NVIDIA H100 80GB HBM3", "H100"),
        ("NVIDIA H200", "H200"),
        ("NVIDIA A100-SXM4-80GB", "A100"),
        ("NVIDIA A100 80GB PCIe", "A100"),
        ("Tesla V100-SXM2-16GB", "V100"),
        ("NVIDIA GeForce RTX 4090", "RTX4090"),
        ("NVIDIA RTX A6000", "RTXA6000"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA GH200 480GB", "GH200"),
        ("h100", "H100"),
    ],
)
def test_gpu_type_is_the_model_in_the_device_name(name: str, kind: str) -> None:
    assert gpu_type_of(name) == kind


def test_summary_of_an_empty_inventory_without_reason() -> None:
    assert (
        Inventory(driver_version="1").summary()
        == "no NVIDIA GPUs: NVML reports 0 devices (driver 1)"
    )


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from bot.cli.main import main; main()",
            "runners",
            "inventory",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_inventory_prints_the_reason_there_are_no_gpus() -> None:
    result = run_cli()
    assert result.returncode == 0, result.stderr
    assert "no NVIDIA GPUs: NVML not available (NVML Shared Library Not Found)" in result.stdout


def test_cli_inventory_json_is_machine_readable() -> None:
    result = run_cli("--json")
    document = json.loads(result.stdout)
    assert document["gpus"] == []
    assert document["summary"].startswith("no NVIDIA GPUs")
    assert "NVML" in document["unavailable"]


def test_cli_table_shows_memory_and_mig_state() -> None:
    from rich.console import Console

    from bot.cli.runners import gpu_table

    slice_ = FakeDevice("NVIDIA H100 MIG 3g.40gb", 40 * GiB, uuid="MIG-a")
    devices = [
        h100(0),
        FakeDevice("NVIDIA H100 80GB HBM3", 80 * GiB, mig=1, instances={2: slice_}, uuid="GPU-1"),
        FakeDevice("Tesla T4", 16 * GiB, mig=None, uuid="GPU-2"),
    ]
    console = Console(width=200, record=True)
    console.print(gpu_table(local_inventory(FakeNvml(devices)).gpus))
    text = console.export_text()
    assert "80.0 GiB" in text and "16.0 GiB" in text
    assert "on: 1 instance(s): NVIDIA H100 MIG 3g.40gb (40.0 GiB)" in text
    assert "not supported" in text
    assert " off " in text

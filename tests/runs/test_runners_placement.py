from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from runners.backends.placement import fits, place, place_test, run_placed
from runners.types import (
    Backend,
    Capacity,
    Hardware,
    HardwareRules,
    Outcome,
    RunRequest,
    RunResult,
)


@dataclass
class RecordingBackend:
    """A backend that runs nothing and records what it was given (placement is all we test)."""

    name: str
    offer: Capacity
    ran: list[RunRequest] = field(default_factory=list)

    def capacity(self) -> Capacity:
        return self.offer

    def run(self, request: RunRequest) -> RunResult:
        self.ran.append(request)
        return RunResult(outcome=Outcome.completed, detail=self.name)


LOCAL = RecordingBackend("local", Capacity(cpu_slots=2, gpus=0))
PAIR = RecordingBackend("a100-pair", Capacity(cpu_slots=1, gpus=2, gpu_type="A100"))
NODE = RecordingBackend("h100-node", Capacity(cpu_slots=1, gpus=8, gpu_type="H100"))
ALL: list[Backend] = [NODE, PAIR, LOCAL]


def request(gpus: int = 0, gpu_type: str | None = None) -> RunRequest:
    return RunRequest(repo=Path("/r"), base_commit="abc", hardware=Hardware(gpus, gpu_type))


@pytest.mark.parametrize(
    ("capacity", "hardware", "expected"),
    [
        (Capacity(2, 0), Hardware(), True),
        (Capacity(0, 8, "H100"), Hardware(), False),  # no CPU slot: nothing runs there
        (Capacity(1, 8, "H100"), Hardware(8, "H100"), True),
        (Capacity(1, 8, "H100"), Hardware(9, "H100"), False),
        (Capacity(1, 8, "H100"), Hardware(2, "A100"), False),
        (Capacity(1, 8, "NVIDIA H100 80GB HBM3"), Hardware(2, "h100"), True),
        (
            Capacity(1, 8, None),
            Hardware(2, "H100"),
            False,
        ),  # an unknown type is not the one asked for
        (Capacity(1, 8, None), Hardware(2), True),
        (Capacity(1, 0), Hardware(1), False),
    ],
)
def test_fits_compares_count_type_and_slots(
    capacity: Capacity, hardware: Hardware, expected: bool
) -> None:
    assert fits(capacity, hardware) is expected


def test_a_cpu_run_goes_to_the_smallest_backend_not_the_gpu_node() -> None:
    placement = place(Hardware(), ALL)
    assert placement.backend is LOCAL
    assert placement.reason == "local offers no GPUs, 2 CPU slot(s)"


def test_a_two_gpu_run_without_type_takes_the_pair_not_the_node() -> None:
    assert place(Hardware(2), ALL).backend is PAIR


def test_a_typed_run_goes_where_that_type_is() -> None:
    assert place(Hardware(2, "H100"), ALL).backend is NODE


def test_ties_go_to_the_backend_listed_first() -> None:
    twin = RecordingBackend("h100-node-2", NODE.offer)
    assert place(Hardware(4, "H100"), [twin, NODE]).backend is twin


def test_too_many_gpus_is_unschedulable_naming_every_offer() -> None:
    placement = place(Hardware(16, "H100"), ALL)
    assert not placement.schedulable
    assert placement.reason == (
        "needs 16 GPU(s) of type H100; no runner offers it (h100-node: 8xH100, 1 CPU slot(s); "
        "a100-pair: 2xA100, 1 CPU slot(s); local: no GPUs, 2 CPU slot(s))"
    )


def test_run_placed_runs_on_the_chosen_backend() -> None:
    node = RecordingBackend("node", Capacity(1, 8, "H100"))
    local = RecordingBackend("local", Capacity(1, 0))
    result = run_placed(request(8, "H100"), [local, node])
    assert result.detail == "node"
    assert len(node.ran) == 1 and local.ran == []


def test_unschedulable_run_is_reported_not_failed_and_nothing_runs() -> None:
    local = RecordingBackend("local", Capacity(1, 0))
    result = run_placed(request(2), [local])
    assert result.outcome is Outcome.unschedulable
    assert result.fault is None and result.tests == ()
    assert "needs 2 GPU(s); no runner offers it (local: no GPUs" in result.detail
    assert local.ran == []


def test_no_backends_at_all_is_unschedulable() -> None:
    assert run_placed(request(), []).outcome is Outcome.unschedulable


VERL = HardwareRules(cpu_globs=("tests/**/*_on_cpu.py",), gpus=1)
MEGATRON = HardwareRules(gpu_paths=("tests/unit_tests/",), gpus=8, gpu_type="H100")
VLLM = HardwareRules(cpu_marker="cpu_test", gpus=1)


@pytest.mark.parametrize(
    ("rules", "path", "source", "gpus", "tried"),
    [
        (VERL, "tests/trainer/test_sft_on_cpu.py", "def test_a(): pass\n", 0, False),
        (VERL, "tests/trainer/test_sft.py", "def test_a(): pass\n", 0, True),
        (MEGATRON, "tests/unit_tests/test_moe.py", "def test_a(): pass\n", 8, False),
        (MEGATRON, "tests/functional_tests/test_x.py", "def test_a(): pass\n", 0, True),
        (
            VLLM,
            "tests/test_a.py",
            "import pytest\n\n@pytest.mark.cpu_test\ndef test_a(): pass\n",
            0,
            True,
        ),
        (VLLM, "tests/test_b.py", "def test_b(): pass\n", 1, False),
        (
            VLLM,
            "tests/test_c.py",
            "# pytest.mark.cpu_test in a comment\ndef test_c(): pass\n",
            1,
            False,
        ),
        (
            HardwareRules(),
            "tests/probes/test_p.py",
            "import pytest\n\n@pytest.mark.probe_gpu(2)\ndef test_p(): pass\n",
            2,
            False,
        ),
        (
            MEGATRON,
            "tests/unit_tests/test_cpu_probe.py",
            "import pytest\n\n@pytest.mark.probe_cpu_ok\ndef test_p(): pass\n",
            0,
            False,
        ),
        (HardwareRules(), "tests/test_plain.py", None, 0, True),
    ],
)
def test_each_test_file_gets_its_hardware_from_marks_then_conventions_then_a_try_on_cpu(
    rules: HardwareRules, path: str, source: str | None, gpus: int, tried: bool
) -> None:
    placed = place_test(path, source, rules)
    assert (placed.hardware.gpus, placed.tried) == (gpus, tried), placed.reason
    assert placed.reason

"""Choose a backend for a run by its hardware needs, or say it cannot run anywhere.

Every configured backend states its :class:`~runners.types.Capacity`; a run
goes to the smallest one that fits (a CPU-only run never takes an 8-GPU
runner while a CPU slot is free elsewhere), earlier backends winning ties. A
run that fits nowhere gets the outcome *unschedulable* with the offers it was
compared against: it is reported as such and never counted as a failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from runners.inventory import gpu_type_of
from runners.types import Backend, Capacity, Hardware, Outcome, RunRequest, RunResult


@dataclass(frozen=True)
class Placement:
    backend: Backend | None
    reason: str  # why this backend, or why none

    @property
    def schedulable(self) -> bool:
        return self.backend is not None


def fits(capacity: Capacity, hardware: Hardware) -> bool:
    """Whether a backend with ``capacity`` can run a run that needs ``hardware``."""
    if capacity.cpu_slots < 1 or hardware.gpus > capacity.gpus:
        return False
    if hardware.gpus == 0 or hardware.gpu_type is None:
        return True
    return capacity.gpu_type is not None and same_gpu_type(capacity.gpu_type, hardware.gpu_type)


def same_gpu_type(offered: str, wanted: str) -> bool:
    return gpu_type_of(offered) == gpu_type_of(wanted)


def describe_hardware(hardware: Hardware) -> str:
    if hardware.gpus == 0:
        return "CPU only"
    kind = f" of type {hardware.gpu_type}" if hardware.gpu_type else ""
    return f"{hardware.gpus} GPU(s){kind}"


def describe_capacity(capacity: Capacity) -> str:
    gpus = f"{capacity.gpus}x{capacity.gpu_type or 'GPU'}" if capacity.gpus else "no GPUs"
    return f"{gpus}, {capacity.cpu_slots} CPU slot(s)"


def place(hardware: Hardware, backends: Sequence[Backend]) -> Placement:
    """The smallest backend whose capacity fits ``hardware``; none when nothing fits."""
    offers = [(backend, backend.capacity()) for backend in backends]
    fitting = [(b, c) for b, c in offers if fits(c, hardware)]
    if not fitting:
        return Placement(None, _unschedulable_reason(hardware, offers))
    backend, capacity = min(fitting, key=lambda offer: offer[1].gpus)
    return Placement(backend, f"{backend.name} offers {describe_capacity(capacity)}")


def _unschedulable_reason(hardware: Hardware, offers: list[tuple[Backend, Capacity]]) -> str:
    seen = "; ".join(f"{b.name}: {describe_capacity(c)}" for b, c in offers) or "no backends"
    return f"needs {describe_hardware(hardware)}; no runner offers it ({seen})"


def unschedulable(reason: str) -> RunResult:
    """The result of a run that no runner can take: not the candidate's doing, not a fault."""
    return RunResult(outcome=Outcome.unschedulable, detail=reason, attempts=0)


def run_placed(request: RunRequest, backends: Sequence[Backend]) -> RunResult:
    """Run ``request`` on the backend :func:`place` chooses, or return it unschedulable."""
    placement = place(request.hardware, backends)
    if placement.backend is None:
        return unschedulable(placement.reason)
    return placement.backend.run(request)

"""Where tests run: each test file's hardware by the repository's conventions, and the
backend a run goes to, or why it cannot run anywhere.

:func:`place_test` reads a test file's hardware from the repository's
:class:`~runners.types.HardwareRules` and the file's own marks (``probe_gpu(n)``,
``probe_cpu_ok``, the repository's CPU marker), read from its syntax tree without
running it; a file nothing decides is tried on CPU. Every configured backend
states its :class:`~runners.types.Capacity`; a run goes to the smallest one that
fits (a CPU-only run never takes an 8-GPU runner while a CPU slot is free
elsewhere), earlier backends winning ties. A run that fits nowhere gets the
outcome *unschedulable* with the offers it was compared against: it is reported
as such and never counted as a failure.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from probewatch.paths import PathMatcher
from probewatch.syntax import parse_module
from runners.inventory import gpu_type_of
from runners.types import (
    PROBE_GPU_MARKER,
    Backend,
    Capacity,
    Hardware,
    HardwareRules,
    Outcome,
    RunRequest,
    RunResult,
)

PROBE_CPU_OK_MARKER = "probe_cpu_ok"  # the probe gives a real verdict on a CPU-only machine


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


# --- each test file's hardware ------------------------------------------------------------


@dataclass(frozen=True)
class TestPlacement:
    """Where one test file runs, and which convention decided it."""

    __test__ = False
    path: str
    hardware: Hardware
    reason: str
    tried: bool = False  # nothing decided: tried on CPU, routed to a GPU runner if it needs one


def place_test(path: str, source: str | None, rules: HardwareRules) -> TestPlacement:
    """The hardware ``path`` needs: its marks first, then the repository's conventions, then
    a try on CPU."""
    gpu = Hardware(max(rules.gpus, 1), rules.gpu_type)
    marked = marked_gpus(source) if source else 0
    if marked:
        return TestPlacement(path, Hardware(marked, rules.gpu_type), f"marked probe_gpu({marked})")
    if source and _has_mark(source, PROBE_CPU_OK_MARKER):
        return TestPlacement(path, Hardware(), "marked probe_cpu_ok")
    if rules.cpu_globs and PathMatcher(rules.cpu_globs).matches(path):
        return TestPlacement(path, Hardware(), "matches tests.cpu_globs")
    if rules.gpu_paths and PathMatcher(rules.gpu_paths).matches(path):
        return TestPlacement(path, gpu, "under tests.gpu_paths")
    if rules.cpu_marker and source is not None:
        if _has_mark(source, rules.cpu_marker):
            return TestPlacement(path, Hardware(), f"marked {rules.cpu_marker}", tried=True)
        return TestPlacement(path, gpu, f"not marked {rules.cpu_marker} (tests.cpu_marker)")
    return TestPlacement(path, Hardware(), "no convention decides: tried on CPU", tried=True)


def marked_gpus(source: str) -> int:
    """The largest n in ``probe_gpu(n)`` marks of a test module (a bare mark is 1); 0 if none."""
    try:
        module = parse_module(source)
    except SyntaxError:
        return 0  # pytest reports the module as a collection error
    counts = [_mark_count(node) for node in ast.walk(module)]
    return max((c for c in counts if c is not None), default=0)


def _mark_count(node: ast.AST) -> int | None:
    if isinstance(node, ast.Call) and _is_mark(node.func):
        values = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "n")]
        value = values[0] if values else None
        if isinstance(value, ast.Constant) and isinstance(value.value, int):
            return value.value
        return 1
    if _is_mark(node):
        return 1
    return None


def _is_mark(node: ast.AST, name: str = PROBE_GPU_MARKER) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == name


def _has_mark(source: str, name: str) -> bool:
    """Whether ``pytest.mark.<name>`` (or ``mark.<name>``) appears in the module's code."""
    try:
        module = parse_module(source)
    except SyntaxError:
        return False
    return any(_is_mark(node, name) for node in ast.walk(module))

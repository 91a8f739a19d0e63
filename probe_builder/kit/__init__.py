"""The probe kit: trustworthy observables for probes, one line each.

Memory (``peak_memory``), communication (``comm_ledger``, ``comm_seam``),
several ranks (``run_ranks`` and the ``ranks`` fixture), state across calls
(``lifecycle``, ``counter_delta``), execution modes (``graph_replay_check``,
``compile_check``) and relative cost (``time_ratio``). Where an observable
cannot be measured the helpers raise ``ProbeUnsupported``, which the pytest
plugin (``probe_builder.kit.plugin``) turns into a skip with its reason.

Names are imported on first use (PEP 562): the plugin is loaded into every
pytest session of an environment that installs probewatch, and must not pull
in torch for sessions that never touch a probe.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, tuple[str, ...]] = {
    "comm": ("CommLedger", "CommRecord", "comm_ledger", "comm_seam"),
    "counters": ("CounterDeltas", "counter_delta", "read_counter"),
    "errors": (
        "CompileCheckFailed",
        "CounterMismatch",
        "GraphReplayMismatch",
        "KitUsageError",
        "LifecycleMismatch",
        "ProbeUnsupported",
        "RankFailed",
        "RankTimeout",
    ),
    "lifecycle": ("Action", "Step", "StepResult", "lifecycle", "step", "values_equal"),
    "markers": (
        "PROBE_CPU_OK",
        "PROBE_CUDA_GRAPH",
        "PROBE_GPU",
        "ProbeNeeds",
        "file_needs",
        "needs_from_item",
        "needs_from_source",
        "unsupported_reason",
    ),
    "memory": ("MemoryReading", "measure_peak_memory", "peak_memory"),
    "modes": ("CompileReport", "compile_check", "graph_replay_check"),
    "ranks": ("RankRunner", "run_ranks"),
    "timing": ("TimeRatio", "time_ratio"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module_name = _MODULE_OF.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{module_name}")
    # Bind every name of that module at once: importing kit.lifecycle sets the package
    # attribute "lifecycle" to the submodule, which must not shadow the function.
    for exported in _EXPORTS[module_name]:
        globals()[exported] = getattr(module, exported)
    return globals()[name]


def __dir__() -> list[str]:
    return __all__

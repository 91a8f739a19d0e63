"""The probe markers, and how to read a probe's hardware needs from them.

``probe_gpu(n)`` (needs n CUDA GPUs), ``probe_cuda_graph`` (needs CUDA graph
capture, so at least one GPU) and ``probe_cpu_ok`` (gives a real verdict on
CPU). Runners place a probe by these needs before it runs, so they are
readable three ways: from a collected pytest item, statically from a probe
file's source (no import, no torch), and as JSON written by the plugin during
collection (``--probewatch-needs=FILE``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeGuard

PROBE_GPU = "probe_gpu"
PROBE_CUDA_GRAPH = "probe_cuda_graph"
PROBE_CPU_OK = "probe_cpu_ok"
MARKER_HELP = {
    PROBE_GPU: "probe_gpu(n): the probe needs n CUDA GPUs (skipped with its reason where fewer)",
    PROBE_CUDA_GRAPH: "probe_cuda_graph: the probe captures and replays CUDA graphs",
    PROBE_CPU_OK: "probe_cpu_ok: the probe gives a real verdict on a CPU-only machine",
}
SKIP_PREFIX = "probewatch: "


@dataclass(frozen=True)
class ProbeNeeds:
    """Hardware a probe (or a file of probes) needs."""

    gpus: int = 0
    cuda_graph: bool = False
    cpu_ok: bool = False

    @property
    def min_gpus(self) -> int:
        return max(self.gpus, 1 if self.cuda_graph else 0)

    def merged(self, other: ProbeNeeds) -> ProbeNeeds:
        """Needs of two probes run together: the larger machine, CPU only if both allow it."""
        return ProbeNeeds(
            gpus=max(self.gpus, other.gpus),
            cuda_graph=self.cuda_graph or other.cuda_graph,
            cpu_ok=self.cpu_ok and other.cpu_ok,
        )


def needs_from_marks(marks: Iterable[tuple[str, tuple[Any, ...], dict[str, Any]]]) -> ProbeNeeds:
    """Needs from (marker name, args, kwargs) triples; unrelated markers are ignored."""
    gpus, cuda_graph, cpu_ok = 0, False, False
    for name, args, kwargs in marks:
        if name == PROBE_GPU:
            gpus = max(gpus, _gpu_count(args, kwargs))
        cuda_graph = cuda_graph or name == PROBE_CUDA_GRAPH
        cpu_ok = cpu_ok or name == PROBE_CPU_OK
    return ProbeNeeds(gpus=gpus, cuda_graph=cuda_graph, cpu_ok=cpu_ok)


def _gpu_count(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    count = args[0] if args else kwargs.get("n", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"{PROBE_GPU}(n) needs a positive integer, got {count!r}")
    return count


def needs_from_item(item: Any) -> ProbeNeeds:
    """Needs of a collected pytest item (its own, class and module markers)."""
    return needs_from_marks((m.name, tuple(m.args), dict(m.kwargs)) for m in item.iter_markers())


def unsupported_reason(needs: ProbeNeeds, gpus_here: int) -> str | None:
    """Why a probe cannot run on a machine with ``gpus_here`` CUDA GPUs (None if it can)."""
    if needs.min_gpus <= gpus_here:
        return None
    if needs.gpus == 0:
        return f"{SKIP_PREFIX}needs CUDA graph capture (a CUDA GPU); this machine has none"
    return f"{SKIP_PREFIX}needs {needs.min_gpus} CUDA GPU(s); this machine has {gpus_here}"


def needs_from_source(source: str) -> dict[str, ProbeNeeds]:
    """Needs per test of a probe file, read from its syntax tree (``Class::test`` for methods)."""
    tree = ast.parse(source)
    module_marks = _pytestmark(tree.body)
    found: dict[str, ProbeNeeds] = {}
    for node in tree.body:
        if _is_test_function(node):
            found[node.name] = needs_from_marks(module_marks + _decorator_marks(node))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            class_marks = module_marks + _decorator_marks(node) + _pytestmark(node.body)
            for member in node.body:
                if _is_test_function(member):
                    marks = class_marks + _decorator_marks(member)
                    found[f"{node.name}::{member.name}"] = needs_from_marks(marks)
    return found


def file_needs(source: str) -> ProbeNeeds:
    """Needs of running every test of a probe file together."""
    per_test = list(needs_from_source(source).values())
    if not per_test:
        return ProbeNeeds()
    combined = per_test[0]
    for needs in per_test[1:]:
        combined = combined.merged(needs)
    return combined


Mark = tuple[str, tuple[Any, ...], dict[str, Any]]


def _is_test_function(node: ast.stmt) -> TypeGuard[ast.FunctionDef | ast.AsyncFunctionDef]:
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    return node.name.startswith("test")


def _decorator_marks(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> list[Mark]:
    return [mark for mark in map(_mark_of, node.decorator_list) if mark is not None]


def _pytestmark(body: list[ast.stmt]) -> list[Mark]:
    marks: list[Mark] = []
    for node in body:
        if isinstance(node, ast.Assign) and _assigns_pytestmark(node):
            values = (
                node.value.elts if isinstance(node.value, ast.List | ast.Tuple) else [node.value]
            )
            marks.extend(mark for mark in map(_mark_of, values) if mark is not None)
    return marks


def _assigns_pytestmark(node: ast.Assign) -> bool:
    return any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)


def _mark_of(node: ast.expr) -> Mark | None:
    """``pytest.mark.NAME``, ``mark.NAME``, or either called; arguments only of probe markers."""
    call = node if isinstance(node, ast.Call) else None
    target = call.func if call is not None else node
    if not isinstance(target, ast.Attribute) or not _is_mark_namespace(target.value):
        return None
    if call is None or target.attr not in MARKER_HELP:
        return target.attr, (), {}  # other markers' arguments may be any expression
    try:
        args = tuple(ast.literal_eval(arg) for arg in call.args)
        kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg}
    except ValueError:
        raise ValueError(f"{target.attr}(...) must be given literal arguments") from None
    return target.attr, args, kwargs


def _is_mark_namespace(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "mark"
    return isinstance(node, ast.Attribute) and node.attr == "mark"

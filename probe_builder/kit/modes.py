"""Execution-mode checks: does the code give eager's answers under CUDA graphs and torch.compile?

A CUDA graph replays the kernels it captured with whatever is in the static
input buffers, so logic that ran on the host at capture time (a Python branch
on a value, a tensor created from a Python number) is frozen: the check
captures on one set of inputs, copies *different* inputs into the static
buffers, replays and compares with eager. ``compile_check`` compiles with a
counting backend, compares every result with eager and bounds the number of
graphs compiled after the first call (recompiles).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils import _pytree as pytree

from probe_builder.kit.devices import cuda_usable
from probe_builder.kit.errors import (
    CompileCheckFailed,
    GraphReplayMismatch,
    KitUsageError,
    ProbeUnsupported,
)


@dataclass(frozen=True)
class CompileReport:
    """Graphs compiled per call (the first call's count is the initial compile)."""

    compiles_per_call: list[int] = field(default_factory=list)

    @property
    def recompiles(self) -> int:
        return sum(self.compiles_per_call[1:])


def compile_check(
    fn: Callable[..., Any],
    inputs_seq: Sequence[Sequence[Any]],
    backend: str = "eager",
    max_recompiles: int = 0,
    *,
    dynamic: bool | None = True,
    compare: Callable[[Any, Any], None] | None = None,
) -> CompileReport:
    """Compile ``fn``, call it on each input tuple, and check results and recompiles.

    ``dynamic=True`` (default) asks for size- and int-generic graphs from the
    start, so a correct function compiles once; ``None`` keeps torch's
    automatic-dynamic behaviour, where the first change of a size costs one
    recompile. Raises ``CompileCheckFailed`` on a wrong result or too many
    recompiles.
    """
    if len(inputs_seq) < 2:
        raise KitUsageError("compile_check needs at least two input sets to see a recompile")
    import torch._dynamo

    counting = _CountingBackend(torch._dynamo.lookup_backend(backend))
    torch._dynamo.reset()  # a cached graph from an earlier call would hide compiles
    compiled = torch.compile(fn, backend=counting, dynamic=dynamic)
    check = compare or _assert_close
    compiles: list[int] = []
    for index, inputs in enumerate(inputs_seq):
        expected = fn(*_cloned(inputs))
        before = counting.graphs
        actual = compiled(*_cloned(inputs))
        compiles.append(counting.graphs - before)
        _compare(check, actual, expected, index)
    report = CompileReport(compiles)
    if report.recompiles > max_recompiles:
        raise CompileCheckFailed(
            f"{report.recompiles} recompiles over {len(inputs_seq)} calls "
            f"(allowed {max_recompiles}); graphs compiled per call: {compiles}"
        )
    return report


class _CountingBackend:
    """A dynamo backend that counts the graphs handed to the real one."""

    def __init__(self, inner: Callable[..., Any]) -> None:
        self.inner = inner
        self.graphs = 0

    def __call__(self, graph_module: Any, example_inputs: list[Any]) -> Any:
        self.graphs += 1
        return self.inner(graph_module, example_inputs)


def _compare(check: Callable[[Any, Any], None], actual: Any, expected: Any, index: int) -> None:
    try:
        check(actual, expected)
    except AssertionError as exc:
        raise CompileCheckFailed(
            f"call {index}: compiled result differs from eager: {exc}"
        ) from exc


def _assert_close(actual: Any, expected: Any) -> None:
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-6)


def _cloned(inputs: Sequence[Any]) -> list[Any]:
    """Fresh copies, so a function that writes into its inputs sees the same values both times."""
    return [pytree.tree_map_only(torch.Tensor, torch.clone, value) for value in inputs]


def graph_replay_check(
    fn: Callable[..., Any],
    make_inputs: Callable[[int], Sequence[torch.Tensor]],
    n: int = 3,
    *,
    compare: Callable[[Any, Any], None] | None = None,
) -> None:
    """Capture ``fn(*make_inputs(0))`` in a CUDA graph, replay on ``make_inputs(1..n)``, compare.

    CUDA only: anywhere else ``ProbeUnsupported`` (a CPU run cannot say
    anything about graph replay). ``make_inputs(i)`` must give CUDA tensors
    whose values differ between calls, or the check could not fail.
    """
    if not cuda_usable():
        raise ProbeUnsupported("graph_replay_check needs a CUDA device; none is usable here")
    if n < 1:
        raise KitUsageError("graph_replay_check needs n >= 1 replays")
    static_inputs = list(make_inputs(0))
    graph, static_output = _capture(fn, static_inputs)
    check = compare or _assert_close
    for index in range(1, n + 1):
        fresh = list(make_inputs(index))
        _require_different(static_inputs, fresh, index)
        _copy_into(static_inputs, fresh)
        graph.replay()
        torch.cuda.synchronize()
        _compare_replay(check, static_output, fn(*fresh), index)


def _capture(fn: Callable[..., Any], static_inputs: list[torch.Tensor]) -> tuple[Any, Any]:
    # Warm up on a side stream, as torch.cuda.graphs recommends, so lazy
    # initialisation (cuBLAS handles, autotuning) is not captured.
    side = torch.cuda.Stream()  # type: ignore[no-untyped-call]
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn(*static_inputs)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_output = fn(*static_inputs)
    return graph, static_output


def _require_different(static: list[torch.Tensor], fresh: list[torch.Tensor], index: int) -> None:
    if len(static) != len(fresh):
        raise KitUsageError(f"make_inputs({index}) gave {len(fresh)} tensors, not {len(static)}")
    if all(torch.equal(a, b) for a, b in zip(static, fresh, strict=True)):
        raise KitUsageError(f"make_inputs({index}) equals the captured inputs: nothing is tested")


def _copy_into(static: list[torch.Tensor], fresh: list[torch.Tensor]) -> None:
    for buffer, value in zip(static, fresh, strict=True):
        buffer.copy_(value)


def _compare_replay(
    check: Callable[[Any, Any], None], replayed: Any, expected: Any, index: int
) -> None:
    try:
        check(replayed, expected)
    except AssertionError as exc:
        raise GraphReplayMismatch(
            f"replay {index} differs from eager on new inputs: {exc}"
        ) from exc

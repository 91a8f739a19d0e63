"""compile_check and graph_replay_check: recompiling and wrong compiled code are caught."""

from __future__ import annotations

import pytest
import torch  # imported before any in-process pytester run: torch cannot be imported twice

from probe_builder.kit import (
    CompileCheckFailed,
    KitUsageError,
    ProbeUnsupported,
    compile_check,
    graph_replay_check,
)
from tests.kit.support import without_cuda

pytest_plugins = ["pytester"]

PLUGIN_ARGS = ("-p", "probe_builder.kit.plugin", "-p", "no:probewatch_probes")

RECOMPILE_PROBE = """
import torch
from probe_builder.kit import compile_check

def scale_by_steps(x, steps):
    return x * steps + 1

def unroll_steps(x, steps):
    for _ in range(steps):  # a Python loop over an int: one graph per value
        x = x + 1
    return x

INPUTS = [(torch.ones(4), steps) for steps in range(1, 6)]

def test_step_generic_function_compiles_once():
    report = compile_check(scale_by_steps, INPUTS, max_recompiles=0)
    assert report.compiles_per_call[0] == 1

def test_function_that_recompiles_every_call_is_caught():
    compile_check(unroll_steps, INPUTS, max_recompiles=0)
"""


def test_compile_check_catches_a_function_that_recompiles_on_every_call(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_compile_probe=RECOMPILE_PROBE)
    # A subprocess: dynamo registers operator libraries once per process, and an
    # in-process run would drop and re-import them.
    result = pytester.runpytest_subprocess(*PLUGIN_ARGS)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*CompileCheckFailed: 4 recompiles over 5 calls (allowed 0)*[1, 1, 1, 1, 1]*"]
    )


class Stepper(torch.nn.Module):
    """Counts its calls in a Python attribute; reads it in forward."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return x * self.calls


def test_a_compiled_result_that_differs_from_eager_is_caught() -> None:
    # Eager and compiled calls share the attribute, so compiled runs see a different count.
    with pytest.raises(CompileCheckFailed, match="call 0: compiled result differs from eager"):
        compile_check(Stepper(), [(torch.ones(2),), (torch.ones(2),)], max_recompiles=8)


def test_automatic_dynamic_costs_one_recompile_when_dynamic_is_left_to_torch() -> None:
    inputs = [(torch.ones(n),) for n in (2, 3, 4, 5)]
    report = compile_check(torch.sin, inputs, dynamic=None, max_recompiles=1)
    assert report.recompiles == 1
    with pytest.raises(CompileCheckFailed, match="1 recompiles over 4 calls"):
        compile_check(torch.sin, inputs, dynamic=None, max_recompiles=0)


def test_compile_check_needs_two_input_sets() -> None:
    with pytest.raises(KitUsageError, match="at least two"):
        compile_check(torch.sin, [(torch.ones(2),)])


GRAPH_PROBE = """
import pytest
import torch
from probe_builder.kit import graph_replay_check

@pytest.mark.probe_cpu_ok
def test_replay_on_new_inputs():
    graph_replay_check(lambda x: x * 2, lambda i: (torch.full((4,), float(i), device="cuda"),))
"""


@without_cuda
def test_graph_replay_check_is_skipped_with_its_reason_where_there_is_no_cuda(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_graph_probe=GRAPH_PROBE)
    result = pytester.runpytest(*PLUGIN_ARGS, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*graph_replay_check needs a CUDA device*"])


@without_cuda
def test_graph_replay_check_raises_unsupported_on_a_cpu_only_torch() -> None:
    with pytest.raises(ProbeUnsupported):
        graph_replay_check(torch.sin, lambda i: (torch.full((2,), float(i)),))

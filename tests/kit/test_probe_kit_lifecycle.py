"""lifecycle: a cache that never invalidates on reset is caught; a correct one passes."""

from __future__ import annotations

import pytest
import torch  # imported before any in-process pytester run: torch cannot be imported twice

from probe_builder.kit import (
    Action,
    KitUsageError,
    LifecycleMismatch,
    lifecycle,
    step,
    values_equal,
)

pytest_plugins = ["pytester"]

PLUGIN_ARGS = ("-p", "probe_builder.kit.plugin", "-p", "no:probewatch_probes")

CACHE_PROBE = """
import torch
from probe_builder.kit import lifecycle

class Encoder:
    def __init__(self, weight):
        self.weight = weight
        self._cache = {}

    def run(self, prompt):
        key = tuple(prompt)
        if key not in self._cache:
            self._cache[key] = torch.tensor(prompt, dtype=torch.float32) * self.weight
        return self._cache[key]

class Invalidating(Encoder):
    def reset(self):
        self._cache.clear()

class NeverInvalidating(Encoder):
    def reset(self):
        pass

def check(cls):
    weight = torch.ones(3)
    def change_weights(encoder):
        weight.add_(1.0)
    lifecycle(
        lambda: cls(weight),
        ("run", "run", change_weights, "reset", "run"),
        args=([1, 2, 3],),
    )

def test_invalidating_cache_passes():
    check(Invalidating)

def test_never_invalidating_cache_is_caught():
    check(NeverInvalidating)
"""


def test_lifecycle_catches_a_cache_that_never_invalidates_on_reset(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_cache_probe=CACHE_PROBE)
    result = pytester.runpytest(*PLUGIN_ARGS)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*LifecycleMismatch: step 4 (run) differs from a freshly built reference*"]
    )


class Counter:
    """Counts its calls; a fresh one always answers 1."""

    def __init__(self) -> None:
        self.calls = 0

    def run(self, scale: int = 1) -> int:
        self.calls += 1
        return self.calls * scale

    def reset(self) -> None:
        self.calls = 0


def test_state_carried_across_calls_is_a_mismatch_at_the_second_run() -> None:
    with pytest.raises(LifecycleMismatch, match=r"step 1 \(run\).*got 2, a fresh object gives 1"):
        lifecycle(Counter, ("run", "run"))


def test_only_observed_steps_are_compared_and_bare_steps_get_no_arguments() -> None:
    trace = lifecycle(Counter, ("run", "reset", "run"), args=(5,))
    assert [(r.label, r.observed, r.value) for r in trace] == [
        ("run", True, 5),
        ("reset", False, None),
        ("run", True, 5),
    ]


def test_explicit_steps_and_actions_are_supported() -> None:
    seen: list[str] = []
    trace = lifecycle(
        Counter,
        [step("run", 2), Action(lambda obj: seen.append("poked"), "poke"), step("reset")],
    )
    assert seen == ["poked"]
    assert [r.label for r in trace] == ["run", "poke", "reset"]


def test_a_script_that_observes_nothing_could_never_fail_and_is_refused() -> None:
    with pytest.raises(KitUsageError, match="observes no step"):
        lifecycle(Counter, ("reset", "reset"))


def test_a_missing_method_fails_the_probe() -> None:
    with pytest.raises(LifecycleMismatch, match="has no method 'flush'"):
        lifecycle(Counter, ("run", step("flush", observe=True)))


def test_values_equal_compares_tensors_by_dtype_and_value_inside_containers() -> None:
    assert values_equal({"a": [torch.ones(2)]}, {"a": [torch.ones(2)]})
    assert not values_equal([torch.ones(2)], [torch.ones(2, dtype=torch.float64)])
    assert not values_equal((torch.ones(2),), (torch.zeros(2),))
    assert not values_equal([1, 2], [1, 2, 3])

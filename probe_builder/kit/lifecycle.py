"""Drive one object through a sequence of calls and compare it with fresh ones at every step.

State bugs (a cache never invalidated, a buffer not reset, a counter carried
over) show only on the second or third call of the same object. ``lifecycle``
runs a script such as ``("run", "run", "reset", "run")`` on one object; after
each *observed* step (by default every ``run``) it builds a fresh reference
object and makes the same call there. A stateful object is correct when, at
each observed step, it answers what a freshly built one would: anything else
is state leaking across calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from probe_builder.kit.errors import KitUsageError, LifecycleMismatch

DEFAULT_SCRIPT = ("run", "run", "reset", "run")
DEFAULT_OBSERVED = ("run",)


@dataclass(frozen=True)
class Step:
    """A method call with its own arguments; ``observe`` says whether to compare its result."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    observe: bool | None = None  # None: observed when its name is in ``observed``


@dataclass(frozen=True)
class Action:
    """A call made on the world between steps (change weights, advance a clock); never observed."""

    fn: Callable[[Any], Any]
    label: str = "action"


@dataclass(frozen=True)
class StepResult:
    index: int
    label: str
    observed: bool
    value: Any = None
    expected: Any = None


ScriptItem = str | Step | Action | Callable[[Any], Any]


def step(name: str, *args: Any, observe: bool | None = None, **kwargs: Any) -> Step:
    """``step("run", prompt)``: call ``obj.run(prompt)``."""
    return Step(name, args, kwargs, observe)


def lifecycle(
    factory: Callable[[], Any],
    script: Iterable[ScriptItem] = DEFAULT_SCRIPT,
    *,
    reference: Callable[[], Any] | None = None,
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    observed: Sequence[str] = DEFAULT_OBSERVED,
    compare: Callable[[Any, Any], bool] | None = None,
) -> list[StepResult]:
    """Run ``script`` on ``factory()``; raise ``LifecycleMismatch`` at the first diverging step.

    A plain string step calls that method, with ``args``/``kwargs`` when its name
    is observed and with none otherwise (``reset``). The reference for an observed
    step is ``reference()`` (default: ``factory()``) built at that moment, so it
    sees the world as the script has changed it so far.
    """
    shared = (tuple(args), dict(kwargs or {}))
    steps = [_as_step(item, shared, observed) for item in script]
    if not any(_is_observed(s, observed) for s in steps):
        raise KitUsageError("lifecycle script observes no step: it could never fail")
    subject = factory()
    build_reference = reference or factory
    same = compare or values_equal
    return [_run_step(i, s, subject, build_reference, observed, same) for i, s in enumerate(steps)]


def _as_step(
    item: ScriptItem,
    shared: tuple[tuple[Any, ...], dict[str, Any]],
    observed: Sequence[str],
) -> Step | Action:
    if isinstance(item, Step | Action):
        return item
    if isinstance(item, str) and item:
        # Observed calls (run) take the shared arguments; the others (reset, flush) none.
        return Step(item, *shared) if item in observed else Step(item)
    if callable(item):
        return Action(item, getattr(item, "__name__", "action"))
    raise KitUsageError(f"lifecycle step must be a method name, step(...) or action, got {item!r}")


def _is_observed(item: Step | Action, observed: Sequence[str]) -> bool:
    if isinstance(item, Action):
        return False
    return item.observe if item.observe is not None else item.name in observed


def _run_step(
    index: int,
    item: Step | Action,
    subject: Any,
    build_reference: Callable[[], Any],
    observed: Sequence[str],
    same: Callable[[Any, Any], bool],
) -> StepResult:
    if isinstance(item, Action):
        item.fn(subject)
        return StepResult(index, item.label, observed=False)
    value = _call(subject, item)
    if not _is_observed(item, observed):
        return StepResult(index, item.name, observed=False, value=value)
    expected = _call(build_reference(), item)
    if not same(value, expected):
        raise LifecycleMismatch(
            f"step {index} ({item.name}) differs from a freshly built reference: "
            f"got {_short(value)}, a fresh object gives {_short(expected)}"
        )
    return StepResult(index, item.name, observed=True, value=value, expected=expected)


def _call(obj: Any, item: Step) -> Any:
    method = getattr(obj, item.name, None)
    if method is None:
        raise LifecycleMismatch(f"{type(obj).__name__} has no method {item.name!r}")
    return method(*item.args, **item.kwargs)


def values_equal(left: Any, right: Any) -> bool:
    """Exact equality, tensors by value (shape, dtype and elements), recursing into containers."""
    if isinstance(left, torch.Tensor) or isinstance(right, torch.Tensor):
        return _tensors_equal(left, right)
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        pairs = zip(left, right, strict=False)
        return len(left) == len(right) and all(values_equal(a, b) for a, b in pairs)
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(values_equal(left[k], right[k]) for k in left)
    return bool(left == right)


def _tensors_equal(left: Any, right: Any) -> bool:
    both = isinstance(left, torch.Tensor) and isinstance(right, torch.Tensor)
    return both and left.dtype == right.dtype and torch.equal(left, right)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."

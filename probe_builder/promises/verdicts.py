"""Per-promise verdict on the PR's own tests: checked, exercised or unchecked.

``checked`` needs an added assertion on the promise's observable: memory
promises need an assertion that reads a memory API, time promises a timer,
traffic promises counted bytes or calls in a test that talks to a
communication primitive, state promises a test that drives one object through
repeated calls and a reset and asserts after the reset, mode promises an
assertion in a test under graph capture/replay or ``torch.compile``, numeric
promises a tolerance or allclose assertion, functional promises any
assertion. ``exercised``: the tests run the changed code but do not assert
that; ``unchecked``: no added test touches it. The rules are a table.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from probe_builder.promises.assertions import (
    AssertionKind,
    AssertionProfile,
    AssertionSite,
    Observable,
    TestTraits,
)
from probe_builder.promises.extract import ExtractedPromise
from task_registry.types import PromiseCategory, PromiseVerdict

Rule = Callable[[AssertionProfile, TestTraits, list[AssertionSite]], AssertionSite | None]


@dataclass(frozen=True)
class PromiseCheck:
    promise: ExtractedPromise
    verdict: PromiseVerdict
    evidence: str  # where the checking assertion is, or why there is none


def _first(
    sites: Sequence[AssertionSite],
    *,
    kinds: Collection[AssertionKind] = (),
    observables: Collection[Observable] = (),
) -> AssertionSite | None:
    for site in sites:
        if kinds and site.kind not in kinds:
            continue
        if observables and not set(site.observables) & set(observables):
            continue
        return site
    return None


def _memory(
    _: AssertionProfile, __: TestTraits, sites: list[AssertionSite]
) -> AssertionSite | None:
    return _first(sites, kinds=[AssertionKind.resource], observables=[Observable.memory])


def _time(_: AssertionProfile, __: TestTraits, sites: list[AssertionSite]) -> AssertionSite | None:
    return _first(sites, kinds=[AssertionKind.resource], observables=[Observable.time])


def _traffic(
    _: AssertionProfile, test: TestTraits, sites: list[AssertionSite]
) -> AssertionSite | None:
    if not test.talks_comm:
        return None
    return _first(
        sites, kinds=[AssertionKind.resource], observables=[Observable.bytes, Observable.calls]
    )


def _state(
    _: AssertionProfile, test: TestTraits, sites: list[AssertionSite]
) -> AssertionSite | None:
    if not test.repeated_with_reset or test.reset_line is None:
        return None
    return _first([s for s in sites if s.line > test.reset_line])


def _mode(
    _: AssertionProfile, test: TestTraits, sites: list[AssertionSite]
) -> AssertionSite | None:
    return _first(sites) if test.under_mode else None


def _numeric(
    _: AssertionProfile, __: TestTraits, sites: list[AssertionSite]
) -> AssertionSite | None:
    return _first(sites, kinds=[AssertionKind.numeric])


def _functional(
    _: AssertionProfile, __: TestTraits, sites: list[AssertionSite]
) -> AssertionSite | None:
    return _first(sites)


RULES: dict[PromiseCategory, Rule] = {
    PromiseCategory.memory: _memory,
    PromiseCategory.time: _time,
    PromiseCategory.traffic: _traffic,
    PromiseCategory.state: _state,
    PromiseCategory.mode: _mode,
    PromiseCategory.numeric: _numeric,
    PromiseCategory.functional: _functional,
}


def _relevant_tests(
    profile: AssertionProfile, changed_symbols: Collection[str]
) -> list[TestTraits]:
    """Added tests that reference a changed symbol (all added tests when none are given)."""
    if not changed_symbols:
        return list(profile.tests)
    wanted = {s.rsplit(".", 1)[-1] for s in changed_symbols}
    return [t for t in profile.tests if any(r.rsplit(".", 1)[-1] in wanted for r in t.references)]


def judge_promise(
    promise: ExtractedPromise, profile: AssertionProfile, *, changed_symbols: Collection[str] = ()
) -> PromiseCheck:
    tests = _relevant_tests(profile, changed_symbols)
    rule = RULES[promise.category]
    for test in tests:
        site = rule(profile, test, profile.in_test(test))
        if site is not None:
            evidence = f"{site.path}:{site.line} {test.name}: {site.text}"
            return PromiseCheck(promise, PromiseVerdict.checked, evidence)
    if tests:
        names = ", ".join(t.name for t in tests[:3])
        return PromiseCheck(
            promise,
            PromiseVerdict.exercised,
            f"run by {names} without a {promise.category} assertion",
        )
    return PromiseCheck(promise, PromiseVerdict.unchecked, "no added test touches the changed code")


def judge_promises(
    promises: Sequence[ExtractedPromise],
    profile: AssertionProfile,
    *,
    changed_symbols: Collection[str] = (),
) -> list[PromiseCheck]:
    """A verdict for every promise, in the promises' order."""
    return [judge_promise(p, profile, changed_symbols=changed_symbols) for p in promises]

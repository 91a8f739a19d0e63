"""counter_delta: a cache lookup that is bypassed is caught by its hit counter."""

from __future__ import annotations

import pytest

from probe_builder.kit import CounterMismatch, KitUsageError, counter_delta, read_counter

pytest_plugins = ["pytester"]

PLUGIN_ARGS = ("-p", "probe_builder.kit.plugin", "-p", "no:probewatch_probes")

HIT_COUNTER_PROBE = """
from probe_builder.kit import counter_delta

class Cached:
    def __init__(self):
        self.hits = 0
        self._cache = {}

    def get(self, key):
        if key in self._cache:
            self.hits += 1
            return self._cache[key]
        self._cache[key] = value = key * 2
        return value

class Bypassed(Cached):
    def get(self, key):
        return key * 2  # right answer, but the cache is never consulted

def check(cls):
    store = cls()
    store.get(3)
    with counter_delta(store, hits=1):
        assert store.get(3) == 6

def test_cached_passes():
    check(Cached)

def test_bypassed_is_caught():
    check(Bypassed)
"""


def test_counter_delta_catches_a_bypassed_cache_lookup(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_hits_probe=HIT_COUNTER_PROBE)
    result = pytester.runpytest(*PLUGIN_ARGS)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*CounterMismatch: counter 'hits' moved by 0, expected 1*"])


class Engine:
    def __init__(self) -> None:
        self.stats = {"hits": 0, "misses": 0}
        self.tokens = 0


def test_dotted_counters_and_predicates_are_read_from_attributes_and_mappings() -> None:
    engine = Engine()
    with counter_delta(engine, stats__hits=2, tokens=lambda d: d >= 10) as moved:
        engine.stats["hits"] += 2
        engine.tokens += 12
    assert moved["stats__hits"] == 2 and moved["tokens"] == 12


def test_a_rejected_predicate_names_the_counter_and_its_delta() -> None:
    engine = Engine()
    with (
        pytest.raises(CounterMismatch, match="'tokens' moved by 3, which the check rejects"),
        counter_delta(engine, tokens=lambda d: d >= 10),
    ):
        engine.tokens += 3


def test_a_missing_counter_fails_instead_of_reading_zero() -> None:
    with (
        pytest.raises(CounterMismatch, match="Engine has no counter 'cache_hits'"),
        counter_delta(Engine(), cache_hits=1),
    ):
        pass


def test_a_counter_that_is_not_a_number_fails() -> None:
    with pytest.raises(CounterMismatch, match="not a number"):
        read_counter(Engine(), "stats")


def test_counter_delta_needs_an_expectation() -> None:
    with pytest.raises(KitUsageError), counter_delta(Engine()):
        pass

"""Per-promise verdict on the PR's own tests: checked, exercised or unchecked.

A promise is judged on the tests that reach the changed symbols it concerns
(:mod:`probe_builder.promises.linking`), and, except for resources a test observes
itself, only on assertions whose value is computed from those symbols; an existence
check (``is not None``, ``isinstance`` of a general type) checks nothing, nor does a
field read back equal to the literal the test (or its class's set-up) just built its object
with, nor that object's type when it is the class it was built from, nor, for a functional
promise, a sign (a value or a length above zero, a loss not negative). A test of the
changed code right behind a linked symbol checks a functional promise only on an
assertion that bears on what its quote says beyond the linked names (its text, its
test's name or its inputs use a word of that: "blockwise" in "support 'blockwise'
tp_mode" for a test of the function that reads the flag); a test of a function that
calls a linked symbol or the changed code calling it (one the patch may have left alone,
outside the tests) checks the promise on an assertion computed from that function; a
test of the code beside it (another change of its file, its module) that reaches none of
the linked symbols checks a promise of any category only on such an assertion, computed
from the changed code of that file; a test of a linked symbol whose assertion is
computed from the rest of the change (the factory that builds the promised object)
checks a functional promise only on such an assertion too. When the quote names no
changed symbol the link is weak: only a test named for the promise (its name uses
several words of the quote), on an assertion computed from changed code, can check it;
unless it is the title's functional promise, which speaks for the whole change: then a
test of the changed code checks it on an assertion that bears on a word of the title.
``checked`` needs an added assertion on the promise's observable: memory promises an
assertion that reads a memory API, time promises a timer (a promise that work is
skipped: a counted call), traffic promises counted bytes or calls in a test that talks
to a communication primitive, state promises a value asserted after a reset of a
repeatedly used object (or of one taken through a cycle: offloaded, then restored) or
after a save and a load (or, for state kept across calls rather than changed, a later
call's result compared with an earlier one's; for state a checkpoint holds, in a test
that neither saves nor loads, a value of what the code would save or match on a load),
mode promises an assertion in a test that captures, replays or compiles (or switches
that option on), numeric promises a tolerance or allclose assertion (a promise to zero
or mask values out: also one that they are exactly zero), functional promises a value or
call assertion, or one that the code built or chose one of its own classes (or, when the
promise is that the code raises or reports an error, an assertion that expects it; when
it is about what the code refuses or how it copes with a failure, either; when it is
about sizes, padding, chunks or limits, also a length or a shape); a numeric or
functional promise about a precision or a number format is checked by a dtype as well.
With no such assertion, a run configuration of the test patch that sets a linked flag,
beside golden values the patch holds, checks a functional, numeric, state or mode
promise: its run is compared with recorded outputs; so does one beside a script that
starts a checker of the tests' own asserting the runs' results close to one another's (a
loss within a tolerance of a reference engine's; a score above a bar compares nothing).
``exercised``: the tests (or a launch script of the test patch, by naming the code or by
starting a program that imports it) run the code, or the changed code right behind it (a
helper it calls, the function that reads its flag), or call a function that calls it,
but do not assert that; ``unchecked``: no added test reaches it, or the tests reach it
only with the option the quote names left off: every test or script of the patch that
sets the option (a keyword, a key, an attribute, a command-line flag or override) sets it
off, or none sets it and it is an option the change adds with an off default; then what
the tests assert is the code without what the option adds (not when the quote speaks of
the off side itself: "without", "disable", "=False"). The rules are a table.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from probe_builder.promises.assertions import (
    AssertionKind,
    AssertionProfile,
    AssertionSite,
    Observable,
    TestTraits,
)
from probe_builder.promises.extract import ExtractedPromise
from probe_builder.promises.linking import (
    CodeUnderTest,
    Link,
    TestScript,
    behind,
    beside_names,
    concerned,
    identifiers_of,
    importing_tests,
    in_front,
    initialisms,
    link,
    name_parts,
    name_words,
    nearby_scripts,
    nearby_tests,
    reaching_scripts,
    reaching_tests,
    running_scripts,
    spelled_acronyms,
    words_of,
)
from probe_builder.promises.settings import is_off, last_key
from task_registry.types import PromiseCategory, PromiseVerdict

Rule = Callable[[TestTraits, list[AssertionSite]], AssertionSite | None]


@dataclass(frozen=True)
class PromiseCheck:
    promise: ExtractedPromise
    verdict: PromiseVerdict
    evidence: str  # where the checking assertion is, or why there is none
    # The changed definitions the promise concerns (:func:`concerned`), by qualified name;
    # empty when its quote names none of the change (a weak link: it may concern any of it).
    concerns: frozenset[str] = frozenset()
    # For a check, the step of :func:`_checking_site` that found it (one of ``CHECKED_VIA``).
    via: str = ""


# The steps that find a check, strongest evidence first (:func:`_checking_site`): a test of
# a linked symbol, of the code behind it, of a function that calls it, of the code beside
# it, a test of a linked symbol asserting on the rest of the change, a test named for the
# promise, a test of the change for the title's own promise.
VIA_LINKED, VIA_BEHIND, VIA_CALLER, VIA_BESIDE = "linked", "behind", "caller", "beside"
VIA_CHANGE, VIA_NAMED, VIA_TITLE = "other changes", "named for", "title"
# ... and, with no test's assertion, a run configuration compared with golden values (or
# with another run, by a checker a script of its folder starts).
VIA_GOLDEN = "golden values"
CHECKED_VIA = (
    VIA_LINKED,
    VIA_BEHIND,
    VIA_CALLER,
    VIA_BESIDE,
    VIA_CHANGE,
    VIA_NAMED,
    VIA_TITLE,
    VIA_GOLDEN,
)
# What a run compared with recorded outputs (tokens, log-probs, losses) checks: the result
# under the promised flag; not memory, time or traffic, which such a comparison leaves to
# its tolerance, if it records them at all.
GOLDEN_CATEGORIES = (
    PromiseCategory.functional,
    PromiseCategory.numeric,
    PromiseCategory.state,
    PromiseCategory.mode,
)


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


# What a functional promise's assertion may be: a value, a number or an observed call; a
# shape, a type or ``is not None`` says nothing about behaviour, and an expected error checks
# only a promise that the code raises one (RAISES).
VALUE_KINDS = (
    AssertionKind.functional,
    AssertionKind.numeric,
    AssertionKind.resource,
)


# Existence checks: true of any value the code returns, so they check no promise.
VACUOUS = re.compile(
    r"\bis not None\b|assertIsNotNone\(|\b(isinstance|hasattr|callable)\("
    r"|^assert\s+(['\"])[\w.-]+\2\s+in\b|assertIn\(\s*(['\"])[\w.-]+\3\s*,"
)


def _telling(sites: Sequence[AssertionSite]) -> list[AssertionSite]:
    """Value assertions and structural ones that can fail for a returned value (a shape,
    ``is None`` after a reset); the state and mode rules accept these."""
    return [
        s
        for s in sites
        if not s.echo and (s.kind is not AssertionKind.structural or not VACUOUS.search(s.text))
    ]


def _memory(test: TestTraits, sites: list[AssertionSite]) -> AssertionSite | None:
    return _first(sites, kinds=[AssertionKind.resource], observables=[Observable.memory])


def _time(test: TestTraits, sites: list[AssertionSite]) -> AssertionSite | None:
    return _first(sites, kinds=[AssertionKind.resource], observables=[Observable.time])


# A time promise that work is no longer done (skipped, gated, avoided, deferred, cached, done
# once): a counted call (``assert_not_called``, ``call_count == 1``) observes that work.
SKIPPED_WORK = re.compile(
    r"\b(avoid\w*|skip\w*|gat(e|es|ed|ing)|eliminat\w*|redundant|unnecessary|lazy|lazily"
    r"|defer\w*|cach(e|es|ed|ing)|no longer|only once)\b",
    re.I,
)


def _time_or_skipped_calls(test: TestTraits, sites: list[AssertionSite]) -> AssertionSite | None:
    return _first(
        sites, kinds=[AssertionKind.resource], observables=[Observable.time, Observable.calls]
    )


def _traffic(test: TestTraits, sites: list[AssertionSite]) -> AssertionSite | None:
    if not test.talks_comm:
        return None
    return _first(
        sites, kinds=[AssertionKind.resource], observables=[Observable.bytes, Observable.calls]
    )


def _state(test: TestTraits, sites: list[AssertionSite]) -> AssertionSite | None:
    """A value asserted after a reset of a repeatedly used object (or one taken through a
    cycle of resets), or after a save-load."""
    starts = [test.round_trip_line]
    if test.repeated_with_reset:
        starts.append(test.reset_line)
    lines = [line for line in starts if line is not None]
    if not lines:
        return None
    after = [s for s in sites if s.line > min(lines) and s.test == test.name]
    return _first(_telling(after))


def _state_across_calls(test: TestTraits, sites: list[AssertionSite]) -> AssertionSite | None:
    """For state kept across calls (a cache, a reused result): also a later call's result
    compared with an earlier one's."""
    across = _first(_telling([s for s in sites if s.across_calls and s.test == test.name]))
    return across if across is not None else _state(test, sites)


# A state promise about a change of state (a reset, an invalidation, a save and a load):
# two calls agreeing says nothing about it, only a value after the change does.
CHANGE_OF_STATE = re.compile(
    r"\b(reset\w*|invalidat\w*|clear\w*|evict\w*|refresh\w*|refit\w*|flush\w*|restart\w*"
    r"|resum\w*|reload\w*|sav(e|es|ed|ing)|load\w*|restor\w*|checkpoint\w*|updat\w*|stale)\b",
    re.I,
)


# A functional promise that the code raises or reports an error (not that an error is gone):
# only an assertion that expects the error checks it.
RAISES = re.compile(
    r"\b(raises?|raised|raising|throws?)\b|\berror messages?\b|\bfails? (fast|early|loudly)\b",
    re.I,
)


def _raises(test: TestTraits, sites: list[AssertionSite]) -> AssertionSite | None:
    return _first(sites, kinds=[AssertionKind.error_path])


# A functional promise about what the code refuses or how it copes with a failure (a frozen
# field, an invalid or conflicting input, a crash, a failed start): a test that expects the
# error checks it as a value would.
REFUSES = re.compile(
    r"\b(frozen|immutable|read[- ]only|reject\w*|refus\w*|disallow\w*|forbid\w*|invalid\w*"
    r"|validat\w*|conflict\w*|crash\w*|fail(s|ed|ing|ures?)?|mismatch\w*|incompatib\w*)\b",
    re.I,
)


def _value_or_raises(test: TestTraits, sites: list[AssertionSite]) -> AssertionSite | None:
    found = _functional(test, sites)
    return found if found is not None else _raises(test, sites)


# A numeric promise that values are zeroed or masked out (padding, masked positions): exact
# zeros are what it promises, so an assertion that they are exactly zero checks it as a
# tolerance does.
ZEROING = re.compile(r"\b(zero(e[sd])?|zeroing|mask\w*|padd\w*)\b", re.I)
EXACT_ZERO = re.compile(
    r"count_nonzero\([^)]*\)\s*==\s*0\b|==\s*0(\.0*)?\s*\)|\bnot\s+[\w.\[\]:, ]+\.any\(\)"
    r"|\.(abs\(\)\.)?(sum|max)\(\)\s*==\s*0\b|zeros_like\("
)


def _numeric_or_zeros(test: TestTraits, sites: list[AssertionSite]) -> AssertionSite | None:
    found = _numeric(test, sites)
    if found is not None:
        return found
    zeros = [s for s in sites if s.kind is AssertionKind.functional and EXACT_ZERO.search(s.text)]
    return zeros[0] if zeros else None


def _rule(promise: ExtractedPromise) -> Rule:
    rule = _category_rule(promise)
    for names, reads, categories in NAMED_OBSERVABLES:
        if promise.category in categories and names.search(promise.quote):
            rule = _or_reading(rule, reads)
    return rule


# A state promise about a checkpoint: what is saved, how it is loaded, what it holds (not
# "load balancing", the spreading of work).
CHECKPOINTED = re.compile(
    r"\b(checkpoint\w*|ckpt\w*|sav(e|es|ed|ing)|(re)?load(s|ed|ing|ers?)?(?![- ]?balanc)"
    r"|restor\w*|state[_ ]dicts?)\b",
    re.I,
)


# A name of a call that saves or loads (``save_checkpoint``, ``torch.load``, ``load_state_dict``).
SAVES_OR_LOADS = re.compile(r"^(save|load)(_|$)|_(save|load)(_|$)")


def _state_or_checkpoint(test: TestTraits, sites: list[AssertionSite]) -> AssertionSite | None:
    """For state kept in a checkpoint: a value after a save and a load; or, in a test that
    neither saves nor loads, an assertion on what the code would save or match on a load (the
    sharded objects a module emits, the keys a loader pairs up): that state itself. A test
    that saves is judged by its round trip: a value asserted before the load says nothing."""
    if any(SAVES_OR_LOADS.search(part) for part in name_parts(test.references)):
        return _state(test, sites)
    return _first(_telling(sites))


def _category_rule(promise: ExtractedPromise) -> Rule:
    if promise.category is PromiseCategory.state and CHECKPOINTED.search(promise.quote):
        return _state_or_checkpoint
    if promise.category is PromiseCategory.state and not CHANGE_OF_STATE.search(promise.quote):
        return _state_across_calls
    if promise.category is PromiseCategory.functional and RAISES.search(promise.quote):
        return _raises
    if promise.category is PromiseCategory.functional and REFUSES.search(promise.quote):
        return _value_or_raises
    if promise.category is PromiseCategory.time and SKIPPED_WORK.search(promise.quote):
        return _time_or_skipped_calls
    if promise.category is PromiseCategory.numeric and ZEROING.search(promise.quote):
        return _numeric_or_zeros
    return RULES[promise.category]


def _mode(test: TestTraits, sites: list[AssertionSite]) -> AssertionSite | None:
    return _first(_telling(sites)) if test.under_mode else None


def _numeric(test: TestTraits, sites: list[AssertionSite]) -> AssertionSite | None:
    return _first(sites, kinds=[AssertionKind.numeric])


# ``isinstance(layer, GatedDeltaNet)``: which of the code's classes a factory built or a
# switch chose, a value of the change; not a general type any result has (a tensor, a
# mapping, a module), which says no more than ``is not None``.
INSTANCE_OF = re.compile(
    r"\b(isinstance|assertIsInstance)\(\s*[^,()]+(\([^()]*\))?[^,()]*,\s*(?P<cls>[\w.]+)\s*\)"
)
GENERAL_TYPE = re.compile(
    r"^(Tensor|ndarray|Module|Parameter|(Mutable)?Mapping|Sequence|Iter(able|ator)|Generator"
    r"|Callable|Coroutine|Awaitable|Future|(Base)?Exception|Enum|Path|OrderedDict"
    r"|(Dict|List)Config|DataFrame|Thread|Process|Logger|(Magic)?Mock)$"
)


def _chosen_class(site: AssertionSite) -> bool:
    if site.echo:
        return False  # the class the test built it from: true of anything so built
    match = INSTANCE_OF.search(site.text)
    if match is None:
        return False
    name = match.group("cls").rsplit(".", 1)[-1]
    return name[:1].isupper() and GENERAL_TYPE.match(name) is None


# A sign check: true of nearly any value the code returns (a count above zero, a
# non-negative loss), so it checks no behaviour a functional promise names.
SIGN_ONLY = re.compile(
    r"(?:[<>]=?|!=)\s*0(?:\.0*)?\s*(?:[,)]|$)"
    r"|assert(?:Greater(?:Equal)?|NotEqual)\([^,]+,\s*0(?:\.0*)?\s*[,)]"
)


def _functional(test: TestTraits, sites: list[AssertionSite]) -> AssertionSite | None:
    sites = [s for s in sites if not SIGN_ONLY.search(s.text)]
    found = _first(sites, kinds=VALUE_KINDS)
    return found if found is not None else next(filter(_chosen_class, sites), None)


# What a promise names as its observable, and the assertion that reads it: a promise about
# how many or how large (padding, chunks, a limit on samples, a split into shards) is checked
# by a length or a shape; one about a number format or a precision ("FP32 logits", "dtype
# customization") by a dtype; a memory promise about what the code holds (a buffer's size, a
# scratch space, slots provisioned) by the size of what it allocates.
SIZED = re.compile(
    r"\b(pad\w*|chunk\w*|split\w*|shard\w*|limit\w*|truncat\w*|max\w*|number of|sizes?"
    r"|lengths?|counts?|slic\w*|partition\w*|sampl\w*|batch\w*)\b",
    re.I,
)
HELD = re.compile(
    r"\b(sizes?|buffers?|scratch|workspaces?|allocat\w*|(over|under)[- ]?provision\w*"
    r"|capacity|slots?|pools?)\b",
    re.I,
)
SIZE_ASSERTION = re.compile(r"\blen\(|\.shape\b|\.size\(|\.numel\(")
PRECISION = re.compile(
    r"\b(fp|bf|float|int)\s?(4|8|16|32|64)\w*|\b(mxfp\w*|nvfp\w*|precision|dtypes?"
    r"|data ?types?|upcast\w*|downcast\w*)\b",
    re.I,
)
DTYPE_ASSERTION = re.compile(r"\.dtype\b|\bdtype\s*==|\btorch\.(float|bfloat|int)\w*\b")
NAMED_OBSERVABLES: tuple[
    tuple[re.Pattern[str], re.Pattern[str], frozenset[PromiseCategory]], ...
] = (
    (SIZED, SIZE_ASSERTION, frozenset({PromiseCategory.functional})),
    (HELD, SIZE_ASSERTION, frozenset({PromiseCategory.memory})),
    (PRECISION, DTYPE_ASSERTION, frozenset({PromiseCategory.functional, PromiseCategory.numeric})),
)


def _or_reading(rule: Rule, reads: re.Pattern[str]) -> Rule:
    """``rule``, or else an assertion that reads the observable the promise names (not an
    existence check, nor a length above zero)."""

    def checked(test: TestTraits, sites: list[AssertionSite]) -> AssertionSite | None:
        found = rule(test, sites)
        if found is not None:
            return found
        return next(
            (
                s
                for s in sites
                if reads.search(s.text)
                and not VACUOUS.search(s.text)
                and not SIGN_ONLY.search(s.text)
            ),
            None,
        )

    return checked


RULES: dict[PromiseCategory, Rule] = {
    PromiseCategory.memory: _memory,
    PromiseCategory.time: _time,
    PromiseCategory.traffic: _traffic,
    PromiseCategory.state: _state,
    PromiseCategory.mode: _mode,
    PromiseCategory.numeric: _numeric,
    PromiseCategory.functional: _functional,
}
# Categories whose observable is read by the test itself (a memory API, a timer, a
# counted call): an assertion on that resource need not be computed from the linked symbol;
# any other (the size of a buffer the code allocates) must be.
OBSERVED_BY_THE_TEST = (PromiseCategory.memory, PromiseCategory.time, PromiseCategory.traffic)


def _on_linked(
    sites: list[AssertionSite], names: frozenset[str], category: PromiseCategory
) -> list[AssertionSite]:
    """The assertions whose value is computed from a linked symbol."""
    if category in OBSERVED_BY_THE_TEST:
        return [s for s in sites if s.kind is AssertionKind.resource or s.depends_on & names]
    return [s for s in sites if s.depends_on & names]


# A numeric promise about what happens across ranks (a mean over a data-parallel group, a
# norm under tensor parallelism): one rank computes the same whichever way it is reduced.
ACROSS_RANKS = re.compile(
    r"\b((data|tensor|pipeline|expert|context|sequence)[- ]parallel\w*|[dtpec]p ?=?|ranks?"
    r"|world[- ]size|all[- ]?reduce\w*|reduce[- ]scatter|all[- ]?gather\w*"
    r"|across (gpus|devices|ranks|workers|processes|nodes)|multi[- ]?(gpu|node|rank)"
    r"|(process|parallel|dp|tp|ep) groups?)\b",
    re.I,
)


def _may_check(promise: ExtractedPromise, test: TestTraits) -> bool:
    """A test on one rank cannot check a numeric promise about several."""
    across = promise.category is PromiseCategory.numeric and ACROSS_RANKS.search(promise.quote)
    return not across or test.multi_rank


def aspect_of(promise: ExtractedPromise, linked: Link) -> frozenset[str]:
    """What the quote says beyond the names of the symbols it is linked to ("blockwise" in
    "support 'blockwise' tp_mode"): the words an assertion on the promise, rather than on
    something else the code behind it does, mentions."""
    return words_of(promise.quote) - _words_of_all(linked.names)


def _words_of_all(texts: Iterable[str]) -> frozenset[str]:
    return frozenset().union(*(words_of(text) for text in texts))


def _uses(texts: Iterable[str], words: frozenset[str]) -> bool:
    """One of ``texts`` uses one of ``words``, however inflected."""
    return bool(_stems(_words_of_all(texts)) & _stems(words))


def _bears_on(site: AssertionSite, aspect: frozenset[str], cases: Sequence[str] = ()) -> bool:
    """The assertion's text, its test's name (with its cases' ids: ``test_flops[mistral]``) or
    the names its value is computed from use a word of the promise's aspect, however
    inflected ("padding" in the quote, ``pad`` in the test's name), or spell it as an acronym
    ("MoE" in the quote, ``TestMixtureOfExperts``)."""
    texts = (site.text, site.test, *cases, *site.depends_on)
    if _uses(texts, aspect):
        return True
    return bool(frozenset().union(*(initialisms(text) for text in texts)) & aspect)


def _says(site: AssertionSite, words: frozenset[str], cases: Sequence[str] = ()) -> bool:
    """The assertion's own text or its test's name (with its cases' ids) uses one of
    ``words``, however inflected."""
    return _uses((site.text, site.test, *cases), words)


def _named_for(quote_words: frozenset[str], acronyms: frozenset[str], test: TestTraits) -> bool:
    """The test's own name, with its class's, uses several words of the quote
    (``test_tied_parameters_share_one_weight`` for "Fix tied parameters",
    ``TestInferenceWandbLogging.test_stats`` for "wandb Inference stats logging"), or
    abbreviates three or more of them (``test_mup_scales`` for "Maximal Update
    Parameterization", :func:`spelled_acronyms`): it was written for this promise. A word
    and the same word with its number ("mxfp", "mxfp8") are one."""
    if name_words(test.name) & acronyms:
        return True
    shared = _stems(words_of(test.name)) & _stems(quote_words)
    distinct = {w for w in shared if not any(o != w and o.startswith(w) for o in shared)}
    return len(distinct) >= NAMED_FOR_WORDS


# A word's ending that names and prose inflect apart ("invariance" in a title, "invariant"
# in the test's name; "caching" and "cache"), and the consonant doubled before it ("deferr(ed)",
# "overlapp(ing)").
_ENDING = re.compile(r"(?<=[a-z]{4})(ations?|ances?|ences?|ants?|ents?|ings?|ed|e)$")
_DOUBLED = re.compile(r"(?<=[a-z]{3})([b-df-hj-np-tv-z])\1$")


def _stems(words: frozenset[str]) -> frozenset[str]:
    return frozenset(_DOUBLED.sub(r"\1", _ENDING.sub("", w)) for w in words)


NAMED_FOR_WORDS = 2


SitesOf = Callable[[TestTraits], list[AssertionSite]]


def _sites_for(
    promise: ExtractedPromise,
    code: CodeUnderTest,
    names: frozenset[str],
    aspect: frozenset[str] | None,
    *,
    every_category: bool = False,
    said: frozenset[str] = frozenset(),
) -> SitesOf:
    """A test's assertions that may check the promise: computed from one of ``names`` (any
    assertion, for a resource the test observes itself), and, for a functional promise (for
    any, with ``every_category``), bearing on ``aspect`` (None: any) or saying a word of
    ``said`` in its own text or its test's name."""
    bearing = every_category or promise.category is PromiseCategory.functional

    def sites_of(test: TestTraits) -> list[AssertionSite]:
        sites = code.profile.in_test(test)
        if names:
            sites = _on_linked(sites, names, promise.category)
        if bearing and aspect is not None:
            cases = test.cases
            sites = [s for s in sites if _bears_on(s, aspect, cases) or _says(s, said, cases)]
        return sites

    return sites_of


def _check_in(
    promise: ExtractedPromise, tests: Sequence[TestTraits], sites_of: SitesOf
) -> tuple[TestTraits, AssertionSite] | None:
    rule = _rule(promise)
    for test in tests:
        if not _may_check(promise, test):
            continue
        site = rule(test, sites_of(test))
        if site is not None:
            return test, site
    return None


@dataclass(frozen=True)
class _Reach:
    """The tests that reach a promise's linked symbols, and those that reach the changed
    code right behind them (the same tests when nothing is behind)."""

    tests: list[TestTraits]
    behind: Link
    behind_tests: list[TestTraits]
    # The functions in front of the linked symbols (:func:`in_front`) with the code behind,
    # and the other tests that reach those functions.
    front: frozenset[str] = frozenset()
    caller_tests: tuple[TestTraits, ...] = ()


def _reach(linked: Link, code: CodeUnderTest) -> _Reach:
    tests = reaching_tests(linked, code)
    with_behind = behind(linked, code)
    same = with_behind == linked
    behind_tests = tests if same else reaching_tests(with_behind, code)
    callers = in_front(linked, code) - with_behind.names
    if not callers:
        return _Reach(tests, with_behind, behind_tests)
    seen = set(tests) | set(behind_tests)
    through = [t for t in reaching_tests(Link(callers, True), code) if t not in seen]
    return _Reach(tests, with_behind, behind_tests, callers | with_behind.names, tuple(through))


def _checking_site(
    promise: ExtractedPromise, code: CodeUnderTest, linked: Link, reached: _Reach
) -> tuple[TestTraits, AssertionSite, str] | None:
    """Where the PR's tests check the promise, strongest evidence first.

    1. A test reaching a linked symbol, on an assertion computed from it.
    2. A test of the changed code right behind a linked symbol (the helper it calls, the
       function that reads its flag), on an assertion computed from that code; for a
       functional promise, only one that bears on what the quote says beyond the linked
       names, or whose text or test's name says what the linked names add to that code's
       (an assertion on the helper alone checks the helper).
    3. A test of a function that calls a linked symbol, or the changed code that calls one
       (:func:`in_front`: the entry point a private helper is run through, whether or not
       the patch changed it), that reaches none of that code, on an assertion computed from
       that function or that code.
    4. A test of the code beside a linked symbol that reaches none of it (another change of
       its file, or its module through a function nobody changed), on an assertion computed
       from the changed code of that file which bears on what the quote says beyond the
       linked names, whatever the promise's category: the test may not run the promised
       code, so only an assertion on the promise's own words speaks for it.
    5. A test reaching a linked symbol, on an assertion computed from any other changed code
       (the factory that builds the promised object, the function its result goes through)
       which, for a functional promise, bears on what the quote says beyond the linked
       names: the test runs the promised code and asserts on what the change makes of it.
    6. A test named for the promise (for a state promise, also a test that saves and then
       loads the changed code), on an assertion computed from any changed code: the only
       check a promise that names no changed symbol (a weak link) can have ...
    7. ... but for the title's own functional promise ("MTP inference fixes", a squash
       commit's subject): it speaks for the whole change, so a test reaching the changed
       code checks it on an assertion computed from that code which bears on a word of the
       title (its text, its test's name or the names it is computed from).

    The test, the assertion and the step (``CHECKED_VIA``) that found it.
    """
    changed = frozenset(s.name for s in code.symbols)
    if linked.strong:
        found = _check_in(promise, reached.tests, _sites_for(promise, code, linked.names, None))
        if found is not None:
            return (*found, VIA_LINKED)
        aspect = aspect_of(promise, linked)
        if reached.behind.names != linked.names:
            on_behind = _sites_for(
                promise, code, reached.behind.names, aspect, said=_linked_only(linked, reached)
            )
            found = _check_in(promise, reached.behind_tests, on_behind)
            if found is not None:
                return (*found, VIA_BEHIND)
        found = _check_in(
            promise, reached.caller_tests, _sites_for(promise, code, reached.front, None)
        )
        if found is not None:
            return (*found, VIA_CALLER)
        found = _check_beside(promise, code, linked, reached)
        if found is not None:
            return (*found, VIA_BESIDE)
        on_change = _sites_for(promise, code, changed, aspect)
        found = _check_in(promise, reached.tests, on_change)
        if found is not None:
            return (*found, VIA_CHANGE)
    quote_words = words_of(promise.quote)
    acronyms = spelled_acronyms(promise.quote)
    named_for = [t for t in code.profile.tests if _named_for(quote_words, acronyms, t)]
    if promise.category is PromiseCategory.state:
        # a save and a load of the changed code, then a value asserted: the state promised
        named_for += [t for t in reached.tests if t.round_trip_line and t not in named_for]
    found = _check_in(promise, named_for, _sites_for(promise, code, changed, None))
    if found is not None:
        return (*found, VIA_NAMED)
    if _speaks_for_the_change(promise, linked):
        on_title = _sites_for(promise, code, changed, quote_words)
        found = _check_in(promise, reached.tests, on_title)
        if found is not None:
            return (*found, VIA_TITLE)
    return None


def _linked_only(linked: Link, reached: _Reach) -> frozenset[str]:
    """The words of the linked symbols that the code behind them does not use ("frozen" of
    ``_frozen_fields`` behind which ``__setattr__`` refuses): what the promise adds to that
    code, when an assertion or its test says it in so many words."""
    return _words_of_all(linked.names) - _words_of_all(reached.behind.names - linked.names)


def _check_beside(
    promise: ExtractedPromise, code: CodeUnderTest, linked: Link, reached: _Reach
) -> tuple[TestTraits, AssertionSite] | None:
    """Step 4 of :func:`_checking_site`: a test of the code beside a linked symbol."""
    reaching = set(reached.tests)
    using = dict.fromkeys(nearby_tests(linked, code) + importing_tests(linked, code))
    beside = [t for t in using if t not in reaching]
    if not beside:
        return None
    names = beside_names(linked, code) | linked.names
    aspect = aspect_of(promise, linked)
    return _check_in(promise, beside, _sites_for(promise, code, names, aspect, every_category=True))


def _speaks_for_the_change(promise: ExtractedPromise, linked: Link) -> bool:
    """The title's functional promise, naming no changed symbol: what the whole change does."""
    return (
        not linked.strong
        and promise.position == 0
        and promise.category is PromiseCategory.functional
    )


def _exercised_by(
    linked: Link,
    code: CodeUnderTest,
    tests: list[TestTraits],
    through_callers: Sequence[TestTraits] = (),
) -> str | None:
    """Why the promised code runs without a check, strongest evidence first; None: it does not."""
    nearby = nearby_tests(linked, code) if linked.strong else []
    importing = importing_tests(linked, code) if linked.strong else []
    scripts = reaching_scripts(linked, code)
    beside = nearby_scripts(linked, code) if linked.strong else []
    running = running_scripts(linked, code) if linked.strong else []
    reasons = (
        (tests, "run by {} without an assertion on what it promises"),
        (nearby, "{} use the code beside it; nothing asserts on it"),
        (importing, "{} use its module; nothing asserts on it"),
        (scripts, "run by {}, which asserts nothing on it"),
        (beside, "{} run the code beside it and assert nothing on it"),
        (running, "loaded by the program started by {}, which asserts nothing on it"),
        (through_callers, "run by {} through the code that calls it, without an assertion on it"),
    )
    for found, reason in reasons:
        if found:
            return reason.format(", ".join(_name(f) for f in found[:3]))
    return None


def _golden_run(
    promise: ExtractedPromise, linked: Link, reached: _Reach, code: CodeUnderTest
) -> TestScript | None:
    """A run configuration of the test patch that sets a symbol the quote names (or the
    code right behind it), beside golden values the patch holds: the harness compares the
    run's outputs with them, so the promised behaviour is checked end to end."""
    if not linked.strong or promise.category not in GOLDEN_CATEGORIES:
        return None
    scripts = reaching_scripts(linked, code) + reaching_scripts(reached.behind, code)
    return next((s for s in scripts if s.goldens or s.compared_by), None)


# A quote that speaks of an option's off side itself ("with `fuse=False`", "disable the
# cache", "irrespective of `init_weights`"): a test that sets the option off runs
# what it promises.
SPEAKS_OF_OFF = re.compile(
    r"\b(false|none|null|disabl\w*|without|off|opt(s|ed|ing)?[- ]out|no longer|irrespective"
    r"|regardless|whether|independent(ly)? of)\b",
    re.I,
)
_DASHED = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")
_OPTION_NAME = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


def named_options(quote: str) -> frozenset[str]:
    """The option names a quote spells as code reads them: lower-case snake_case or dotted
    names (``use_fused_topk``, ``sampler.fused.enabled``) and command-line flags
    (``--enable-fused-sampler`` as ``enable_fused_sampler``); a CamelCase name is a class,
    not an option."""
    found = {last_key(flag) for flag in _DASHED.findall(quote)}
    found |= {
        name
        for name in identifiers_of(_DASHED.sub(" ", quote))
        if _OPTION_NAME.match(name) and ("_" in name or f".{name}" in quote)
    }
    return frozenset(found)


def _same_option(key: str, option: str) -> bool:
    """``key`` sets ``option``: the same name, or one is the other's last words (a test
    builds the optimizer with ``use_syrk`` for the flag ``--muon-use-syrk``)."""
    key, option = key.lower(), option.lower()
    if key == option:
        return True
    shorter, longer = sorted((key, option), key=len)
    return "_" in shorter and longer.endswith(f"_{shorter}")


def _left_off(promise: ExtractedPromise, code: CodeUnderTest) -> str | None:
    """Why the tests run none of what the quote's options add, or None. An option the quote
    names is left off when every test or script of the patch that sets it sets it off
    (``fuse=False``), or when none sets it and it is an option the change adds, off by
    default; the promise is left unrun when one of its options is left off and none is
    turned on. Not when the quote speaks of the off side itself."""
    if SPEAKS_OF_OFF.search(promise.quote):
        return None
    reasons = []
    for key in sorted(named_options(promise.quote)):
        values = sorted({s.value for s in code.settings if _same_option(s.key, key)})
        if any(not is_off(v) for v in values):
            return None  # the tests turn it on
        if values:
            reasons.append(f"the tests set {key} only off ({', '.join(values)})")
            continue
        defaults = [o.default for o in code.options if o.key.lower() == key]
        if defaults and all(is_off(d) for d in defaults):
            default = defaults[0] or "no default"
            reasons.append(
                f"no test or script of the patch sets {key}, an option the change adds, "
                f"off by default ({default})"
            )
    return "; ".join(reasons) + ": none runs what it adds" if reasons else None


def _name(found: TestTraits | TestScript) -> str:
    return found.name if isinstance(found, TestTraits) else found.path


def judge_promise(promise: ExtractedPromise, code: CodeUnderTest) -> PromiseCheck:
    """Checked, exercised or unchecked, on the tests that reach what the promise concerns.

    Only an assertion on what the quote names checks it (:func:`_checking_site`); a test
    of the code behind that (a helper the promised class calls, the function that reads the
    promised flag) checks the helper unless its assertion bears on what the quote says: it
    exercises the promise."""
    linked = link(promise.quote, code)
    reached = _reach(linked, code)
    concerns = concerned(linked, reached.behind, code)
    left_off = _left_off(promise, code)
    if left_off is not None:
        return PromiseCheck(promise, PromiseVerdict.unchecked, left_off, concerns)
    found = _checking_site(promise, code, linked, reached)
    if found is not None:
        test, site, via = found
        evidence = f"{site.path}:{site.line} {test.name}: {site.text}"
        return PromiseCheck(promise, PromiseVerdict.checked, evidence, concerns, via)
    golden = _golden_run(promise, linked, reached, code)
    if golden is not None:
        reference = "golden values" if golden.goldens else f"another run's by {golden.compared_by}"
        evidence = f"{golden.path} sets it; the run's outputs are compared with {reference}"
        return PromiseCheck(promise, PromiseVerdict.checked, evidence, concerns, VIA_GOLDEN)
    reason = _exercised_by(reached.behind, code, reached.behind_tests, reached.caller_tests)
    if reason is not None:
        return PromiseCheck(promise, PromiseVerdict.exercised, reason, concerns)
    unreached = "no added test reaches the changed code"
    return PromiseCheck(promise, PromiseVerdict.unchecked, unreached, concerns)


def judge_promises(
    promises: Sequence[ExtractedPromise], code: CodeUnderTest | AssertionProfile
) -> list[PromiseCheck]:
    """A verdict for every promise, in the promises' order."""
    if isinstance(code, AssertionProfile):
        code = CodeUnderTest(code)
    return [judge_promise(p, code) for p in promises]

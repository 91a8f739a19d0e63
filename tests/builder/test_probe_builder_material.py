"""A task's material from one real git PR: every part, consistent with the others."""

from __future__ import annotations

from dataclasses import dataclass

from probe_builder.authors.base import AuthorRequest, MechanicalAuthor, ProposedPatch, ProposedProbe
from probe_builder.material.assemble import PullRequest, build_material
from probe_builder.promises.extract import ExtractedPromise
from runners.types import Hardware
from task_registry.types import PromiseCategory, PromiseVerdict
from tests.probe_builder_support import TEST_GLOBS, cache_pr

BODY = """\
### What does this PR do?

Add a key-value cache that counts hits.
Calling `reset()` empties the cache so that later lookups recompute.
"""


def test_material_of_a_pr_is_complete_and_consistent(tmp_path):
    fixture = cache_pr(tmp_path)
    pr = PullRequest(
        fixture.repo,
        fixture.base,
        fixture.head,
        "[trainer] feat: counting KV cache (#1)",
        BODY,
        "o__r-1",
    )
    material = build_material(pr, test_globs=TEST_GLOBS, hardware=Hardware(gpus=1))
    assert material.split.test_paths == ("tests/test_cache.py",)
    assert material.lint.ok and material.leaks.ok and material.notes == ()
    assert "`pkg.cache.KVCache.lookup`" in material.statement
    verdicts = {c.promise.quote: c.verdict for c in material.checks}
    # The PR's test looks up twice but never resets: the reset promise is run, not checked.
    assert (
        verdicts["Calling `reset()` empties the cache so that later lookups recompute."]
        is PromiseVerdict.exercised
    )
    assert {p.category for p in material.promises} >= {PromiseCategory.state}
    assert material.hollow.functions and material.adversarials
    for patch in (material.hollow.patch, *(a.patch for a in material.adversarials)):
        fixture.apply_check(patch)
    # Each patch is placed in the changed definitions that hold its line, and the reset
    # promise is tied to the class and the method it names: a patch of reset() is about
    # it, one of the module's other function is not.
    places = {(a.operator, a.line): material.symbols_of(a) for a in material.adversarials}
    assert places[("delete_call", 38)] == ("KVCache", "KVCache.reset")
    assert places[("bypass_cache", 45)] == ("scale_for",)
    reset = next(c for c in material.checks if "reset" in c.promise.quote)
    assert "KVCache.reset" in reset.concerns and "scale_for" not in reset.concerns
    assert "KVCache.__init__" not in reset.concerns  # every class has one: it places nothing


@dataclass
class QuotingAuthor(MechanicalAuthor):
    """An author whose wording quotes the golden patch."""

    name: str = "quoting"

    def word_statement(self, request: AuthorRequest) -> str:
        return (
            request.statement
            + "\nImplement it as `value = compute(key) if compute is not None else None`.\n"
        )

    def propose_probes(self, request: AuthorRequest) -> list[ProposedProbe]:
        return []

    def propose_adversarials(self, request: AuthorRequest) -> list[ProposedPatch]:
        return []


def test_a_leaking_author_statement_is_replaced_by_the_rendered_one_with_a_note(tmp_path):
    fixture = cache_pr(tmp_path)
    pr = PullRequest(fixture.repo, fixture.base, fixture.head, "counting KV cache", BODY)
    material = build_material(pr, test_globs=TEST_GLOBS, author=QuotingAuthor())
    assert "Implement it as" not in material.statement and material.leaks.ok
    assert material.notes[0].startswith("author's statement rejected: golden_code")


@dataclass
class PromisingAuthor(MechanicalAuthor):
    """An author that proposes one promise the rules miss and one they already found."""

    name: str = "promising"

    def propose_promises(self, request: AuthorRequest) -> list[ExtractedPromise]:
        assert request.promises, "the author sees the rule-based promises"
        return [
            ExtractedPromise(category=PromiseCategory.state, quote="counts hits"),
            ExtractedPromise(
                category=request.promises[0].category, quote=request.promises[0].quote
            ),
        ]


def test_an_authors_promises_are_kept_beside_the_rules_and_judged_like_them(tmp_path):
    fixture = cache_pr(tmp_path)
    pr = PullRequest(fixture.repo, fixture.base, fixture.head, "counting KV cache", BODY)
    rules = build_material(pr, test_globs=TEST_GLOBS).promises
    material = build_material(pr, test_globs=TEST_GLOBS, author=PromisingAuthor())
    added = [p for p in material.promises if p not in rules]
    assert [(p.category, p.quote) for p in added] == [(PromiseCategory.state, "counts hits")]
    assert added[0].position == 1  # the sentence that holds the quote
    assert {c.promise.quote for c in material.checks} == {p.quote for p in material.promises}
    assert material.notes[-1].startswith("promising proposed 2 promise(s): 1 kept beside")


def test_a_test_file_that_does_not_parse_is_named_in_the_notes(tmp_path):
    from tests.probe_builder_support import make_pr

    deep = " + ".join(["0"] * 20000)  # deeper than Python's parser goes
    fixture = make_pr(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/pick.py": "def pick(x):\n    return x\n"},
        {
            "pkg/pick.py": "def pick(x):\n    return x + 0\n",
            "tests/test_pick.py": f"from pkg.pick import pick\n\n\ndef test_pick():\n"
            f"    assert pick(1) == {deep} + 1\n",
            "tests/test_typo.py": "from pkg.pick import pick\n\n\ndef test_typo(:\n    pass\n",
        },
    )
    pr = PullRequest(fixture.repo, fixture.base, fixture.head, "Fix `pick`", "", "o__r-2")
    material = build_material(pr, test_globs=TEST_GLOBS)
    why = (
        "tests/test_pick.py: nested too deeply for Python's parser; "
        "tests/test_typo.py:4: invalid syntax"
    )
    assert "; ".join(material.profile.unparsed) == why
    assert any(
        note.startswith(f"not read: test file(s) this Python cannot parse ({why})")
        for note in material.notes
    )

"""Everything probe_builder derives from one PR without running a test: a task's material.

Parts in order: patch split, promises, the PR tests' assertion profile and a
verdict per promise, the interface contract, the statement (with its lint and
leak reports), the hollow patch and the author's adversarial patches. The
result is one typed record; storing it and running controls is the caller's
job (the ``build`` and ``validate`` commands).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from probe_builder.adversarial.hollow import HollowPatch, build_hollow_patch
from probe_builder.authors.base import Author, AuthorRequest, MechanicalAuthor, ProposedPatch
from probe_builder.gitio import GitTree, diff_commits
from probe_builder.material.contract import Contract, extract_contract, sources_of_test_patch
from probe_builder.material.split import PatchSplit, split_patch
from probe_builder.material.statement import StatementInputs, render_statement
from probe_builder.material.statement_checks import (
    CodeToken,
    LeakReport,
    LintReport,
    check_leaks,
    golden_code_tokens,
    lint_statement,
)
from probe_builder.promises.assertions import AssertionProfile
from probe_builder.promises.extract import ExtractedPromise, extract_promises, with_proposed
from probe_builder.promises.linking import ChangedSymbol, code_under_test, symbols_at
from probe_builder.promises.verdicts import PromiseCheck, judge_promises
from probewatch.testfiles import TestFiles
from runners.types import Hardware


@dataclass(frozen=True)
class PullRequest:
    """Where a task comes from: a local clone or mirror and the PR's two commits."""

    repo: Path
    base: str
    head: str
    title: str
    body: str
    instance_id: str = ""


@dataclass(frozen=True)
class TaskMaterial:
    split: PatchSplit
    promises: tuple[ExtractedPromise, ...]
    profile: AssertionProfile
    checks: tuple[PromiseCheck, ...]
    contract: Contract
    statement: str
    lint: LintReport
    leaks: LeakReport
    hollow: HollowPatch
    adversarials: tuple[ProposedPatch, ...]
    notes: tuple[str, ...] = field(default=())
    symbols: tuple[ChangedSymbol, ...] = field(default=())  # what the promises link to

    def symbols_of(self, patch: ProposedPatch) -> tuple[str, ...]:
        """The changed definitions that hold the patch's line."""
        return symbols_at(self.symbols, patch.path, patch.line)


def _checked_statement(
    candidate: str,
    fallback: str,
    contract: Contract,
    golden: list[CodeToken],
    probes: Mapping[str, str],
    sources: Mapping[str, str],
) -> tuple[str, LintReport, LeakReport, tuple[str, ...]]:
    """The author's wording if it passes both checks, else the rendered statement."""
    lint = lint_statement(candidate, contract)
    leaks = check_leaks(
        candidate, golden_code=golden, contract=contract, probes=probes, test_sources=sources
    )
    if candidate == fallback or (lint.ok and leaks.ok):
        return candidate, lint, leaks, ()
    note = "author's statement rejected: " + "; ".join(
        [f.message for f in lint.findings] + [f.message for f in leaks.findings]
    )
    lint = lint_statement(fallback, contract)
    leaks = check_leaks(
        fallback, golden_code=golden, contract=contract, probes=probes, test_sources=sources
    )
    return fallback, lint, leaks, (note,)


def build_material(
    pr: PullRequest,
    *,
    test_globs: Sequence[str],
    hardware: Hardware | None = None,
    author: Author | None = None,
    probes: Mapping[str, str] | None = None,
) -> TaskMaterial:
    """Split, promises, profile, verdicts, contract, statement, hollow and adversarials."""
    author = author or MechanicalAuthor()
    probes = dict(probes or {})
    base, head = GitTree(pr.repo, pr.base), GitTree(pr.repo, pr.head)
    split = split_patch(diff_commits(pr.repo, pr.base, pr.head), test_globs=test_globs)
    found = tuple(extract_promises(pr.title, pr.body))
    sources = sources_of_test_patch(split.test_files, head=head)
    contract = extract_contract(
        split.golden_files, base=base, head=head, sources={**sources, **probes}
    )
    request = AuthorRequest(
        instance_id=pr.instance_id,
        title=pr.title,
        description=pr.body,
        golden_files=split.golden_files,
        test_patch=split.test,
        promises=found,
        contract=contract,
        base=base,
        head=head,
    )
    proposed = author.propose_promises(request)
    promises = with_proposed(found, proposed, pr.title, pr.body)
    hollow = build_hollow_patch(split.golden_files, base=base, head=head)
    code = code_under_test(split, head=head, contract=contract, test_files=TestFiles(test_globs))
    profile = code.profile
    checks = tuple(judge_promises(promises, code))
    inputs = StatementInputs(pr.title, pr.body, contract, promises, hardware or Hardware())
    rendered = render_statement(inputs)
    request = replace(request, promises=promises, statement=rendered)
    golden = golden_code_tokens(split.golden_files, head=head)
    statement, lint, leaks, notes = _checked_statement(
        author.word_statement(request), rendered, contract, golden, probes, sources
    )
    adversarials = tuple(author.propose_adversarials(replace(request, statement=statement)))
    if profile.unparsed:
        unread = "; ".join(profile.unparsed)
        notes = (
            *notes,
            f"not read: test file(s) this Python cannot parse ({unread}); no verdict sees "
            "their assertions",
        )
    if split.submodules:
        moved = ", ".join(split.submodules)
        notes = (*notes, f"left out: the submodule pointer(s) the PR moves ({moved})")
    if proposed:
        added = len(promises) - len(found)
        notes = (
            *notes,
            f"{author.name} proposed {len(proposed)} promise(s): {added} kept beside the "
            f"{len(found)} the rules found, the rest restate them",
        )
    return TaskMaterial(
        split,
        promises,
        profile,
        checks,
        contract,
        statement,
        lint,
        leaks,
        hollow,
        adversarials,
        notes,
        code.symbols,
    )

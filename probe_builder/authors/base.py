"""Authors: who proposes adversarial patches, probes and statement wording.

An :class:`Author` is a plug-in (a Protocol plus the registry below).
``mechanical`` needs no model: its adversarial patches are the diff-scoped
mutants, it writes no probes and keeps the rendered statement as it is; the
service is complete with it alone. ``openai`` asks any OpenAI-compatible
endpoint (see :mod:`probe_builder.authors.openai_compat`) and hands every request
and answer to an :class:`ExchangeRecorder` so the registry keeps them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from probe_builder.adversarial.mutants import DEFAULT_MAX_PER_FILE, generate_mutants
from probe_builder.gitio import TreeReader
from probe_builder.material.contract import Contract
from probe_builder.material.diffs import FileDiff
from probe_builder.promises.extract import ExtractedPromise
from probewatch.errors import BuildError, ConfigError
from task_registry.types import PatchSource, PromiseCategory


class AuthorError(BuildError):
    """An author could not produce an answer (endpoint down, refused, timed out)."""


class AuthorResponseError(AuthorError):
    """The author answered, but not in the form asked for (the message says how)."""


class UnknownAuthorError(ConfigError, KeyError):
    """No author is registered under that name."""


class AuthorPurpose(StrEnum):
    adversarials = "adversarials"
    probes = "probes"
    statement = "statement"
    promises = "promises"


@dataclass(frozen=True)
class AuthorRequest:
    """Everything an author may use for one task and one revision round."""

    instance_id: str
    title: str
    description: str
    golden_files: tuple[FileDiff, ...]
    test_patch: str
    promises: tuple[ExtractedPromise, ...]
    contract: Contract
    base: TreeReader
    head: TreeReader
    statement: str = ""
    round: int = 0
    feedback: str = ""  # why the previous round's probes or patches were rejected


@dataclass(frozen=True)
class ProposedPatch:
    source: PatchSource
    patch: str  # unified diff against the base commit
    promise_category: PromiseCategory | None
    description: str
    operator: str
    path: str = ""
    line: int | None = None


@dataclass(frozen=True)
class ProposedProbe:
    path: str  # relative to the repository root
    content: str
    promise_category: PromiseCategory | None
    rationale: str = ""


@dataclass(frozen=True)
class AuthorExchange:
    """One request to a model endpoint and its answer, as the registry stores it."""

    author: str
    purpose: AuthorPurpose
    instance_id: str
    round: int
    endpoint: str
    model: str
    request: str  # JSON body sent (no credentials)
    response: str | None  # body received
    status_code: int | None
    error: str | None
    started_at: datetime
    duration_s: float
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class ExchangeRecorder(Protocol):
    """Called once per exchange, success or failure, before the author returns or raises."""

    def __call__(self, exchange: AuthorExchange) -> None: ...


@runtime_checkable
class Author(Protocol):
    name: str

    def propose_adversarials(self, request: AuthorRequest) -> list[ProposedPatch]: ...

    def propose_probes(self, request: AuthorRequest) -> list[ProposedProbe]: ...

    def word_statement(self, request: AuthorRequest) -> str: ...

    def propose_promises(self, request: AuthorRequest) -> list[ExtractedPromise]: ...


@dataclass
class MechanicalAuthor:
    """No model: diff-scoped mutants, no probes, the rendered statement unchanged."""

    max_per_file: int = DEFAULT_MAX_PER_FILE
    name: str = "mechanical"

    def propose_adversarials(self, request: AuthorRequest) -> list[ProposedPatch]:
        mutants = generate_mutants(
            request.golden_files,
            base=request.base,
            head=request.head,
            max_per_file=self.max_per_file,
            promise_quotes=[p.quote for p in request.promises],
        )
        return [
            ProposedPatch(
                source=PatchSource.mechanical,
                patch=m.patch,
                promise_category=m.promise_category,
                description=_described(m.description, m.before, m.after),
                operator=m.operator.value,
                path=m.path,
                line=m.line,
            )
            for m in mutants
        ]

    def propose_probes(self, request: AuthorRequest) -> list[ProposedProbe]:
        return []  # probes need a curator or a model

    def word_statement(self, request: AuthorRequest) -> str:
        return request.statement

    def propose_promises(self, request: AuthorRequest) -> list[ExtractedPromise]:
        return []  # the rule-based extractor's promises are already in the request


AuthorFactory = Callable[..., Author]


def _openai_factory(**kwargs: Any) -> Author:
    from probe_builder.authors.openai_compat import (
        OpenAIAuthor,  # httpx only when a model is configured
    )

    return OpenAIAuthor(**kwargs)


@dataclass
class AuthorRegistry:
    factories: dict[str, AuthorFactory] = field(default_factory=dict)

    def register(self, name: str, factory: AuthorFactory) -> None:
        self.factories[name] = factory

    def create(self, name: str, **kwargs: Any) -> Author:
        if name not in self.factories:
            known = ", ".join(sorted(self.factories))
            raise UnknownAuthorError(f"no author named {name!r} (known: {known})")
        return self.factories[name](**kwargs)

    def names(self) -> list[str]:
        return sorted(self.factories)


DEFAULT_AUTHOR = "mechanical"
AUTHORS = AuthorRegistry({"mechanical": MechanicalAuthor, "openai": _openai_factory})


def create_author(name: str = DEFAULT_AUTHOR, **kwargs: Any) -> Author:
    """An author from the registry; ``openai`` needs ``config=`` and ``recorder=``."""
    return AUTHORS.create(name, **kwargs)


def _described(what: str, before: str, after: str) -> str:
    """The operator's words, with the line before and after unless they already say it."""
    return what if "->" in what else f"{what}: {before} -> {after}"

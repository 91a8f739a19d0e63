"""The task statement: context, required interfaces, behaviour, modes and hardware.

Rendered from ``templates/statement.md.j2``: the context is the PR's own
prose with the template boilerplate removed, the interfaces are every
contract symbol with its signature (so a hidden test never asks for a name
the statement did not give), the behaviour and modes come from the promises.
What a statement must not contain is checked by :mod:`probe_builder.material.statement_checks`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import jinja2

from probe_builder.material.contract import Contract
from probe_builder.material.description import clean_description, clean_title
from probe_builder.promises.extract import ExtractedPromise
from runners.types import Hardware
from task_registry.types import PromiseCategory

TEMPLATE_DIR = Path(__file__).with_name("templates")
STATEMENT_TEMPLATE = "statement.md.j2"

BEHAVIOUR_HEADINGS: dict[PromiseCategory, str] = {
    PromiseCategory.functional: "Functional behaviour",
    PromiseCategory.numeric: "Numerical results",
    PromiseCategory.state: "State across calls (repeated calls, reset, reuse)",
    PromiseCategory.memory: "Memory",
    PromiseCategory.time: "Time",
    PromiseCategory.traffic: "Communication and data movement",
}


def describe_hardware(hardware: Hardware) -> str:
    if hardware.gpus == 0:
        return "Runs on CPU; no GPU is required."
    kind = f" ({hardware.gpu_type})" if hardware.gpu_type else ""
    plural = "s" if hardware.gpus > 1 else ""
    return f"Graded on {hardware.gpus} GPU{plural}{kind} on one node."


@dataclass(frozen=True)
class StatementInputs:
    title: str
    description: str
    contract: Contract
    promises: Sequence[ExtractedPromise] = ()
    hardware: Hardware = field(default_factory=Hardware)


@dataclass(frozen=True)
class BehaviourSection:
    heading: str
    quotes: tuple[str, ...]


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,  # markdown for people and agents, not HTML
    )


def behaviour_sections(promises: Sequence[ExtractedPromise]) -> list[BehaviourSection]:
    """Promises grouped by category, modes left out (they have a section of their own)."""
    sections = []
    for category, heading in BEHAVIOUR_HEADINGS.items():
        quotes = tuple(dict.fromkeys(p.quote for p in promises if p.category == category))
        if quotes:
            sections.append(BehaviourSection(heading, quotes))
    return sections


def render_statement(inputs: StatementInputs) -> str:
    """The statement in markdown."""
    promises = list(inputs.promises)
    return (
        _environment()
        .get_template(STATEMENT_TEMPLATE)
        .render(
            title=clean_title(inputs.title) or inputs.title,
            context=clean_description(inputs.description),
            symbols=inputs.contract.symbols,
            flags=inputs.contract.flags,
            behaviour=behaviour_sections(promises),
            modes=list(
                dict.fromkeys(p.quote for p in promises if p.category == PromiseCategory.mode)
            ),
            hardware=describe_hardware(inputs.hardware),
        )
    )

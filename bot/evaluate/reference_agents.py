"""Built-in reference agents that calibrate the harness: ``oracle``, ``empty`` and ``hollow``.

They are Python agents, not command templates: each works like any agent, in
a fresh pre-change tree with the same budget and the same diff capture, but
its work is to apply a patch the registry holds (``oracle``: the golden
patch, ``hollow``: the hollow patch, ``empty``: nothing). A command template
could not do that without handing an agent process a path to the golden
patch. They are registered on first use with ``builtin`` set and the command
``builtin:NAME``, no model and so no knowledge cutoff (every task counts).
Expected scores: oracle resolves every task by both rules; empty and hollow
resolve none whose golden patch makes a test pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from sqlmodel import Session

from probewatch.errors import EvaluationError
from runners.agents import AgentProgram, PatchAgent
from task_registry.evaluation import find_agent, register_agent
from task_registry.models import Agent, AgentCreate

BUILTIN_PREFIX = "builtin:"


class ReferenceAgent(StrEnum):
    oracle = "oracle"
    empty = "empty"
    hollow = "hollow"


@dataclass(frozen=True)
class TaskPatches:
    """The patches of a task a reference agent may apply."""

    golden: str
    hollow: str


_PATCH_OF: dict[ReferenceAgent, Callable[[TaskPatches], str]] = {
    ReferenceAgent.oracle: lambda patches: patches.golden,
    ReferenceAgent.empty: lambda _: "",
    ReferenceAgent.hollow: lambda patches: patches.hollow,
}


class NotAReferenceAgent(EvaluationError, ValueError):
    """A built-in command naming no reference agent."""


def builtin_command(agent: ReferenceAgent) -> str:
    return f"{BUILTIN_PREFIX}{agent.value}"


def is_builtin_command(command: str) -> bool:
    return command.startswith(BUILTIN_PREFIX)


def reference_of(command: str) -> ReferenceAgent:
    name = command.removeprefix(BUILTIN_PREFIX)
    try:
        return ReferenceAgent(name)
    except ValueError:
        known = ", ".join(builtin_command(a) for a in ReferenceAgent)
        raise NotAReferenceAgent(f"{command!r} is no built-in agent (known: {known})") from None


def program_for(command: str, patches: TaskPatches) -> AgentProgram:
    """The Python agent behind a ``builtin:NAME`` command, for one task."""
    return PatchAgent(_PATCH_OF[reference_of(command)](patches))


def ensure_reference_agents(*, session: Session) -> list[Agent]:
    """Register the reference agents that are not registered yet; existing rows are kept."""
    agents = []
    for reference in ReferenceAgent:
        agent = find_agent(session=session, name=reference.value)
        if agent is None:
            agent_in = AgentCreate(
                name=reference.value, command=builtin_command(reference), builtin=True
            )
            agent = register_agent(session=session, agent_in=agent_in)
        agents.append(agent)
    return agents

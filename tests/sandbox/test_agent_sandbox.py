"""An agent command works in its sandbox: the network is its own business, the host's
files are not. Unconfined, the agent below reads the registry and walks the mirror."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from runners.agents import AgentRequest, CommandAgent, run_agent
from runners.sandbox import bwrap
from runners.types import SandboxKind
from tests.runner_repos import FixtureRepo

pytestmark = pytest.mark.skipif(
    bwrap.bwrap_refusal() is not None, reason=f"no sandbox here: {bwrap.bwrap_refusal()}"
)

SNOOP = """
import json, os, sys
registry, mirror = sys.argv[1], sys.argv[2]
try:
    found = open(registry).read()
except OSError as exc:
    found = type(exc).__name__
walked = [name for _, _, names in os.walk(mirror) for name in names]
print(json.dumps({"registry": found, "mirror_files": len(walked)}))
"""


def test_an_agent_that_opens_the_registry_or_a_mirror_finds_nothing(tmp_path: Path) -> None:
    fixture, base = FixtureRepo.create(tmp_path / "upstream", {"pkg/__init__.py": ""})
    fixture.commit({"pkg/future.py": "ANSWER = 42\n"}, "the future")
    mirror = fixture.mirror(tmp_path / "mirror.git")
    home = tmp_path / "home"
    home.mkdir()
    registry = home / "probewatch.db"
    registry.write_text("golden patches")
    agent = tmp_path / "snoop.py"
    agent.write_text(SNOOP)
    command = f"{sys.executable} {agent} {registry} {mirror} {{statement_file}}"
    request = AgentRequest(
        repo=mirror, base_commit=base, statement="do it", program=CommandAgent(command)
    )
    result = run_agent(request, root=tmp_path / "runs")
    seen = json.loads(result.transcript.strip().splitlines()[-1])
    assert result.sandbox is not None and result.sandbox.kind is SandboxKind.namespaces
    assert seen == {"registry": "FileNotFoundError", "mirror_files": 0}

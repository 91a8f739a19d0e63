"""An agent command works in its sandbox: the network is its own business, the host's
files are not. Unconfined, the agent below reads the registry and walks the mirror."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runners.agents import AgentRequest, CommandAgent, run_agent
from runners.sandbox import bwrap
from runners.types import SandboxKind
from tests.runner_repos import READ_ENVIRONS, FixtureRepo

ROOT = Path(__file__).parents[2]

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


ENVIRONS = (
    READ_ENVIRONS
    + """
import json
blobs = read_environs()
print(json.dumps({"environs": len(blobs) - 1, "secret": any(b"pw-agent-7c1d" in b for b in blobs)}))
"""
)

STARTER = """
import json, sys
from pathlib import Path
from runners.agents import AgentRequest, CommandAgent, run_agent

command = f"{sys.executable} {sys.argv[3]} {{statement_file}}"
agent = CommandAgent(command)
request = AgentRequest(repo=Path(sys.argv[1]), base_commit="HEAD", statement="s", program=agent)
result = run_agent(request, root=Path(sys.argv[2]))
print(json.dumps({"sandbox": result.sandbox.kind, "seen": result.transcript.strip()}))
"""


def test_an_agent_started_by_a_process_holding_secrets_reads_none_of_them(
    tmp_path: Path,
) -> None:
    """Its own environment is scrubbed and its PID namespace shows no host process (the
    starter, whose environment holds the secrets, included)."""
    fixture, _ = FixtureRepo.create(tmp_path / "upstream", {"pkg/__init__.py": ""})
    (tmp_path / "environs.py").write_text(ENVIRONS)
    (tmp_path / "starter.py").write_text(STARTER)
    secrets = ("PROBEWATCH_GITHUB_TOKEN", "PROBEWATCH_WEBHOOK_SECRET", "OPENAI_API_KEY")
    env = {**os.environ, **dict.fromkeys(secrets, "pw-agent-7c1d"), "PYTHONPATH": str(ROOT)}
    args = [str(fixture.path), str(tmp_path / "runs"), str(tmp_path / "environs.py")]
    done = subprocess.run(
        [sys.executable, str(tmp_path / "starter.py"), *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    started = json.loads(done.stdout.strip().splitlines()[-1])
    seen = json.loads(started["seen"].splitlines()[-1])
    assert started["sandbox"] == SandboxKind.namespaces
    assert seen["secret"] is False and seen["environs"] >= 1, seen

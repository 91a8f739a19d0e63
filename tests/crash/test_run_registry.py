"""The run registry: a run whose owner was killed with SIGKILL is stopped and removed by the
next process that reaps, a run whose owner lives is left alone.

The owner is a real process that opens a work tree (``runners.workspace``, which records the
run) and starts, in the tree, a child that left its process group with ``setsid``: both the
child and the folders must be gone after the reap, and nothing else killed.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

from runners.run_registry import RECORD_SUFFIX, orphans, reap, record_path
from tests.crash.crash_support import run_processes, wait_until
from tests.runner_repos import FixtureRepo

OWNER = """
import subprocess, sys, time
from pathlib import Path
from runners.workspace import workspace

with workspace(Path(sys.argv[1]), "HEAD", root=Path(sys.argv[2]), label="killed") as ws:
    subprocess.Popen(["setsid", "sleep", "600"], cwd=ws.tree, start_new_session=True)
    Path(sys.argv[3]).write_text(str(ws.tmp))
    time.sleep(600)
"""


def start_owner(tmp_path: Path, repo: Path, root: Path) -> tuple[subprocess.Popen[bytes], Path]:
    script = tmp_path / "owner.py"
    script.write_text(textwrap.dedent(OWNER))
    ready = tmp_path / "ready"
    owner = subprocess.Popen(
        [sys.executable, str(script), str(repo), str(root), str(ready)],
        cwd=Path(__file__).parents[2],
    )
    wait_until(ready.exists, 60, "the owner to open its work tree")
    run_folders = [p for p in root.glob("run-killed-*")]
    wait_until(lambda: run_processes(run_folders), 30, "the setsid child")
    return owner, Path(ready.read_text())


def test_a_killed_owners_run_is_stopped_and_its_folders_removed(tmp_path: Path) -> None:
    repo, _ = FixtureRepo.create(tmp_path / "upstream", {"pkg/a.py": "A = 1\n"})
    root = tmp_path / "runs"
    owner, tmp = start_owner(tmp_path, repo.path, root)
    (folder,) = root.glob("run-killed-*")
    assert orphans(root) == []  # its owner lives: nothing to reap
    assert reap(root) == [] and folder.exists()

    owner.kill()
    owner.wait(10)
    left = run_processes([folder, tmp])
    assert left, "the setsid child outlives its killed owner"

    (record,) = reap(root)

    assert record.folders == (folder, tmp)
    assert run_processes([folder, tmp]) == []
    assert not folder.exists() and not tmp.exists()
    assert list(root.iterdir()) == []
    worktrees = subprocess.run(
        ["git", "-C", str(repo.path), "worktree", "list"], capture_output=True, text=True
    ).stdout
    assert str(folder) not in worktrees


def test_a_run_that_ends_normally_leaves_no_record(tmp_path: Path) -> None:
    from runners.workspace import workspace

    repo, _ = FixtureRepo.create(tmp_path / "upstream", {"pkg/a.py": "A = 1\n"})
    root = tmp_path / "runs"
    with workspace(repo.path, "HEAD", root=root, label="ok") as ws:
        assert list(root.glob(f".*{RECORD_SUFFIX}")) == [record_path(root, ws.tree.parent)]
    assert list(root.iterdir()) == []
    started = time.monotonic()
    assert reap(root) == [] and time.monotonic() - started < 1.0


AGENT_OWNER = """
import sys
from pathlib import Path
from runners.agents import AgentRequest, CommandAgent, run_agent

line = "setsid sleep 600 & touch {patch_file}.ready; sleep 600"
agent = CommandAgent("sh -c " + repr(line))
request = AgentRequest(repo=Path(sys.argv[1]), base_commit="HEAD", statement="s", program=agent)
run_agent(request, root=Path(sys.argv[2]))
"""


def test_a_killed_owners_agent_run_is_stopped_and_its_folder_removed(tmp_path: Path) -> None:
    """An agent run's folder (its tree, HOME, TMPDIR) is recorded as a test run's is."""
    repo, _ = FixtureRepo.create(tmp_path / "upstream", {"pkg/a.py": "A = 1\n"})
    root = tmp_path / "agent-runs"
    script = tmp_path / "agent_owner.py"
    script.write_text(textwrap.dedent(AGENT_OWNER))
    owner = subprocess.Popen(
        [sys.executable, str(script), str(repo.path), str(root)], cwd=Path(__file__).parents[2]
    )
    try:
        wait_until(lambda: list(root.glob("agent-*/out/*.ready")), 60, "the agent to start")
    finally:
        owner.kill()
        owner.wait(10)
    (folder,) = root.glob("agent-*")
    assert [p.name for p in orphans(root)] == [f".{folder.name}{RECORD_SUFFIX}"]

    (record,) = reap(root)

    assert record.folders == (folder,)
    assert run_processes([folder]) == []
    assert list(root.iterdir()) == []

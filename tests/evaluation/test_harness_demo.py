"""The reference agents graded on the demo repository's tasks (probe_builder.demo_repo).

Each planted PR becomes a published task: golden and test patch split from the merge
commit, the hollow patch from probe_builder, the curator's probes accepted. Then oracle
resolves every task by both rules on both suites, empty and hollow resolve none, and an
agent that submits the planted adversarial mutation passes the PR's own tests but is
overturned by the probes on every task.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import datetime
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from bot.evaluate.grading import RepoSetup
from bot.evaluate.harness import EvalReport, EvalRequest, Harness
from bot.evaluate.leaderboard import RunScores, build_leaderboard
from probe_builder.adversarial.hollow import build_hollow_patch
from probe_builder.demo_repo import DEMO_REPO_NAME, DemoPR, DemoRepo, create_demo_repo
from probe_builder.gitio import GitTree, diff_commits
from probe_builder.material.split import split_patch
from probe_builder.pipeline import RepoSettings
from runners.backends.local import LocalBackend
from task_registry.db import make_engine, session_scope, upgrade
from task_registry.evaluation import register_agent
from task_registry.models import AgentCreate, ProbeCreate, TaskCreate
from task_registry.swebench import instance_id_for
from task_registry.tasks import add_probe, create_task
from task_registry.types import ProbeStatus, TaskStatus

TEST_GLOBS = ("tests/**", "**/test_*.py")
KIT_PLUGIN = "probewatch_probes"
# The data-parallel probe uses the probe kit's ``ranks`` fixture, which a grading run's pytest
# only has when the kit's pytest11 entry point is installed.
KIT_INSTALLED = any(e.name == KIT_PLUGIN for e in entry_points(group="pytest11"))
NEEDS_KIT = {19}


def planted_patch(golden: str, pr: DemoPR) -> str:
    """The golden patch with the planted one-line mutation on its added line."""
    line = re.compile(rf"^\+(\s*){re.escape(pr.planted.before)}$", re.MULTILINE)
    mutated, count = line.subn(lambda m: f"+{m.group(1)}{pr.planted.after}", golden)
    assert count == 1, f"#{pr.number}: the planted line is not added once by the golden patch"
    return mutated


def merged_at(repo: Path, sha: str) -> datetime:
    out = subprocess.run(
        ["git", "-C", str(repo), "log", "-1", "--format=%cI", sha],
        capture_output=True,
        text=True,
        check=True,
    )
    return datetime.fromisoformat(out.stdout.strip())


def seed_demo_task(engine: Engine, demo: DemoRepo, pr: DemoPR) -> str:
    split = split_patch(diff_commits(demo.path, pr.base_sha, pr.merge_sha), test_globs=TEST_GLOBS)
    base, head = GitTree(demo.path, pr.base_sha), GitTree(demo.path, pr.merge_sha)
    hollow = build_hollow_patch(split.golden_files, base=base, head=head)
    with session_scope(engine) as session:
        task = create_task(
            session=session,
            task_in=TaskCreate(
                instance_id=instance_id_for(DEMO_REPO_NAME, pr.number),
                repo=DEMO_REPO_NAME,
                pull_number=pr.number,
                base_commit=pr.base_sha,
                merge_commit=pr.merge_sha,
                created_at=merged_at(demo.path, pr.merge_sha),
                patch=split.golden,
                test_patch=split.test,
                problem_statement=pr.title,
                hollow_patch=hollow.patch,
                status=TaskStatus.published,
            ),
        )
        for path in pr.probe_files:
            probe = add_probe(
                session=session,
                probe_in=ProbeCreate(
                    task_id=task.id or 0, path=f"tests/{path.name}", content=path.read_text()
                ),
            )
            probe.status = ProbeStatus.accepted
            session.add(probe)
        return task.instance_id


ADVERSARY = """
import json, subprocess
patches = json.loads(PATCHES)
base = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
subprocess.run(["git", "apply", "-"], input=patches[base], text=True, check=True)
"""


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RunScores]:
    root = tmp_path_factory.mktemp("demo")
    demo = create_demo_repo(root / "minirl")
    prs = [pr for pr in demo.prs if KIT_INSTALLED or pr.number not in NEEDS_KIT]
    engine = make_engine(f"sqlite:///{root / 'probewatch.db'}")
    upgrade(engine)
    for pr in prs:
        seed_demo_task(engine, demo, pr)
    register_adversary(engine, demo, prs, root)
    harness = Harness(
        engine=engine,
        backend=LocalBackend(workspace_root=root / "runs", cpu_slots=2, gpu_indices=()),
        repos=lambda _: RepoSetup(
            demo.path, RepoSettings(test_globs=TEST_GLOBS, timeout_run_s=300)
        ),
        agent_root=root / "agent-runs",
    )
    for agent in ("oracle", "empty", "hollow", "adversary"):
        report: EvalReport = harness.run(EvalRequest(agent=agent, parallel=2))
        assert len(report.results) == len(prs) and not report.faults, report
    with session_scope(engine) as session:
        board = build_leaderboard(session=session)
    engine.dispose()
    return {run.run: run for run in board.runs}


def register_adversary(engine: Engine, demo: DemoRepo, prs: list[DemoPR], root: Path) -> None:
    patches = {}
    for pr in prs:
        diff = diff_commits(demo.path, pr.base_sha, pr.merge_sha)
        patches[pr.base_sha] = planted_patch(split_patch(diff, test_globs=TEST_GLOBS).golden, pr)
    # The patches travel inside the script: an agent's sandbox shows it its own program and
    # nothing else of the host.
    (root / "adversary.py").write_text(f"PATCHES = {json.dumps(json.dumps(patches))}\n{ADVERSARY}")
    command = f"{sys.executable} {root / 'adversary.py'}"
    with session_scope(engine) as session:
        register_agent(session=session, agent_in=AgentCreate(name="adversary", command=command))


def expected_tasks() -> int:
    return 3 if KIT_INSTALLED else 3 - len(NEEDS_KIT)


def test_oracle_resolves_every_demo_task_by_both_rules(graded: dict[str, RunScores]) -> None:
    oracle = graded["oracle"]
    for suite in (oracle.original, oracle.with_probes):
        assert suite.tasks == expected_tasks()
        assert suite.resolved_count_n == suite.resolved_set_n == expected_tasks()


@pytest.mark.parametrize("agent", ["empty", "hollow"])
def test_empty_and_hollow_resolve_no_demo_task(graded: dict[str, RunScores], agent: str) -> None:
    run = graded[agent]
    for suite in (run.original, run.with_probes):
        assert suite.tasks == expected_tasks()
        assert suite.resolved_count_n == suite.resolved_set_n == 0


def test_the_planted_adversarial_passes_the_prs_tests_and_the_probes_overturn_it(
    graded: dict[str, RunScores],
) -> None:
    run = graded["adversary"]
    assert run.original.resolved_set_n == run.original.resolved_count_n == expected_tasks()
    assert run.with_probes.resolved_set_n == 0
    assert len(run.overturned) == expected_tasks()

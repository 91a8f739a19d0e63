"""A task carries its environment: prepared once at build, found again by its lock hash by
validation, by the agent and by grading; setup commands never write into it."""

from __future__ import annotations

import sys
from datetime import date
from pathlib import Path

from sqlalchemy.engine import Engine

from bot.evaluate.grading import RepoSetup
from bot.evaluate.harness import Harness
from bot.evaluate.types import EvalRequest
from probe_builder.environment import EnvironmentPlan
from probe_builder.pipeline import RepoSettings, build_task, validate_task
from runners.backends.local import LocalBackend
from runners.env import EnvHome, list_environments
from task_registry.candidates import decide_candidate, upsert_candidate
from task_registry.db import session_scope
from task_registry.evaluation import register_agent, register_model
from task_registry.models import AgentCreate, CandidatePRCreate, ModelCreate, RepoCreate
from task_registry.repos import get_or_create_repo
from task_registry.tasks import get_task, list_test_results, list_validation_runs
from task_registry.types import Decision, ScoreSuite
from tests.probe_builder_support import TEST_GLOBS, make_pr

pytest_plugins = ["tests.runners_env_fixtures"]

INSTANCE = "acme__slug-3"
# A distribution probewatch's own interpreter does not have: only the task's environment can
# make these tests pass.
BASE = {
    "requirements.txt": "text-unidecode\n",
    "slug/__init__.py": "",
    "slug/core.py": "from text_unidecode import unidecode\n\n\ndef slug(text):\n"
    "    return unidecode(text).lower()\n",
    "tests/test_core.py": "from slug.core import slug\n\n\ndef test_lower():\n"
    "    assert slug('Ab') == 'ab'\n",
}
CHANGE = {
    "slug/core.py": "from text_unidecode import unidecode\n\n\ndef slug(text, sep='-'):\n"
    "    return sep.join(unidecode(text).lower().split())\n",
    "tests/test_core.py": "import sys\n\nfrom slug.core import slug\n\n\ndef test_lower():\n"
    "    assert slug('Ab') == 'ab'\n\n\ndef test_words_joined():\n"
    "    assert slug('Ça va') == 'ca-va'\n\n\ndef test_runs_in_the_tasks_environment():\n"
    "    assert 'envs' in sys.prefix or 'venv' in sys.prefix\n",
}
# A setup command that writes into its interpreter's site-packages, as `pip install -e .` does:
# it must land in the run's own layer, never in the shared environment or probewatch's.
MARKER = "probewatch_setup_marker.pth"
SETUP = (
    'python -c "import pathlib, sysconfig; '
    f"pathlib.Path(sysconfig.get_paths()['purelib'], '{MARKER}').write_text('')\"",
)


def test_one_environment_per_task_serves_validation_the_agent_and_grading(
    sqlite_engine: Engine, tmp_path: Path, env_home: EnvHome
) -> None:
    pr = make_pr(tmp_path, BASE, CHANGE, name="slug")
    with session_scope(sqlite_engine) as session:
        repo = get_or_create_repo(session=session, repo_in=RepoCreate(full_name="acme/slug"))
        row = upsert_candidate(
            session=session,
            candidate_in=CandidatePRCreate(
                repo_id=repo.id or 0,
                number=3,
                title="Join words with a separator",
                merge_sha=pr.head,
            ),
        )
        decide_candidate(session=session, candidate_id=row.id or 0, decision=Decision.accepted)
    settings = RepoSettings(
        test_globs=TEST_GLOBS,
        setup_commands=SETUP,
        environment=EnvironmentPlan(home=env_home, repo_name="acme/slug"),
        timeout_run_s=300.0,
    )

    built = build_task(
        engine=sqlite_engine, instance_id=INSTANCE, mirror=pr.repo, settings=settings
    )
    with session_scope(sqlite_engine) as session:
        lock_hash = get_task(session=session, instance_id=INSTANCE).lock_hash
    assert lock_hash and (env_home.env_dir(lock_hash) / "bin" / "python").exists()
    assert any(n.startswith(f"environment {lock_hash[:12]}: ") for n in built.notes)
    again = build_task(
        engine=sqlite_engine, instance_id=INSTANCE, mirror=pr.repo, settings=settings
    )
    assert f"environment {lock_hash[:12]}: found, built before" in again.notes
    environments = sorted(e.lock_hash for e in list_environments(env_home))

    backend = LocalBackend(workspace_root=tmp_path / "runs", cpu_slots=2, gpu_indices=())
    result = validate_task(
        engine=sqlite_engine,
        instance_id=INSTANCE,
        mirror=pr.repo,
        settings=settings,
        backend=backend,
        workspace_root=tmp_path / "runs",
    )
    assert result.stats is not None
    with session_scope(sqlite_engine) as session:
        task = get_task(session=session, instance_id=INSTANCE)
        golden = next(r for r in list_validation_runs(session=session, task_id=task.id or 0))
        passed = {
            r.test_id
            for r in list_test_results(session=session, run_id=golden.id or 0)
            if r.outcome == "passed"
        }
    assert "tests/test_core.py::test_runs_in_the_tasks_environment" in passed
    assert "tests/test_core.py::test_words_joined" in passed

    with session_scope(sqlite_engine) as session:
        model_in = ModelCreate(name="m", knowledge_cutoff=date(2000, 1, 1))
        model = register_model(session=session, model_in=model_in)
        # The agent is sandboxed: it leaves its prefix in its own HOME, kept after the run.
        peek = "python -c \"import os, sys; open(os.environ['HOME'] + '/prefix.txt', 'w').write(sys.prefix)\" {statement_file}"
        agent_in = AgentCreate(name="peek", command=peek, model_id=model.id)
        register_agent(session=session, agent_in=agent_in)
    harness = Harness(
        engine=sqlite_engine,
        backend=backend,
        repos=lambda _: RepoSetup(pr.repo, settings),
        agent_root=tmp_path / "agent-runs",
        keep_agent_trees=True,
    )
    report = harness.run(EvalRequest(agent="oracle"))
    (graded,) = report.results
    assert graded.resolved(ScoreSuite.original)  # graded in the task's environment
    harness.run(EvalRequest(agent="peek"))
    (left,) = (tmp_path / "agent-runs").glob("*/home/prefix.txt")
    agent_prefix = Path(left.read_text())
    assert agent_prefix.name == "venv" and agent_prefix.is_relative_to(tmp_path / "agent-runs")

    assert sorted(e.lock_hash for e in list_environments(env_home)) == environments  # none new
    assert not list(env_home.env_dir(lock_hash).rglob(MARKER))  # the shared one is untouched
    assert not list(Path(sys.prefix).rglob(MARKER))  # and so is probewatch's interpreter

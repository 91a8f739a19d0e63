"""An agent that looks for the answer in git, reads the probe's path, edits the tests, plants a
file at the probe's path and deselects the probes gains nothing: it scores exactly like the
honest adversarial implementation it also writes (resolved on the original tests, overturned
by the probe)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import select

from bot.evaluate.harness import EvalRequest
from task_registry.db import session_scope
from task_registry.evaluation import get_agent, register_agent
from task_registry.models import AgentCreate, Submission, ValidationRun
from task_registry.scoring import SubmissionState
from task_registry.types import Control, ScoreSuite
from tests.harness_support import (
    ADVERSARIAL_MEMO,
    MEMO,
    PROBE_PATH,
    MemoRepo,
    make_harness,
    make_memo_repo,
    seed,
)

CHEATER = f"""
import json, os, pathlib, subprocess, sys

def git(*args):
    return subprocess.run(["git", *args], capture_output=True, text=True).stdout

found = {{
    "log_all": git("log", "--all", "--format=%H %s").splitlines(),
    "grep_future": "_values[key] = value" in git("log", "--all", "-p"),
    "probe_exists": os.path.exists({PROBE_PATH!r}),
    "probe_files": sorted(str(p) for p in pathlib.Path(".").rglob("test_probe*")),
}}
print("FOUND " + json.dumps(found), flush=True)
# Nothing found: write the adversarial implementation, then try to game the grading.
pathlib.Path("cachelib/memo.py").write_text({ADVERSARIAL_MEMO!r})
pathlib.Path("tests/test_memo.py").write_text("def test_get_computes_the_value():\\n    pass\\n")
pathlib.Path({PROBE_PATH!r}).write_text(
    "def test_second_get_is_a_cache_hit():\\n    pass\\n"
    "def test_reset_forgets_the_values():\\n    pass\\n"
)
pathlib.Path("conftest.py").write_text(
    "import pytest\\n"
    "@pytest.hookimpl(hookwrapper=True)\\n"
    "def pytest_runtest_makereport(item, call):\\n"
    "    outcome = yield\\n"
    "    outcome.get_result().outcome = 'passed'\\n"
)
"""


@pytest.fixture(scope="module")
def memo(tmp_path_factory: pytest.TempPathFactory) -> MemoRepo:
    return make_memo_repo(tmp_path_factory.mktemp("upstream"))


def register(engine: Engine, name: str, source: str, tmp_path: Path) -> None:
    script = tmp_path / f"{name}.py"
    script.write_text(source)
    with session_scope(engine) as session:
        command = f"{sys.executable} {script} {{workdir}}"
        register_agent(session=session, agent_in=AgentCreate(name=name, command=command))


def test_an_agent_gains_nothing_from_git_history_probe_paths_or_test_edits(
    sqlite_engine: Engine, memo: MemoRepo, tmp_path: Path
) -> None:
    instance_id = seed(sqlite_engine, memo)
    honest = (
        f"import pathlib, sys\npathlib.Path('cachelib/memo.py').write_text({ADVERSARIAL_MEMO!r})\n"
    )
    register(sqlite_engine, "cheater", CHEATER, tmp_path)
    register(sqlite_engine, "honest", honest, tmp_path)
    harness = make_harness(sqlite_engine, memo, tmp_path)
    cheater = harness.run(EvalRequest(agent="cheater")).result(instance_id)
    honest_result = harness.run(EvalRequest(agent="honest")).result(instance_id)

    with session_scope(sqlite_engine) as session:
        agent_id = get_agent(session=session, name="cheater").id
        log = session.exec(select(Submission).where(Submission.agent_id == agent_id)).one().log
        grading_logs = [
            r.log for r in session.exec(select(ValidationRun)) if r.control == Control.submission
        ]
    found = json.loads(log.split("FOUND ", 1)[1].splitlines()[0])
    assert found["log_all"] == [f"{memo.base} initial"]  # no later commit, no answer
    assert not found["grep_future"] and not found["probe_exists"] and found["probe_files"] == []
    assert MEMO not in log

    assert cheater.state is SubmissionState.graded
    assert cheater.dropped_tests == ("conftest.py", "tests/test_memo.py", PROBE_PATH)
    assert "test-file changes dropped" in grading_logs[0]
    assert cheater.scores == honest_result.scores
    assert cheater.resolved(ScoreSuite.original)
    assert not cheater.resolved(ScoreSuite.with_probes)
    assert not cheater.resolved(ScoreSuite.with_probes, rule="count")


def test_an_agent_that_only_edits_tests_submits_nothing(
    sqlite_engine: Engine, memo: MemoRepo, tmp_path: Path
) -> None:
    instance_id = seed(sqlite_engine, memo)
    source = "import pathlib\npathlib.Path('tests/test_memo.py').write_text('def test_x():\\n    pass\\n')\n"
    register(sqlite_engine, "test-editor", source, tmp_path)
    result = make_harness(sqlite_engine, memo, tmp_path).run(EvalRequest(agent="test-editor"))
    task = result.result(instance_id)
    assert task.state is SubmissionState.empty
    assert task.dropped_tests == ("tests/test_memo.py",)
    assert task.scores[ScoreSuite.original].a == 0
    assert not task.resolved(ScoreSuite.original, rule="count")


def test_deselecting_the_probes_from_a_config_file_gains_nothing(
    sqlite_engine: Engine, memo: MemoRepo, tmp_path: Path
) -> None:
    """N_p comes from the golden run: a probe the candidate's run never collects is not passed."""
    instance_id = seed(sqlite_engine, memo)
    source = (
        "import pathlib\n"
        f"pathlib.Path('cachelib/memo.py').write_text({ADVERSARIAL_MEMO!r})\n"
        "pathlib.Path('pytest.ini').write_text('[pytest]\\naddopts = -k \"not probe\"\\n')\n"
    )
    register(sqlite_engine, "deselector", source, tmp_path)
    result = make_harness(sqlite_engine, memo, tmp_path).run(EvalRequest(agent="deselector"))
    probes = result.result(instance_id).scores[ScoreSuite.with_probes]
    assert (probes.n, probes.a, probes.g) == (4, 2, 4)
    with session_scope(sqlite_engine) as session:
        runs = [r for r in session.exec(select(ValidationRun)) if r.control == Control.submission]
    assert [r.n_collected for r in runs] == [2]  # the probes were never collected
    assert not probes.resolved_count and not probes.resolved_set

"""Which control a failed submission fails like: the closest failing set (Jaccard, on the tests
both runs collected), read from the stored control runs of its task."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from bot.evaluate.grading import RepoSetup, grading_task, make_grader, record_run
from bot.evaluate.harness import EvalRequest
from bot.evaluate.leaderboard import build_leaderboard
from bot.evaluate.resemblance import Resemblance, RunTests, closest_control, count_by_control
from runners.backends.local import LocalBackend
from runners.types import PatchSpec
from task_registry.db import session_scope
from task_registry.evaluation import register_agent
from task_registry.models import AdversarialPatchCreate, AgentCreate
from task_registry.tasks import add_adversarial, get_task
from task_registry.types import Control
from tests.harness_support import (
    ADVERSARIAL_MEMO,
    MemoRepo,
    make_harness,
    make_memo_repo,
    seed,
)

F = frozenset
ALL = F({"o1", "o2", "p1", "p2"})


def run_of(failed: set[str], collected: frozenset[str] = ALL) -> RunTests:
    return RunTests(collected=collected, failed=F(failed))


@pytest.mark.parametrize(
    ("submission", "controls", "expected"),
    [
        # fails only the cache probe, like the adversarial; the hollow fails everything
        (
            run_of({"p1"}),
            {"hollow": run_of({"o1", "o2", "p1", "p2"}), "adversarial #1": run_of({"p1"})},
            Resemblance("adversarial #1", 1.0, 1),
        ),
        # fails everything, like the hollow patch (and the snapshot, equally: first label wins)
        (
            run_of({"o1", "o2", "p1", "p2"}),
            {
                "snapshot": run_of({"o1", "o2", "p1", "p2"}),
                "hollow": run_of({"o1", "o2", "p1", "p2"}),
            },
            Resemblance("hollow", 1.0, 4),
        ),
        # nothing in common enough
        (run_of({"o1"}), {"adversarial #1": run_of({"p1"})}, None),
        # passes everything: nothing to resemble
        (run_of(set()), {"hollow": run_of({"o1"})}, None),
        # only tests both runs collected count: p2 was never run by the control
        (
            run_of({"p1", "p2"}),
            {"adversarial #2": run_of({"p1"}, collected=F({"o1", "o2", "p1"}))},
            Resemblance("adversarial #2", 1.0, 1),
        ),
    ],
)
def test_the_closest_control_is_the_most_similar_failing_set(
    submission: RunTests, controls: dict[str, RunTests], expected: Resemblance | None
) -> None:
    assert closest_control(submission, controls) == expected


def test_counts_group_adversarials_together() -> None:
    found = [Resemblance("adversarial #1 (x)", 1, 1), Resemblance("adversarial #2 (y)", 1, 1), None]
    assert count_by_control(found) == {"adversarial": 2, "none": 1}


@pytest.fixture(scope="module")
def memo(tmp_path_factory: pytest.TempPathFactory) -> MemoRepo:
    return make_memo_repo(tmp_path_factory.mktemp("upstream"))


def store_controls(engine: Engine, memo: MemoRepo, instance_id: str, root: Path) -> None:
    """Run the hollow and the adversarial patch as validation does, and store the runs."""
    backend = LocalBackend(workspace_root=root / "runs", cpu_slots=2, gpu_indices=())
    with session_scope(engine) as session:
        task = grading_task(
            session=session, task=get_task(session=session, instance_id=instance_id)
        )
        patch = add_adversarial(
            session=session,
            patch_in=AdversarialPatchCreate(
                task_id=task.task_id, operator="force_branch", patch=memo.adversarial
            ),
        )
    grader = make_grader(backend, RepoSetup(mirror=memo.mirror), task)
    for control, diff, adversarial_id in (
        (Control.hollow, memo.hollow, None),
        (Control.adversarial, memo.adversarial, patch.id),
    ):
        result = backend.run(grader.request([PatchSpec(str(control), diff)], str(control)))
        with session_scope(engine) as session:
            run = record_run(
                session=session,
                task_id=task.task_id,
                control=control,
                result=result,
                runner="local",
            )
            run.adversarial_id = adversarial_id
            session.add(run)


def test_failed_submissions_are_labelled_with_the_control_they_fail_like(
    sqlite_engine: Engine, memo: MemoRepo, tmp_path: Path
) -> None:
    instance_id = seed(sqlite_engine, memo)
    store_controls(sqlite_engine, memo, instance_id, tmp_path)
    script = tmp_path / "adversary.py"
    script.write_text(
        f"import pathlib, sys\npathlib.Path(sys.argv[1], 'cachelib', 'memo.py').write_text({ADVERSARIAL_MEMO!r})\n"
    )
    with session_scope(sqlite_engine) as session:
        command = f"{sys.executable} {script} {{workdir}}"
        register_agent(session=session, agent_in=AgentCreate(name="adversary", command=command))
    harness = make_harness(sqlite_engine, memo, tmp_path)
    for agent in ("hollow", "adversary", "oracle"):
        harness.run(EvalRequest(agent=agent))
    with session_scope(sqlite_engine) as session:
        runs = {r.run: r for r in build_leaderboard(session=session).runs}
    assert runs["hollow"].task_lines[0].fails_like == "hollow"
    assert runs["adversary"].task_lines[0].fails_like == "adversarial #1 (force_branch)"
    assert runs["adversary"].fails_like == {"adversarial": 1}
    assert runs["oracle"].task_lines[0].fails_like is None and runs["oracle"].fails_like == {}

"""Each job step is redone by its stored outcome, not skipped because a row exists.

Regression: a report job reclaimed after its worker was killed mid-validation found the task
row, moved on, and stored a report from a task that was only built ("tests check 0 of 5
promise(s) … no surviving patch shows a gap"). The report's input is now refused for such a
task, whoever asks; a task that waits for a runner that can run its tests finished its
validation (its report says it waits), and ``ensure_task`` builds or validates again by what
the task's status says.
"""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine

from bot.pipeline import TaskStep, next_step
from bot.report.store import NotValidated, load_report_input, report_input
from task_registry.coverage import WaitingTest, stored_coverage
from task_registry.db import session_scope
from task_registry.types import TaskStatus
from tests.factories import make_task

REPO, NUMBER = "acme/infra-lib", 5


def test_no_report_input_comes_from_a_task_whose_validation_did_not_finish(
    sqlite_engine: Engine,
) -> None:
    with session_scope(sqlite_engine) as session:
        task = make_task(session, NUMBER, repo=REPO, status=TaskStatus.built)
        with pytest.raises(NotValidated, match="validation did not finish"):
            report_input(session, task)
        with pytest.raises(NotValidated, match=f"probewatch validate {task.instance_id}"):
            load_report_input(session=session, repo=REPO, number=NUMBER)


def test_a_task_that_waits_for_a_runner_or_is_validated_gives_its_report(
    sqlite_engine: Engine,
) -> None:
    with session_scope(sqlite_engine) as session:
        waiting = make_task(session, NUMBER, repo=REPO, status=TaskStatus.built)
        table = stored_coverage(waiting)
        gpu = WaitingTest(path="tests/test_two_gpus.py", reason="needs 2 GPU(s)")
        waiting.coverage = table.model_copy(update={"waiting": [gpu]}).model_dump(mode="json")
        validated = make_task(session, NUMBER + 1, repo=REPO, status=TaskStatus.validated)

        assert report_input(session, waiting).table.waiting == [gpu]
        assert report_input(session, validated).pull_number == NUMBER + 1


@pytest.mark.parametrize(
    ("status", "step"),
    [
        (None, TaskStep.build),
        (TaskStatus.candidate, TaskStep.build),  # a build that never finished
        (TaskStatus.built, TaskStep.validate),  # a validation cut short, or waiting
        (TaskStatus.validated, TaskStep.done),
        (TaskStatus.published, TaskStep.done),
        (TaskStatus.retired, TaskStep.done),
    ],
)
def test_the_next_step_follows_the_stored_outcome(
    sqlite_engine: Engine, status: TaskStatus | None, step: TaskStep
) -> None:
    with session_scope(sqlite_engine) as session:
        task = make_task(session, NUMBER, repo=REPO, status=status) if status else None
        assert next_step(task) is step

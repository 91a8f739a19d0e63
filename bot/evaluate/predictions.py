"""SWE-bench predictions files, graded the way ``eval`` grades an agent's submissions.

A predictions file holds one JSON object per line with ``instance_id``,
``model_name_or_path`` and ``model_patch``, as SWE-bench's harness reads it.
The whole file is checked before anything is stored: each line is JSON with the
three keys as strings, a patch that is not empty, one prediction per instance
and model, a validated or published task with a clone to grade it from, and no
earlier grade of another patch under the same run label. The first fault stops
the command with ``FILE:LINE: what is wrong; how to fix it``. Then, in one
transaction, each model is registered as an agent (command
:data:`PREDICTIONS_COMMAND`, no model row and so no cutoff) and each prediction
stored as that agent's submission, ``submitted``. Grading is
:meth:`Harness.run` itself: a submitted submission is graded without running an
agent, in a clean tree with the post-change tests and the accepted probes, and
each instance's run, scores and status are stored together. A rerun of the
same file reports what is graded as graded earlier and grades the rest.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlmodel import Session

from bot.evaluate.harness import ELIGIBLE_STATUSES, Harness
from bot.evaluate.reference_agents import ensure_reference_agents
from bot.evaluate.types import EvalReport, EvalRequest, ProgressCallback, RepoResolver
from probewatch.errors import EvaluationError
from task_registry.db import session_scope
from task_registry.evaluation import (
    find_agent,
    find_submission,
    get_or_create_submission,
    register_agent,
    set_submission_status,
)
from task_registry.models import AgentCreate, SubmissionCreate, Task
from task_registry.tasks import find_task, get_task
from task_registry.types import SubmissionStatus

PREDICTION_KEYS = ("instance_id", "model_name_or_path", "model_patch")
# The command of an agent whose submissions come from predictions files: it runs nothing.
PREDICTIONS_COMMAND = "predictions:swebench"
EACH_LINE = "each line is one JSON object with instance_id, model_name_or_path and model_patch"


class PredictionsError(EvaluationError):
    """A predictions file that cannot be graded: the file, the line, what is wrong, the fix."""

    def __init__(self, path: Path, line: int | None, reason: str, fix: str) -> None:
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {reason}; {fix}")


@dataclass(frozen=True)
class Prediction:
    line: int
    instance_id: str
    model: str
    patch: str


# --- the file ---------------------------------------------------------------------------------


def read_predictions(path: Path) -> tuple[Prediction, ...]:
    """Every prediction of the file, each line checked; the first bad one raises."""
    predictions: list[Prediction] = []
    seen: dict[tuple[str, str], int] = {}
    # JSONL lines end at "\n" only: str.splitlines would also split at U+2028 inside a patch.
    for number, line in enumerate(_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        prediction = _parse_line(path, number, line)
        first = seen.setdefault((prediction.model, prediction.instance_id), number)
        if first != number:
            reason = f"{prediction.model} on {prediction.instance_id} repeats line {first}"
            raise PredictionsError(path, number, reason, "keep one prediction per model and task")
        predictions.append(prediction)
    if not predictions:
        raise PredictionsError(path, None, "holds no prediction", EACH_LINE)
    return tuple(predictions)


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        fix = "pass the path of a SWE-bench predictions file (JSONL)"
        raise PredictionsError(path, None, "no such file", fix) from None
    except UnicodeDecodeError as exc:
        raise PredictionsError(
            path, None, f"not UTF-8 ({exc.reason})", "save it as UTF-8"
        ) from None
    except OSError as exc:
        raise PredictionsError(path, None, exc.strerror or "cannot be read", EACH_LINE) from None


def _parse_line(path: Path, number: int, line: str) -> Prediction:
    try:
        row: Any = json.loads(line)
    except json.JSONDecodeError as exc:
        raise PredictionsError(path, number, f"not JSON ({exc.msg})", EACH_LINE) from None
    if not isinstance(row, dict):
        raise PredictionsError(path, number, "not a JSON object", EACH_LINE)
    for key in PREDICTION_KEYS:
        _check_key(path, number, row, key)
    return Prediction(number, row["instance_id"], row["model_name_or_path"], row["model_patch"])


def _check_key(path: Path, number: int, row: dict[str, Any], key: str) -> None:
    if key not in row:
        raise PredictionsError(path, number, f"no {key}", EACH_LINE)
    value = row[key]
    if value is not None and not isinstance(value, str):
        raise PredictionsError(path, number, f"{key} is not a string", "write it as a JSON string")
    if (value or "").strip():
        return
    if key == "model_patch":
        fix = "put the model's diff in it, or leave the line out"
        raise PredictionsError(path, number, f"model_patch of {row['instance_id']} is empty", fix)
    raise PredictionsError(path, number, f"{key} is empty", EACH_LINE)


# --- the registry -----------------------------------------------------------------------------


def check_predictions(
    *,
    session: Session,
    path: Path,
    predictions: Sequence[Prediction],
    run_label: str,
    repos: RepoResolver,
) -> None:
    """Every prediction can be graded here; the first that cannot raises, naming its line."""
    ensure_reference_agents(session=session)  # their names are taken even before first use
    for prediction in predictions:
        task = _gradable_task(session, path, prediction)
        try:
            repos(task.repo)
        except KeyError:
            reason = f"no local clone or mirror of {task.repo}"
            fix = "set `git` for it in the watch file or pass --git PATH"
            raise PredictionsError(path, prediction.line, reason, fix) from None
        _check_agent(session, path, prediction, task, run_label)


def _gradable_task(session: Session, path: Path, prediction: Prediction) -> Task:
    task = find_task(session=session, instance_id=prediction.instance_id)
    line = prediction.line
    if task is None:
        reason = f"unknown instance_id {prediction.instance_id}"
        fix = "import or build its task first (probewatch import), or leave the line out"
        raise PredictionsError(path, line, reason, fix)
    if task.status not in ELIGIBLE_STATUSES:
        reason = f"task {task.instance_id} is {task.status}, not validated or published"
        raise PredictionsError(path, line, reason, "validate it first, or leave the line out")
    return task


def _check_agent(
    session: Session, path: Path, prediction: Prediction, task: Task, run_label: str
) -> None:
    agent = find_agent(session=session, name=prediction.model)
    if agent is None:
        return
    if agent.command != PREDICTIONS_COMMAND:
        reason = f"{prediction.model!r} is already an agent's name (command {agent.command!r})"
        fix = "name the model differently in model_name_or_path"
        raise PredictionsError(path, prediction.line, reason, fix)
    assert agent.id is not None and task.id is not None
    earlier = find_submission(
        session=session, agent_id=agent.id, task_id=task.id, run_label=run_label
    )
    if earlier is None or earlier.status != SubmissionStatus.graded:
        return
    if earlier.patch != prediction.patch:
        reason = f"{prediction.model} on {task.instance_id} was graded with another patch"
        fix = f"pass --label NEW to grade it as a new run (this one is {run_label!r})"
        raise PredictionsError(path, prediction.line, reason, fix)


def store_predictions(
    *, session: Session, path: Path, predictions: Sequence[Prediction], run_label: str
) -> None:
    """Each model as an agent, each prediction as its submitted submission; one graded
    earlier with the same patch is left as it is."""
    for prediction in predictions:
        agent = find_agent(session=session, name=prediction.model) or register_agent(
            session=session,
            agent_in=AgentCreate(name=prediction.model, command=PREDICTIONS_COMMAND),
        )
        task = get_task(session=session, instance_id=prediction.instance_id)
        assert agent.id is not None and task.id is not None
        submission_in = SubmissionCreate(agent_id=agent.id, task_id=task.id, run_label=run_label)
        row = get_or_create_submission(session=session, submission_in=submission_in)
        if row.status == SubmissionStatus.graded:
            continue
        row.patch, row.wall_s = prediction.patch, None
        row.log = f"[probewatch] prediction from {path.name}:{prediction.line}\n"
        set_submission_status(session=session, submission=row, status=SubmissionStatus.submitted)


# --- grading ----------------------------------------------------------------------------------


def grade_predictions(
    harness: Harness,
    path: Path,
    *,
    run_label: str = "default",
    parallel: int = 1,
    progress: ProgressCallback | None = None,
) -> tuple[EvalReport, ...]:
    """Check the file, store its predictions, and grade each model's as an eval run."""
    predictions = read_predictions(path)
    with session_scope(harness.engine) as session:
        check_predictions(
            session=session,
            path=path,
            predictions=predictions,
            run_label=run_label,
            repos=harness.repos,
        )
        store_predictions(session=session, path=path, predictions=predictions, run_label=run_label)
    tasks_of: dict[str, list[str]] = {}
    for prediction in predictions:
        tasks_of.setdefault(prediction.model, []).append(prediction.instance_id)
    return tuple(
        harness.run(
            EvalRequest(agent=model, tasks=tuple(ids), run_label=run_label, parallel=parallel),
            progress,
        )
        for model, ids in tasks_of.items()
    )

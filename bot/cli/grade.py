"""``probewatch grade --predictions FILE``: a SWE-bench predictions file, graded as ``eval``
grades an agent's patches.

The work is ``bot.evaluate.predictions``: the file is checked whole before
anything is stored (a bad line is one error naming it and the fix), each model
becomes an agent of that name, and each patch is graded in a clean tree with
the task's tests and hidden probes; the results sit on the leaderboard with
``eval``'s. This module prints: progress, then eval's per-task table per model,
or ``--json``. Heavy modules load inside the command.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from bot.cli.common import app_context


def grade(
    ctx: typer.Context,
    predictions: Annotated[
        Path,
        typer.Option(
            "--predictions",
            metavar="FILE.jsonl",
            help="One JSON object a line: instance_id, model_name_or_path, model_patch.",
        ),
    ],
    label: Annotated[
        str, typer.Option(metavar="LABEL", help="Run label: one submission per model, task, label.")
    ] = "default",
    parallel: Annotated[int, typer.Option(min=1, metavar="N", help="Tasks graded at a time.")] = 1,
    git: Annotated[
        Path | None,
        typer.Option(metavar="PATH", help="Local clone or mirror (overrides the watch file)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
) -> None:
    """Grade SWE-bench predictions as eval grades an agent (the model is the agent)."""
    from bot.evaluate import text as eval_text
    from bot.evaluate.harness import local_harness
    from bot.evaluate.predictions import grade_predictions

    context = app_context(ctx)
    harness = local_harness(
        engine=context.checked_engine(),
        settings=context.settings,
        watch=context.watch_file(),
        git=git,
    )
    reports = grade_predictions(
        harness,
        predictions,
        run_label=label,
        parallel=parallel,
        progress=None if as_json else eval_text.progress_line,
    )
    if as_json:
        runs = [eval_text.report_json(report) for report in reports]
        typer.echo(json.dumps({"predictions": str(predictions), "runs": runs}, indent=2))
        return
    for report in reports:
        eval_text.print_report(report)

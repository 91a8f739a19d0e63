"""``probewatch demo``: the whole pipeline on the demo repository, with a progress line per step.

The orchestration lives in ``bot.demo.run``; this module prints. It creates the
demo upstream repository in the home folder (or reuses it), mines it, builds
and validates its tasks, stores the three PR reports in dry run, grades the
reference agents, prints the leaderboard and says how to open the dashboard.
A rerun redoes nothing that is already done. Heavy modules load inside the
command, so ``probewatch --help`` stays light.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from bot.cli.common import app_context, console

if TYPE_CHECKING:
    from bot.context import AppContext
    from bot.demo.run import DemoEvent, DemoResult

STAGE_COLOURS = {"repo": "magenta", "mine": "blue", "report": "green", "eval": "yellow"}


def progress_line(event: DemoEvent) -> None:
    stage_line(str(event.stage), event.message)


def stage_line(stage: str, message: str) -> None:
    """One progress line: the stage right-aligned in its colour, then the message."""
    colour = STAGE_COLOURS.get(stage, "cyan")
    console().print(f"[{colour}]{stage:>11}[/{colour}] {escape(message)}", highlight=False)


def demo(ctx: typer.Context) -> None:
    """Run the pipeline end to end on the demo repository (mine → build → validate → report →
    grade the reference agents → leaderboard). A rerun skips what is done."""
    from bot.demo.run import run_demo
    from bot.evaluate import text as eval_text

    context = app_context(ctx)
    started = time.monotonic()
    result = run_demo(
        engine=context.checked_engine(),
        settings=context.settings,
        progress=progress_line,
        eval_progress=eval_text.progress_line,
    )
    _print_leaderboard(context)
    _print_closing(context, result, time.monotonic() - started)


def _print_leaderboard(context: AppContext) -> None:
    from bot.evaluate.leaderboard import build_leaderboard
    from bot.evaluate.text import print_leaderboard

    stage_line("leaderboard", "scores of every graded run")
    with context.session() as session:
        board = build_leaderboard(session=session)
    print_leaderboard(board)


def _print_closing(context: AppContext, result: DemoResult, wall_s: float) -> None:
    url = context.settings.public_url.rstrip("/")
    layout = result.layout
    lines = [
        f"demo finished in {wall_s:.0f} s; everything is stored in {context.settings.home}",
        f"  demo repository: {layout.repo} (probes: {layout.probes})",
        f"  database: {context.settings.shown_database_url}",
        "  PR reports (dry run: stored, not posted): "
        + ", ".join(f"#{r.number}" for r in result.reports),
        "serve the HTML dashboard and reports with:",
        f"  PROBEWATCH_HOME={context.settings.home} PROBEWATCH_WATCH_FILE={layout.watch_file} "
        "probewatch serve",
        f"  dashboard: {url}/   leaderboard: {url}/leaderboard",
    ]
    lines += [f"  task: {url}/tasks/{t.instance_id}" for t in result.tasks]
    lines += [f"  report: {url}/reports/{r.repo}/{r.number}" for r in result.reports]
    for line in lines:
        console().print(line, markup=False, highlight=False, soft_wrap=True)

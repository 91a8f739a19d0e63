"""``probewatch eval``, ``agents``, ``leaderboard`` and ``compare``: agents on tasks, and scores.

``agents add`` registers an agent command template with its model and that
model's knowledge cutoff (the template must pass the statement on; a registered
agent is overwritten only with ``--replace``); ``agents list`` shows them (the reference agents
``oracle``, ``empty`` and ``hollow`` are registered on first use). ``eval``
runs an agent on the selected tasks (contamination-free by its cutoff) and
grades each submission, with progress; a rerun skips graded submissions.
``leaderboard`` prints every run's scores side by side (original tests vs
with probes, both Resolved rules, SE and bootstrap interval, faults, the
overturn count) and their series per time window; ``compare`` pairs two runs
on their shared tasks with an exact McNemar test. Heavy modules load inside
the commands.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from bot.cli.choices import RuleChoice, SuiteChoice, WindowChoice
from bot.cli.common import ProbewatchTyper, app_context, console, fail
from bot.cli.refs import FORMS, TASK_METAVAR, pull_ref

if TYPE_CHECKING:
    from bot.context import AppContext
    from bot.evaluate.harness import Harness
    from task_registry.models import Agent, Model

eval_app = ProbewatchTyper()  # merged into the root app: eval, leaderboard, compare
agents_app = ProbewatchTyper(
    help="Register and list agents (command templates).", no_args_is_help=True
)

DEFAULT_BUDGET_S = 2.5 * 3600  # runners.agents.DEFAULT_BUDGET_S (not imported: --help stays light)


# --- agents ---------------------------------------------------------------------------------


@agents_app.command("add")
def agents_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Agent name.")],
    command: Annotated[
        str,
        typer.Option(
            metavar="TEMPLATE",
            help="Command template: {workdir} {statement} {statement_file} {model} {budget_s} "
            "{patch_file}, each replaced inside its word (no shell runs); it must pass the "
            "task on with {statement} or {statement_file}.",
        ),
    ],
    model: Annotated[str, typer.Option(metavar="MODEL", help="Model the agent uses.")],
    cutoff: Annotated[
        str, typer.Option(metavar="YYYY-MM-DD", help="The model's knowledge cutoff.")
    ],
    provider: Annotated[
        str | None, typer.Option(metavar="NAME", help="Who serves the model.")
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite an agent already registered.")
    ] = False,
) -> None:
    """Register an agent with its model and the model's knowledge cutoff."""
    from bot.evaluate.reference_agents import ReferenceAgent
    from runners.agents import TemplateError, check_agent_command
    from task_registry.evaluation import find_agent, register_agent, register_model
    from task_registry.models import AgentCreate, ModelCreate

    if name in {a.value for a in ReferenceAgent}:
        raise typer.BadParameter(f"{name!r} is a built-in reference agent", param_hint="NAME")
    try:
        check_agent_command(command)
    except TemplateError as exc:
        raise typer.BadParameter(str(exc), param_hint="--command") from None
    model_in = ModelCreate(name=model, provider=provider, knowledge_cutoff=_day(cutoff, "--cutoff"))
    with app_context(ctx).session() as session:
        existing = find_agent(session=session, name=name)
        if existing is not None and not replace:
            fail(
                f"agent {name} is already registered (command {existing.command!r}): "
                "pass --replace to overwrite it"
            )
        row = register_model(session=session, model_in=model_in)
        agent_in = AgentCreate(name=name, command=command, model_id=row.id)
        register_agent(session=session, agent_in=agent_in)
    console().print(f"agent {name}: {command} (model {model}, cutoff {model_in.knowledge_cutoff})")


def _day(value: str, hint: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a date YYYY-MM-DD", param_hint=hint) from None


@agents_app.command("list")
def agents_list(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """List the agents, reference agents included."""
    from sqlmodel import col, select

    from bot.evaluate.reference_agents import ensure_reference_agents
    from task_registry.models import Agent, Model

    with app_context(ctx).session() as session:
        ensure_reference_agents(session=session)
        models = {m.id: m for m in session.exec(select(Model))}
        agents = list(session.exec(select(Agent).order_by(col(Agent.name))))
        rows = [_agent_row(a, models.get(a.model_id)) for a in agents]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table("agent", "command", "model", "cutoff", "reference")
    for row in rows:
        table.add_row(
            escape(str(row["name"])),
            escape(str(row["command"])),
            str(row["model"] or "—"),
            str(row["knowledge_cutoff"] or "—"),
            "yes" if row["builtin"] else "",
        )
    console().print(table)


def _agent_row(agent: Agent, model: Model | None) -> dict[str, object]:
    return {
        "name": agent.name,
        "command": agent.command,
        "builtin": agent.builtin,
        "model": model.name if model else None,
        "knowledge_cutoff": str(model.knowledge_cutoff) if model else None,
    }


# --- eval -------------------------------------------------------------------------------------


@eval_app.command("eval")
def eval_command(
    ctx: typer.Context,
    agent: Annotated[
        str, typer.Option(metavar="NAME", help="Registered agent, or oracle / empty / hollow.")
    ],
    tasks: Annotated[
        list[str] | None,
        typer.Option(
            metavar=TASK_METAVAR,
            help=f"Task: {FORMS} (repeatable, or comma-separated); default: all eligible.",
        ),
    ] = None,
    since: Annotated[
        str | None, typer.Option(metavar="YYYY-MM-DD", help="Only tasks merged on or after.")
    ] = None,
    parallel: Annotated[int, typer.Option(min=1, metavar="N", help="Tasks run at a time.")] = 1,
    budget_s: Annotated[
        float, typer.Option(min=1.0, metavar="SECONDS", help="Agent budget per task.")
    ] = DEFAULT_BUDGET_S,
    label: Annotated[
        str, typer.Option(metavar="LABEL", help="Run label: one submission per agent, task, label.")
    ] = "default",
    margin_days: Annotated[
        int,
        typer.Option(
            min=0, metavar="DAYS", help="Tasks must be merged this many days after the cutoff."
        ),
    ] = 0,
    git: Annotated[
        Path | None,
        typer.Option(metavar="PATH", help="Local clone or mirror (overrides the watch file)."),
    ] = None,
    pass_env: Annotated[
        list[str] | None,
        typer.Option(metavar="VARIABLE", help="Host variable the agent gets (its API key)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Run an agent on the selected tasks and grade every submission (resumable)."""
    from bot.evaluate import text as eval_text
    from bot.evaluate.harness import EvalRequest

    if tasks and since:
        raise typer.BadParameter("choose one of --tasks and --since")
    request = EvalRequest(
        agent=agent,
        tasks=_instance_ids(tasks or []),
        since=_day(since, "--since") if since else None,
        parallel=parallel,
        budget_s=budget_s,
        run_label=label,
        margin_days=margin_days,
        pass_env=tuple(pass_env or ()),
    )
    report = _harness(app_context(ctx), git).run(
        request, progress=None if as_json else eval_text.progress_line
    )
    if as_json:
        typer.echo(json.dumps(eval_text.report_json(report), indent=2))
    else:
        eval_text.print_report(report)


def _instance_ids(tasks: list[str]) -> tuple[str, ...]:
    words = (word.strip() for item in tasks for word in item.split(","))
    return tuple(pull_ref(word, param_hint="--tasks").instance_id for word in words if word)


def _harness(context: AppContext, git: Path | None) -> Harness:
    from bot.evaluate.harness import local_harness

    return local_harness(
        engine=context.checked_engine(),
        settings=context.settings,
        watch=context.watch_file(),
        git=git,
    )


# --- leaderboard and compare ---------------------------------------------------------------------


@eval_app.command("leaderboard")
def leaderboard_command(
    ctx: typer.Context,
    window: Annotated[WindowChoice, typer.Option(help="Time window of the series.")] = "month",
    margin_days: Annotated[
        int,
        typer.Option(
            min=0, metavar="DAYS", help="Tasks must be merged this many days after the cutoff."
        ),
    ] = 0,
    svg: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Also write the scores-over-time plot.")
    ] = None,
    areas: Annotated[bool, typer.Option("--areas", help="Also break scores down by area.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Every run's scores: original tests vs with probes, both Resolved rules, per window."""
    from bot.evaluate import text as eval_text
    from bot.evaluate.leaderboard import build_leaderboard
    from task_registry.scoring import Window

    with app_context(ctx).session() as session:
        board = build_leaderboard(session=session, window=Window(window), margin_days=margin_days)
    if svg is not None:
        from bot.evaluate.plots import leaderboard_svg

        svg.write_text(leaderboard_svg(board), encoding="utf-8")
    if as_json:
        typer.echo(board.model_dump_json(indent=2))
        return
    eval_text.print_leaderboard(board, areas=areas)
    if svg is not None:
        console().print(f"plot written to {svg}")


@eval_app.command("compare")
def compare_command(
    ctx: typer.Context,
    run_a: Annotated[str, typer.Argument(help="First run: AGENT or AGENT@LABEL.")],
    run_b: Annotated[str, typer.Argument(help="Second run.")],
    suite: Annotated[SuiteChoice, typer.Option(help="The tests judged.")] = "with_probes",
    rule: Annotated[RuleChoice, typer.Option(help="The Resolved rule.")] = "set",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Two runs on their shared tasks: fixed, broken, both, neither, and McNemar's exact p."""
    from bot.evaluate import text as eval_text
    from bot.evaluate.leaderboard import compare_runs
    from task_registry.types import ScoreSuite

    with app_context(ctx).session() as session:
        result = compare_runs(
            session=session, run_a=run_a, run_b=run_b, suite=ScoreSuite(suite), rule=rule
        )
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
        return
    eval_text.print_comparison(result)

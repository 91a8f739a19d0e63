"""The ``probewatch`` command line: a Typer app built from one sub-app per stage.

Heavy modules (SQLAlchemy, FastAPI, PyGithub, torch) are imported inside the
commands, so ``probewatch --help`` answers at once. Every ``ProbewatchError``
becomes one line on stderr and exit code 1 (``bot.cli.common``); usage errors
exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from bot.cli import build as cli_build
from bot.cli import demo as cli_demo
from bot.cli import grade as cli_grade
from bot.cli import report as cli_report
from bot.cli.choices import STATUSES, FormatChoice
from bot.cli.common import ProbewatchTyper, app_context, console
from bot.cli.envs import envs_app
from bot.cli.eval import agents_app, eval_app
from bot.cli.mine import candidates_app, mine_app
from bot.cli.runners import runners_app
from bot.context import AppContext
from bot.settings import load_settings

if TYPE_CHECKING:
    from task_registry.types import TaskStatus

app = ProbewatchTyper(
    name="probewatch",
    help="Probe-checked benchmark tasks and PR coverage reports from merged large PRs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
db_app = ProbewatchTyper(help="Create and migrate the registry schema.", no_args_is_help=True)
config_app = ProbewatchTyper(help="Check settings and the watch file.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(config_app, name="config")
app.add_typer(envs_app, name="envs")
app.add_typer(runners_app, name="runners")
app.add_typer(mine_app, name="mine")
app.add_typer(candidates_app, name="candidates")
app.command("build")(cli_build.build)
app.command("validate")(cli_build.validate)
app.command("show")(cli_build.show)
app.command("report")(cli_report.report)
app.add_typer(eval_app)  # eval, leaderboard, compare
app.command("grade")(cli_grade.grade)
app.add_typer(agents_app, name="agents")
app.command("demo")(cli_demo.demo)


@app.callback()
def root(
    ctx: typer.Context,
    home: Annotated[Path | None, typer.Option(help="Home folder (PROBEWATCH_HOME).")] = None,
    database_url: Annotated[
        str | None, typer.Option(help="SQLAlchemy URL (PROBEWATCH_DATABASE_URL).")
    ] = None,
    watch_file: Annotated[
        Path | None, typer.Option(help="Watch file (PROBEWATCH_WATCH_FILE).")
    ] = None,
) -> None:
    overrides = {"home": home, "database_url": database_url, "watch_file": watch_file}
    given = {k: v for k, v in overrides.items() if v is not None}
    ctx.obj = AppContext(load_settings(**given))


# --- db ------------------------------------------------------------------------------


@db_app.command("upgrade")
def db_upgrade(ctx: typer.Context) -> None:
    """Create the schema, or migrate it to this version's head. A second run does nothing."""
    from task_registry.db import upgrade

    engine = app_context(ctx).engine
    before, after = upgrade(engine)
    where = engine.url.render_as_string(hide_password=True)
    if before == after:
        console().print(f"{where}: already at {after}, nothing to do")
    else:
        console().print(f"{where}: upgraded {before or 'empty database'} → {after}")


@db_app.command("current")
def db_current(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Print the schema revision of the database and the one this code expects."""
    from task_registry.db import current_revision, head_revision

    current, head = current_revision(app_context(ctx).engine), head_revision()
    if as_json:
        typer.echo(json.dumps({"database": current, "code": head, "current": current == head}))
        return
    console().print(f"database: {current or 'no schema'}  code: {head}")


# --- config --------------------------------------------------------------------------


@config_app.command("check")
def config_check(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Read the settings and the watch file, and list the watched repositories."""
    context = app_context(ctx)
    watch = context.watch_file()
    if as_json:
        rows = [repo.model_dump(mode="json") for repo in watch.repos]
        typer.echo(json.dumps({"watch_file": str(watch.path), "repos": rows}, indent=2))
        return
    table = Table("repo", "threshold", "core paths", "tests", "runner labels", "dry run")
    for repo in watch.repos:
        tests = ", ".join([*repo.tests.cpu_globs, repo.tests.cpu_marker or ""]).strip(", ")
        table.add_row(
            repo.name,
            str(repo.size_threshold),
            ", ".join(repo.core_paths),
            tests or f"{repo.tests.default_gpus} GPU(s)",
            ", ".join(repo.runner_labels),
            "yes" if repo.dry_run else "no",
        )
    console().print(f"watch file: {watch.path or '(none: set PROBEWATCH_WATCH_FILE)'}")
    console().print(table)
    console().print(f"database: {context.settings.shown_database_url}")


# --- export / import -----------------------------------------------------------------


@app.command("export")
def export(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="JSONL file to write.")],
    fmt: Annotated[
        FormatChoice, typer.Option("--format", help="Only swebench for now.")
    ] = "swebench",
    status: Annotated[
        list[str] | None,
        typer.Option(
            metavar="[" + "|".join(STATUSES) + "]",
            help="Only tasks in this status (repeatable).",
        ),
    ] = None,
    include_hidden: Annotated[
        bool,
        typer.Option(
            help="Also write probe code, adversarial and hollow patches; a validated task "
            "with an empty FAIL_TO_PASS gets its accepted probes as FAIL_TO_PASS."
        ),
    ] = False,
) -> None:
    """Write tasks as SWE-bench-compatible JSONL."""
    from task_registry.swebench import export_rows, export_warnings, write_jsonl
    from task_registry.types import TaskStatus

    if fmt != "swebench":
        raise typer.BadParameter(f"unknown format {fmt!r} (known: swebench)", param_hint="--format")
    statuses = [_task_status(s) for s in status or []] or [
        s for s in TaskStatus if s is not TaskStatus.retired
    ]
    with app_context(ctx).session() as session:
        rows = export_rows(session=session, statuses=statuses, include_hidden=include_hidden)
        count = write_jsonl(rows, path)
        warnings = export_warnings(
            session=session, statuses=statuses, include_hidden=include_hidden
        )
    console().print(f"wrote {count} task(s) to {path}")
    for line in warnings:
        typer.echo(f"warning: {line}", err=True)


def _task_status(value: str) -> TaskStatus:
    from task_registry.types import TaskStatus

    try:
        return TaskStatus(value)
    except ValueError:
        known = ", ".join(TaskStatus)
        raise typer.BadParameter(f"{value!r} (known: {known})", param_hint="--status") from None


@app.command("import")
def import_(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="SWE-bench JSONL file to read.")],
    skip_existing: Annotated[bool, typer.Option(help="Keep tasks already stored.")] = False,
    replace: Annotated[bool, typer.Option(help="Replace tasks already stored.")] = False,
) -> None:
    """Read SWE-bench JSONL; every line is checked before anything is stored."""
    from task_registry.swebench import OnConflict, import_jsonl

    if skip_existing and replace:
        raise typer.BadParameter("choose one of --skip-existing and --replace")
    mode = OnConflict.fail
    if skip_existing or replace:
        mode = OnConflict.skip if skip_existing else OnConflict.replace_existing
    with app_context(ctx).session() as session:
        report = import_jsonl(session=session, path=path, on_conflict=mode)
    console().print(
        f"{path}: {len(report.created)} created, {len(report.replaced)} replaced, "
        f"{len(report.skipped)} skipped"
    )


# --- serve ---------------------------------------------------------------------------


@app.command("serve")
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind.")] = 8080,
    web: Annotated[bool, typer.Option(help="Serve the webhook, API and dashboard.")] = True,
    worker: Annotated[bool, typer.Option(help="Run a job worker in this process.")] = True,
    scheduler: Annotated[bool, typer.Option(help="Run the polling scheduler.")] = True,
) -> None:
    """Run the service: web app (webhook, API, dashboard), a job worker and the scheduler."""
    from bot.service.run import Parts, run_service

    if not (web or worker or scheduler):
        raise typer.BadParameter("nothing to run: enable --web, --worker or --scheduler")
    run_service(app_context(ctx), Parts(web=web, worker=worker, scheduler=scheduler), host, port)


# --- entry point ---------------------------------------------------------------------


def main() -> None:
    """Console-script entry; errors are handled by the root group (``bot.cli.common``)."""
    app()


if __name__ == "__main__":
    main()

"""``probewatch build``, ``validate`` and ``show``: from an accepted candidate to a validated task.

``build TASK`` derives the task from the candidate PR and a local mirror
of its repository (``--git``, else the one the service keeps): patch split,
promises, assertion profile, contract, statement, hollow and adversarial
patches. ``validate TASK`` runs the acceptance protocol on this host
with the probes in ``--probes DIR`` (or those already stored) and stores the
coverage table; ``show TASK`` prints it. A task is named by its instance id
(``OWNER__NAME-N``) or its pull request (``OWNER/NAME#N``). A rebuild that takes
a validated task back to built says so. Runs show progress on stderr, so
``--json`` output on stdout stays clean. Heavy modules load inside the commands.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from bot.cli.common import app_context, console, err_console, fail
from bot.cli.refs import TASK_HELP, TASK_METAVAR, PullRef, pull_ref

if TYPE_CHECKING:
    from bot.context import AppContext
    from bot.watchfile import WatchedRepo
    from probe_builder.pipeline import (
        BuildResult,
        ProgressEvent,
        RepoSettings,
        ValidationResult,
    )
    from task_registry.types import TaskStatus

RUNS_FOLDER = "runs"  # under the home folder: the work trees of validation runs


def repo_settings(context: AppContext, ref: PullRef) -> tuple[RepoSettings, WatchedRepo | None]:
    """The repository's run settings and mirror from the watch file (``bot.repos``), or the
    defaults for a repository it does not list."""
    from bot.repos import run_settings

    watch = context.watch_file()
    watched = watch.find(ref.repo)
    settings = run_settings(watched, settings=context.settings, watch=watch)
    return settings, watched


def _mirror(
    context: AppContext, given: Path | None, watched: WatchedRepo | None, instance: str
) -> Path:
    """``--git``; else the watched repository's history as the service keeps it (its
    ``git`` clone, or a bare mirror of its ``url`` under the home, cloned on first use)."""
    from bot.repos import mirror_of

    if given is not None:
        if not given.exists():
            fail(f"the mirror {given} does not exist")
        return given
    if watched is None:
        fail(f"no mirror for {instance}: pass --git PATH, or watch the repository")
    return mirror_of(watched, context.settings)


@contextmanager
def _progress(label: str) -> Iterator[Any]:
    """A spinner on stderr that shows the latest progress event."""
    with err_console().status(escape(label)) as status:

        def show(event: ProgressEvent) -> None:
            count = f"[{event.done}] " if event.done is not None else ""
            status.update(escape(f"{label}: {count}{event.message}"))

        yield show


def _print_json(document: Any) -> None:
    typer.echo(json.dumps(document, indent=2, default=str))


# --- build -------------------------------------------------------------------------------


def build(
    ctx: typer.Context,
    task: Annotated[str, typer.Argument(metavar=TASK_METAVAR, help=TASK_HELP)],
    git: Annotated[
        Path | None,
        typer.Option(
            "--git",
            metavar="PATH",
            help="Local clone or mirror (default: the watched repository's).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Build a task from an accepted candidate: split, promises, contract, statement, patches."""
    from bot.authoring import configured_author
    from probe_builder.pipeline import build_task

    ref = pull_ref(task)
    instance = ref.instance_id
    context = app_context(ctx)
    settings, watched = repo_settings(context, ref)
    mirror = _mirror(context, git, watched, instance)
    engine = context.checked_engine()
    before = _stored_status(context, instance)
    with _progress(f"building {instance}") as show:
        result = build_task(
            engine=engine,
            instance_id=instance,
            mirror=mirror,
            settings=settings,
            author=configured_author(context.settings, engine),
            progress=show,
        )
    if as_json:
        _print_json(build_summary(result, before))
        return
    _print_build(result, before)


def _stored_status(context: AppContext, instance: str) -> TaskStatus | None:
    """The task's status before this build; None when it is new."""
    from task_registry.tasks import find_task
    from task_registry.types import TaskStatus

    with context.session() as session:
        row = find_task(session=session, instance_id=instance)
        return TaskStatus(row.status) if row is not None else None


def status_change(result: BuildResult, before: TaskStatus | None) -> str | None:
    """What a curator must hear when a rebuild takes a task back a step; None otherwise.

    An unchanged rebuild keeps the status; a changed one replaces the promises and
    adversarials the validation judged, so that validation no longer holds.
    """
    from task_registry.types import TaskStatus

    if before is not TaskStatus.validated or result.status == before:
        return None
    return (
        f"{result.instance_id} was {before}; its material changed, so it is {result.status} "
        f"again: run `probewatch validate {result.instance_id}` to validate it again"
    )


def build_summary(result: BuildResult, before: TaskStatus | None = None) -> dict[str, Any]:
    return {
        "instance_id": result.instance_id,
        "action": str(result.action),
        "status": str(result.status),
        "previous_status": str(before) if before is not None else None,
        "status_change": status_change(result, before),
        "promises": result.promises,
        "adversarials": result.adversarials,
        "statement_lint_ok": result.lint_ok,
        "statement_leaks_ok": result.leaks_ok,
        "notes": list(result.notes),
    }


def _print_build(result: BuildResult, before: TaskStatus | None) -> None:
    out = console()
    out.print(
        f"{result.instance_id}: {result.action}, status {result.status}: "
        f"{result.promises} promise(s), {result.adversarials} adversarial patch(es), "
        f"statement lint {'ok' if result.lint_ok else 'FAILED'}, "
        f"leak check {'ok' if result.leaks_ok else 'FAILED'}",
        highlight=False,
    )
    change = status_change(result, before)
    if change is not None:
        out.print(f"  {change}", markup=False, highlight=False)
    for note in result.notes:
        out.print(f"  note: {note}", markup=False, highlight=False)


# --- validate ----------------------------------------------------------------------------


def validate(
    ctx: typer.Context,
    task: Annotated[str, typer.Argument(metavar=TASK_METAVAR, help=TASK_HELP)],
    probes: Annotated[
        Path | None,
        typer.Option(
            "--probes",
            metavar="DIR",
            help="Folder of probe files (test_*.py; an optional probes.toml maps a file to "
            "its promise category under a categories table). "
            "Default: the probes already stored for the task.",
        ),
    ] = None,
    git: Annotated[
        Path | None,
        typer.Option(
            "--git",
            metavar="PATH",
            help="Local clone or mirror (default: the watched repository's).",
        ),
    ] = None,
    cpu_slots: Annotated[
        int | None,
        typer.Option(min=1, metavar="N", help="Parallel CPU runs (default: half the cores)."),
    ] = None,
    no_coverage: Annotated[
        bool,
        typer.Option("--no-coverage", help="Judge every adversarial on all the PR's tests."),
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Run again even when nothing changed since.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Run the acceptance protocol (golden x3, snapshot, hollow, adversarials) and store it."""
    from bot.authoring import configured_author
    from bot.repos import validation_backend
    from probe_builder.pipeline import load_probe_folder, validate_task
    from runners.types import Hardware
    from task_registry.tasks import get_task

    ref = pull_ref(task)
    instance = ref.instance_id
    context = app_context(ctx)
    settings, watched = repo_settings(context, ref)
    mirror = _mirror(context, git, watched, instance)
    root = context.settings.home / RUNS_FOLDER
    engine = context.checked_engine()
    with context.session() as session:
        row = get_task(session=session, instance_id=instance)
        hardware = Hardware(row.gpus, row.gpu_type)
    backend = validation_backend(
        context.settings, context.watch_file(), ref.repo, hardware, cpu_slots=cpu_slots
    )
    with _progress(f"validating {instance}") as show:
        chosen = load_probe_folder(probes) if probes is not None else None
        result = validate_task(
            engine=engine,
            author=configured_author(context.settings, engine),
            instance_id=instance,
            mirror=mirror,
            settings=settings,
            backend=backend,
            workspace_root=root,
            probes=chosen,
            use_coverage=not no_coverage,
            force=force,
            progress=show,
        )
    if as_json:
        _print_json(validation_summary(result))
        return
    _print_validation(result)


def validation_summary(result: ValidationResult) -> dict[str, Any]:
    from dataclasses import asdict

    return {
        "instance_id": result.instance_id,
        "probe_set_accepted": result.accepted,
        "probes": [
            {
                "path": o.probe.path,
                "accepted": o.accepted,
                "reason": o.reason,
                "golden_passes": o.golden_passes,
                "golden_runs": o.golden_runs,
                "rejects": [ref.label for ref in o.rejects],
            }
            for o in result.probes
        ],
        "survivors": list(result.survivors),
        "runs": result.runs,
        "revision_rounds": result.rounds,
        "survivor_search": asdict(result.stats) if result.stats else None,
        "waiting": [w.model_dump() for w in result.table.waiting],
        "notes": list(result.notes),
    }


def _verdict(accepted: bool, waiting: bool, reason: str | None) -> str:
    if accepted:
        return "accepted"
    return f"waiting: {reason}" if waiting else f"rejected: {reason}"


def _print_validation(result: ValidationResult) -> None:
    out = console()
    verdict = "accepted" if result.accepted else "not accepted"
    out.print(
        f"{result.instance_id}: probe set {verdict}; {len(result.survivors)} surviving "
        f"adversarial patch(es); {result.runs} run(s)",
        highlight=False,
    )
    if result.probes:
        table = Table("probe", "verdict", "golden", "rejects")
        for o in result.probes:
            table.add_row(
                escape(o.probe.path),
                escape(_verdict(o.accepted, o.waiting, o.reason)),
                f"{o.golden_passes}/{o.golden_runs}",
                escape(", ".join(ref.label for ref in o.rejects) or "nothing"),
            )
        out.print(table)
    for note in result.notes:
        out.print(f"  note: {note}", markup=False, highlight=False)


# --- show --------------------------------------------------------------------------------


def show(
    ctx: typer.Context,
    task: Annotated[str, typer.Argument(metavar=TASK_METAVAR, help=TASK_HELP)],
    as_json: Annotated[bool, typer.Option("--json", help="Print the table as JSON.")] = False,
) -> None:
    """Print a task's coverage table: promise, PR-test verdict, probes, controls, survivors."""
    from probe_builder.coverage import render_coverage
    from task_registry.coverage import CoverageTable
    from task_registry.tasks import get_task

    instance = pull_ref(task).instance_id
    with app_context(ctx).session() as session:
        row = get_task(session=session, instance_id=instance)
        status, coverage = row.status, row.coverage
        f2p, p2p = len(row.fail_to_pass), len(row.pass_to_pass)
    if not coverage:
        fail(f"task {instance} has no coverage table yet: run `probewatch build {instance}`")
    table = CoverageTable.model_validate(coverage)
    if as_json:
        _print_json({"status": str(status), **table.model_dump(mode="json")})
        return
    out = console()
    out.print(f"{instance}: {status}; FAIL_TO_PASS {f2p}, PASS_TO_PASS {p2p}", highlight=False)
    out.print(render_coverage(table))
    for item in table.waiting:
        out.print(f"  not run here: {item.path}: {item.reason}", markup=False, highlight=False)
    for note in table.notes:
        out.print(f"  note: {note}", markup=False, highlight=False)

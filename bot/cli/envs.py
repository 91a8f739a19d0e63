"""``probewatch envs``: list, measure, collect and build the shared environments.

All environments live under ``$PROBEWATCH_HOME/envs`` (one per lock hash),
linked from one uv cache. ``du`` shows what sharing saves; ``dedupe`` links
identical files of different package versions together (every build does this
for its own files; the command runs the whole pass); ``gc`` removes
environments nobody used lately and no task references; ``build`` resolves and
builds one by hand for a repository at a commit.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bot.cli.common import ProbewatchTyper, app_context, console, repo_option

if TYPE_CHECKING:
    from runners.env import EnvHome, Prepared

envs_app = ProbewatchTyper(
    help="Shared environments: list, du, dedupe, gc, build.", no_args_is_help=True
)


def _home(ctx: typer.Context) -> EnvHome:
    from runners.env import EnvHome

    return EnvHome(app_context(ctx).settings.home)


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{n} B"
        value /= 1024
    return f"{n} B"


@envs_app.command("list")
def list_(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """List environments, most recently used first."""
    from rich.table import Table

    from runners.env import list_environments

    infos = list_environments(_home(ctx))
    if as_json:
        rows = [
            {
                "lock_hash": i.lock_hash,
                "root": str(i.root),
                "last_used": i.last_used,
                "manifest": i.manifest.model_dump(mode="json"),
            }
            for i in infos
        ]
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table("hash", "python", "pins", "repo @ commit", "era", "repairs", "last used")
    for info in infos:
        m = info.manifest
        origin = f"{m.provenance.repo or '-'} @ {m.provenance.commit[:10] or '-'}"
        used = datetime.fromtimestamp(info.last_used, UTC).strftime("%Y-%m-%d %H:%M")
        table.add_row(
            info.lock_hash[:12],
            m.python_version,
            str(len(m.pins)),
            origin,
            (m.exclude_newer or "today")[:10],
            str(len(m.repairs)),
            used,
        )
    console().print(table)
    console().print(f"{len(infos)} environment(s) in {_home(ctx).envs}")


@envs_app.command("du")
def du(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Apparent bytes (each environment a full copy), actual bytes (hard links once), saving."""
    from runners.env import home_usage

    usage = home_usage(_home(ctx))
    envs = usage.environments
    report = {
        "apparent_bytes": envs.apparent_bytes,
        "actual_bytes": envs.actual_bytes,
        "saving": round(envs.saving, 4),
        "cache_only_bytes": usage.cache_only_bytes,
        "on_disk_bytes": usage.on_disk_bytes,
        "saving_with_cache": round(usage.saving_with_cache, 4),
        "files": envs.files,
    }
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    typer.echo(f"apparent  {_size(envs.apparent_bytes):>12}  ({envs.files} files)")
    typer.echo(f"actual    {_size(envs.actual_bytes):>12}  (hard links counted once)")
    typer.echo(f"saving    {envs.saving:>11.1%}")
    typer.echo(f"uv cache  {_size(usage.cache_only_bytes):>12}  (not linked into any environment)")
    typer.echo(
        f"on disk   {_size(usage.on_disk_bytes):>12}  "
        f"(saving {usage.saving_with_cache:.1%} with the cache charged)"
    )


@envs_app.command("dedupe")
def dedupe(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Hard-link identical files across all environments and the uv cache (safe while in use)."""
    from runners.env import home_usage
    from runners.env.dedupe import deduplicate

    home = _home(ctx)
    before = home_usage(home).on_disk_bytes
    report = deduplicate(home)
    after = home_usage(home).on_disk_bytes
    if as_json:
        typer.echo(json.dumps({**report.__dict__, "on_disk_before": before, "on_disk": after}))
        return
    typer.echo(
        f"{report.files_seen} files, {report.inodes_hashed} compared, "
        f"{report.paths_relinked} relinked, {_size(report.bytes_freed)} freed"
    )
    typer.echo(f"on disk   {_size(before):>12} -> {_size(after)}")


@envs_app.command("gc")
def gc(
    ctx: typer.Context,
    unused_days: Annotated[
        float, typer.Option(metavar="DAYS", help="Remove if not used for this many days.")
    ] = 14.0,
    keep: Annotated[
        list[str] | None, typer.Option(metavar="HASH", help="Lock hash to keep (repeatable).")
    ] = None,
    registry: Annotated[bool, typer.Option(help="Keep hashes that registry tasks name.")] = True,
    dry_run: Annotated[bool, typer.Option(help="Say what would go; remove nothing.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Remove environments unused for N days and unreferenced; never one being built or used."""
    from dataclasses import asdict

    from runners.env import collect_garbage

    if unused_days < 0:
        raise typer.BadParameter("must be ≥ 0", param_hint="--unused-days")
    kept = set(keep or [])
    if registry:
        kept |= _registry_hashes(ctx)
    report = collect_garbage(
        _home(ctx), unused_days=unused_days, keep=frozenset(kept), dry_run=dry_run
    )
    if as_json:
        typer.echo(json.dumps({"dry_run": dry_run, **asdict(report)}, indent=2))
        return
    verb = "would remove" if dry_run else "removed"
    typer.echo(f"{verb} {len(report.removed)}: {' '.join(h[:12] for h in report.removed)}")
    typer.echo(
        f"kept: {len(report.kept_referenced)} referenced, {len(report.kept_recent)} "
        f"recent, {len(report.kept_in_use)} in use or building"
    )
    if report.removed_partial:
        typer.echo(f"{verb} {len(report.removed_partial)} dead partial build(s)")


def _registry_hashes(ctx: typer.Context) -> set[str]:
    """Lock hashes the registry's tasks name; none when there is no registry yet."""
    settings = ctx.find_root().obj.settings
    if settings.database_url is None and not (settings.home / "probewatch.db").exists():
        typer.echo("no registry database yet: no task references read", err=True)
        return set()
    from sqlmodel import select

    from task_registry.db import SchemaOutOfDate
    from task_registry.models import Task

    try:
        with ctx.find_root().obj.session() as session:
            names = session.exec(select(Task.lock_hash)).all()
    except SchemaOutOfDate:
        typer.echo("registry has no current schema: no task references read", err=True)
        return set()
    # Tasks may carry the algorithm as a prefix ("sha256:<hex>"); folders are the bare hex.
    return {name.removeprefix("sha256:") for name in names if name}


@envs_app.command("build")
def build(
    ctx: typer.Context,
    repo: Annotated[Path, typer.Argument(metavar="REPO", help="Local clone or bare mirror.")],
    commit: Annotated[str, typer.Argument(help="Commit whose requirement files count.")],
    merge_time: Annotated[
        datetime | None,
        typer.Option(metavar="TIME", help="Resolve as the index was then (ISO time, UTC)."),
    ] = None,
    repo_name: Annotated[
        str,
        typer.Option(
            metavar="OWNER/NAME",
            help="The repository: its shipped config applies.",
            callback=repo_option,
        ),
    ] = "",
    test: Annotated[
        list[str] | None, typer.Option(metavar="PATH", help="Test path to collect (repeatable).")
    ] = None,
    tests_commit: Annotated[
        str | None, typer.Option(metavar="COMMIT", help="Commit holding the tests.")
    ] = None,
    override: Annotated[
        list[str] | None,
        typer.Option(
            metavar="PIN",
            help="Runner pin, e.g. torch==2.13.0+cpu.",
            envvar="PROBEWATCH_ENV_OVERRIDES",
        ),
    ] = None,
    find_links: Annotated[
        list[Path] | None,
        typer.Option(
            metavar="DIR", help="Folder of local wheels.", envvar="PROBEWATCH_ENV_FIND_LINKS"
        ),
    ] = None,
    exclude: Annotated[
        list[str] | None, typer.Option(metavar="DISTRIBUTION", help="Distribution to leave out.")
    ] = None,
) -> None:
    """Resolve and build the environment of REPO at COMMIT (with repairs when --test is given)."""
    from runners.env import EnvRequest, RunnerOverrides, prepare_environment
    from runners.env.config import known_repo_config

    config = known_repo_config(repo_name)
    if exclude:
        config = type(config)(**{**config.__dict__, "exclude": (*config.exclude, *exclude)})
    request = EnvRequest(
        repo=repo,
        commit=commit,
        merge_time=merge_time,
        config=config,
        repo_name=repo_name,
        overrides=RunnerOverrides(tuple(override or ()), tuple(find_links or ())),
        tests=tuple(test or ()),
        tests_commit=tests_commit,
    )
    prepared = prepare_environment(request, _home(ctx))
    _print_prepared(prepared)


def _print_prepared(prepared: Prepared) -> None:
    ref = prepared.build.ref
    state = "built" if prepared.builds else "found"
    typer.echo(
        f"{state} {ref.lock_hash} ({len(prepared.lock.pins)} pins, "
        f"{prepared.seconds:.1f}s): {ref.root}"
    )
    for repair in prepared.repairs:
        typer.echo(
            f"repair round {repair.round}: {repair.module} -> "
            f"{repair.distribution or '-'}: {repair.outcome} {repair.detail}".rstrip()
        )
    if prepared.collection is not None and not prepared.collection.ok:
        typer.echo("collection still fails:\n" + prepared.collection.output[-2000:])

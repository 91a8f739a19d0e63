"""``probewatch report OWNER/NAME#N`` (or ``OWNER__NAME-N``): the report the bot would post on a PR.

It is rendered from the registry exactly as the report job renders it (the task's stored
coverage table and its survivors' patches), in dry run: nothing is posted or stored.
``--json`` prints the body with its summary, hash and what could not run here, for
scripts. The maintainers' ``.github/probewatch.yml`` is not read (no GitHub here): the
body shows every survivor, including those in paths the repository may ignore.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from bot.cli.common import app_context, fail
from bot.cli.refs import FORMS, pull_ref


def report(
    ctx: typer.Context,
    pr: Annotated[
        str, typer.Argument(metavar="PR", help=f"The pull request or its task: {FORMS}.")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Print the report the bot would post on a PR (Markdown), from the registry; dry run."""
    from bot.report.render import full_report_url, render_report
    from bot.report.store import load_report_input

    ref = pull_ref(pr, param_hint="PR")
    repo, number = ref.repo, ref.number
    context = app_context(ctx)
    with context.session() as session:
        found = load_report_input(session=session, repo=repo, number=number)
    if found is None:
        fail(
            f"no task for {ref}: build and validate it first (`probewatch build {ref.instance_id}`)"
        )
    url = full_report_url(context.settings.public_url, repo, number)
    rendered = render_report(found, full_url=url)
    if not as_json:
        typer.echo(rendered.body, nl=False)
        return
    document = {
        "repo": repo,
        "pull_number": number,
        "actionable": rendered.actionable,
        "summary": rendered.summary,
        "omitted": rendered.omitted,
        "body_hash": rendered.body_hash,
        "waiting": [item.model_dump() for item in found.table.waiting],
        "body": rendered.body,
    }
    typer.echo(json.dumps(document, indent=2))

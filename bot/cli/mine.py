"""``probewatch mine`` and ``probewatch candidates``: discover merged large PRs, then curate them.

``mine`` reads a local clone or mirror (``--git PATH``) or the GitHub API
(``--github``) over a window of merge times, or from the stored cursor, and
stores every merged PR as a candidate with its filter verdict; ``--funnel``
prints how many PRs were left after each filter, ``--json`` the whole report;
progress (GitHub pages, PRs seen, file lists read) goes to stderr.
The repository's settings come from the watch file (defaults otherwise).
``candidates`` lists them by rank and records the curator's decision, which
later mining never overwrites. Heavy modules load inside the commands.
"""

from __future__ import annotations

import getpass
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from bot.cli.choices import DecisionChoice, Verdict
from bot.cli.common import ProbewatchTyper, app_context, console, fail, progress, repo_option
from bot.cli.refs import FORMS, parse_pull_ref
from bot.repos import mining_config

if TYPE_CHECKING:
    from sqlmodel import Session

    from bot.context import AppContext
    from bot.watchfile import WatchedRepo
    from pr_miner.report import MiningReport
    from pr_miner.sources.base import PRSource, ScanProgress
    from task_registry.models import CandidatePR
    from task_registry.types import Decision, FilterVerdict, PRKind

mine_app = ProbewatchTyper(
    help="Mine merged large PRs from a git clone/mirror or GitHub into candidates.",
    invoke_without_command=True,
)
candidates_app = ProbewatchTyper(
    help="List, show, accept and reject mined candidates.", no_args_is_help=True
)

GITLAB_REF = re.compile(r"^(?P<repo>[^#!\s]+/[^#!\s]+)!(?P<number>\d+)$")
CANDIDATE_FORMS = f"a candidate id, {FORMS}, or OWNER/NAME!N for GitLab"
CANDIDATE_HELP = f"The candidate: {CANDIDATE_FORMS}."
TOP_SURVIVORS = 10
FILES_EVERY = 10  # progress tells every this many file lists fetched
MIN_TITLE_WIDTH = 12


def parse_moment(value: str | None, option: str) -> datetime | None:
    """A date (``2025-01-01``, midnight UTC) or an ISO time; a time without zone is UTC."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is not a date (YYYY-MM-DD) or ISO time", param_hint=option
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


# --- mine ------------------------------------------------------------------------------


@mine_app.callback()
def mine(
    ctx: typer.Context,
    repo: Annotated[
        str,
        typer.Option(
            "--repo",
            metavar="OWNER/NAME",
            help="The repository, as on GitHub.",
            callback=repo_option,
        ),
    ],
    git: Annotated[
        Path | None,
        typer.Option("--git", metavar="PATH", help="Local clone or bare mirror to read."),
    ] = None,
    github: Annotated[bool, typer.Option("--github", help="Read the GitHub API.")] = False,
    branch: Annotated[
        str | None,
        typer.Option(metavar="BRANCH", help="Mainline branch (default: watch file, else main)."),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(metavar="YYYY-MM-DD", help="Merged at or after; default: the cursor."),
    ] = None,
    until: Annotated[str | None, typer.Option(metavar="YYYY-MM-DD", help="Merged before.")] = None,
    funnel: Annotated[bool, typer.Option("--funnel", help="Print the filter funnel.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    batch_size: Annotated[int, typer.Option(min=1, metavar="N", help="PRs per transaction.")] = 100,
) -> None:
    """Mine merged PRs into candidates; re-mining a window stores nothing new."""
    if ctx.invoked_subcommand is not None:
        return
    window = (parse_moment(since, "--since"), parse_moment(until, "--until"))
    if window[0] and window[1] and window[0] >= window[1]:
        raise typer.BadParameter("--since must be before --until", param_hint="--since")
    context = app_context(ctx)
    watched = context.watch_file().find(repo)
    git = _git_path(git, github, watched)
    branch = branch or (watched.default_branch if watched else "main")
    with progress(f"mining {repo}") as show:
        source = _source(context, repo, git, branch, show)
        report = _run(context, repo, source, watched, window, batch_size)
    _print_report(report, funnel=funnel, as_json=as_json)


def _git_path(git: Path | None, github: bool, watched: WatchedRepo | None) -> Path | None:
    if git is not None and github:
        raise typer.BadParameter("choose one of --git PATH and --github", param_hint="--git")
    if git is None and not github:
        if watched is None or watched.git is None:
            raise typer.BadParameter(
                "say where to mine: --git PATH or --github (or set git in the watch file)",
                param_hint="--git",
            )
        return watched.git
    return git


def _source(
    context: AppContext, repo: str, git: Path | None, branch: str, show: Callable[[str], None]
) -> PRSource:
    from pr_miner.sources.git_source import GitSource

    if git is not None:
        return GitSource(git, branch)
    from pr_miner.sources.github_source import GitHubSource
    from probewatch.github import make_client

    client = make_client(context.settings.github_client_config())
    return GitHubSource(client, repo, branch, on_progress=lambda done: _tell(done, show))


def _tell(done: ScanProgress, show: Callable[[str], None]) -> None:
    """Every listing page; every FILES_EVERY-th file list (a first run reads hundreds)."""
    if done.files and done.files % FILES_EVERY:
        return
    read = f"; files of {done.files:,} PR(s) read" if done.files else ""
    show(f"GitHub: {done.pages:,} page(s), {done.seen:,} PR(s) seen{read}")


def _run(
    context: AppContext,
    repo: str,
    source: PRSource,
    watched: WatchedRepo | None,
    window: tuple[datetime | None, datetime | None],
    batch_size: int,
) -> MiningReport:
    from pr_miner.mining import mine as mine_repo

    return mine_repo(
        engine=context.checked_engine(),
        repo=repo,
        source=source,
        config=mining_config(watched),
        since=window[0],
        until=window[1],
        default_branch=watched.default_branch if watched else "main",
        batch_size=batch_size,
    )


def _print_report(report: MiningReport, *, funnel: bool, as_json: bool) -> None:
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
        return
    console().print(_summary(report), highlight=False, markup=False, soft_wrap=True)
    if funnel:
        console().print(_funnel_table(report))
    if report.survivors:
        console().print(_survivor_table(report))


def _summary(report: MiningReport) -> str:
    if report.not_modified:
        return f"{report.repo} from {report.source}: nothing changed since the last poll"
    merged = next((s.count for s in report.funnel if s.name == "merged"), 0)
    lines = [
        f"{report.repo} from {report.source}: {report.funnel[0].count:,} "
        f"{report.funnel[0].label}, {merged:,} merged PRs, {len(report.survivors):,} survivors",
        f"stored: {report.created:,} new, {report.updated:,} updated, "
        f"{report.unchanged:,} unchanged; auto-accepted: {len(report.auto_accepted)}",
        f"cursor: {report.cursor_after or '(none)'}",
    ]
    if report.quota is not None:
        lines.append(f"GitHub quota left: {report.quota.remaining:,} of {report.quota.limit:,}")
    return "\n".join([*lines, *report.notes])


def _funnel_table(report: MiningReport) -> Table:
    table = Table("step", "left", "dropped", title="funnel")
    previous: int | None = None
    for step in report.funnel[1:]:
        dropped = "" if previous is None else f"{previous - step.count:,}"
        table.add_row(step.label, f"{step.count:,}", dropped)
        previous = step.count
    return table


def _survivor_table(report: MiningReport) -> Table:
    rows = [
        [
            item.ref,
            f"{item.rank_score:.2f}",
            f"{item.core_share:.0%}",
            f"{item.changed_lines:,}",
            f"{item.test_lines_added:,}",
            item.title,
        ]
        for item in report.survivors[:TOP_SURVIVORS]
    ]
    return _table(["PR", "rank", "core", "lines", "tests"], rows, title="top survivors")


def _table(columns: list[str], rows: list[list[str]], *, title: str | None = None) -> Table:
    """Short columns at full width, then the title column cut to what is left of the line."""
    widths = [
        max([len(column), *(len(row[i]) for row in rows)]) for i, column in enumerate(columns)
    ]
    room = max(MIN_TITLE_WIDTH, console().width - sum(widths) - 3 * len(columns) - 6)
    table = Table(*columns, "title", title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    for row in rows:
        text = row[-1] if len(row[-1]) <= room else row[-1][: room - 1] + "…"
        table.add_row(*row[:-1], escape(text))
    for column in table.columns:
        column.no_wrap = True
    return table


# --- candidates --------------------------------------------------------------------------


@candidates_app.command("list")
def candidates_list(
    ctx: typer.Context,
    repo: Annotated[
        str | None,
        typer.Option(metavar="OWNER/NAME", help="Only this repository.", callback=repo_option),
    ] = None,
    verdict: Annotated[Verdict, typer.Option(help="The filters' verdict, or all.")] = "passed",
    decision: Annotated[
        DecisionChoice | None, typer.Option(help="Only this curator decision.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, metavar="N", help="At most this many.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Candidates by rank, best first (survivors of the filters by default)."""
    from task_registry.candidates import list_candidates
    from task_registry.repos import get_repo, list_repos

    wanted, decided = _list_filters(verdict, decision)
    with app_context(ctx).session() as session:
        repo_id = get_repo(session=session, full_name=repo).id if repo else None
        names = {row.id: row.full_name for row in list_repos(session=session)}
        rows = list_candidates(
            session=session, repo_id=repo_id, verdict=wanted, decision=decided, limit=limit
        )
    if as_json:
        typer.echo(json.dumps([_row_json(row, names[row.repo_id]) for row in rows], indent=2))
        return
    console().print(_candidates_table(rows, names))


def _list_filters(
    verdict: Verdict, decision: DecisionChoice | None
) -> tuple[FilterVerdict | None, Decision | None]:
    from task_registry.types import Decision, FilterVerdict

    wanted = None if verdict == "all" else FilterVerdict(verdict)
    return wanted, Decision(decision) if decision is not None else None


def _ref(row: CandidatePR, repo: str) -> str:
    return f"{repo}{'!' if row.kind == 'gitlab' else '#'}{row.number}"


def _row_json(row: CandidatePR, repo: str) -> dict[str, object]:
    from task_registry.models import CandidatePRPublic

    data = CandidatePRPublic.model_validate(row).model_dump(mode="json", exclude={"body", "files"})
    return {"ref": _ref(row, repo), "repo": repo, **data, "file_count": len(row.files)}


def _candidates_table(rows: list[CandidatePR], names: dict[int | None, str]) -> Table:
    """One line per candidate; the repository is named only when the list mixes several."""
    several = len({row.repo_id for row in rows}) > 1
    cells = [
        [
            _ref(row, names[row.repo_id]) if several else _ref(row, ""),
            f"{row.rank_score:.2f}",
            f"{row.core_share:.0%}",
            f"{row.additions + row.deletions:,}",
            f"{row.test_lines_added:,}",
            row.failed_filter or "passed",
            row.decision,
            row.title,
        ]
        for row in rows
    ]
    return _table(["PR", "rank", "core", "lines", "tests", "verdict", "decision"], cells)


@candidates_app.command("show")
def candidates_show(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(metavar="CANDIDATE", help=CANDIDATE_HELP)],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Everything about one candidate: verdict, counts, files, follow-ups, decision."""
    with app_context(ctx).session() as session:
        row = _find(session, ref)
        name = _repo_name(session, row.repo_id)
    if as_json:
        document = {**_row_json(row, name), "body": row.body, "files": row.files}
        typer.echo(json.dumps(document, indent=2))
        return
    console().print(_details(row, name), highlight=False, markup=False, soft_wrap=True)
    console().print(_files_table(row))


def _details(row: CandidatePR, repo: str) -> str:
    from pr_miner.selection.ranking import promise_hints

    verdict = "passed" if row.failed_filter is None else f"rejected by {row.failed_filter}"
    hints = ", ".join(promise_hints(f"{row.title}\n{row.body}")) or "none"
    lines = [
        f"{_ref(row, repo)} (id {row.id}): {row.title}",
        f"merged {row.merged_at:%Y-%m-%d %H:%M} by {row.author or '?'}; "
        f"merge {row.merge_sha or '?'}, base {row.base_sha or '?'}",
        f"verdict: {verdict}{f' ({row.filter_reason})' if row.filter_reason else ''}",
        f"+{row.additions:,} -{row.deletions:,} in {row.changed_files:,} files; "
        f"{row.test_lines_added:,} test lines added; core share {row.core_share:.0%}; "
        f"rank {row.rank_score:.2f}; promise hints: {hints}",
        f"description: {row.description_source}; labels: {', '.join(row.labels) or 'none'}",
        f"decision: {row.decision}"
        + (
            f" by {row.decided_by} ({row.decision_reason or 'no reason'})" if row.decided_by else ""
        ),
    ]
    lines += [
        f"follow-up ({f['relation']}): {f['subject']} [{f.get('sha') or ''}]"
        for f in row.follow_ups
    ]
    return "\n".join(lines)


def _files_table(row: CandidatePR) -> Table:
    table = Table("file", "+", "-", title="files")
    ordered = sorted(row.files, key=lambda f: f["additions"] + f["deletions"], reverse=True)
    for record in ordered[:25]:
        binary = " (binary)" if record.get("binary") else ""
        renamed = f" (from {record['old_path']})" if record.get("old_path") else ""
        name = escape(f"{record['path']}{renamed}{binary}")
        table.add_row(name, str(record["additions"]), str(record["deletions"]))
    if len(ordered) > 25:
        table.add_row(f"… {len(ordered) - 25} more", "", "")
    return table


@candidates_app.command("accept")
def candidates_accept(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(metavar="CANDIDATE", help=CANDIDATE_HELP)],
    reason: Annotated[
        str | None, typer.Option(metavar="TEXT", help="Why (stored with the decision).")
    ] = None,
    by: Annotated[
        str | None, typer.Option(metavar="NAME", help="Who decides (default: your user name).")
    ] = None,
    force: Annotated[bool, typer.Option(help="Accept even though a filter rejected it.")] = False,
) -> None:
    """Accept a candidate: it goes on to build."""
    _decide(ctx, ref, "accepted", reason, by, force=force)


@candidates_app.command("reject")
def candidates_reject(
    ctx: typer.Context,
    ref: Annotated[str, typer.Argument(metavar="CANDIDATE", help=CANDIDATE_HELP)],
    reason: Annotated[
        str | None, typer.Option(metavar="TEXT", help="Why (stored with the decision).")
    ] = None,
    by: Annotated[
        str | None, typer.Option(metavar="NAME", help="Who decides (default: your user name).")
    ] = None,
) -> None:
    """Reject a candidate; mining it again never asks again."""
    _decide(ctx, ref, "rejected", reason, by, force=True)


def _decide(
    ctx: typer.Context, ref: str, decision: str, reason: str | None, by: str | None, *, force: bool
) -> None:
    from task_registry.candidates import decide_candidate
    from task_registry.types import Decision

    with app_context(ctx).session() as session:
        row = _find(session, ref)
        if row.failed_filter is not None and not force:
            fail(
                f"{ref} was rejected by the {row.failed_filter} filter ({row.filter_reason}): "
                "pass --force to accept it anyway"
            )
        assert row.id is not None
        decide_candidate(
            session=session,
            candidate_id=row.id,
            decision=Decision(decision),
            reason=reason,
            decided_by=by or _user(),
        )
    console().print(f"{ref}: {decision}")


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "curator"


def _find(session: Session, ref: str) -> CandidatePR:
    """A candidate by id, ``OWNER/NAME#N``, ``OWNER__NAME-N`` or GitLab's ``OWNER/NAME!N``;
    NotFound (a registry error) otherwise."""
    from task_registry.candidates import find_candidate, get_candidate
    from task_registry.errors import NotFound
    from task_registry.repos import get_repo

    if ref.isdigit():
        return get_candidate(session=session, candidate_id=int(ref))
    repo_name, number, kind = _candidate_ref(ref)
    repo = get_repo(session=session, full_name=repo_name)
    assert repo.id is not None
    found = find_candidate(session=session, repo_id=repo.id, number=number, kind=kind)
    if found is None:
        raise NotFound("candidate", ref)
    return found


def _candidate_ref(ref: str) -> tuple[str, int, PRKind]:
    from task_registry.types import PRKind

    gitlab = GITLAB_REF.match(ref)
    if gitlab is not None:
        return gitlab["repo"], int(gitlab["number"]), PRKind.gitlab
    found = parse_pull_ref(ref)
    if found is None:
        raise typer.BadParameter(
            f"{ref!r} is not a candidate: give {CANDIDATE_FORMS}", param_hint="CANDIDATE"
        )
    return found.repo, found.number, PRKind.github


def _repo_name(session: Session, repo_id: int) -> str:
    from task_registry.models import Repo

    repo = session.get(Repo, repo_id)
    return repo.full_name if repo else str(repo_id)

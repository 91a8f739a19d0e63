"""How evaluation reports, the leaderboard and paired comparisons read in a terminal (rich).

Rendering only: the data comes from ``bot.evaluate.harness`` and ``bot.evaluate.leaderboard``.
Rates read ``67% [21-94]``: the value and its 95% Wilson score interval over the tasks it
counts, as on the dashboard.
"""

from __future__ import annotations

from dataclasses import asdict

from rich.markup import escape
from rich.table import Table

from bot.console import console
from bot.evaluate.leaderboard import (
    UNSANDBOXED_FOOTNOTE,
    Comparison,
    GroupScores,
    Leaderboard,
    RateOut,
    RunScores,
    SuiteScores,
)
from bot.evaluate.types import EvalEvent, EvalReport, Stage
from task_registry.types import ScoreSuite


def progress_line(event: EvalEvent) -> None:
    where = f"[{event.done}/{event.total}]"
    if event.stage is Stage.selected:
        return
    colour = {"graded": "green", "fault": "red", "skipped": "dim"}.get(event.stage, "cyan")
    detail = f" {escape(event.detail)}" if event.detail else ""
    console().print(f"{where} [{colour}]{event.stage}[/{colour}] {event.instance_id}{detail}")


def print_report(report: EvalReport) -> None:
    table = Table("task", "state", "original", "with probes", "resolved (set)", "note")
    for result in report.results:
        original = result.scores.get(ScoreSuite.original)
        probes = result.scores.get(ScoreSuite.with_probes)
        verdict = _verdict(
            result.resolved(ScoreSuite.original), result.resolved(ScoreSuite.with_probes)
        )
        note = "graded earlier" if result.skipped else escape(result.detail)[:60]
        if result.dropped_tests:
            note = f"test edits dropped: {len(result.dropped_tests)}"
        table.add_row(
            result.instance_id,
            str(result.state),
            f"{original.a}/{original.n}" if original else "—",
            f"{probes.a}/{probes.n}" if probes else "—",
            verdict,
            note,
        )
    console().print(table)
    _print_totals(report)


def _verdict(original: bool, with_probes: bool) -> str:
    if original and not with_probes:
        return "[yellow]overturned by probes[/yellow]"
    return "[green]yes[/green]" if with_probes else "no"


def _print_totals(report: EvalReport) -> None:
    scored = [r for r in report.results if r.scores]
    original = sum(r.resolved(ScoreSuite.original) for r in scored)
    probes = sum(r.resolved(ScoreSuite.with_probes) for r in scored)
    console().print(
        f"{report.agent}: resolved (set rule) {original}/{len(scored)} on the original tests, "
        f"{probes}/{len(scored)} with probes ({original - probes} overturned); "
        f"{len(report.faults)} fault(s) excluded; {len(report.skipped)} graded earlier; "
        f"{len(report.excluded_pre_cutoff)} task(s) before the model's cutoff left out; "
        f"{report.wall_s:.1f}s"
    )


def report_json(report: EvalReport) -> dict[str, object]:
    return {
        "agent": report.agent,
        "run_label": report.run_label,
        "excluded_pre_cutoff": list(report.excluded_pre_cutoff),
        "wall_s": report.wall_s,
        "results": [
            {
                "instance_id": r.instance_id,
                "state": str(r.state),
                "skipped": r.skipped,
                "dropped_tests": list(r.dropped_tests),
                "detail": r.detail,
                "scores": {str(k): asdict(v) for k, v in r.scores.items()},
            }
            for r in report.results
        ],
    }


def rate_text(rate: RateOut) -> str:
    """``67% [21-94]``: the rate and its 95% Wilson interval, as the dashboard shows it."""
    return rate.label()


def _resolved_text(scores: SuiteScores, rule: str) -> str:
    count = scores.resolved_set_n if rule == "set" else scores.resolved_count_n
    rate = scores.resolved_set if rule == "set" else scores.resolved_count
    return f"{count}/{scores.tasks}: {rate_text(rate)}"


LEADERBOARD_COLUMNS = (
    "run",
    "suite",
    "Passed",
    "Resolved\ncount rule",
    "Resolved\nset rule",
    "over-\nturned",
    "rules\ndiffer",
)


def print_leaderboard(board: Leaderboard, *, areas: bool = False) -> None:
    if not board.runs:
        console().print("no graded submissions yet: run `probewatch eval --agent oracle`")
        return
    table = Table(
        *LEADERBOARD_COLUMNS,
        title="Leaderboard (contamination-free): % [95% Wilson interval]",
        show_lines=True,
    )
    for run in board.runs:
        for row in _leaderboard_rows(run):
            table.add_row(*row)
    console().print(table)
    if any(run.unsandboxed for run in board.runs):
        console().print(escape(UNSANDBOXED_FOOTNOTE))
    for run in board.runs:
        _print_sets(run)
        _print_groups(run.windows, str(board.window), f"{escape(run.run)} per {board.window}")
        if areas:
            _print_groups(run.areas, "area", f"{escape(run.run)} per area")


def _run_cell(run: RunScores) -> str:
    """Name, model and cutoff, then the task and fault counts."""
    model = f"{run.model} ≤{run.knowledge_cutoff}" if run.model else "—"
    lines = [f"[bold]{escape(run.run)}[/bold]", escape(model if not run.builtin else "reference")]
    lines.append(f"{run.tasks} tasks, {run.faults} faults")
    if run.excluded_pre_cutoff:
        lines.append(f"{run.excluded_pre_cutoff} pre-cutoff left out")
    if run.unsandboxed:
        lines.append(f"[yellow]{escape(run.unsandboxed_label())}[/yellow]")
    return "\n".join(lines)


def _leaderboard_rows(run: RunScores) -> list[list[str]]:
    """Two rows per run, original tests then with probes, so the gap reads down a column."""
    original = _suite_cells("original", run.original)
    with_probes = _suite_cells("with probes", run.with_probes)
    return [
        [_run_cell(run), *original, "", str(run.original.disagreements)],
        ["", *with_probes, str(len(run.overturned)), str(run.with_probes.disagreements)],
    ]


def _suite_cells(name: str, suite: SuiteScores) -> list[str]:
    return [
        name,
        rate_text(suite.passed),
        _resolved_text(suite, "count"),
        _resolved_text(suite, "set"),
    ]


def _print_sets(run: RunScores) -> None:
    resolved = ", ".join(run.with_probes.resolved_set_tasks) or "none"
    console().print(f"[bold]{escape(run.run)}[/bold] resolved with probes (set rule): {resolved}")
    if run.overturned:
        console().print(f"  overturned by probes: {', '.join(run.overturned)}")
    if run.with_probes.disagreement_tasks:
        console().print(f"  rules disagree on: {', '.join(run.with_probes.disagreement_tasks)}")
    if run.with_probes.fault_tasks:
        console().print(f"  faults (excluded): {', '.join(run.with_probes.fault_tasks)}")
    if run.unsandboxed_tasks:
        console().print(f"  from runs without a sandbox: {', '.join(run.unsandboxed_tasks)}")
    if set(run.fails_like) - {"none"}:  # only when some control run was there to compare
        counts = ", ".join(f"{kind} {n}" for kind, n in sorted(run.fails_like.items()))
        console().print(f"  failed submissions fail like: {counts}")


def _print_groups(groups: list[GroupScores], key: str, title: str) -> None:
    table = Table(
        key,
        "tasks",
        "Resolved set\noriginal",
        "Resolved set\nwith probes",
        "Passed\nwith probes",
        "faults",
        title=title,
    )
    for group in groups:
        table.add_row(
            group.key,
            str(group.with_probes.tasks),
            rate_text(group.original.resolved_set),
            rate_text(group.with_probes.resolved_set),
            rate_text(group.with_probes.passed),
            str(group.with_probes.faults),
        )
    console().print(table)


def print_comparison(result: Comparison) -> None:
    a, b = escape(result.run_a), escape(result.run_b)
    table = Table(
        "",
        f"{b} resolved",
        f"{b} not resolved",
        title=f"{a} vs {b}: {result.shared_tasks} shared task(s), "
        f"{result.suite}, {result.rule} rule",
    )
    table.add_row(f"{a} resolved", f"both: {result.both}", f"broken: {result.broken}")
    table.add_row(f"{a} not resolved", f"fixed: {result.fixed}", f"neither: {result.neither}")
    console().print(table)
    console().print(
        f"exact McNemar (sign test on {result.fixed + result.broken} discordant pairs): "
        f"p = {result.p_value:.4g}"
    )
    if result.fixed_tasks:
        console().print(f"fixed by {b}: {', '.join(result.fixed_tasks)}")
    if result.broken_tasks:
        console().print(f"broken by {b}: {', '.join(result.broken_tasks)}")

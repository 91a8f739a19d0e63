"""Real upstream PRs end to end on this runner: mine a window, build, validate, render the report.

The repository's entry in the example watch file gives its mining rules and test
conventions; the clone given replaces its ``git``. Every PR the miner keeps in the window
(newest first) whose own test modules may run on CPU by those conventions (a CPU glob
matches, or nothing decides and the test is tried) is accepted, built with its own
era-locked environment (with this runner's pins), validated on this host (the golden
baseline with line coverage, the snapshot, the hollow patch, every mechanical
adversarial on the tests that cover its line) and its report rendered, all through the
same functions the service uses. PRs whose every test needs GPUs by convention are
counted and named, not built. Prints one row per PR and writes the records as JSON.

    python -m bench.real_prs --mirror PATH --repo volcengine/verl --since 2025-06-01 \\
        --until 2026-02-01 --count 10 --minutes 120 --home "$(mktemp -d)" \\
        --override torch==2.13.0+cpu --find-links DIR_WITH_THE_CPU_TORCH_WHEEL --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.engine import Engine

from bench.args import clone, moment, positive
from bench.verdict_eval import CLAIM_CATEGORIES
from bot.report.evidence import gaps, survivor_hunks
from bot.report.ranking import for_the_comment
from bot.report.render import ReportInput, full_report_url, render_report
from bot.report.store import report_input
from bot.repos import mining_config, run_settings
from bot.settings import load_settings
from bot.watchfile import WatchedRepo, example_watch_file, load_watch_file
from pr_miner.mining import mine
from pr_miner.sources.git_source import GitSource
from probe_builder.pipeline import (
    UNCHANGED_NOTE,
    ProgressEvent,
    RepoSettings,
    Stage,
    ValidationResult,
    build_task,
    changed_test_modules,
    test_placements,
    validate_task,
)
from probewatch.errors import ConfigError, ProbewatchError
from runners.backends.local import LocalBackend
from runners.env import EnvHome, list_environments
from task_registry.candidates import decide_candidate, list_candidates
from task_registry.coverage import CONTRADICTED, CoverageTable, stored_coverage
from task_registry.db import make_engine, session_scope, upgrade
from task_registry.models import CandidatePR
from task_registry.repos import find_repo
from task_registry.swebench import instance_id_for
from task_registry.tasks import (
    adversarial_patches,
    get_task,
    list_test_results,
    list_validation_runs,
)
from task_registry.types import Control, Decision, FilterVerdict, PromiseVerdict

FAILING = ("failed", "error", "timeout")


# A row's outcome when the PR's table was validated: by this run, or by an earlier one whose
# inputs were all the same (no run made).
VALIDATED, REUSED = "validated", "validated before, inputs unchanged: not run again"


@dataclass
class Row:
    number: int
    title: str
    changed_lines: int
    test_modules: int = 0
    cpu_possible: int = 0  # test modules a convention puts on CPU, or that are tried there
    outcome: str = ""  # validated (here or before) | waits for GPU | skipped | error
    error: str = ""
    env_seconds: float = 0.0
    env_hit: bool | None = None  # the environment was there already
    build_seconds: float = 0.0
    validate_seconds: float = 0.0
    tests_run: int = 0  # collected in the golden baseline here
    golden_passed: int = 0
    snapshot_fails: int = 0  # golden-passing tests the pre-change snapshot fails
    hollow_fails: int = 0
    waiting: int = 0  # tests and files that wait for a GPU runner or failed for the machine
    waiting_reasons: list[str] = field(default_factory=list)
    adversarials: int = 0
    survivors: dict[str, int] = field(default_factory=dict)  # per promise category
    undetermined: int = 0  # no passing test here reaches them, and some tests could not run
    runs: int = 0
    report_chars: int = 0
    report_lines: int = 0
    summary: str = ""
    wall_seconds: float = 0.0
    # Every patch that passes the PR's own tests, and where a maintainer meets it
    # (bench/survivor_eval.py scores these against labels).
    survivor_list: list[dict[str, object]] = field(default_factory=list)
    # The report's "not checked" for resource, state and mode promises, against what the
    # validation found (see claim_evidence).
    claims: dict[str, int] = field(default_factory=dict)

    @property
    def built(self) -> bool:
        """Built (validated, waiting for a GPU runner, or failed), not skipped before building."""
        return not self.outcome.startswith("skipped")


def candidates(engine: Engine, repo: str, count: int) -> list[CandidatePR]:
    """The miner's survivors, newest merge first."""
    with session_scope(engine) as session:
        row = find_repo(session=session, full_name=repo)
        assert row is not None and row.id is not None
        passed = list_candidates(session=session, repo_id=row.id, verdict=FilterVerdict.passed)
    passed.sort(key=lambda c: c.merged_at or datetime.min.replace(tzinfo=UTC), reverse=True)
    return passed[: count * 4]  # room for PRs whose tests all need GPUs


def enough(rows: list[Row], count: int, minutes: float, elapsed: float) -> str:
    """Why no further PR is started, or "" to go on.

    ``count`` counts the PRs built (validated, waiting for a GPU runner, or failed), not
    those skipped before building; ``minutes`` (0: none) bounds the wall time of the run,
    from its start, mining included: since one PR's build and validation can take most of
    an hour, no PR starts that a PR of this run's median wall time would carry past it.
    The median is of the PRs validated, where there are some (one that waits for a GPU
    runner or stopped on an error took seconds), else of those that did not stop on an
    error, else of all built.
    """
    built = [r for r in rows if r.built]
    if len(built) >= count:
        return f"stopped: {len(built)} PRs built (--count {count})"
    if not minutes:
        return ""
    # A build that stopped on an error, or whose tests all wait for a GPU runner, took
    # seconds, not the hour a validation may take: the expected time is that of the PRs
    # validated, where there are some.
    ran = (
        [r for r in built if r.outcome == VALIDATED]
        or [r for r in built if r.outcome != "error"]
        or built
    )
    expected = statistics.median(r.wall_seconds for r in ran) / 60 if ran else 0.0
    if elapsed + expected >= minutes:
        return (
            f"stopped: {elapsed:.0f} of --minutes {minutes:g} spent, a PR takes about "
            f"{expected:.0f} ({len(built)} PRs built)"
        )
    return ""


def place(row: Row, mirror: Path, candidate: CandidatePR, settings: RepoSettings) -> bool:
    """Whether any of the PR's own test modules may run on CPU by the conventions."""
    base = f"{candidate.merge_sha}^1"
    modules = changed_test_modules(mirror, base, candidate.merge_sha or "", settings.test_globs)
    placed = test_placements(mirror, candidate.merge_sha or "", modules, settings.hardware)
    row.test_modules = len(placed)
    row.cpu_possible = sum(1 for p in placed if p.hardware.gpus == 0)
    return row.cpu_possible > 0


def run_one(
    engine: Engine,
    home: Path,
    mirror: Path,
    repo: str,
    candidate: CandidatePR,
    settings: RepoSettings,
    cpu_slots: int,
) -> Row:
    started = time.monotonic()
    row = Row(candidate.number, candidate.title[:70], candidate.additions + candidate.deletions)
    if not place(row, mirror, candidate, settings):
        row.outcome = (
            "skipped: every test module needs GPUs by convention"
            if row.test_modules
            else "skipped: the PR changes no test module"
        )
        return row
    with session_scope(engine) as session:
        decide_candidate(
            session=session, candidate_id=candidate.id or 0, decision=Decision.accepted
        )
    instance = instance_id_for(repo, candidate.number)
    before = {e.lock_hash for e in list_environments(EnvHome(home))}
    stamps: dict[str, float] = {}

    def note(event: ProgressEvent) -> None:
        stamps.setdefault(str(event.stage), time.monotonic())

    try:
        build_started = time.monotonic()
        build_task(
            engine=engine, instance_id=instance, mirror=mirror, settings=settings, progress=note
        )
        row.build_seconds = time.monotonic() - build_started
        if Stage.environment in stamps:
            row.env_seconds = stamps[Stage.store] - stamps[Stage.environment]
        validate_started = time.monotonic()
        result = validate_task(
            engine=engine,
            instance_id=instance,
            mirror=mirror,
            settings=settings,
            backend=LocalBackend(workspace_root=home / "runs", cpu_slots=cpu_slots),
            workspace_root=home / "runs",
        )
        row.validate_seconds = time.monotonic() - validate_started
        row.outcome = outcome_of(result)
    except ProbewatchError as exc:
        row.outcome, row.error = "error", f"{type(exc).__name__}: {exc}"[:400]
    describe(engine, home, instance, row, before)
    row.wall_seconds = time.monotonic() - started
    return row


def outcome_of(result: ValidationResult) -> str:
    """Validated here, validated by an earlier run whose inputs are all the same, or waiting
    (nothing of the PR's could run on this runner)."""
    if result.stats is not None:
        return VALIDATED
    if any(note.startswith(UNCHANGED_NOTE) for note in result.notes):
        return REUSED
    return "waits: nothing runs here"


def describe(engine: Engine, home: Path, instance: str, row: Row, before: set[str]) -> None:
    """What the stored task says: its environment, its runs, its table, its report."""
    with session_scope(engine) as session:
        try:
            task = get_task(session=session, instance_id=instance)
        except ProbewatchError:
            return
        row.env_hit = task.lock_hash in before if task.lock_hash else None
        runs = list_validation_runs(session=session, task_id=task.id or 0)
        row.runs = len(runs)
        results = {
            run.control if run.attempt else "baseline": {
                r.test_id: r.outcome for r in list_test_results(session=session, run_id=run.id or 0)
            }
            for run in runs
            if run.control in (Control.golden, Control.snapshot, Control.hollow)
        }
        golden = results.get("baseline", {})
        passed = {t for t, outcome in golden.items() if outcome == "passed"}
        row.tests_run, row.golden_passed = len(golden), len(passed)
        row.snapshot_fails = sum(
            1 for t in passed if results.get(Control.snapshot, {}).get(t) in FAILING
        )
        row.hollow_fails = sum(
            1 for t in passed if results.get(Control.hollow, {}).get(t) in FAILING
        )
        table = stored_coverage(task)
        row.claims = claim_evidence(table)
        row.waiting = len(table.waiting)
        row.waiting_reasons = sorted({w.reason.split(":", 1)[0] for w in table.waiting})
        row.adversarials = len(table.adversarials)
        row.survivors = dict(
            Counter(str(a.promise_category) for a in table.adversarials if a.survives_original)
        )
        row.undetermined = sum(1 for a in table.adversarials if a.survives_original is None)
        url = full_report_url("http://127.0.0.1:8080", task.repo, task.pull_number)
        row.survivor_list = survivor_places(
            table, task.patch, adversarial_patches(session=session, task_id=task.id or 0)
        )
        try:
            report = report_input(session, task)
            rendered = render_report(report, full_url=url)
        except ProbewatchError as exc:
            row.summary = f"no report: {exc}"  # a task whose validation did not finish
            return
        mark_shown(row.survivor_list, report)
    row.report_chars, row.report_lines = len(rendered.body), rendered.body.count("\n")
    row.summary = rendered.summary


BACKED = "not checked, a survivor backs it"
REFUTED = "not checked, all killed"
OPEN = "not checked, nothing of its kind ran"
CHECKED_BUT_SURVIVED, CHECKED = CONTRADICTED, "checked, none contradicted"


def claim_evidence(table: CoverageTable) -> dict[str, int]:
    """Each resource, state or mode promise's verdict beside the adversarials of its
    category in the code it concerns: a "not checked" is backed when one of its patches
    survives the PR's tests and refuted when every such patch that ran was killed by
    them (a patch of its kind in code the promise is not linked to decides nothing). A
    "checked" reading counts as outweighed only where the report says so
    (:meth:`CoverageTable.contradicted`: a survivor of its kind in its own function)."""
    counts: Counter[str] = Counter()
    for promise in table.promises:
        if promise.category not in CLAIM_CATEGORIES or promise.verdict is None:
            continue
        if promise.verdict is PromiseVerdict.checked:
            counts[CHECKED_BUT_SURVIVED if table.contradicted(promise) else CHECKED] += 1
            continue
        ran = [
            a
            for a in table.adversarials
            if promise.concerned_by(a) and a.survives_original is not None
        ]
        survived = bool(promise.survivors) or any(a.survives_original for a in ran)
        counts[BACKED if survived else REFUTED if ran else OPEN] += 1
    return dict(counts)


def claim_figures(rows: list[Row]) -> str:
    """The claim's precision against the validation: backed / (backed + refuted)."""
    total: Counter[str] = Counter()
    for row in rows:
        total.update(row.claims)
    decided = total[BACKED] + total[REFUTED]
    precision = f"{total[BACKED] / decided:.2f}" if decided else "n/a"
    parts = ", ".join(
        f"{k} {total[k]}" for k in (BACKED, REFUTED, OPEN, CHECKED_BUT_SURVIVED, CHECKED)
    )
    return f"'not checked' claims (resource, state, mode): {parts}; precision {precision}"


def survivor_places(
    table: CoverageTable, golden: str, patches: dict[str, str]
) -> list[dict[str, object]]:
    """Every surviving patch: what it changes, and whether the task page lists it (every
    survivor not set aside as likely equivalent), with what it is tied to there: a promise
    the PR's tests miss (a gap a report may show; "read as checked" when the tests were
    read to check it), a feature they check (whose reading the survivor does not outweigh),
    or no promise."""
    gaps_of = {g.patch.id: g for g in gaps(table)}
    linked = table.linked()
    surviving = [a for a in table.adversarials if a.survives_original]
    hunks = survivor_hunks(golden, patches, surviving)
    found: list[dict[str, object]] = []
    for patch in surviving:
        where = f"set aside: {patch.equivalent}" if patch.equivalent else "task page"
        gap = gaps_of.get(patch.id)
        if gap is None:
            link = "checked promise" if patch.id in linked else "no promise"
        elif all(table.contradicted(p) for p in gap.promises):
            link = "missed promise, read as checked"
        else:
            link = "missed promise"
        found.append(
            {
                "id": patch.id,
                "operator": patch.operator,
                "path": patch.path,
                "line": patch.line,
                "category": str(patch.promise_category or ""),
                "description": patch.description,
                "reach": patch.reach,
                "where": where,
                "link": link,
                "hunk": hunks.get(patch.id, ""),
            }
        )
    return found


def mark_shown(places: list[dict[str, object]], report: ReportInput) -> None:
    """Which of the gaps the comment shows (the rest stay on the task page), and their rank."""
    ranked = report.ranked()
    chosen = {g.patch.id for g in for_the_comment(ranked, report.feedback, report.max_entries)}
    order = {g.patch.id: n for n, g in enumerate(ranked, 1)}
    for place in places:
        if place["id"] in chosen:
            place["where"] = "comment"
        if place["id"] in order:
            place["rank"] = order[str(place["id"])]


def watched_entry(
    repo: str, mirror: Path, conventions: str, min_lines: int | None = None
) -> tuple[WatchedRepo, object]:
    """The example watch file's entry for ``repo`` on ``mirror``; ``conventions`` "none"
    tries every test on CPU, ``min_lines`` replaces the entry's size threshold."""
    watch = load_watch_file(example_watch_file())
    entry = watch.find(repo)
    if entry is None:
        known = ", ".join(r.name for r in watch.repos)
        raise ConfigError(
            f"--repo {repo} is not in {example_watch_file()} (it has {known}): "
            "add an entry for it there, or pass one of those"
        )
    watched = entry.model_copy(update={"git": mirror})
    if min_lines is not None:  # smaller PRs too: a promise is not made only in large ones
        watched = watched.model_copy(update={"size_threshold": min_lines})
    if conventions == "none":  # try every test on CPU: how many really run there
        tests = watched.tests.model_copy(
            update={"cpu_globs": [], "gpu_paths": [], "cpu_marker": None}
        )
        watched = watched.model_copy(update={"tests": tests})
    return watched, watch


def print_table(rows: list[Row]) -> None:
    print(
        "| PR | lines | env s (hit) | tests CPU-run / waiting | golden pass | snapshot fails "
        "| survivors (per category) / undetermined | report lines | validate s | wall s | outcome |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        hit = "-" if r.env_hit is None else ("hit" if r.env_hit else "miss")
        survivors = ", ".join(f"{k} {v}" for k, v in sorted(r.survivors.items())) or "0"
        outcome = r.outcome + (f": {r.error[:120]}" if r.error else "")
        print(
            f"| #{r.number} | {r.changed_lines} | {r.env_seconds:.0f} ({hit}) "
            f"| {r.tests_run} / {r.waiting} | {r.golden_passed}/{r.tests_run} "
            f"| {r.snapshot_fails} | {survivors} of {r.adversarials} / {r.undetermined} "
            f"| {r.report_lines} "
            f"| {r.validate_seconds:.0f} | {r.wall_seconds:.0f} | {outcome} |"
        )
    timed = [r.validate_seconds for r in rows if r.outcome == VALIDATED]
    if timed:
        print(f"validation: median {statistics.median(timed):.0f} s, worst {max(timed):.0f} s")
    # a table validated by an earlier run whose inputs are all the same is evidence too
    print(claim_figures([r for r in rows if r.outcome in (VALIDATED, REUSED)]))


def describe_again(home: Path, repo: str, path: Path | None) -> int:
    """The rows of an earlier run, described again by this code (its report and survivors)."""
    if path is None or not path.is_file():
        print("--describe needs the --json file of an earlier run", file=sys.stderr)
        return 2
    engine = make_engine(load_settings(home=home).resolved_database_url)
    rows = [Row(**r) for r in json.loads(path.read_text())]
    for row in rows:
        if row.built:
            env_hit = row.env_hit  # known only when the environment was built
            describe(engine, home, instance_id_for(repo, row.number), row, set())
            row.env_hit = env_hit
    path.write_text(json.dumps([asdict(r) for r in rows], indent=2))
    print_table(rows)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=clone, required=True, help="a clone or bare mirror")
    parser.add_argument(
        "--repo", required=True, help="OWNER/NAME, as the example watch file has it"
    )
    parser.add_argument("--since", type=moment, required=True)
    parser.add_argument("--until", type=moment, required=True)
    parser.add_argument("--count", type=positive, default=10, help="PRs to build and validate")
    parser.add_argument(
        "--minutes",
        type=float,
        default=0.0,
        help="the run's wall time, mining included (0: no limit): no PR starts that a PR of "
        "the run's median time would carry past it; the one running finishes",
    )
    parser.add_argument("--home", type=Path, required=True, help="a PROBEWATCH_HOME of its own")
    parser.add_argument("--override", action="append", default=[], help="a runner pin")
    parser.add_argument("--find-links", type=Path, action="append", default=[])
    parser.add_argument("--conventions", choices=("watch", "none"), default="watch")
    parser.add_argument(
        "--min-lines",
        type=positive,
        help="the fewest changed lines a PR needs to be mined (the watch file's size threshold)",
    )
    parser.add_argument("--cpu-slots", type=positive, default=2, help="parallel CPU runs")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--numbers", default="", help="only these PRs of the window (comma-separated): a rerun"
    )
    parser.add_argument(
        "--describe",
        action="store_true",
        help="describe the PRs the --json file holds again from --home (no build, no run)",
    )
    args = parser.parse_args(argv)
    try:
        wanted = {int(n) for n in args.numbers.split(",") if n.strip()}
    except ValueError as exc:
        parser.error(f"--numbers: {exc}: give PR numbers as 12,34")
    if args.describe:
        return describe_again(args.home, args.repo, args.json)
    try:
        return run(args, wanted)
    except ProbewatchError as exc:  # the mirror, the window, the watch entry: one line
        print(f"real_prs: {exc}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace, wanted: set[int]) -> int:
    """Mine the window, then build and validate its survivors until ``enough`` says stop."""
    settings = load_settings(
        home=args.home,
        runner_overrides=" ".join(args.override),
        runner_find_links=":".join(str(p) for p in args.find_links),
    )
    watched, watch = watched_entry(args.repo, args.mirror, args.conventions, args.min_lines)
    repo_settings = run_settings(watched, settings=settings, watch=watch)  # type: ignore[arg-type]
    started = time.monotonic()
    engine = make_engine(settings.resolved_database_url)
    upgrade(engine)
    mined = mine(
        engine=engine,
        repo=args.repo,
        source=GitSource(args.mirror, watched.default_branch),
        config=mining_config(watched),
        since=args.since,
        until=args.until,
    )
    print(
        f"mined {len(mined.survivors) + len(mined.rejects)} PRs, {len(mined.survivors)} survivors"
    )
    survivors = candidates(engine, args.repo, 10_000 if wanted else args.count)
    missing = sorted(wanted - {c.number for c in survivors})
    if missing:  # a PR merged outside the window, or one the miner rejected
        named = ", ".join(f"#{n}" for n in missing)
        print(
            f"real_prs: --numbers {named}: not among the {len(survivors)} survivors of "
            f"{args.repo} in {args.home}: pass PRs the miner kept (`probewatch candidates list "
            f"--repo {args.repo}` with PROBEWATCH_HOME={args.home} names them; "
            f"it keeps PRs of {watched.size_threshold:,} changed lines or more: --min-lines)",
            file=sys.stderr,
        )
        if len(missing) == len(wanted):
            return 2
    rows: list[Row] = []
    for candidate in survivors:
        if wanted and candidate.number not in wanted:
            continue
        stop = enough(rows, args.count, args.minutes, (time.monotonic() - started) / 60)
        if stop:
            print(stop)
            break
        row = run_one(
            engine, settings.home, args.mirror, args.repo, candidate, repo_settings, args.cpu_slots
        )
        rows.append(row)
        print(
            f"#{row.number}: {row.outcome} {row.error[:300]} (golden {row.golden_passed}/"
            f"{row.tests_run}, waiting {row.waiting}, validate {row.validate_seconds:.0f}s, "
            f"wall {row.wall_seconds:.0f}s)",
            flush=True,
        )
        if args.json:  # after every PR: a long run stopped part-way keeps what it measured
            args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2))
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

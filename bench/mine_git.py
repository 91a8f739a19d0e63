"""Benchmark: the git miner over a window against raw ``git log --first-parent --numstat``.

Run on any clone or mirror (never commit what it reads)::

    python bench/mine_git.py PATH --since 2025-01-01 --until 2026-10-01 --core-path verl/

It times, best of ``--repeat`` after one warm-up pass, in one run:

* ``git log``: the raw ``git log --first-parent --numstat`` over the window, output drained;
* ``scan + judge``: the miner proper (one numstat pass, history, filters, reverts, ranking);
* ``mine, first run``: ``pr_miner.mining.mine`` into a fresh SQLite registry (stores every PR);
* ``mine, again``: the same window once more (stores nothing that did not change);

and prints wall and CPU seconds (git's own CPU included) with the ratio to ``git log``.
The goal for the miner is at most 1.5 times ``git log``.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path

from bench.args import clone, moment, positive
from pr_miner.config import MiningConfig
from pr_miner.mining import mine
from pr_miner.report import MiningReport
from pr_miner.selection.judge import judge
from pr_miner.selection.reverts import RevertIndex
from pr_miner.sources.base import ScanRequest
from pr_miner.sources.git_source import GitSource
from probewatch.errors import ProbewatchError
from task_registry.db import make_engine, upgrade

GOAL = 1.5


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def best_of(
    repeat: int, action: Callable[[], object], setup: Callable[[], None] | None = None
) -> Timing:
    timings = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        wall, cpu = time.perf_counter(), _cpu()
        action()
        timings.append(Timing(time.perf_counter() - wall, _cpu() - cpu))
    return min(timings, key=lambda t: t.wall)


def raw_git_log(path: Path, branch: str, since: datetime, until: datetime) -> None:
    command = [
        "git",
        "-C",
        str(path),
        "log",
        "--first-parent",
        "--numstat",
        f"--since=@{int(since.timestamp())}",
        f"--until=@{int(until.timestamp()) - 1}",
        branch,
    ]
    with subprocess.Popen(command, stdout=subprocess.PIPE) as process:
        assert process.stdout is not None
        while process.stdout.read(1 << 16):
            pass
    if process.returncode != 0:
        raise SystemExit(f"git log failed in {path}")


def scan_and_judge(
    path: Path, branch: str, config: MiningConfig, since: datetime, until: datetime
) -> int:
    source = GitSource(path, branch)
    scan = source.scan(ScanRequest(since, until, None))
    reverts = RevertIndex(scan.history)
    judged = [
        judge(pr, source.files(pr), config, reverts, partial(source.unchanged_programs, pr))
        for pr in scan.prs
    ]
    return sum(item.verdict.passed for item in judged)


class Registry:
    """A throw-away SQLite registry; ``reset`` starts the next first run from empty."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.count = folder, 0
        self.engine = self._fresh()

    def _fresh(self):  # type: ignore[no-untyped-def]
        self.count += 1
        engine = make_engine(f"sqlite:///{self.folder / f'bench{self.count}.db'}")
        upgrade(engine)
        return engine

    def reset(self) -> None:
        self.engine.dispose()
        self.engine = self._fresh()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", type=clone, help="clone or bare mirror")
    parser.add_argument("--branch", default="main")
    parser.add_argument("--repo", default="bench/repo", help="OWNER/NAME to store under")
    parser.add_argument("--since", type=moment, required=True, help="YYYY-MM-DD")
    parser.add_argument("--until", type=moment, required=True, help="YYYY-MM-DD (exclusive)")
    parser.add_argument("--core-path", action="append", default=[], help="core source folder")
    parser.add_argument("--exclude", action="append", default=[], help="glob not counted")
    parser.add_argument("--repeat", type=positive, default=3)
    args = parser.parse_args(argv)
    config = MiningConfig(core_paths=tuple(args.core_path), exclude_globs=tuple(args.exclude))
    try:  # the untimed pass that counts survivors refuses the branch and the window first
        survivors = scan_and_judge(args.path, args.branch, config, args.since, args.until)
    except ProbewatchError as exc:
        print(f"mine_git: {exc}", file=sys.stderr)
        return 2
    bench(args, config, survivors)
    return 0


def _ratio(value: float, base: float) -> str:
    """``value / base`` in a column; a base too small to measure (a window of a few commits
    can cost git no CPU time the clock sees) gives a dash, not a division by zero."""
    return f"{value / base:9.2f}" if base > 0 else f"{'-':>9}"


def bench(args: argparse.Namespace, config: MiningConfig, survivors: int) -> None:
    """Time git log, the miner and ``mine`` over the window; print the table and the goal."""
    since, until = args.since, args.until
    raw_git_log(args.path, args.branch, since, until)  # warm the page cache
    git = best_of(args.repeat, lambda: raw_git_log(args.path, args.branch, since, until))
    miner = best_of(
        args.repeat, lambda: scan_and_judge(args.path, args.branch, config, since, until)
    )
    # The opt-in formatting-only filter reads module contents of the survivors.
    reading = config.model_copy(update={"reject_formatting_only": True})
    formatting = best_of(
        args.repeat, lambda: scan_and_judge(args.path, args.branch, reading, since, until)
    )
    with tempfile.TemporaryDirectory() as folder:
        registry = Registry(Path(folder))

        def run() -> MiningReport:
            return mine(
                engine=registry.engine,
                repo=args.repo,
                source=GitSource(args.path, args.branch),
                config=config,
                since=since,
                until=until,
            )

        first = best_of(args.repeat, run, setup=registry.reset)
        report = run()
        again = best_of(args.repeat, run)
        registry.engine.dispose()

    merged = report.funnel[1].count
    print(
        f"{args.path} ({args.branch}) {since:%Y-%m-%d} .. {until:%Y-%m-%d}: "
        f"{report.funnel[0].count} commits, {merged} merged PRs, {survivors} survivors"
    )
    print(f"{'':22}{'wall s':>9}{'cpu s':>9}{'wall x':>9}{'cpu x':>9}")
    for name, timing in (
        ("git log --numstat", git),
        ("scan + judge", miner),
        ("  + formatting check", formatting),
        ("mine, first run", first),
        ("mine, again", again),
    ):
        print(
            f"{name:22}{timing.wall:9.2f}{timing.cpu:9.2f}"
            f"{_ratio(timing.wall, git.wall)}{_ratio(timing.cpu, git.cpu)}"
        )
    verdict = "met" if miner.wall / git.wall <= GOAL else "missed"
    print(f"goal: scan + judge <= {GOAL}x git log (wall): {verdict} (default filters)")


if __name__ == "__main__":
    sys.exit(main())

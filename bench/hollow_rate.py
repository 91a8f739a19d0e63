"""Hollow-patch compile rate on one real month of a squash-merge repository.

For every qualifying PR (see :mod:`bench.history`) the hollow patch is built
from the real diff, applied with ``git apply`` to the base in a scratch work
tree of the mirror, and every Python file it touches is byte-compiled. Prints
one row per PR and the rate. Usage::

    python -m bench.hollow_rate MIRROR --month 2025-06 [--min-lines 1000]
"""

from __future__ import annotations

import argparse
import py_compile
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.args import clone, non_negative
from bench.history import (
    HistoricalPR,
    qualifying_prs,
    reset_worktree,
    scratch_worktree,
    verl_test_globs,
)
from probe_builder.adversarial.hollow import HollowError, build_hollow_patch
from probe_builder.gitio import GitTree, diff_commits
from probe_builder.material.pysource import UnparsableSource
from probe_builder.material.split import split_patch
from probewatch.git import GitError, run_git


@dataclass(frozen=True)
class HollowOutcome:
    pr: HistoricalPR
    functions: int
    files: int
    applied: bool
    compiled: int
    failures: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.applied and not self.failures


def _compile_all(tree: Path, paths: list[str]) -> list[str]:
    failures = []
    for index, path in enumerate(paths):
        cfile = tree.parent / f"compiled-{index}.pyc"  # outside the work tree, removed with it
        try:
            py_compile.compile(str(tree / path), cfile=str(cfile), doraise=True)
        except py_compile.PyCompileError as exc:
            failures.append(f"{path}: {exc.msg.strip().splitlines()[-1]}")
    return failures


def check_pr(repo: Path, tree: Path, pr: HistoricalPR) -> HollowOutcome:
    split = split_patch(diff_commits(repo, pr.base, pr.sha), test_globs=verl_test_globs())
    try:
        hollow = build_hollow_patch(
            split.golden_files, base=GitTree(repo, pr.base), head=GitTree(repo, pr.sha)
        )
    except (HollowError, UnparsableSource) as exc:
        return HollowOutcome(pr, 0, 0, False, 0, (f"build: {exc}",))
    reset_worktree(tree, pr.base)
    try:
        run_git(tree, "apply", "--whitespace=nowarn", stdin=hollow.patch)
    except GitError as exc:
        return HollowOutcome(pr, len(hollow.functions), 0, False, 0, (f"apply: {exc}",))
    touched = [f.path for f in split.golden_python]
    failures = _compile_all(tree, touched)
    return HollowOutcome(
        pr, len(hollow.functions), len(touched), True, len(touched) - len(failures), tuple(failures)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mirror", type=clone)
    parser.add_argument("--month", default="2025-06")
    parser.add_argument("--min-lines", type=non_negative, default=1000)
    args = parser.parse_args(argv)
    prs = qualifying_prs(args.mirror, args.month, min_lines=args.min_lines)
    if not prs:
        print("no qualifying PRs")
        return 1
    outcomes = []
    with scratch_worktree(args.mirror, prs[0].base) as tree:
        for pr in prs:
            outcome = check_pr(args.mirror, tree, pr)
            outcomes.append(outcome)
            status = "ok" if outcome.ok else "FAIL"
            print(
                f"{pr.sha[:10]} {pr.changed_lines:6d} lines {outcome.functions:4d} hollowed "
                f"{outcome.compiled}/{outcome.files} files compile  {status}  {pr.subject[:60]}"
            )
            for failure in outcome.failures:
                print(f"    {failure}")
    good = sum(o.ok for o in outcomes)
    print(
        f"\nhollow compile rate {args.month} (>= {args.min_lines} lines): "
        f"{good}/{len(outcomes)} = {100 * good / len(outcomes):.1f}%"
    )
    return 0 if good == len(outcomes) else 2


if __name__ == "__main__":
    sys.exit(main())

"""Mechanical mutant counts per operator on one real month of a squash-merge repository.

Runs the mutant generator on the same qualifying PRs as :mod:`bench.hollow_rate`
and prints the number of mutants per operator and per promise category, and the time the
generator took (per PR, in all, and on the slowest PR); with
``--check-apply`` every mutant patch is also checked with ``git apply --check``
against the PR's base in a scratch work tree. Usage::

    python -m bench.mutant_counts MIRROR --month 2025-06 [--min-lines 1000] [--check-apply]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

from bench.args import clone, non_negative
from bench.history import qualifying_prs, reset_worktree, scratch_worktree, verl_test_globs
from probe_builder.adversarial.mutants import Mutant, generate_mutants
from probe_builder.gitio import GitTree, diff_commits
from probe_builder.material.split import split_patch
from probewatch.git import GitError, run_git


def _unappliable(tree: Path, base: str, mutants: tuple[Mutant, ...]) -> list[str]:
    reset_worktree(tree, base)
    failed = []
    for mutant in mutants:
        try:
            run_git(tree, "apply", "--check", stdin=mutant.patch)
        except GitError as exc:
            failed.append(f"{mutant.id}: {exc}")
    return failed


def _print_counter(title: str, counter: Counter[str]) -> None:
    print(f"\n{title}")
    for key, count in counter.most_common():
        print(f"  {key:18s} {count:5d}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mirror", type=clone)
    parser.add_argument("--month", default="2025-06")
    parser.add_argument("--min-lines", type=non_negative, default=1000)
    parser.add_argument("--check-apply", action="store_true")
    args = parser.parse_args(argv)
    prs = qualifying_prs(args.mirror, args.month, min_lines=args.min_lines)
    if not prs:
        print("no qualifying PRs")
        return 1
    operators: Counter[str] = Counter()
    categories: Counter[str] = Counter()
    failures: list[str] = []
    seconds: dict[str, float] = {}
    with scratch_worktree(args.mirror, prs[0].base) as tree:
        for pr in prs:
            split = split_patch(
                diff_commits(args.mirror, pr.base, pr.sha), test_globs=verl_test_globs()
            )
            start = time.perf_counter()
            mutants = generate_mutants(
                split.golden_files,
                base=GitTree(args.mirror, pr.base),
                head=GitTree(args.mirror, pr.sha),
            )
            seconds[pr.sha[:10]] = time.perf_counter() - start
            operators.update(m.operator.value for m in mutants)
            categories.update(m.promise_category.value for m in mutants)
            if args.check_apply:
                failures.extend(_unappliable(tree, pr.base, mutants))
            print(
                f"{pr.sha[:10]} {len(mutants):4d} mutants in {len(split.golden_python):3d} files"
                f" {seconds[pr.sha[:10]]:6.1f} s  {pr.subject[:60]}"
            )
    _print_counter("per operator", operators)
    _print_counter("per promise category", categories)
    print(
        f"\n{sum(operators.values())} mutants from {len(prs)} PRs"
        f" ({args.month}, >= {args.min_lines} lines)"
    )
    slowest = max(seconds, key=seconds.__getitem__)
    print(
        f"generator: {sum(seconds.values()):.1f} s in all, slowest {slowest}"
        f" {seconds[slowest]:.1f} s"
    )
    if args.check_apply:
        print(
            f"git apply --check: {sum(operators.values()) - len(failures)}"
            f"/{sum(operators.values())} apply"
        )
        for failure in failures[:20]:
            print(f"    {failure}")
    return 0 if not failures else 2


if __name__ == "__main__":
    sys.exit(main())

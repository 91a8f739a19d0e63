"""Mechanical adversarial patches: diff-scoped mutants of the golden patch.

Only lines the golden patch added are mutated (the PR's own change is what a
probe must defend), at most one mutant per line and ``max_per_file`` per file
(seven by default, Google's productive-mutant limit), spread round-robin over
the operators in priority order so one file does not yield seven constant
tweaks. Each mutant is the whole golden patch with one edit, written as a
diff against the base so ``git apply`` takes it like any other patch, and
records its operator, location and the promise category it most likely
breaks. Three operators break a resource or a mode and no result (a released
reference kept alive: memory; an idempotent collective run twice: traffic; a
function run eagerly, not through ``torch.compile``: mode), so a promise of that
kind has an adversarial on a machine that cannot run a probe of it, and a
surviving one shows the PR's tests do not watch it. Same input, same mutants.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from probe_builder.adversarial.equivalence import Scope, promise_scope, set_aside
from probe_builder.adversarial.mutation_ops import (
    Candidate,
    MutationOperator,
    arid_lines,
    early_return,
    expression_candidates,
    hold_result,
    keep_alive,
    repeat_work,
    statement_candidates,
)
from probe_builder.gitio import TreeReader
from probe_builder.material.diffs import FileDiff, join_diffs, render_file_diff
from probe_builder.material.pysource import Source, UnparsableSource
from task_registry.types import PromiseCategory

DEFAULT_MAX_PER_FILE = 7

# Earlier = tried first on a line, and first in the per-file round-robin.
OPERATOR_PRIORITY: tuple[MutationOperator, ...] = (
    MutationOperator.repeat_collective,
    MutationOperator.keep_alive,
    MutationOperator.drop_compile,
    MutationOperator.bypass_cache,
    MutationOperator.mean_sum,
    MutationOperator.drop_division,
    MutationOperator.force_branch,
    MutationOperator.drop_clone,
    MutationOperator.early_return,
    MutationOperator.compare_flip,
    MutationOperator.bool_flip,
    MutationOperator.arith_swap,
    MutationOperator.repeat_work,
    MutationOperator.hold_result,
    MutationOperator.delete_call,
    MutationOperator.constant,
)

OPERATOR_CATEGORY: dict[MutationOperator, PromiseCategory] = {
    MutationOperator.delete_call: PromiseCategory.functional,
    MutationOperator.arith_swap: PromiseCategory.numeric,
    MutationOperator.drop_division: PromiseCategory.numeric,
    MutationOperator.mean_sum: PromiseCategory.numeric,
    MutationOperator.compare_flip: PromiseCategory.functional,
    MutationOperator.bool_flip: PromiseCategory.functional,
    MutationOperator.constant: PromiseCategory.numeric,
    MutationOperator.force_branch: PromiseCategory.functional,
    MutationOperator.early_return: PromiseCategory.state,
    MutationOperator.drop_clone: PromiseCategory.state,
    MutationOperator.bypass_cache: PromiseCategory.state,
    MutationOperator.keep_alive: PromiseCategory.memory,
    MutationOperator.repeat_collective: PromiseCategory.traffic,
    MutationOperator.repeat_work: PromiseCategory.time,
    MutationOperator.hold_result: PromiseCategory.memory,
    MutationOperator.drop_compile: PromiseCategory.mode,
}
# Operators that break one resource or mode and leave every result as it was: their category
# is that resource or mode, whatever the mutated line's words say.
RESULT_PRESERVING = frozenset(
    {
        MutationOperator.keep_alive,
        MutationOperator.repeat_collective,
        MutationOperator.repeat_work,
        MutationOperator.hold_result,
        MutationOperator.drop_compile,
    }
)

# What the mutated code is about overrides the operator's default, first match wins.
CATEGORY_HINTS: tuple[tuple[re.Pattern[str], PromiseCategory], ...] = (
    (
        re.compile(r"cuda_?graph|graphed|capture|replay|torch\.compile|compiled|eager", re.I),
        PromiseCategory.mode,
    ),
    (
        re.compile(
            r"offload|onload|empty_cache|\bfree|release|memory|pin_memory|\.cpu\(|to\(.cpu", re.I
        ),
        PromiseCategory.memory,
    ),
    (
        re.compile(
            r"broadcast|\bsend|\brecv|all_gather|allgather|bucket|n?bytes|transfer|sync_weights|p2p",
            re.I,
        ),
        PromiseCategory.traffic,
    ),
    (
        re.compile(
            r"all_reduce|allreduce|reduce_scatter|world_size|dp_size|\bmean|average|\bavg|ReduceOp|normali",
            re.I,
        ),
        PromiseCategory.numeric,
    ),
    (
        re.compile(
            r"cache|reset|invalidate|clear|counter|version|dirty|_step\b|state"
            r"|checkpoint|ckpt|resum|restor|reload|save_to|load_from|dump",
            re.I,
        ),
        PromiseCategory.state,
    ),
    (re.compile(r"timer|elapsed|overlap|prefetch|stream", re.I), PromiseCategory.time),
)


@dataclass(frozen=True)
class Mutant:
    id: str  # "path:line:operator", stable across runs
    operator: MutationOperator
    path: str
    line: int
    promise_category: PromiseCategory
    description: str
    before: str  # the original line
    after: str  # the mutated line (first line of the replacement region)
    patch: str  # whole golden patch with this one mutation, against the base


def formatting_only_lines(file: FileDiff) -> set[int]:
    """Added lines that equal a removed line of the same hunk up to whitespace."""
    result: set[int] = set()
    for hunk in file.hunks:
        removed = {re.sub(r"\s+", "", r[1:]) for r in hunk.lines if r.startswith("-")}
        for number, raw in zip(
            hunk.added_lines(), [r for r in hunk.lines if r.startswith("+")], strict=True
        ):
            if re.sub(r"\s+", "", raw[1:]) in removed:
                result.add(number)
    return result


def _statements_on(tree: ast.AST, lines: Iterable[int]) -> dict[int, list[ast.stmt]]:
    """For each of ``lines``, the statements whose span (decorators included) holds it,
    innermost last; the tree is walked once for all of them."""
    wanted = sorted(set(lines))
    found: dict[int, list[ast.stmt]] = {line: [] for line in wanted}
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        decorators = [d.lineno for d in getattr(node, "decorator_list", [])]
        first, last = min([node.lineno, *decorators]), node.end_lineno or node.lineno
        for line in wanted[bisect_left(wanted, first) : bisect_right(wanted, last)]:
            found[line].append(node)
    return found


def _line_candidates(source: Source, line: int, statements: Sequence[ast.stmt]) -> list[Candidate]:
    """Every edit of ``line``; ``statements``: those that hold it (:func:`_statements_on`)."""
    found: list[Candidate] = []
    enclosing = [
        s
        for s in statements
        if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.lineno < line
    ]
    if enclosing:
        innermost = max(enclosing, key=lambda f: f.lineno)
        for stmt in statements:
            if stmt.lineno != line:
                continue
            for operator in (keep_alive, repeat_work, hold_result):
                if (candidate := operator(source, innermost, stmt)) is not None:
                    found.append(candidate)
    for stmt in statements:
        found.extend(statement_candidates(source, stmt, line))
        if stmt.lineno == line:
            found.extend(expression_candidates(source, stmt, line))
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            candidate = early_return(source, stmt, line)
            if candidate is not None:
                found.append(candidate)
        elif stmt.lineno < line:
            found.extend(expression_candidates(source, stmt, line))
    return found


def _rank(candidate: Candidate) -> tuple[int, int, int]:
    critical_first = 0 if candidate.critical else 1
    order = -1 if candidate.critical else OPERATOR_PRIORITY.index(candidate.operator)
    return (critical_first, order, candidate.start)


def _apply(text: str, candidate: Candidate) -> str:
    return text[: candidate.start] + candidate.replacement + text[candidate.end :]


def _compiles(text: str, path: str) -> bool:
    try:
        compile(text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def best_per_line(
    source: Source, lines: Iterable[int], scope: Scope | None = None
) -> list[Candidate]:
    """The highest-ranked candidate that compiles, changes the text and is not set aside as
    unable to break a promise (:mod:`probe_builder.adversarial.equivalence`), per line."""
    scope = scope or promise_scope(source, ())
    chosen = []
    holding = _statements_on(source.tree, lines)
    for line in sorted(holding):
        for candidate in sorted(_line_candidates(source, line, holding[line]), key=_rank):
            mutated = _apply(source.text, candidate)
            if mutated == source.text or not _compiles(mutated, source.path):
                continue
            if set_aside(scope, candidate) is None:
                chosen.append(candidate)
                break
    return chosen


def _round_robin(candidates: Sequence[Candidate], limit: int) -> list[Candidate]:
    queues: dict[tuple[bool, MutationOperator], list[Candidate]] = {}
    for candidate in sorted(candidates, key=lambda c: (_rank(c)[:2], c.line)):
        queues.setdefault((not candidate.critical, candidate.operator), []).append(candidate)
    picked: list[Candidate] = []
    while len(picked) < limit and any(queues.values()):
        for queue in queues.values():
            if queue and len(picked) < limit:
                picked.append(queue.pop(0))
    return sorted(picked, key=lambda c: c.line)


def _category(source: Source, candidate: Candidate) -> PromiseCategory:
    if candidate.operator in RESULT_PRESERVING:
        return OPERATOR_CATEGORY[candidate.operator]
    context = source.line_text(candidate.line) + " " + candidate.description
    for pattern, category in CATEGORY_HINTS:
        if pattern.search(context):
            return category
    return OPERATOR_CATEGORY[candidate.operator]


def mutable_lines(file: FileDiff, source: Source) -> set[int]:
    """The golden patch's added lines of ``file`` that are not arid."""
    return set(file.added_lines()) - formatting_only_lines(file) - arid_lines(source)


def _mutant(
    file: FileDiff,
    source: Source,
    candidate: Candidate,
    base_text: str | None,
    golden: Sequence[FileDiff],
) -> Mutant:
    mutated = _apply(source.text, candidate)
    after_line = mutated.splitlines()[candidate.line - 1] if candidate.replacement else ""
    diff = render_file_diff(file.path, base_text, mutated, new_mode=file.new_mode or "100644")
    patch = join_diffs(diff if other is file else other for other in golden)
    return Mutant(
        id=f"{file.path}:{candidate.line}:{candidate.operator}",
        operator=candidate.operator,
        path=file.path,
        line=candidate.line,
        promise_category=_category(source, candidate),
        description=candidate.description,
        before=source.line_text(candidate.line).strip(),
        after=after_line.strip(),
        patch=patch,
    )


def file_mutants(
    file: FileDiff,
    golden_files: Sequence[FileDiff],
    *,
    base: TreeReader,
    head: TreeReader,
    max_per_file: int,
    promise_quotes: Sequence[str] = (),
) -> list[Mutant]:
    text = head.read(file.path)
    if text is None:
        return []
    try:
        source = Source(file.path, text)
    except UnparsableSource:
        return []  # a file this Python cannot parse cannot be mutated by its syntax tree
    scope = promise_scope(source, promise_quotes)
    picked = _round_robin(best_per_line(source, mutable_lines(file, source), scope), max_per_file)
    base_text = None if file.is_new else base.read(file.old_path or file.path)
    return [_mutant(file, source, candidate, base_text, golden_files) for candidate in picked]


def generate_mutants(
    golden_files: Sequence[FileDiff],
    *,
    base: TreeReader,
    head: TreeReader,
    max_per_file: int = DEFAULT_MAX_PER_FILE,
    promise_quotes: Sequence[str] = (),
) -> tuple[Mutant, ...]:
    """Mutants of the golden patch's added Python lines, in file order then line order;
    ``promise_quotes`` keep mutable what a promise names (a configuration field)."""
    mutants: list[Mutant] = []
    for file in golden_files:
        if file.is_python and not file.is_deleted:
            mutants.extend(
                file_mutants(
                    file,
                    golden_files,
                    base=base,
                    head=head,
                    max_per_file=max_per_file,
                    promise_quotes=promise_quotes,
                )
            )
    return tuple(mutants)

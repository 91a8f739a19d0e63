"""Statement linter and leak checker; both say what they found and where.

The linter fails a statement that does not name a contract symbol (module
path, name, each parameter) or configuration flag: a hidden test would ask
for something the agent was never told. The leak checker fails a statement
that shares a run of at least ``threshold`` code tokens with the golden
patch's added lines (or ``probe_threshold`` with a probe file), names a
probe test, repeats a non-trivial constant of the golden patch or the
probes, or states a tolerance. Runs that are part of the contract's own
rendering (signatures, defaults, flags) are allowed: the statement must
show them.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from probe_builder.gitio import TreeReader
from probe_builder.material.contract import Contract
from probe_builder.material.diffs import FileDiff
from probe_builder.material.pysource import Source, UnparsableSource

DEFAULT_THRESHOLD = 8
DEFAULT_PROBE_THRESHOLD = 6
TRIVIAL_NUMBERS = frozenset(
    {10.0, 100.0, 1000.0}
)  # and every integer below ten: too common to mean anything
TOLERANCE_WORDS = re.compile(
    r"\b(atol|rtol|tol|tolerance|eps|epsilon|rel_tol|abs_tol)\b\s*(=|:|of|is|to)?\s*[-+]?\d", re.I
)
TOLERANCE_KWARGS = {"atol", "rtol", "rel", "abs", "rel_tol", "abs_tol", "eps", "delta", "places"}
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|==|!=|<=|>=|\*\*|//|->|[^\s\w]")
_SKIP_TOKENS = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


class LeakKind(StrEnum):
    golden_code = "golden_code"
    probe_code = "probe_code"
    constant = "constant"
    tolerance = "tolerance"


@dataclass(frozen=True)
class LintFinding:
    symbol: str
    missing: str  # what the statement lacks

    @property
    def message(self) -> str:
        return f"{self.symbol}: the statement does not give {self.missing}"


@dataclass(frozen=True)
class LintReport:
    findings: tuple[LintFinding, ...]

    @property
    def ok(self) -> bool:
        return not self.findings


@dataclass(frozen=True)
class LeakFinding:
    kind: LeakKind
    text: str  # what the statement contains
    where: str  # the golden or probe location it matches

    @property
    def message(self) -> str:
        return f"{self.kind}: statement contains {self.text!r} (from {self.where})"


@dataclass(frozen=True)
class LeakReport:
    findings: tuple[LeakFinding, ...]

    @property
    def ok(self) -> bool:
        return not self.findings


@dataclass(frozen=True)
class CodeToken:
    text: str
    where: str  # path:line


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _word_in(word: str, text: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(word)}(?![\w])", text) is not None


def lint_statement(statement: str, contract: Contract) -> LintReport:
    """Every contract symbol's import path and parameters, and every flag, must appear.

    The full dotted path is required (a word in the prose is not enough): it is what
    the tests import.
    """
    findings = []
    for symbol in contract.symbols:
        if not _word_in(symbol.dotted, statement):
            findings.append(LintFinding(symbol.dotted, f"the import path {symbol.dotted!r}"))
        for parameter in symbol.parameters:
            if parameter.name not in ("self", "cls") and not _word_in(parameter.name, statement):
                findings.append(LintFinding(symbol.dotted, f"the parameter {parameter.name!r}"))
    for flag in contract.flags:
        if flag.name not in statement:
            findings.append(LintFinding(flag.name, f"the {flag.kind} flag {flag.name!r}"))
    return LintReport(tuple(findings))


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                lines.update(range(body[0].lineno, body[0].end_lineno + 1))  # type: ignore[operator]
    return lines


def python_code_tokens(path: str, text: str, lines: Iterable[int] | None = None) -> list[CodeToken]:
    """Code tokens of ``text`` (of ``lines`` only, if given): no comments, no docstrings."""
    wanted = None if lines is None else set(lines)
    out: list[CodeToken] = []
    try:
        skip = _docstring_lines(Source(path, text).tree)
        raw = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (UnparsableSource, tokenize.TokenError, SyntaxError):
        return [CodeToken(t, path) for t in tokens(text)]
    for token in raw:
        line = token.start[0]
        if (
            token.type in _SKIP_TOKENS
            or line in skip
            or (wanted is not None and line not in wanted)
        ):
            continue
        out.extend(CodeToken(piece, f"{path}:{line}") for piece in tokens(token.string))
    return out


def golden_code_tokens(golden_files: Sequence[FileDiff], *, head: TreeReader) -> list[CodeToken]:
    """Code tokens of the golden patch's added Python lines, file by file."""
    out: list[CodeToken] = []
    for file in golden_files:
        text = head.read(file.path) if file.is_python and not file.is_deleted else None
        if text is not None:
            out.extend(python_code_tokens(file.path, text, file.added_lines()))
    return out


def contract_text(contract: Contract) -> str:
    """What the statement is allowed, indeed required, to quote."""
    parts = []
    for symbol in contract.symbols:
        parts.extend(
            [symbol.dotted, symbol.name + symbol.signature, *symbol.decorators, *symbol.bases]
        )
        parts.extend(f"{a.name}: {a.annotation} = {a.default}" for a in symbol.attributes)
    parts.extend(f"{f.name} {f.default}" for f in contract.flags)
    return "\n".join(parts)


def _ngrams(seq: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(seq[i : i + n]) for i in range(len(seq) - n + 1)}


def shared_runs(
    statement: str, code: Sequence[CodeToken], threshold: int, allowed: str = ""
) -> list[tuple[str, str]]:
    """(run text, code location) of every maximal token run shared with ``code``."""
    said = tokens(statement)
    index: dict[tuple[str, ...], str] = {}
    texts = [t.text for t in code]
    for i in range(len(texts) - threshold + 1):
        index.setdefault(tuple(texts[i : i + threshold]), code[i].where)
    permitted = _ngrams(tokens(allowed), threshold)
    hits = [
        i
        for i in range(len(said) - threshold + 1)
        if tuple(said[i : i + threshold]) in index
        and tuple(said[i : i + threshold]) not in permitted
    ]
    runs: list[tuple[str, str]] = []
    for group in _consecutive(hits):
        where = index[tuple(said[group[0] : group[0] + threshold])]
        runs.append((" ".join(said[group[0] : group[-1] + threshold]), where))
    return runs


def _consecutive(numbers: Sequence[int]) -> list[list[int]]:
    """[1, 2, 3, 7, 8] -> [[1, 2, 3], [7, 8]]."""
    groups: list[list[int]] = []
    for number in numbers:
        if groups and number == groups[-1][-1] + 1:
            groups[-1].append(number)
        else:
            groups.append([number])
    return groups


def _trivial(value: float) -> bool:
    return value in TRIVIAL_NUMBERS or (value.is_integer() and abs(value) < 10)


def _numbers(tokens_: Iterable[CodeToken]) -> dict[float, str]:
    found: dict[float, str] = {}
    for token in tokens_:
        if re.fullmatch(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", token.text):
            value = float(token.text)
            if not _trivial(value):
                found.setdefault(value, token.where)
    return found


def _tolerance_values(sources: Mapping[str, str]) -> dict[float, str]:
    values: dict[float, str] = {}
    for path, text in sources.items():
        try:
            tree = Source(path, text).tree
        except UnparsableSource:
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.keyword) and node.arg in TOLERANCE_KWARGS):
                continue
            value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, int | float):
                values.setdefault(float(value.value), f"{path}:{value.lineno}")
    return values


def _constant_findings(
    statement: str, numbers: dict[float, str], allowed: str, kind: LeakKind
) -> list[LeakFinding]:
    permitted = {
        float(t) for t in tokens(allowed) if re.fullmatch(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", t)
    }
    findings = []
    for token in dict.fromkeys(tokens(statement)):
        if re.fullmatch(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", token):
            value = float(token)
            if value in numbers and value not in permitted:
                findings.append(LeakFinding(kind, token, numbers[value]))
    return findings


def _probe_names(probes: Mapping[str, str]) -> dict[str, str]:
    names = {}
    for path, text in probes.items():
        for match in re.finditer(r"^\s*(?:async\s+)?def\s+(test\w+)", text, flags=re.M):
            names[match.group(1)] = path
    return names


def check_leaks(
    statement: str,
    *,
    golden_code: Sequence[CodeToken],
    contract: Contract,
    probes: Mapping[str, str] | None = None,
    test_sources: Mapping[str, str] | None = None,
    threshold: int = DEFAULT_THRESHOLD,
    probe_threshold: int = DEFAULT_PROBE_THRESHOLD,
) -> LeakReport:
    """Leaks of the solution (golden code, constants) or of the probes (code, names, tolerances)."""
    probes = probes or {}
    allowed = contract_text(contract)
    probe_code = [t for path, text in probes.items() for t in python_code_tokens(path, text)]
    findings = [
        LeakFinding(LeakKind.golden_code, run, where)
        for run, where in shared_runs(statement, golden_code, threshold, allowed)
    ]
    findings += [
        LeakFinding(LeakKind.probe_code, run, where)
        for run, where in shared_runs(statement, probe_code, probe_threshold, allowed)
    ]
    findings += [
        LeakFinding(LeakKind.probe_code, name, path)
        for name, path in _probe_names(probes).items()
        if _word_in(name, statement)
    ]
    findings += _constant_findings(
        statement, _numbers([*golden_code, *probe_code]), allowed, LeakKind.constant
    )
    findings += _constant_findings(
        statement,
        _tolerance_values({**(test_sources or {}), **probes}),
        allowed,
        LeakKind.tolerance,
    )
    findings += [
        LeakFinding(LeakKind.tolerance, m.group(0), "statement")
        for m in TOLERANCE_WORDS.finditer(statement)
    ]
    return LeakReport(tuple(findings))

"""What a promise is about in the code: the changed symbols it names, and the tests that reach them.

A promise is linked to the changed symbols (functions, methods, classes,
constants the golden patch touches, and the config flags it adds) whose
name parts, or whose docstring, share words with the promise's quote; an
identifier quoted verbatim links on its own. The changed code one step behind
a linked symbol is found too: the changed definitions it refers to (the
helper a promised class calls) and those that refer to it (the function that
reads a promised flag): a PR's tests often run that code rather than the
name its description uses. So are the functions one step in front of that
code, anywhere in the repository outside its tests (:func:`in_front`): the
public entry point, left alone by the patch, through which a test runs a
fixed private helper, or the method that looks a changed function up in a
module's table of functions by key. A test reaches a symbol when
it, or a helper of its own file that it calls, or a checker it imports from
another test file (:mod:`probe_builder.promises.shared_helpers`), refers to the
symbol's name (or to a linked flag's key). Non-Python files of the test patch (launch
scripts, configs) reach a symbol by naming it, or a long part of it, on an
added line: they run the code but assert nothing. A launch script also runs every
file of the repository the program it starts imports, at any depth
(:mod:`probe_builder.promises.launches`). A test that uses names
of the module defining a linked symbol (or of the package right above it)
exercises it too, through code the PR did not change. Beside these, the code under test
carries the options the change adds, with their defaults, and what the test patch sets options to
(:mod:`probe_builder.promises.settings`), so that a promise about an option the tests
leave off is not judged on tests that run the code without it. When the quote shares
no word with any changed symbol, every changed symbol is linked weakly: the
verdict may then say the code is exercised, and only a test named for the
promise can check it.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from probe_builder.gitio import TreeReader, files_naming
from probe_builder.material.contract import Contract
from probe_builder.material.diffs import FileDiff
from probe_builder.material.pysource import Source, UnparsableSource, iter_definitions
from probe_builder.material.split import PatchSplit
from probe_builder.promises.assertions import (
    AssertionKind,
    AssertionProfile,
    TestTraits,
    profile_source,
    profile_test_patch,
)
from probe_builder.promises.launches import ProgramReader, folder_of
from probe_builder.promises.settings import (
    Setting,
    last_key,
    settings_in_source,
    settings_in_text,
)
from probe_builder.promises.shared_helpers import TestHelpers
from probewatch.testfiles import TestFiles

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_PLURAL = re.compile(r"(?<=[a-z]{3})(es|s)$")
# Words too common in code and prose to tie a promise to a symbol.
_GENERIC = """
    a an and are as at be by can do does for from get has have if in into is it its
    new of on or set so that the this to use used uses using via was when with without
    add adds added support supports fix fixes fixed make makes now also all any more not
    init self none true false default config configs test tests args kwargs value values
    func function method class type data run runs should will would which what where
"""
GENERIC_WORDS = frozenset(_GENERIC.split())
MIN_WORD = 3
SCRIPT_SUFFIXES = (".sh", ".bash")
RUN_CONFIG_SUFFIXES = (".yaml", ".yml")
_DASHED_FLAG = re.compile(r"--([A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+)")
# Recorded outputs a harness compares a run with (golden_values_dev.json, tokens_golden.txt);
# not a test module that happens to be named for them.
GOLDEN_FILE = re.compile(r"golden[^/]*\.(json|jsonl|ya?ml|txt|csv|npy|npz|pt|pkl)$", re.I)
# Where a program a launch script starts is one of the tests' own (a checker of the run).
_TEST_FOLDER = re.compile(r"(^|/)tests?/")
# Method names every class has: a test that calls one reaches nothing in particular.
GENERIC_NAMES = frozenset({"__init__", "forward", "backward", "__call__", "setUp", "main"})
MIN_IDENTIFIER = 6  # an identifier this long names a symbol that contains it
MIN_COVERAGE = 0.5  # the share of a symbol's name words a quote must use to name it
MIN_DOC_WORDS = 3
MIN_BEHIND_NAME = 4  # a changed name this short ("get", "run") is no lead to the code behind
DISTINCTIVE_SHARE = 0.25  # words a quote must share with a changed function's docstring
# A function that only declares command-line flags (``_add_inference_args``): its name shares
# a word with every promise about its area, yet tests run what reads the flags, not it.
FLAG_DECLARATIONS = re.compile(
    r"^_?(add|register|define)_\w*(args|arguments|flags|options)$|^_?(add|build)_\w*parser$"
)


def words_of(text: str) -> frozenset[str]:
    """Lower-case word parts of prose or identifiers (snake_case and CamelCase split); a
    name with its number (``fp32``, ``bf16``, ``mxfp8``, ``Float16``) is a word too, as
    well as its parts: split, "fp32" would say nothing."""
    parts: set[str] = set()
    for token in re.findall(r"[A-Za-z0-9]+", text):
        pieces = _CAMEL.findall(token) or [token]
        # letters with the number that completes them: a format or a version (fp8, sm90)
        pieces += [a + b for a, b in pairwise(pieces) if a.isalpha() and b.isdigit()]
        for piece in pieces:
            word = _PLURAL.sub("", piece.lower())
            if len(word) >= MIN_WORD and not {word, piece.lower()} & GENERIC_WORDS:
                parts.add(word)
    return frozenset(parts)


# The fewest and most words of a name whose initials are an acronym of it ("moe" of
# ``MixtureOfExperts``, "gdn" of ``gated_delta_net``): two letters say too little.
INITIALISM_WORDS = (3, 5)


def initialisms(text: str) -> frozenset[str]:
    """The acronyms the names of ``text`` spell: the initials of every run of three to five
    consecutive word parts of one name (``TestMixtureOfExperts`` gives "tmo", "moe",
    "tmoe")."""
    found: set[str] = set()
    for token in re.findall(r"[A-Za-z0-9_]+", text):
        parts = [p for piece in token.split("_") for p in _CAMEL.findall(piece) if p.isalpha()]
        found |= _initials_of_runs(parts)
    return frozenset(found)


def _initials_of_runs(words: Sequence[str]) -> frozenset[str]:
    """The lower-cased initials of every run of three to five consecutive ``words``."""
    shortest, longest = INITIALISM_WORDS
    return frozenset(
        "".join(w[0] for w in words[start:end]).lower()
        for start in range(len(words))
        for end in range(start + shortest, min(len(words), start + longest) + 1)
    )


def spelled_acronyms(quote: str) -> frozenset[str]:
    """The acronyms a quote spells out: the initials of every run of three to five of its
    consecutive words ("Maximal Update Parameterization" gives "mup", "mixture of
    experts" "moe"), for a name that abbreviates what the prose says in full."""
    return _initials_of_runs(re.findall(r"[A-Za-z]+", quote))


def name_words(name: str) -> frozenset[str]:
    """The lower-cased parts of a name, split at dots, underscores and case changes
    (``TestMTPInference.test_mup_scale`` gives "test", "mtp", "inference", "mup", "scale")."""
    return frozenset(
        part.lower()
        for token in re.findall(r"[A-Za-z0-9]+", name)
        for part in _CAMEL.findall(token)
    )


def identifiers_of(text: str) -> frozenset[str]:
    """Identifier-looking tokens of a quote: snake_case, CamelCase or dotted names."""
    found = set()
    for token in _IDENTIFIER.findall(text):
        last = token.rsplit(".", 1)[-1]
        if "_" in last.strip("_") or "." in token or re.search(r"[a-z][A-Z]", last):
            found.add(last)
    return frozenset(found)


@dataclass(frozen=True)
class ChangedSymbol:
    name: str  # the last part of its qualified name, or a flag's last key
    qualname: str
    name_words: frozenset[str]
    doc_words: frozenset[str] = frozenset()
    path: str = ""  # the file that defines it
    uses: frozenset[str] = frozenset()  # the names its definition refers to (a flag's key too)
    lines: range = range(0)  # its span in the head file (none for a constant or a flag)


@dataclass(frozen=True)
class TestScript:
    """A non-Python file of the test patch, by the identifiers on its added lines and, for
    a launch script, the repository files the programs it starts run (:mod:`launches`)."""

    __test__ = False
    path: str
    tokens: frozenset[str]
    runs: frozenset[str] = frozenset()
    # The test patch holds golden values beside it (a recorded run's outputs, which the
    # harness compares the new run's with), or a script of its folder starts a program that
    # asserts the runs' outputs close to each other's (``compared_by``, that program's path).
    goldens: bool = False
    compared_by: str = ""


@dataclass(frozen=True)
class Caller:
    """A function of the repository outside its tests that refers to changed symbols (by
    name): code a test may run them through, the patch's or code it left alone."""

    name: str
    path: str
    uses: frozenset[str]  # the changed names it refers to


@dataclass(frozen=True)
class Option:
    """A configuration option the change adds (a command-line flag, a config field, a YAML
    key), by the key code reads it under, with its default as written (None: none given)."""

    key: str
    default: str | None


@dataclass(frozen=True)
class CodeUnderTest:
    """What the verdicts read: the test patch's profile and the golden patch's symbols."""

    profile: AssertionProfile
    symbols: tuple[ChangedSymbol, ...] = ()
    scripts: tuple[TestScript, ...] = ()
    callers: tuple[Caller, ...] = ()
    # The configuration options the change adds, and what the test patch sets options to.
    options: tuple[Option, ...] = ()
    settings: tuple[Setting, ...] = ()


@dataclass(frozen=True)
class Link:
    """The symbols a promise concerns; ``strong`` when its quote names them."""

    names: frozenset[str]
    strong: bool


def changed_symbol(
    qualname: str,
    doc: str | None,
    path: str = "",
    uses: frozenset[str] = frozenset(),
    lines: range = range(0),
) -> ChangedSymbol:
    name = qualname.rsplit(".", 1)[-1]
    return ChangedSymbol(name, qualname, words_of(qualname), words_of(doc or ""), path, uses, lines)


def symbols_at(symbols: Sequence[ChangedSymbol], path: str, line: int | None) -> tuple[str, ...]:
    """The changed definitions of ``path`` that hold ``line``, outer first (a class, then its
    method), by qualified name; none for a line outside them or a patch without a line."""
    if line is None:
        return ()
    return tuple(s.qualname for s in symbols if s.path == path and line in s.lines)


def _members(symbol: ChangedSymbol, symbols: Sequence[ChangedSymbol]) -> list[ChangedSymbol]:
    """The changed definitions inside ``symbol`` (a class's changed methods)."""
    prefix = symbol.qualname + "."
    return [s for s in symbols if s.path == symbol.path and s.qualname.startswith(prefix)]


def concerned(linked: Link, reached: Link, code: CodeUnderTest) -> frozenset[str]:
    """The changed definitions a promise is about, by qualified name: those its quote
    names (``linked``), and the code right behind them (``reached``), where a class behind
    counts by its changed methods that use a named symbol (the trainer method that calls a
    promised helper, not the whole trainer). Names many classes share (``__init__``,
    ``forward``) place nothing by themselves; a weak link is about no place in particular."""
    if not linked.strong:
        return frozenset()
    found: set[str] = set()
    for symbol in code.symbols:
        if symbol.name in GENERIC_NAMES:
            continue
        if symbol.name in linked.names:
            found.add(symbol.qualname)
        elif symbol.name in reached.names:
            users = [m for m in _members(symbol, code.symbols) if m.uses & linked.names]
            found.update(m.qualname for m in users or [symbol])
    return frozenset(found)


def names_used(node: ast.AST) -> frozenset[str]:
    """What a definition refers to: names, attributes, keyword arguments and string keys
    (``cfg.get("use_fused")``, ``getattr(args, "tp_mode")``)."""
    used = (_name_of(child) for child in ast.walk(node))
    return frozenset(name for name in used if name is not None and name.isidentifier())


def _changed_definitions(file: FileDiff, head: TreeReader) -> list[ChangedSymbol]:
    text = head.read(file.path)
    if text is None:
        return []
    try:
        tree = Source(file.path, text).tree
    except UnparsableSource:
        return []
    changed = set(file.changed_lines())
    found = []
    for definition in iter_definitions(tree):
        if changed.intersection(definition.lines()):
            doc = ast.get_docstring(definition.node)
            uses = names_used(definition.node)
            found.append(
                changed_symbol(definition.qualname, doc, file.path, uses, definition.lines())
            )
    return found


def _is_script(file: FileDiff) -> bool:
    """A launch script, or a new run configuration (an edited one is compared data)."""
    if file.is_deleted or file.binary:
        return False
    return file.path.endswith(SCRIPT_SUFFIXES) or (
        file.is_new and file.path.endswith(RUN_CONFIG_SUFFIXES)
    )


def _scripts(test_files: Sequence[FileDiff], head: TreeReader) -> tuple[TestScript, ...]:
    golden_folders = {
        folder_of(f.path) for f in test_files if not f.is_deleted and GOLDEN_FILE.search(f.path)
    }
    programs = ProgramReader(head)
    files = [f for f in test_files if _is_script(f)]
    started = {f.path: _started(f, head, programs) for f in files}
    comparing = _comparing_programs(started, head)
    scripts = []
    for file in files:
        added = "\n".join(
            raw[1:] for hunk in file.hunks for raw in hunk.lines if raw.startswith("+")
        )
        tokens = frozenset(t.rsplit(".", 1)[-1] for t in _IDENTIFIER.findall(added))
        # a command-line flag, as the code that reads it names it (--fused-sampling)
        tokens |= {f.replace("-", "_") for f in _DASHED_FLAG.findall(added)}
        runs = programs.files_run(started[file.path])
        folder = folder_of(file.path)
        goldens = folder in golden_folders
        scripts.append(TestScript(file.path, tokens, runs, goldens, comparing.get(folder, "")))
    return tuple(scripts)


def _started(file: FileDiff, head: TreeReader, programs: ProgramReader) -> list[str]:
    """The repository files a launch script starts (none for a run configuration)."""
    text = head.read(file.path) if file.path.endswith(SCRIPT_SUFFIXES) else None
    return programs.programs(file.path, text) if text else []


def _comparing_programs(started: Mapping[str, list[str]], head: TreeReader) -> dict[str, str]:
    """For each folder of the test patch's launch scripts (``started``: what each starts), a
    program one of them starts that lies among the tests and asserts a tolerance between
    results (the losses of two engines' runs, say): the runs the folder's scripts start are
    compared by it."""
    found: dict[str, str] = {}
    for path, programs in started.items():
        for program in programs:
            if _TEST_FOLDER.search(program) and _asserts_closeness(program, head):
                found.setdefault(folder_of(path), program)
    return found


def _asserts_closeness(path: str, head: TreeReader) -> bool:
    text = head.read(path)
    if text is None:
        return False
    try:
        profile = profile_source(path, text)
    except UnparsableSource:
        return False
    return any(site.kind is AssertionKind.numeric for site in profile.assertions)


def code_under_test(
    split: PatchSplit,
    *,
    head: TreeReader,
    contract: Contract,
    test_files: TestFiles | None = None,
) -> CodeUnderTest:
    """Profile of the test patch, the changed symbols and flags, the test scripts, and the
    functions outside the tests (``test_files``: the default globs) that call changed code."""
    tests = test_files or TestFiles()
    profile = profile_test_patch(split.test_files, head=head, imported=TestHelpers(head, tests))
    symbols = [s for f in split.golden_python for s in _changed_definitions(f, head)]
    symbols += [
        changed_symbol(s.qualname, None, s.path) for s in contract.symbols if s.kind == "constant"
    ]
    symbols += [
        changed_symbol(f.name.lstrip("-").replace("-", "_"), f.help, f.path) for f in contract.flags
    ]
    callers = _callers(symbols, head, tests)
    # a YAML key that holds others is a section, not an option with a default of its own
    sections = {f.name.rpartition(".")[0] for f in contract.flags}
    options = tuple(
        Option(last_key(f.name), f.default) for f in contract.flags if f.name not in sections
    )
    return CodeUnderTest(
        profile,
        tuple(symbols),
        _scripts(split.test_files, head),
        callers,
        options,
        settings_of_test_patch(split.test_files, head),
    )


def settings_of_test_patch(test_files: Sequence[FileDiff], head: TreeReader) -> tuple[Setting, ...]:
    """What the test patch sets options to: anywhere in its Python files (a fixture or a
    module's config dictionary sets them for its tests), on the lines its launch scripts and
    run configurations add."""
    found: list[Setting] = []
    for file in test_files:
        if file.is_deleted or file.binary:
            continue
        if file.is_python:
            text = head.read(file.path)
            try:
                tree = Source(file.path, text).tree if text is not None else None
            except UnparsableSource:
                tree = None
            if tree is not None:
                found += settings_in_source(file.path, tree)
        elif file.path.endswith(SCRIPT_SUFFIXES + RUN_CONFIG_SUFFIXES):
            added = [
                (number, raw[1:])
                for hunk in file.hunks
                for number, raw in zip(hunk.added_lines(), _added(hunk.lines), strict=True)
            ]
            found += settings_in_text(file.path, added)
    return tuple(found)


def _added(lines: Sequence[str]) -> list[str]:
    return [raw for raw in lines if raw.startswith("+")]


# A changed name that this many files use leads nowhere in particular (``train``, ``load``).
MAX_NAMING_FILES = 30


def _callers(
    symbols: Sequence[ChangedSymbol], head: TreeReader, test_files: TestFiles
) -> tuple[Caller, ...]:
    """The functions of the head tree's Python files outside the tests that refer to a
    changed name (one long enough, and used in few enough files, to lead somewhere), by
    the changed names each uses."""
    leads = {s.name for s in symbols if _leads_somewhere(s.name)} - GENERIC_NAMES
    naming = {
        name: paths
        for name, paths in files_naming(head, leads).items()
        if len(paths) <= MAX_NAMING_FILES
    }
    names = set(naming)
    callers = []
    for path in sorted({p for paths in naming.values() for p in paths if p not in test_files}):
        try:
            tree = Source(path, head.read(path) or "").tree
        except UnparsableSource:
            continue
        tables = _tables(tree, names)
        functions, used_at = _functions_and_names(tree, names | set(tables))
        for name, lines in functions:
            found_at = {n for line, found in used_at.items() if line in lines for n in found}
            used = {held for n in found_at for held in tables.get(n, {n})}
            used.discard(name)  # a recursive call is not a caller
            if used:
                callers.append(Caller(name, path, frozenset(used)))
    return tuple(callers)


def _tables(tree: ast.Module, names: set[str]) -> dict[str, frozenset[str]]:
    """The module-level names bound to a value that holds some of ``names`` (a table of
    functions by key, ``ESTIMATORS = {"qwen3": _estimate_qwen3}``, or a table bound to another
    one), by the names each holds: a function that looks one up calls what it holds."""
    tables: dict[str, frozenset[str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
            continue
        used = {name for sub in ast.walk(node.value) if (name := _name_of(sub)) is not None}
        held = frozenset(used & names).union(*(tables[n] for n in used if n in tables))
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if held and isinstance(target, ast.Name):
                tables[target.id] = held | ({target.id} & names)  # the table a patch changed too
    return tables


def _names_identifier(symbol: ChangedSymbol, identifiers: frozenset[str]) -> bool:
    """The quote names the symbol, or a long part of its name (or it a long part of one)."""
    name = symbol.name.lower()
    for identifier in (i.lower() for i in identifiers):
        if name == identifier:
            return True
        if min(len(identifier), len(name)) >= MIN_IDENTIFIER and (
            identifier in name or name in identifier
        ):
            return True
    return False


def _coverage(symbol: ChangedSymbol, words: frozenset[str]) -> float:
    return len(symbol.name_words & words) / len(symbol.name_words) if symbol.name_words else 0.0


def _distinctive(symbols: Sequence[ChangedSymbol]) -> frozenset[str]:
    """Name words few changed symbols share: one of them points at a part of the change."""
    counts = Counter(w for s in symbols for w in s.name_words)
    most = max(1, int(len(symbols) * DISTINCTIVE_SHARE))
    return frozenset(w for w, n in counts.items() if n <= most)


def link(quote: str, code: CodeUnderTest) -> Link:
    """The changed symbols ``quote`` concerns (weakly: all of them, when it names none).

    An identifier the quote names wins; else the symbols most of whose name words the
    quote uses; else those whose docstring shares several words with it. A function that
    only declares command-line flags is linked only when named. Without known
    symbols (a bare profile) the link is empty and every test reaches it.
    """
    if not code.symbols:
        return Link(frozenset(), True)
    identifiers = identifiers_of(quote)
    named = {s.name for s in code.symbols if _names_identifier(s, identifiers)}
    if named:
        return Link(frozenset(named), True)
    words = words_of(quote)
    linkable = [s for s in code.symbols if not FLAG_DECLARATIONS.match(s.name)]
    scores: dict[str, float] = {}
    for symbol in linkable:  # a name two definitions share scores as the better of them
        scores[symbol.name] = max(scores.get(symbol.name, 0.0), _coverage(symbol, words))
    best = max(scores.values(), default=0.0)
    if best >= MIN_COVERAGE:
        return Link(frozenset(n for n, v in scores.items() if v == best), True)
    distinctive = _distinctive(code.symbols) & words
    by_word = {s.name for s in linkable if s.name_words & distinctive}
    by_word |= {s.name for s in linkable if len(s.doc_words & words) >= MIN_DOC_WORDS}
    if by_word:
        return Link(frozenset(by_word), True)
    return Link(frozenset(s.name for s in code.symbols), False)


def behind(linked: Link, code: CodeUnderTest) -> Link:
    """The linked symbols with the changed code behind them, one step away: the changed
    definitions they refer to (the helper a promised class calls) and those that refer to
    them (the function that reads a promised flag). A test of that code runs the promise's
    implementation; a weak link stays as it is, and short or generic names lead nowhere."""
    if not linked.strong or not linked.names:
        return linked
    linked_symbols = [s for s in code.symbols if s.name in linked.names]
    called = frozenset().union(*(s.uses for s in linked_symbols))
    found = {s.name for s in code.symbols if s.name in called and _leads_somewhere(s.name)}
    found |= _calling(linked, code)
    return Link(linked.names | frozenset(found - GENERIC_NAMES), True)


def _calling(linked: Link, code: CodeUnderTest) -> set[str]:
    """The changed definitions that refer to a linked symbol (and lead somewhere)."""
    return {s.name for s in code.symbols if s.uses & linked.names and _leads_somewhere(s.name)}


def _functions_and_names(
    tree: ast.AST, names: set[str]
) -> tuple[list[tuple[str, range]], dict[int, set[str]]]:
    """Every function of ``tree`` with its lines, and the lines where one of ``names`` is
    used (as :func:`names_used` reads a definition): one walk of the file."""
    functions: list[tuple[str, range]] = []
    used_at: dict[int, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.append((node.name, range(node.lineno, (node.end_lineno or node.lineno) + 1)))
        used = _name_of(node)
        if used in names:
            used_at.setdefault(getattr(node, "lineno", 0), set()).add(used)
    return functions, used_at


def _name_of(node: ast.AST) -> str | None:
    """The name a node uses (a string: what it may name, if it is an identifier)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.keyword):
        return node.arg
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def in_front(linked: Link, code: CodeUnderTest) -> frozenset[str]:
    """The functions that call a linked symbol, or the changed code that calls one, wherever
    they are (code the patch left alone, a changed function of another file): a test that
    calls one of them runs the linked code through it, as a test of a public entry point
    runs the private helper a PR fixed. None for a weak link; short or generic names lead
    nowhere."""
    if not linked.strong or not linked.names:
        return frozenset()
    called = linked.names | (_calling(linked, code) - GENERIC_NAMES)
    found = {c.name for c in code.callers if c.uses & called and _leads_somewhere(c.name)}
    return frozenset(found - called - GENERIC_NAMES)


def _leads_somewhere(name: str) -> bool:
    return len(name) >= MIN_BEHIND_NAME and name.lower() not in GENERIC_WORDS


def name_parts(references: Iterable[str]) -> set[str]:
    """Every part of dotted names (``torch.save`` gives ``torch`` and ``save``)."""
    return {part for ref in references for part in ref.split(".")}


def reaching_tests(linked: Link, code: CodeUnderTest) -> list[TestTraits]:
    """Tests that refer to a linked name, themselves or through a helper they call."""
    if not linked.names:
        return list(code.profile.tests)
    return [t for t in code.profile.tests if name_parts(t.references) & linked.names]


def nearby_tests(linked: Link, code: CodeUnderTest) -> list[TestTraits]:
    """Tests that refer to another changed symbol of a linked symbol's file: they may run
    the promised code through it (a model built with a patched layer, say)."""
    nearby = beside_names(linked, code)
    return [t for t in code.profile.tests if name_parts(t.references) & nearby]


def beside_names(linked: Link, code: CodeUnderTest) -> frozenset[str]:
    """The changed symbols of the files that define a linked symbol (its own name included)."""
    files = {s.path for s in code.symbols if s.name in linked.names and s.path}
    return frozenset(s.name for s in code.symbols if s.path in files) - GENERIC_NAMES


def module_of(path: str) -> str:
    """The dotted module a repository file defines (``a/b/__init__.py`` is ``a.b``)."""
    stem = path.removesuffix(".py").removesuffix("/__init__")
    return stem.replace("/", ".")


def _same_module(defined: str, used: str) -> bool:
    """``used`` names the module ``defined``, or the package right above it (whose
    ``__init__`` re-exports it), also under a source root (``src/pkg/m.py``)."""
    candidates = (defined, defined.rpartition(".")[0])
    return any(
        c == used or (used.count(".") >= 1 and c.endswith(f".{used}")) for c in candidates if c
    )


def importing_tests(linked: Link, code: CodeUnderTest) -> list[TestTraits]:
    """Tests that use names of a linked symbol's module: they run its code, maybe the
    promised part of it through a function nobody changed."""
    modules = {module_of(s.path) for s in code.symbols if s.name in linked.names and s.path}
    return [
        t
        for t in code.profile.tests
        if any(_same_module(defined, used) for defined in modules for used in t.modules)
    ]


def _names_a_linked(token: str, names: frozenset[str]) -> bool:
    """A script's key names a linked symbol or flag, or a long part of one (a launcher sets
    ``actor.use_dynamic_bsz`` for the flag ``log_prob_use_dynamic_bsz``)."""
    token = token.lower()
    return any(
        token == name
        or (min(len(token), len(name)) >= MIN_IDENTIFIER and "_" in token and token in name)
        for name in (n.lower() for n in names)
    )


def reaching_scripts(linked: Link, code: CodeUnderTest) -> list[TestScript]:
    return [s for s in code.scripts if any(_names_a_linked(t, linked.names) for t in s.tokens)]


def nearby_scripts(linked: Link, code: CodeUnderTest) -> list[TestScript]:
    """Launch scripts that set or name another changed symbol of a linked symbol's file: the
    run they start goes through the file's changed code (an end-to-end resume run names the
    trainer's new flags, not each method it calls)."""
    nearby = beside_names(linked, code)
    return reaching_scripts(Link(nearby, linked.strong), code) if nearby else []


def running_scripts(linked: Link, code: CodeUnderTest) -> list[TestScript]:
    """Launch scripts whose programs import a linked symbol's file: the run they start loads
    the promised code, though the script names none of it."""
    files = {s.path for s in code.symbols if s.name in linked.names and s.path}
    return [s for s in code.scripts if s.runs & files]

"""What a launch script of the test patch runs: the repository's files its programs import.

An end-to-end script (``python3 -m pkg.trainer.main ...``, ``torchrun ... train.py``)
starts a program of the repository; that program, and every module of the repository it
imports at any depth (inside functions too: trainers import their workers lazily), runs
when the script runs. A promise whose code is among them is run end to end by the script,
whether or not the script names it; the script asserts nothing on it. A test file a script
launches (``pytest``-style ``test_*.py``) is no program: the profile reads its assertions.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from probe_builder.gitio import TreeReader

# A program started by an interpreter or a launcher, the rest of the line its arguments.
_LAUNCHER = re.compile(r"(?:^|[\s;&|(])(?:python[\d.]*|torchrun|deepspeed)\s+(?P<args>.*)")
_TEST_FILE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$")
_MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
MAX_IMPORTED_FILES = 2000  # a closure this large has reached everything worth reaching


def folder_of(path: str) -> str:
    """The folder a repository path lies in ("" at the root)."""
    return path.rpartition("/")[0]


def launched(script: str) -> list[tuple[str, str]]:
    """The programs a shell script starts, in order: ``("module", "pkg.main")`` for
    ``-m pkg.main``, ``("file", "train.py")`` for a file (a test file is left out). A
    launcher module's own program is kept too (``-m torch.distributed.run train.py``);
    what is not the repository's is dropped when resolved."""
    programs: list[tuple[str, str]] = []
    for line in script.replace("\\\n", " ").splitlines():
        if line.lstrip().startswith("#"):
            continue
        for match in _LAUNCHER.finditer(line):
            programs += [p for p in _programs(match.group("args").split()) if p not in programs]
    return programs


def _programs(arguments: list[str]) -> list[tuple[str, str]]:
    """The module after ``-m`` and the first Python file among a launcher's arguments."""
    found: list[tuple[str, str]] = []
    for i, argument in enumerate(arguments):
        if argument == "-m" and i + 1 < len(arguments) and _MODULE.match(arguments[i + 1]):
            found.append(("module", arguments[i + 1]))
        elif argument.endswith(".py") and "$" not in argument:
            if not _TEST_FILE.search(argument):
                found.append(("file", argument.removeprefix("./")))
            break
    return found


class _Resolver:
    """Dotted modules to the repository's files, remembering the top-level names that are
    not the repository's (``torch``, ``os``): nothing under them is read. A top-level folder
    that holds a file the resolver has found or been told of is the repository's, though no
    ``__init__.py`` makes it a module (a namespace package such as ``recipe/``)."""

    def __init__(self, head: TreeReader) -> None:
        self.head = head
        self.foreign: set[str] = set()
        self.own: set[str] = set()
        self.found: dict[str, str | None] = {}

    def known(self, path: str) -> None:
        """``path`` is a file of the repository: its top-level name is not foreign."""
        top = path.split("/")[0].removesuffix(".py")
        self.own.add(top)
        self.foreign.discard(top)

    def path(self, module: str) -> str | None:
        if not module or module.split(".")[0] in self.foreign:
            return None
        if module not in self.found:
            base = module.replace(".", "/")
            hit = next(
                (p for p in (f"{base}.py", f"{base}/__init__.py") if self.head.read(p) is not None),
                None,
            )
            if hit is not None:
                self.known(hit)
            elif "." not in module and module not in self.own:
                self.foreign.add(module)
            self.found[module] = hit
        return self.found[module]


def _imported(tree: ast.AST, path: str) -> Iterable[str]:
    """Every module an import of the file names, at any depth, with its parent packages
    (importing ``a.b.c`` runs ``a`` and ``a.b`` first); ``from a import b`` names ``a.b``
    too, ``b`` may be a module."""
    package = folder_of(path).replace("/", ".")
    for node in ast.walk(tree):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*parts, *([base] if base else [])])
            modules = [base, *(f"{base}.{alias.name}" for alias in node.names if base)]
        for module in modules:
            parts = module.split(".")
            yield from (".".join(parts[:i]) for i in range(1, len(parts) + 1))


def _closure(start: str, head: TreeReader, resolver: _Resolver) -> frozenset[str]:
    """The repository files ``start`` imports at any depth, itself included."""
    resolver.known(start)
    seen: set[str] = set()
    pending = [start]
    while pending and len(seen) < MAX_IMPORTED_FILES:
        path = pending.pop()
        if path in seen:
            continue
        text = head.read(path)
        if text is None:
            continue
        seen.add(path)
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for module in _imported(tree, path):
            found = resolver.path(module)
            if found is not None and found not in seen:
                pending.append(found)
    return frozenset(seen)


class ProgramReader:
    """What the launch scripts of one tree run: each program's imports are followed once,
    however many scripts start it (a PR may edit twenty scripts that all start one
    trainer)."""

    def __init__(self, head: TreeReader) -> None:
        self.head = head
        self.resolver = _Resolver(head)
        self.closures: dict[str, frozenset[str]] = {}

    def programs(self, script_path: str, script: str) -> list[str]:
        """The repository files ``script`` starts, in order: a module by its dotted name, a
        file from the repository root or from the script's folder."""
        folder = folder_of(script_path)
        found: list[str] = []
        for kind, target in launched(script):
            if kind == "module":
                path = self.resolver.path(target)
            else:
                candidates = (target, f"{folder}/{target}" if folder else target)
                path = next((c for c in candidates if self.head.read(c) is not None), None)
            if path is not None and path not in found:
                found.append(path)
        return found

    def files_run(self, programs: Iterable[str]) -> frozenset[str]:
        """The repository files ``programs`` (what :meth:`programs` found a script starts)
        run: each program's file and what it imports."""
        runs: set[str] = set()
        for found in programs:
            if found not in self.closures:
                self.closures[found] = _closure(found, self.head, self.resolver)
            runs |= self.closures[found]
        return frozenset(runs)

"""Helpers a test file imports from another test file of the tree, read once each.

Tests of one folder often share a checker (``_check_parallel_correctness`` in a
``utils.py`` beside them, or in a module of a common test package): the test
calls it with what it built and the checker asserts. :class:`TestHelpers`
answers, for a name a test file imports, the function of another test file it
stands for, profiled by :func:`probe_builder.promises.assertions.imported_helper`.
A module is looked for beside the importing file first (pytest puts a test's
folder on ``sys.path`` when it has no ``__init__.py``), then from the tree's root;
a relative import from the importing file's package. Only test files count: a
function of the library under test is the code a test reaches, not its checker.
"""

from __future__ import annotations

from probe_builder.gitio import TreeReader
from probe_builder.material.pysource import Source, UnparsableSource
from probe_builder.promises.assertions import ImportedHelper, imported_helper
from probe_builder.promises.launches import folder_of
from probewatch.testfiles import TestFiles


class TestHelpers:
    """The functions of a tree's test files that other test files import."""

    __test__ = False  # not a pytest class, despite the name

    def __init__(self, head: TreeReader, test_files: TestFiles) -> None:
        self.head = head
        self.test_files = test_files
        self.sources: dict[str, Source | None] = {}
        self.paths: dict[tuple[str, str], str | None] = {}
        self.helpers: dict[tuple[str, str], ImportedHelper | None] = {}

    def __call__(self, importing: str, target: str) -> ImportedHelper | None:
        dots = len(target) - len(target.lstrip("."))
        module, _, name = target[dots:].rpartition(".")
        module = "." * dots + module
        if not module or not name:
            return None
        path = self._path(importing, module)
        if path is None or path == importing:
            return None
        if (path, name) not in self.helpers:
            source = self._source(path)
            self.helpers[path, name] = None if source is None else imported_helper(source, name)
        return self.helpers[path, name]

    def _path(self, importing: str, module: str) -> str | None:
        """The test file ``module`` (dotted, a relative import's leading dots kept) names,
        imported from ``importing``."""
        folder = folder_of(importing)
        key = (folder, module)
        if key not in self.paths:
            self.paths[key] = next(
                (p for p in _candidates(folder, module) if p in self.test_files and self._read(p)),
                None,
            )
        return self.paths[key]

    def _read(self, path: str) -> bool:
        return self.head.read(path) is not None

    def _source(self, path: str) -> Source | None:
        if path not in self.sources:
            text = self.head.read(path)
            try:
                self.sources[path] = None if text is None else Source(path, text)
            except UnparsableSource:
                self.sources[path] = None
        return self.sources[path]


def _candidates(folder: str, module: str) -> list[str]:
    """The files a module may be: ``a.b`` beside the importing file's folder, then from the
    root; ``..a`` from the folder one level up."""
    level = len(module) - len(module.lstrip("."))
    parts = [p for p in module.lstrip(".").split(".") if p]
    if level:
        up = folder.split("/") if folder else []
        if level - 1 > len(up):
            return []
        bases = ["/".join([*up[: len(up) - (level - 1)], *parts])]
    else:
        bases = ["/".join(p for p in (folder, *parts) if p), "/".join(parts)]
    found = []
    for base in dict.fromkeys(bases):
        found += [f"{base}.py", f"{base}/__init__.py"] if base else ["__init__.py"]
    return found

"""Interface contract: what the tests and probes use that the golden patch adds or changes.

A symbol (function, method, class, module constant) is *changed* when a line
the golden patch added or deleted falls inside it; it enters the contract
when a test or probe file refers to it: imports it (directly, through an
alias, or re-exported by a parent package), uses an attribute of it, or, for
a method, calls that method name on anything while referring to its class.
Each symbol carries its module path, qualified name, signature with defaults
and annotations, decorators, class attributes and dataclass fields. New
configuration flags (argparse, config classes, YAML keys) are always listed.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from probe_builder.gitio import TreeReader
from probe_builder.material.config_flags import ConfigFlag, new_flags
from probe_builder.material.diffs import FileDiff
from probe_builder.material.pysource import (
    Definition,
    Source,
    UnparsableSource,
    dotted_name,
    import_bindings,
    iter_definitions,
    module_name,
)
from probe_builder.material.signatures import (
    ClassAttribute,
    Parameter,
    class_attributes,
    class_signature,
    decorators,
    function_signature,
    parameters,
)


class SymbolKind(StrEnum):
    function = "function"
    method = "method"
    klass = "class"
    constant = "constant"


class SymbolStatus(StrEnum):
    added = "added"
    changed = "changed"


class ContractSymbol(BaseModel):
    model_config = ConfigDict(frozen=True)

    module: str
    qualname: str
    kind: SymbolKind
    status: SymbolStatus
    signature: str = ""
    parameters: list[Parameter] = Field(default_factory=list)
    decorators: list[str] = Field(default_factory=list)
    bases: list[str] = Field(default_factory=list)
    attributes: list[ClassAttribute] = Field(default_factory=list)
    is_async: bool = False
    path: str
    line: int
    used_by: list[str] = Field(default_factory=list)  # test and probe files that refer to it

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.qualname}"

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]


class Contract(BaseModel):
    model_config = ConfigDict(frozen=True)

    symbols: list[ContractSymbol] = Field(default_factory=list)
    flags: list[ConfigFlag] = Field(default_factory=list)


@dataclass(frozen=True)
class Usage:
    """What one test or probe file refers to."""

    path: str
    dotted: frozenset[str]  # resolved through the file's imports: pkg.mod.Cls.attr
    attributes: frozenset[str]  # every attribute name used on anything: .reset, .step


def _import_aliases(tree: ast.AST) -> dict[str, str]:
    """Each name bound by an absolute import, and the dotted name it refers to."""
    return {b.name: b.target for b in import_bindings(tree) if not b.level and b.module}


def usage_of(path: str, text: str) -> Usage:
    """Resolve every dotted name of a test file through its imports."""
    tree = Source(path, text).tree
    aliases = _import_aliases(tree)
    dotted: set[str] = set(aliases.values())
    attributes: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            attributes.add(node.attr)
        name = dotted_name(node) if isinstance(node, ast.Name | ast.Attribute) else None
        if name is None:
            continue
        head, _, rest = name.partition(".")
        if head in aliases:
            dotted.add(f"{aliases[head]}.{rest}" if rest else aliases[head])
    return Usage(path, frozenset(dotted), frozenset(attributes))


def _import_paths(module: str) -> list[str]:
    """Every module path a symbol can be imported through: its own and its packages'.

    ``pkg/sub/mod.py``'s ``Cls`` may be re-exported as ``pkg.sub.Cls`` or ``pkg.Cls``;
    a leading ``src.`` layout folder is not part of any import path.
    """
    parts = module.split(".")
    if parts[0] == "src" and len(parts) > 1:
        parts = parts[1:]
    return [".".join(parts[:n]) for n in range(len(parts), 0, -1)]


def _refers(usage: Usage, module: str, qualname: str) -> bool:
    for prefix in _import_paths(module):
        full = f"{prefix}.{qualname}"
        if any(ref == full or ref.startswith(full + ".") for ref in usage.dotted):
            return True
    return False


def is_used(usage: Usage, definition: Definition, module: str) -> bool:
    if _refers(usage, module, definition.qualname):
        return True
    if definition.is_method:
        owner = definition.qualname.rsplit(".", 1)[0]
        return definition.node.name in usage.attributes and _refers(usage, module, owner)
    return False


def _symbol(
    definition: Definition, module: str, path: str, status: SymbolStatus, used_by: list[str]
) -> ContractSymbol:
    node = definition.node
    common: dict[str, Any] = dict(
        module=module,
        qualname=definition.qualname,
        status=status,
        path=path,
        line=node.lineno,
        decorators=decorators(node),
        used_by=used_by,
    )
    if isinstance(node, ast.ClassDef):
        return ContractSymbol(
            kind=SymbolKind.klass,
            signature=class_signature(node),
            bases=[ast.unparse(b) for b in node.bases],
            attributes=class_attributes(node),
            **common,
        )
    kind = SymbolKind.method if definition.is_method else SymbolKind.function
    return ContractSymbol(
        kind=kind,
        signature=function_signature(node),
        parameters=parameters(node.args),
        is_async=isinstance(node, ast.AsyncFunctionDef),
        **common,
    )


def _constants(source: Source, changed: set[int]) -> list[tuple[str, int]]:
    names: list[tuple[str, int]] = []
    for stmt in source.tree.body:
        targets: list[ast.expr] = []
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, ast.AnnAssign):
            targets = [stmt.target]
        if stmt.lineno in changed:
            names.extend((t.id, stmt.lineno) for t in targets if isinstance(t, ast.Name))
    return names


def _base_qualnames(text: str | None, path: str) -> set[str]:
    if text is None:
        return set()
    try:
        tree = Source(path, text).tree
    except UnparsableSource:
        return set()
    names = {d.qualname for d in iter_definitions(tree)}
    names.update(
        t.id
        for s in tree.body
        if isinstance(s, ast.Assign)
        for t in s.targets
        if isinstance(t, ast.Name)
    )
    return names


def file_symbols(
    file: FileDiff, *, base: TreeReader, head: TreeReader, usages: Sequence[Usage]
) -> list[ContractSymbol]:
    text = head.read(file.path)
    if text is None:
        return []
    source = Source(file.path, text)
    module, changed = module_name(file.path), set(file.changed_lines())
    existing = _base_qualnames(
        None if file.is_new else base.read(file.old_path or file.path), file.path
    )
    symbols = []
    for definition in iter_definitions(source.tree):
        if definition.parents and not all(isinstance(p, ast.ClassDef) for p in definition.parents):
            continue  # functions local to a function are not reachable from a test
        if not changed.intersection(definition.lines()):
            continue
        used_by = [u.path for u in usages if is_used(u, definition, module)]
        if used_by:
            status = SymbolStatus.changed if definition.qualname in existing else SymbolStatus.added
            symbols.append(_symbol(definition, module, file.path, status, used_by))
    for name, line in _constants(source, changed):
        used_by = [u.path for u in usages if _refers(u, module, name)]
        if used_by:
            status = SymbolStatus.changed if name in existing else SymbolStatus.added
            symbols.append(
                ContractSymbol(
                    module=module,
                    qualname=name,
                    kind=SymbolKind.constant,
                    status=status,
                    path=file.path,
                    line=line,
                    used_by=used_by,
                )
            )
    return symbols


def sources_of_test_patch(test_files: Sequence[FileDiff], *, head: TreeReader) -> dict[str, str]:
    """Post-change text of the Python files a test patch adds or changes."""
    sources = {}
    for file in test_files:
        if file.is_python and not file.is_deleted:
            text = head.read(file.path)
            if text is not None:
                sources[file.path] = text
    return sources


def extract_contract(
    golden_files: Sequence[FileDiff],
    *,
    base: TreeReader,
    head: TreeReader,
    sources: Mapping[str, str],
) -> Contract:
    """The contract of a golden patch against the test and probe ``sources`` (path -> text)."""
    usages = []
    for path, text in sources.items():
        try:
            usages.append(usage_of(path, text))
        except UnparsableSource:
            continue  # a file this Python cannot parse cannot name anything for us
    symbols: list[ContractSymbol] = []
    for file in golden_files:
        if file.is_python and not file.is_deleted:
            try:
                symbols.extend(file_symbols(file, base=base, head=head, usages=usages))
            except UnparsableSource:
                continue
    return Contract(symbols=symbols, flags=new_flags(golden_files, base=base, head=head))

"""New configuration flags a golden patch adds: argparse options, config fields, YAML keys.

A flag is new when its line is one the golden patch added (argparse options,
fields of a dataclass/pydantic config class) or, for YAML, when its key path
exists after the change and not before. YAML is read by indentation, which
is all config files in these repositories need and keeps line numbers.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from probe_builder.gitio import TreeReader
from probe_builder.material.diffs import FileDiff
from probe_builder.material.pysource import Source, UnparsableSource, call_name, iter_definitions
from probe_builder.material.signatures import class_attributes, is_dataclass_like

YAML_SUFFIXES = (".yaml", ".yml")
CONFIG_CLASS = re.compile(r"(Config|Configs|Args|Arguments|Options|Settings|Params)$")
_YAML_KEY = re.compile(
    r"^(?P<indent>\s*)(?:-\s+)?(?P<key>[A-Za-z_][\w.\-]*)\s*:(?:\s+(?P<value>[^#]*?))?\s*(?:#.*)?$"
)


class FlagKind(StrEnum):
    argparse = "argparse"
    config_field = "config_field"
    yaml = "yaml"


class ConfigFlag(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: FlagKind
    name: str  # "--flag", "ActorConfig.use_x", "actor.optim.use_x"
    default: str | None = None
    annotation: str | None = None
    help: str | None = None
    path: str
    line: int


def _keyword(call: ast.Call, name: str) -> str | None:
    for keyword in call.keywords:
        if keyword.arg == name:
            return ast.unparse(keyword.value)
    return None


def argparse_flags(source: Source, added: set[int]) -> list[ConfigFlag]:
    flags = []
    calls = [n for n in ast.walk(source.tree) if isinstance(n, ast.Call) and n.lineno in added]
    for node in calls:
        if not (call_name(node) or "").endswith("add_argument"):
            continue
        options = [
            a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        if not options:
            continue
        flag = max(options, key=lambda o: (o.startswith("--"), len(o)))
        flags.append(
            ConfigFlag(
                kind=FlagKind.argparse,
                name=flag,
                default=_keyword(node, "default"),
                annotation=_keyword(node, "type"),
                help=_keyword(node, "help"),
                path=source.path,
                line=node.lineno,
            )
        )
    return flags


def config_fields(source: Source, added: set[int]) -> list[ConfigFlag]:
    flags = []
    for definition in iter_definitions(source.tree):
        node = definition.node
        if not isinstance(node, ast.ClassDef) or not (
            is_dataclass_like(node) and CONFIG_CLASS.search(node.name)
        ):
            continue
        lines = {
            stmt.target.id: stmt.lineno
            for stmt in node.body
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
        }
        for attr in class_attributes(node):
            if attr.is_field and lines.get(attr.name) in added:
                flags.append(
                    ConfigFlag(
                        kind=FlagKind.config_field,
                        name=f"{definition.qualname}.{attr.name}",
                        default=attr.default,
                        annotation=attr.annotation,
                        path=source.path,
                        line=lines[attr.name],
                    )
                )
    return flags


def yaml_keys(text: str) -> dict[str, tuple[int, str | None]]:
    """Dotted key path -> (line, scalar value) for every mapping key, by indentation."""
    keys: dict[str, tuple[int, str | None]] = {}
    stack: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _YAML_KEY.match(line)
        if match is None or line.lstrip().startswith("#"):
            continue
        indent = len(match.group("indent"))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([*(k for _, k in stack), match.group("key")])
        value = match.group("value") or None
        keys.setdefault(path, (number, value))
        stack.append((indent, match.group("key")))
    return keys


def yaml_flags(path: str, before: str | None, after: str) -> list[ConfigFlag]:
    old = yaml_keys(before or "")
    return [
        ConfigFlag(kind=FlagKind.yaml, name=key, default=value, path=path, line=line)
        for key, (line, value) in yaml_keys(after).items()
        if key not in old
    ]


def new_flags(
    golden_files: Sequence[FileDiff], *, base: TreeReader, head: TreeReader
) -> list[ConfigFlag]:
    """Every configuration flag the golden patch adds, in file order."""
    flags: list[ConfigFlag] = []
    for file in golden_files:
        if file.is_deleted or file.binary:
            continue
        after = head.read(file.path)
        if after is None:
            continue
        if file.path.endswith(YAML_SUFFIXES):
            flags.extend(
                yaml_flags(
                    file.path, None if file.is_new else base.read(file.old_path or file.path), after
                )
            )
        elif file.is_python:
            try:
                source = Source(file.path, after)
            except UnparsableSource:
                continue
            added = set(file.added_lines())
            flags.extend([*argparse_flags(source, added), *config_fields(source, added)])
    return flags

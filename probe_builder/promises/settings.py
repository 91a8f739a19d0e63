"""What a PR's test patch sets options to: keyword arguments, dictionary keys, attributes
assigned, command-line flags and ``key=value`` overrides, each with the value it is given.

A promise about an option (``--enable-fused-sampler``, ``use_fused_topk``) is run only where
something turns the option on; a test that builds the code with the option left at an off
default, or sets it off by hand, runs the code without what the promise adds. The readings
here are of the whole text of each Python file of the test patch (a fixture or a module's
config dictionary sets options for its tests) and of the lines a launch script or a run
configuration adds.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    """An option given a value: ``key`` is its last part (``use_x`` of ``actor.use_x``)."""

    key: str
    value: str  # the value's source text; "True" for a bare command-line flag
    path: str
    line: int


# Values that leave an option off: empty, false, none, zero, an empty collection, or a word
# that says so.
_OFF = re.compile(
    r"^(|false|none|null|~|0|0\.0*|\[\]|\(\)|\{\}|off|no|disabled?"
    r"|field\(default=(false|none|0)\))$",
    re.I,
)


def is_off(value: str | None) -> bool:
    """``value`` (source text, quoted or not) leaves an option off; None is no value at all."""
    if value is None:
        return True
    text = value.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1].strip()
    return _OFF.match(text.replace(" ", "")) is not None


def last_key(name: str) -> str:
    """An option's name as code reads it: the last part of a dotted key, a command-line
    flag's dashes as underscores (``--enable-fused-sampler`` is ``enable_fused_sampler``)."""
    return name.lstrip("-").rsplit(".", 1)[-1].replace("-", "_")


# ``actor.use_x=True`` in a string or a shell line (Hydra's ``+key=value`` too).
_OVERRIDE = re.compile(r"(?<![\w.-])\+{0,2}([A-Za-z_][\w.]*)=([^\s'\"]*)")
# ``--flag``, ``--flag value`` or ``--flag=value``
_FLAG = re.compile(r"(?<![\w-])--([A-Za-z][\w-]*)(?:[= ]+([^\s-][^\s]*))?")
# ``key: value`` in a run configuration
_YAML_KEY = re.compile(r"^\s*-?\s*([A-Za-z_][\w.-]*)\s*:\s*(\S[^#]*?)\s*(#.*)?$")


def settings_in_text(path: str, lines: Iterable[tuple[int, str]]) -> list[Setting]:
    """The options the numbered ``lines`` of a launch script or a run configuration set."""
    yaml = path.endswith((".yaml", ".yml"))
    found = []
    for number, line in lines:
        if line.lstrip().startswith("#"):
            continue
        if yaml and (match := _YAML_KEY.match(line)):
            found.append(Setting(last_key(match.group(1)), match.group(2), path, number))
            continue
        found += _from_string(line, path, number)
    return found


def _from_string(text: str, path: str, line: int) -> list[Setting]:
    found = [Setting(last_key(k), v, path, line) for k, v in _OVERRIDE.findall(text)]
    for flag, value in _FLAG.findall(text):
        if "=" in flag:
            continue
        found.append(Setting(last_key(flag), value or "True", path, line))
    return found


def settings_in_source(path: str, tree: ast.Module) -> list[Setting]:
    """The options a Python file sets: keyword arguments of calls, entries of dictionaries
    keyed by a string, attributes and string subscripts assigned, ``setattr`` with a
    string name, and overrides and flags spelled in its strings (``"actor.use_x=True"``,
    ``"--enable-fused-sampler"``; a list of strings is read as one command line, so that
    ``["--workers", "0"]`` gives the flag its value)."""
    found: list[Setting] = []
    read: set[int] = set()  # the strings of an argument list, read together
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.List | ast.Tuple) and _all_strings(node.elts):
            command = " ".join(_string(e) or "" for e in node.elts)
            found += _from_string(command, path, line)
            read.update(id(e) for e in node.elts)
            continue
        if isinstance(node, ast.keyword) and node.arg:
            found.append(Setting(node.arg, ast.unparse(node.value), path, node.value.lineno))
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    found.append(Setting(last_key(key.value), ast.unparse(value), path, line))
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                assigned = _assigned_key(target)
                if assigned:
                    found.append(Setting(assigned, ast.unparse(node.value), path, line))
        elif isinstance(node, ast.Call) and _is_setattr(node):
            name, value = node.args[1], node.args[2]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                found.append(Setting(last_key(name.value), ast.unparse(value), path, line))
        elif (text := _string(node)) is not None and id(node) not in read:
            found += _from_string(text, path, line)
    return found


def _string(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _all_strings(nodes: list[ast.expr]) -> bool:
    return bool(nodes) and all(_string(n) is not None for n in nodes)


def _assigned_key(target: ast.expr) -> str | None:
    if isinstance(target, ast.Attribute):
        return target.attr
    if isinstance(target, ast.Subscript):
        index = target.slice
        if isinstance(index, ast.Constant) and isinstance(index.value, str):
            return last_key(index.value)
    return None


def _is_setattr(call: ast.Call) -> bool:
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    return name == "setattr" and len(call.args) == 3

"""Read ``install_requires`` and chosen ``extras_require`` groups from setup.py without running it.

Running an upstream setup.py to learn its dependencies would execute arbitrary
code with the service's rights; instead the file is parsed, and only literal
lists (given inline to ``setup()`` or through a module-level name bound to a
literal) are read. Anything computed returns ``None``: the caller then relies
on the other sources.
"""

from __future__ import annotations

import ast

from probewatch.syntax import parse_module


def static_setup_requirements(source: str, extras: tuple[str, ...] = ()) -> list[str] | None:
    """The literal requirement lines of ``setup.py``, or ``None`` when they are not static."""
    try:
        tree = parse_module(source)
    except SyntaxError:
        return None
    names = _literal_assignments(tree)
    call = _setup_call(tree)
    if call is None:
        return None
    keywords = {kw.arg: kw.value for kw in call.keywords if kw.arg}
    install = _strings(keywords.get("install_requires"), names)
    if install is None:
        return None
    for extra in extras:
        install.extend(_extra(keywords.get("extras_require"), extra, names) or [])
    return install


def _literal_assignments(tree: ast.Module) -> dict[str, ast.expr]:
    found: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                found[target.id] = node.value
    return found


def _setup_call(tree: ast.Module) -> ast.Call | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called_name(node.func) == "setup":
            return node
    return None


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _deref(node: ast.expr | None, names: dict[str, ast.expr]) -> ast.expr | None:
    if isinstance(node, ast.Name):
        return names.get(node.id)
    return node


def _strings(node: ast.expr | None, names: dict[str, ast.expr]) -> list[str] | None:
    node = _deref(node, names)
    if not isinstance(node, ast.List | ast.Tuple):
        return None
    values = [_deref(item, names) for item in node.elts]
    strings = [v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    return strings if len(strings) == len(values) else None


def _extra(node: ast.expr | None, extra: str, names: dict[str, ast.expr]) -> list[str] | None:
    node = _deref(node, names)
    if not isinstance(node, ast.Dict):
        return None
    for key, value in zip(node.keys, node.values, strict=True):
        if isinstance(key, ast.Constant) and key.value == extra:
            return _strings(value, names)
    return None

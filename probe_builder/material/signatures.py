"""Signatures, class attributes and dataclass fields rendered from the syntax tree.

The contract shows an agent exactly what the tests will call: parameter
names, kinds, annotations and defaults as written in the post-change source
(``ast.unparse``), not as an import would report them — nothing is imported.
"""

from __future__ import annotations

import ast
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from probe_builder.material.pysource import dotted_name


class ParameterKind(StrEnum):
    positional_only = "positional_only"
    positional_or_keyword = "positional_or_keyword"
    var_positional = "var_positional"
    keyword_only = "keyword_only"
    var_keyword = "var_keyword"


class Parameter(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    kind: ParameterKind
    annotation: str | None = None
    default: str | None = None


class ClassAttribute(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    annotation: str | None = None
    default: str | None = None
    is_field: bool = False  # a dataclass / pydantic field rather than a plain class attribute


def _unparse(node: ast.AST | None) -> str | None:
    return None if node is None else ast.unparse(node)


def parameters(args: ast.arguments) -> list[Parameter]:
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(
        args.defaults
    )
    out = []
    for index, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        kind = (
            ParameterKind.positional_only
            if index < len(args.posonlyargs)
            else ParameterKind.positional_or_keyword
        )
        out.append(
            Parameter(
                name=arg.arg,
                kind=kind,
                annotation=_unparse(arg.annotation),
                default=_unparse(default),
            )
        )
    if args.vararg is not None:
        out.append(
            Parameter(
                name=args.vararg.arg,
                kind=ParameterKind.var_positional,
                annotation=_unparse(args.vararg.annotation),
            )
        )
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        out.append(
            Parameter(
                name=arg.arg,
                kind=ParameterKind.keyword_only,
                annotation=_unparse(arg.annotation),
                default=_unparse(kw_default),
            )
        )
    if args.kwarg is not None:
        out.append(
            Parameter(
                name=args.kwarg.arg,
                kind=ParameterKind.var_keyword,
                annotation=_unparse(args.kwarg.annotation),
            )
        )
    return out


def function_signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """``(a: int, /, b=1, *args, c: str = 'x', **kw) -> T`` as in the source."""
    text = f"({ast.unparse(node.args)})"
    return f"{text} -> {ast.unparse(node.returns)}" if node.returns is not None else text


def decorators(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> list[str]:
    return [ast.unparse(d) for d in node.decorator_list]


def is_dataclass_like(node: ast.ClassDef) -> bool:
    """A dataclass, attrs class, or a class deriving a pydantic/SQLModel/NamedTuple base."""
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (dotted_name(target) or "").rsplit(".", 1)[-1] in (
            "dataclass",
            "define",
            "frozen",
            "attrs",
        ):
            return True
    bases = {(dotted_name(b) or "").rsplit(".", 1)[-1] for b in node.bases}
    return bool(
        bases & {"BaseModel", "BaseSettings", "SQLModel", "NamedTuple", "TypedDict", "BaseConfig"}
    )


def class_attributes(node: ast.ClassDef) -> list[ClassAttribute]:
    fields = is_dataclass_like(node)
    out = []
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            out.append(
                ClassAttribute(
                    name=stmt.target.id,
                    annotation=ast.unparse(stmt.annotation),
                    default=_unparse(stmt.value),
                    is_field=fields,
                )
            )
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    out.append(ClassAttribute(name=target.id, default=ast.unparse(stmt.value)))
    return out


def class_signature(node: ast.ClassDef) -> str:
    """The constructor: ``__init__``'s parameters, or the fields of a dataclass."""
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
            return function_signature(stmt)
    if is_dataclass_like(node):
        parts = []
        for attr in class_attributes(node):
            if attr.is_field and not (attr.annotation or "").startswith(
                ("ClassVar", "typing.ClassVar")
            ):
                default = f" = {attr.default}" if attr.default is not None else ""
                parts.append(f"{attr.name}: {attr.annotation}{default}")
        return f"({', '.join(parts)})"
    return "(...)"  # inherited constructor

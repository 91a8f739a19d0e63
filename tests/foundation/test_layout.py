"""The tree reads as the pipeline: imports point one way, and no package is a flat heap.

Layers, lowest first: the foundation (``probewatch``: errors, globs, git); the registry
and the runners, which know nothing of each other; the miner; the builder; the
application's core (settings, watch file, context, pipeline stages, report, evaluation,
demo); and at the top the service and the CLI, which nothing imports.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PACKAGES = ("probewatch", "task_registry", "runners", "pr_miner", "probe_builder", "bot")
MAX_MODULES = 15

# What each part may import besides itself; the longest prefix of a module names its part.
FOUNDATION = {"probewatch"}
DOMAIN = FOUNDATION | {"task_registry", "runners", "pr_miner", "probe_builder"}
CORE = {
    "bot.console",
    "bot.settings",
    "bot.watchfile",
    "bot.repos",
    "bot.context",
    "bot.authoring",
    "bot.pipeline",
}
ALLOWED: dict[str, set[str]] = {
    "probewatch": set(),
    "task_registry": FOUNDATION,
    "runners": FOUNDATION,
    "pr_miner": FOUNDATION | {"task_registry", "runners"},
    "probe_builder": FOUNDATION | {"task_registry", "runners", "pr_miner"},
    "bot.console": set(),
    "bot.settings": DOMAIN,
    "bot.watchfile": DOMAIN,
    "bot.repos": DOMAIN | {"bot.settings", "bot.watchfile"},
    "bot.context": DOMAIN | CORE,
    "bot.authoring": DOMAIN | CORE,
    "bot.pipeline": DOMAIN | CORE,
    "bot.report": DOMAIN | CORE,
    "bot.evaluate": DOMAIN | CORE,
    "bot.demo": DOMAIN | CORE | {"bot.report", "bot.evaluate"},
    "bot.service": DOMAIN | CORE | {"bot.report", "bot.evaluate"},
    "bot.cli": DOMAIN | CORE | {"bot.report", "bot.evaluate", "bot.demo", "bot.service"},
    "bot": set(),
}


def part_of(module: str) -> str | None:
    """The part of the layering a module belongs to (the longest matching prefix)."""
    matches = [p for p in ALLOWED if module == p or module.startswith(p + ".")]
    return max(matches, key=len) if matches else None


def project_modules() -> Iterator[tuple[str, Path]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).with_suffix("")
            if "migrations" in relative.parts or "templates" in relative.parts:
                continue
            yield ".".join(relative.parts).removesuffix(".__init__"), path


def imports_of(path: Path) -> set[str]:
    """Every project module ``path`` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in found if part_of(name) is not None}


def violations() -> list[str]:
    wrong = []
    for module, path in project_modules():
        home = part_of(module)
        assert home is not None, module
        for imported in sorted(imports_of(path)):
            target = part_of(imported)
            if target is None or target == home:
                continue
            if target not in ALLOWED[home]:
                wrong.append(f"{module} ({home}) imports {imported} ({target})")
    return wrong


def test_imports_point_one_way() -> None:
    assert violations() == []


def test_the_check_catches_an_import_against_the_direction(tmp_path: Path) -> None:
    upward = tmp_path / "upward.py"
    upward.write_text("def f():\n    from bot.cli.main import app\n    return app\n")
    imported = imports_of(upward)
    assert "bot.cli.main" in imported
    assert part_of("bot.cli.main") not in ALLOWED["bot.service"]
    assert part_of("bot.service.app") not in ALLOWED["probe_builder"]
    assert part_of("task_registry.db") not in ALLOWED["runners"]


def test_nothing_imports_the_service_or_the_cli() -> None:
    for part, allowed in ALLOWED.items():
        if part != "bot.cli":
            assert "bot.cli" not in allowed, part
        if part not in ("bot.cli", "bot.service"):
            assert "bot.service" not in allowed, part


@pytest.mark.parametrize(
    "folder",
    sorted(
        {
            path.parent
            for package in (*PACKAGES, "tests")
            for path in (ROOT / package).rglob("__init__.py")
        }
        | {ROOT / "bench"}
    ),
    ids=lambda folder: str(folder.relative_to(ROOT)),
)
def test_no_flat_package_holds_more_than_fifteen_modules(folder: Path) -> None:
    modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
    assert len(modules) <= MAX_MODULES, sorted(p.name for p in modules)


def test_bot_has_folders_not_name_prefixes() -> None:
    prefixed = [
        p.name for p in (ROOT / "bot").rglob("*.py") if p.name.startswith(("cli_", "eval_"))
    ]
    assert prefixed == []

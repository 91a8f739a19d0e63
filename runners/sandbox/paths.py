"""The folders a run's interpreter reads, so the sandbox can show them and nothing more.

A run's ``python`` may be a shared environment, a run's own layer over one
(runners/env/overlay.py: a ``.pth`` line names the shared site-packages), or
probewatch's own interpreter; each virtual environment names the installation it was
made from in ``pyvenv.cfg``, and ``bin/python`` is often a link into it. All of these
are followed. Probes import the probe kit; when probewatch is installed editable its
packages live outside site-packages, so a run on probewatch's interpreter is also shown
the kit's package.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

from runners.env.overlay import SHARED_PTH

KIT_PACKAGE = "probe_builder"  # probes import ``probe_builder.kit``
SYSTEM_ROOTS = (Path("/usr"), Path("/"))  # shown to every run anyway
_ADDSITEDIR = re.compile(r"addsitedir\((['\"])(?P<path>.+?)\1")


def interpreter_paths(python: Path) -> tuple[Path, ...]:
    """The folders ``python`` needs: its environment, any environment it layers over, the
    installations they were made from, and the probe kit when it is probewatch's own."""
    found: list[Path] = []
    pending = [python]
    while pending:
        exe = pending.pop()
        roots = _roots_of(exe)
        new = [r for r in roots if r not in found]
        found += new
        pending += [Path(p) / "bin" / "python" for p in _layered_over(new)]
    if any(_same(root, Path(sys.prefix)) for root in found):
        found += kit_folders(found)
    return tuple(p for p in dict.fromkeys(found) if p not in SYSTEM_ROOTS)


def kit_folders(roots: list[Path]) -> list[Path]:
    """The kit's package as this process finds it, and as an editable install's finder in
    ``roots`` maps it (the run's interpreter resolves it that way)."""
    spec = importlib.util.find_spec(KIT_PACKAGE)
    found = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    for root in roots:
        for finder in root.glob("lib/python3*/site-packages/__editable__*finder.py"):
            match = _mapped(KIT_PACKAGE).search(finder.read_text(encoding="utf-8"))
            if match:
                found.append(Path(match.group("path")))
    return found


def _mapped(package: str) -> re.Pattern[str]:
    return re.compile(rf"'{package}': '(?P<path>[^']+)'")


def _roots_of(exe: Path) -> list[Path]:
    """The environment ``exe`` belongs to, where its link points, and ``pyvenv.cfg``'s home."""
    root = exe.parent.parent
    roots = [root, Path(os.path.realpath(exe)).parent.parent]
    config = root / "pyvenv.cfg"
    if config.is_file():
        home = _config_value(config, "home")
        if home:
            roots += [Path(home).parent, Path(os.path.realpath(home)).parent]
    return list(dict.fromkeys(roots))


def _layered_over(roots: list[Path]) -> list[str]:
    """Environments whose site-packages a layer adds (its ``SHARED_PTH`` line)."""
    found = []
    for root in roots:
        for pth in root.glob(f"lib/python3*/site-packages/{SHARED_PTH}"):
            match = _ADDSITEDIR.search(pth.read_text(encoding="utf-8"))
            if match:
                found.append(str(Path(match.group("path")).parents[2]))
    return found


def _config_value(config: Path, key: str) -> str | None:
    for line in config.read_text(encoding="utf-8").splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() == key:
            return value.strip()
    return None


def _same(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)

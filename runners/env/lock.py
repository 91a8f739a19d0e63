"""Resolve a requirement set in a PR's own era with ``uv pip compile``, and hash the result.

``--exclude-newer <merge time>`` makes the resolver see the package index as it
was when the PR merged, so a 2025 PR gets 2025 packages. The runner's overrides
(its torch build) are applied on top. The lock hash covers the interpreter's
version and platform and the full pinned set, so two tasks share an environment
exactly when they would install the same files.
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from runners.env.config import GUARDED_PACKAGES, RunnerOverrides, requirement_name
from runners.env.errors import EnvError
from runners.env.uv import Uv, UvError

HASH_SCHEMA = 1
NO_OVERRIDES = RunnerOverrides()


class ResolutionError(EnvError):
    """The requirement set has no solution in the given era (uv's reason in the message)."""


class GuardedPackageError(ResolutionError):
    """A package that must come from a runner override would come from the index."""


@dataclass(frozen=True)
class Interpreter:
    path: Path
    version: str  # "3.11.9"
    platform: str  # "linux-x86_64"


@functools.cache
def interpreter(path: Path) -> Interpreter:
    """Version and platform of a Python interpreter, asked from the interpreter itself."""
    code = "import platform, sysconfig; print(platform.python_version(), sysconfig.get_platform())"
    out = subprocess.run([str(path), "-c", code], capture_output=True, text=True, check=True)
    version, platform = out.stdout.split()
    return Interpreter(path, version, platform)


@dataclass(frozen=True)
class Lock:
    """A resolved, pinned requirement set for one interpreter, and its hash."""

    lock_hash: str
    python: Interpreter
    pins: tuple[str, ...]  # "name==version", sorted by name
    requirements: tuple[str, ...]  # what was resolved (inputs, harness included)
    exclude_newer: str | None = None
    overrides: RunnerOverrides = NO_OVERRIDES

    def pin_of(self, name: str) -> str | None:
        wanted = requirement_name(name)
        return next((p for p in self.pins if requirement_name(p) == wanted), None)


def era_timestamp(when: datetime) -> str:
    """RFC 3339 in UTC, as ``--exclude-newer`` takes it (a naive time is taken as UTC)."""
    aware = when if when.tzinfo else when.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def lock_hash(python: Interpreter, pins: Sequence[str]) -> str:
    payload = {
        "schema": HASH_SCHEMA,
        "python": python.version,
        "platform": python.platform,
        "pins": sorted(pins, key=str.lower),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def resolve(
    requirements: Sequence[str],
    *,
    python: Path,
    uv: Uv,
    overrides: RunnerOverrides = NO_OVERRIDES,
    exclude_newer: datetime | None = None,
) -> Lock:
    """Pin ``requirements`` and the harness for ``python`` as the index was at ``exclude_newer``."""
    wanted = tuple(dict.fromkeys([*requirements, *overrides.harness, *overrides.optional]))
    era = era_timestamp(exclude_newer) if exclude_newer else None
    with tempfile.TemporaryDirectory(prefix="probewatch-lock-") as tmp:
        args = _compile_args(Path(tmp), wanted, python, overrides, era)
        try:
            out = uv.run(args)
        except UvError as exc:
            raise ResolutionError(str(exc)) from None
    pins = parse_pins(out)
    _check_guarded(pins, overrides)
    info = interpreter(python)
    return Lock(lock_hash(info, pins), info, pins, wanted, era, overrides)


def _compile_args(
    tmp: Path,
    wanted: tuple[str, ...],
    python: Path,
    overrides: RunnerOverrides,
    era: str | None,
) -> list[str]:
    requirements_txt = tmp / "requirements.in"
    requirements_txt.write_text("\n".join(wanted) + "\n", encoding="utf-8")
    args = ["pip", "compile", str(requirements_txt), "--python", str(python)]
    args += ["--no-header", "--no-annotate", "--quiet"]
    if overrides.requirements:
        overrides_txt = tmp / "overrides.txt"
        overrides_txt.write_text("\n".join(overrides.requirements) + "\n", encoding="utf-8")
        args += ["--overrides", str(overrides_txt)]
    for folder in overrides.find_links:
        args += ["--find-links", str(folder)]
    if era:
        args += ["--exclude-newer", era]
    return args


def parse_pins(compiled: str) -> tuple[str, ...]:
    """The ``name==version`` lines of ``uv pip compile`` output, sorted by name."""
    pins = [line.strip() for line in compiled.splitlines()]
    pins = [line for line in pins if line and not line.startswith(("#", "-"))]
    return tuple(sorted(pins, key=str.lower))


def _check_guarded(pins: tuple[str, ...], overrides: RunnerOverrides) -> None:
    allowed = overrides.overridden_names() | {requirement_name(n) for n in overrides.allow_index}
    for pin in pins:
        name = requirement_name(pin)
        if name in GUARDED_PACKAGES and name not in allowed:
            raise GuardedPackageError(
                f"{pin} would be installed from the package index, but it must be the "
                f"runner's own build (matching its torch; a CUDA build is gigabytes): give it "
                f"as an override, e.g. --override '{name}==VERSION+cpu' --find-links WHEEL_DIR"
            )


# --- which interpreter: the repository's requires-python decides ---------------------------
#
# A repository that moved to a newer Python cannot be installed into an environment of an
# older interpreter. The runner offers the interpreter running probewatch and those it
# names (PROBEWATCH_RUNNER_PYTHONS, the watch file's [runner] pythons); the running one
# wins when it fits, else the oldest that does (closest to the era).


class NoInterpreterError(EnvError):
    """No interpreter this runner offers meets the repository's ``requires-python``."""


def choose_interpreter(
    requires_python: str | None, default: Path | None = None, offered: Sequence[Path] = ()
) -> Path:
    """The interpreter to build on: ``default`` (this process's) when it meets
    ``requires_python``, else the oldest of ``offered`` that does."""
    first = default or Path(sys.executable)
    if not requires_python:
        return first
    try:
        wanted = SpecifierSet(requires_python)
    except InvalidSpecifier:
        return first  # a specifier pip cannot read either: the install will say so
    own = _known(first)
    others = sorted(
        (i for i in map(_known, offered) if i is not None), key=lambda i: Version(i.version)
    )
    found = [own, *others] if own is not None else others
    for candidate in found:
        if wanted.contains(candidate.version, prereleases=True):
            return candidate.path
    versions = ", ".join(sorted({i.version for i in found})) or "none"
    raise NoInterpreterError(
        f"the repository needs Python {requires_python} (its requires-python); this runner "
        f"offers {versions}: name one that fits in PROBEWATCH_RUNNER_PYTHONS or the watch "
        "file's [runner] pythons"
    )


def _known(path: Path) -> Interpreter | None:
    try:
        return interpreter(path)
    except (OSError, subprocess.CalledProcessError, ValueError):  # not a Python that answers
        return None

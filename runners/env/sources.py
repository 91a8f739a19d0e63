"""Read a repository's declared dependencies at one commit, straight from git.

Files are read with ``git show COMMIT:path`` so no work tree is needed and a
bare mirror stays untouched. Sources: requirement files (following ``-r``
includes), ``[project.dependencies]``, chosen extras, the test dependency groups and
``[build-system] requires`` of ``pyproject.toml``, and a literal ``install_requires``
in ``setup.py``. Lines a resolver cannot use here (editable paths, VCS URLs, index
options) are dropped and listed, never silently lost.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from probewatch.git import run_git
from probewatch.paths import PathMatcher
from runners.env.config import RepoEnvConfig
from runners.env.errors import EnvError
from runners.env.setup_py import static_setup_requirements

BUILD_SYSTEM = "pyproject.toml [build-system]"
LEGACY_BUILD = "setup.py (pip's default build requirements)"


class RequirementsUnreadable(EnvError):
    """The commit or a file in it could not be read."""


@dataclass(frozen=True)
class DroppedLine:
    source: str
    line: str
    reason: str


@dataclass(frozen=True)
class RequirementInputs:
    """The requirement lines a repository declares at a commit, after the config's edits."""

    requirements: tuple[str, ...]
    sources: tuple[str, ...]  # files that contributed
    dropped: tuple[DroppedLine, ...] = ()
    project_name: str | None = None
    commit: str = ""  # the full hash the commit name resolved to
    requires_python: str | None = None  # pyproject's ``requires-python``: which interpreter


def read_requirements(repo: Path, commit: str, config: RepoEnvConfig) -> RequirementInputs:
    """Collect the declared requirements of ``repo`` at ``commit`` as ``config`` says."""
    reader = _GitReader(repo, commit)
    collected: list[tuple[str, str]] = []  # (source, line)
    sources: list[str] = []
    project_name, requires_python = _collect_pyproject(reader, config, collected, sources)
    seen: set[str] = set()  # a file included by another and matched by a glob is read once
    for path in _matching_files(reader.files(), config.requirement_files):
        _collect_requirement_file(reader, path, collected, sources, seen)
    if config.use_setup_py and "setup.py" in reader.files():
        lines = static_setup_requirements(reader.show("setup.py"), config.extras)
        if lines is not None:
            sources.append("setup.py")
            collected.extend(("setup.py", line) for line in lines)
    if config.use_setup_py and BUILD_SYSTEM not in sources and "setup.py" in reader.files():
        # pip's own default for a setup.py without a declared build system
        collected.extend((LEGACY_BUILD, line) for line in ("setuptools>=40.8.0", "wheel"))
    collected.extend(("config.add", line) for line in config.add)
    inputs = _filter(collected, tuple(sources), config, project_name)
    return replace(inputs, commit=reader.full_hash(), requires_python=requires_python)


class _GitReader:
    def __init__(self, repo: Path, commit: str) -> None:
        self.repo, self.commit = repo, commit
        self._files: frozenset[str] | None = None

    def files(self) -> frozenset[str]:
        if self._files is None:
            out = self._git("ls-tree", "-r", "--name-only", self.commit)
            self._files = frozenset(out.splitlines())
        return self._files

    def full_hash(self) -> str:
        return self._git("rev-parse", "--verify", f"{self.commit}^{{commit}}").strip()

    def show(self, path: str) -> str:
        return self._git("show", f"{self.commit}:{path}")

    def _git(self, *args: str) -> str:
        done = run_git(self.repo, *args, check=False)
        if done.returncode != 0:
            raise RequirementsUnreadable(
                f"git {' '.join(args)} in {self.repo}: {done.stderr.strip()}"
            )
        return done.stdout


def _matching_files(files: frozenset[str], patterns: tuple[str, ...]) -> list[str]:
    # Requirement files are named from the root: "requirements*.txt" is not docs/requirements.txt.
    matcher = PathMatcher("/" + pattern.lstrip("/") for pattern in patterns)
    return sorted(path for path in files if matcher.matches(path))


def _collect_pyproject(
    reader: _GitReader,
    config: RepoEnvConfig,
    collected: list[tuple[str, str]],
    sources: list[str],
) -> tuple[str | None, str | None]:
    """The project's name and its ``requires-python``, its requirement lines collected."""
    if "pyproject.toml" not in reader.files():
        return None, None
    try:
        document = tomllib.loads(reader.show("pyproject.toml"))
    except tomllib.TOMLDecodeError as exc:
        raise RequirementsUnreadable(f"pyproject.toml at {reader.commit}: {exc}") from None
    project = document.get("project", {})
    if config.use_pyproject:
        lines = list(project.get("dependencies", []))
        optional = project.get("optional-dependencies", {})
        for extra in config.extras:
            lines.extend(optional.get(extra, []))
        if lines:
            sources.append("pyproject.toml")
            collected.extend(("pyproject.toml", line) for line in lines)
        _collect_groups(document, config.groups, collected, sources)
        _collect_build_system(document, collected, sources)
    name, requires_python = project.get("name"), project.get("requires-python")
    return (str(name) if name else None), (str(requires_python) if requires_python else None)


def _collect_groups(
    document: dict, names: tuple[str, ...], collected: list[tuple[str, str]], sources: list[str]
) -> None:
    """Lines of the chosen dependency groups (PEP 735), following ``include-group``."""
    groups = document.get("dependency-groups", {})
    if not isinstance(groups, dict):
        return
    for name in names:
        lines = _group_lines(groups, name, frozenset())
        if lines:
            source = f"pyproject.toml [dependency-groups] {name}"
            sources.append(source)
            collected.extend((source, line) for line in lines)


def _group_lines(groups: dict, name: str, seen: frozenset[str]) -> list[str]:
    if name in seen or not isinstance(groups.get(name), list):
        return []
    lines: list[str] = []
    for entry in groups[name]:
        if isinstance(entry, str):
            lines.append(entry)
        elif isinstance(entry, dict) and isinstance(entry.get("include-group"), str):
            lines += _group_lines(groups, entry["include-group"], seen | {name})
    return lines


def _collect_build_system(
    document: dict, collected: list[tuple[str, str]], sources: list[str]
) -> None:
    """What ``pip install -e .`` builds with. A run has no network, so a setup command
    builds without isolation, from the environment (runners/env/overlay.py); setuptools'
    backend asks for ``wheel`` as well (pip adds it to an isolated build)."""
    build = [str(line) for line in document.get("build-system", {}).get("requires", [])]
    names = {_name(line) for line in build}
    if "setuptools" in names and "wheel" not in names:
        build.append("wheel")
    if build:
        sources.append(BUILD_SYSTEM)
        collected.extend((BUILD_SYSTEM, line) for line in build)


def _name(line: str) -> str | None:
    try:
        return canonicalize_name(Requirement(line).name)
    except InvalidRequirement:
        return None


def _collect_requirement_file(
    reader: _GitReader,
    path: str,
    collected: list[tuple[str, str]],
    sources: list[str],
    seen: set[str],
) -> None:
    if path in seen or path not in reader.files():
        return
    seen.add(path)
    sources.append(path)
    for raw in reader.show(path).splitlines():
        line = raw.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        include = _include_target(line)
        if include is not None:
            target = str(PurePosixPath(path).parent / include)
            _collect_requirement_file(reader, target, collected, sources, seen)
            continue
        collected.append((path, line))


def _include_target(line: str) -> str | None:
    for flag in ("-r ", "--requirement ", "-c ", "--constraint "):
        if line.startswith(flag):
            return line[len(flag) :].strip()
    return None


# Why a line cannot reach the resolver: (prefix, reason). Data, so new cases are one row.
_UNUSABLE_PREFIXES = (
    ("-e", "editable install: the repository itself is installed per run"),
    ("--editable", "editable install: the repository itself is installed per run"),
    ("-", "pip option: index and install options come from the runner"),
    (".", "local path: the repository itself is installed per run"),
    ("git+", "VCS URL: only the package index is reachable"),
    ("http", "URL: only the package index is reachable"),
)


def _filter(
    collected: list[tuple[str, str]],
    sources: tuple[str, ...],
    config: RepoEnvConfig,
    project_name: str | None,
) -> RequirementInputs:
    kept: list[str] = []
    dropped: list[DroppedLine] = []
    own = canonicalize_name(project_name) if project_name else None
    for source, line in collected:
        reason = _drop_reason(line, config, own)
        if reason is None:
            kept.append(line)
        else:
            dropped.append(DroppedLine(source, line, reason))
    unique = tuple(dict.fromkeys(kept))
    return RequirementInputs(unique, sources, tuple(dropped), project_name)


def _drop_reason(line: str, config: RepoEnvConfig, own: str | None) -> str | None:
    for prefix, reason in _UNUSABLE_PREFIXES:
        if line.startswith(prefix):
            return reason
    try:
        requirement = Requirement(line)
    except InvalidRequirement as exc:
        return f"not a requirement: {exc}"
    name = canonicalize_name(requirement.name)
    if requirement.url:
        return "direct URL: only the package index is reachable"
    if name == own:
        return "the repository itself: installed per run"
    if name in config.excluded_names:
        return "excluded by the repository's environment config"
    return None

"""What an environment is built from: per-repo inputs, runner overrides, and the home layout.

A :class:`RepoEnvConfig` says which requirement files and extras of a repository
count, which packages to add and which to leave out (GPU-only packages on a CPU
runner). :class:`RunnerOverrides` are the runner's own pins applied on top of
every resolution (the torch build it has), and :class:`EnvHome` names the
folders under the probewatch home that every environment shares.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from probewatch.private import private_folder
from runners.env.errors import EnvError

DEFAULT_REQUIREMENT_FILES = ("requirements*.txt",)
# The harness needs pytest in every environment, and pip for per-run setup commands
# (``pip install --no-deps -e .`` into a run's overlay); both resolved in the PR's era.
HARNESS_REQUIREMENTS = ("pytest", "pip")
# Wanted, not needed: coverage.py gives the golden run's line data (without it every
# adversarial runs all the PR's tests). An era whose coverage.py cannot be built for this
# interpreter (no wheel, a build backend the era lacks) gets an environment without it.
OPTIONAL_HARNESS = ("coverage",)
# Packages that must come from a runner override, never fresh from the index: a CUDA
# build of torch is gigabytes and pulls nvidia-* wheels with it, and torchvision or
# torchaudio built for another torch fail at import ("operator torchvision::nms does
# not exist") once the runner's torch replaces the one they were built for.
GUARDED_PACKAGES = ("torch", "torchvision", "torchaudio")
KNOWN_REPOS_FILE = Path(__file__).with_name("known_repos.toml")


DEFAULT_TEST_GROUPS = ("test", "tests", "testing")


class EnvConfigError(EnvError, ValueError):
    """A per-repo environment configuration that cannot be used."""


@dataclass(frozen=True)
class RepoEnvConfig:
    """How one repository's dependency set is read and adjusted."""

    requirement_files: tuple[str, ...] = DEFAULT_REQUIREMENT_FILES  # globs at the repo root
    use_pyproject: bool = True  # [project.dependencies]
    use_setup_py: bool = True  # install_requires, when a static literal
    extras: tuple[str, ...] = ()  # optional-dependency groups to include
    # Dependency groups (PEP 735) of pyproject.toml to include: what the tests need.
    groups: tuple[str, ...] = DEFAULT_TEST_GROUPS
    add: tuple[str, ...] = ()  # requirement lines added to whatever the repo names
    exclude: tuple[str, ...] = ()  # distribution names dropped (GPU-only, unreachable)

    @property
    def excluded_names(self) -> frozenset[str]:
        return frozenset(canonicalize_name(name) for name in self.exclude)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> RepoEnvConfig:
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            raise EnvConfigError(f"unknown environment key {unknown[0]!r}")
        values = {key: _as_tuple(key, value) for key, value in data.items()}
        return cls(**values)


def _as_tuple(key: str, value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise EnvConfigError(f"environment key {key!r} must be a list of strings")


def known_repo_config(repo_name: str) -> RepoEnvConfig:
    """The shipped configuration for a known upstream (``owner/name``), else the defaults."""
    raw = tomllib.loads(KNOWN_REPOS_FILE.read_text(encoding="utf-8"))
    for name, table in raw.get("repo", {}).items():
        if name.lower() == repo_name.lower():
            return RepoEnvConfig.from_mapping(table)
    return RepoEnvConfig()


@dataclass(frozen=True)
class RunnerOverrides:
    """Pins the runner imposes on every environment, with where their wheels live.

    ``requirements`` go to the resolver as overrides (they win over any version a
    repository asks for); ``find_links`` are folders of local wheels, such as the
    CPU build of torch. Both shape the resolved set, so both end up in the hash.
    """

    requirements: tuple[str, ...] = ()
    find_links: tuple[Path, ...] = ()
    harness: tuple[str, ...] = HARNESS_REQUIREMENTS
    optional: tuple[str, ...] = ()  # wanted if the era allows (prepare_environment asks)
    allow_index: tuple[str, ...] = ()  # guarded packages the index may supply after all
    # Interpreters this runner offers besides the one running probewatch, for repositories
    # whose ``requires-python`` it does not meet (runners/env/lock.choose_interpreter).
    pythons: tuple[Path, ...] = ()

    def overridden_names(self) -> frozenset[str]:
        return frozenset(requirement_name(line) for line in self.requirements)


_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def requirement_name(line: str) -> str:
    """The canonical distribution name at the start of a requirement line."""
    match = _NAME.match(line)
    if match is None:
        raise EnvConfigError(f"not a requirement: {line!r}")
    return canonicalize_name(match.group(1))


@dataclass(frozen=True)
class EnvHome:
    """The shared folders: environments, the one uv cache, the asset cache, and locks."""

    home: Path
    envs: Path = field(init=False)
    uv_cache: Path = field(init=False)
    assets: Path = field(init=False)
    locks: Path = field(init=False)

    def __post_init__(self) -> None:
        home = self.home.expanduser().resolve()
        object.__setattr__(self, "home", home)
        object.__setattr__(self, "envs", home / "envs")
        object.__setattr__(self, "uv_cache", home / "uv-cache")
        object.__setattr__(self, "assets", home / "assets")
        object.__setattr__(self, "locks", home / "envs" / ".locks")

    def env_dir(self, lock_hash: str) -> Path:
        return self.envs / lock_hash

    def lock_file(self, lock_hash: str) -> Path:
        return self.locks / f"{lock_hash}.lock"

    def used_marker(self, lock_hash: str) -> Path:
        return self.locks / f"{lock_hash}.used"

    def create(self) -> None:
        for folder in (self.envs, self.uv_cache, self.assets, self.locks):
            private_folder(folder)

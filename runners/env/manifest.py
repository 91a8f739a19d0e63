"""The manifest kept inside every environment: what it was resolved from and how it was repaired.

Written before the environment is renamed into place, so a visible
environment always has one, and replaced atomically when the last repair
round adds decisions. It is what ``probewatch envs list`` shows and what a
curator reads to see why a package is there.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, Field

from probewatch.disk import write_atomic

MANIFEST_NAME = "probewatch-manifest.json"


class RepairOutcome(StrEnum):
    added = "added"  # the distribution was added and the set re-resolved
    unresolvable = "unresolvable"  # adding it made the set unsolvable in the era (or unknown)
    excluded = "excluded"  # the repository's config leaves that distribution out
    not_installable = "not_installable"  # stdlib or the repository's own module: pip cannot help
    held_back = "held_back"  # the era's release lacks a name the code imports: an older one


class Repair(BaseModel):
    module: str
    distribution: str | None
    round: int
    outcome: RepairOutcome
    detail: str = ""
    requirement: str | None = None  # the line the repair added, when not the bare distribution


class Dropped(BaseModel):
    source: str
    line: str
    reason: str


class Provenance(BaseModel):
    """Where the requirement set came from (absent for an environment built from bare lines)."""

    repo: str = ""
    commit: str = ""
    sources: list[str] = Field(default_factory=list)
    dropped: list[Dropped] = Field(default_factory=list)


class Manifest(BaseModel):
    lock_hash: str
    python_version: str
    platform: str
    base_python: str
    pins: list[str]
    requirements: list[str]
    exclude_newer: str | None = None
    overrides: list[str] = Field(default_factory=list)
    find_links: list[str] = Field(default_factory=list)
    provenance: Provenance = Field(default_factory=Provenance)
    repairs: list[Repair] = Field(default_factory=list)
    built_at: datetime
    build_seconds: float


def manifest_path(env_root: Path) -> Path:
    return env_root / MANIFEST_NAME


def read_manifest(env_root: Path) -> Manifest:
    return Manifest.model_validate_json(manifest_path(env_root).read_text(encoding="utf-8"))


def write_manifest(env_root: Path, manifest: Manifest, *, mode: int = 0o644) -> None:
    """Replace the manifest atomically: a reader sees the old one or the new one, whole."""
    write_atomic(manifest_path(env_root), manifest.model_dump_json(indent=2), mode=mode)

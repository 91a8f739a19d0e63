"""Shared environments: one virtual environment per lock hash, resolved in the PR's era.

Entry point: :func:`prepare_environment` (read requirements at a commit,
resolve with ``uv pip compile --exclude-newer``, build once per hash, repair
missing imports against the task's tests). :func:`overlay_environment` gives a
run a writable layer for its setup commands; :func:`in_use` protects an
environment from ``gc`` while a run uses it.
"""

from runners.env.build import (
    BuildResult,
    EnvironmentBuildError,
    EnvironmentBusy,
    ensure_environment,
    environment_ref,
    in_use,
)
from runners.env.config import EnvConfigError, EnvHome, RepoEnvConfig, RunnerOverrides
from runners.env.errors import EnvError
from runners.env.lock import GuardedPackageError, Lock, ResolutionError, resolve
from runners.env.manifest import Manifest, Repair, RepairOutcome
from runners.env.overlay import EnvOverlayError, overlay_environment
from runners.env.prepare import EnvRequest, Prepared, prepare_environment
from runners.env.sources import RequirementsUnreadable, read_requirements
from runners.env.store import collect_garbage, home_usage, list_environments

__all__ = [
    "BuildResult",
    "EnvConfigError",
    "EnvError",
    "EnvHome",
    "EnvOverlayError",
    "EnvRequest",
    "EnvironmentBuildError",
    "EnvironmentBusy",
    "GuardedPackageError",
    "Lock",
    "Manifest",
    "Prepared",
    "Repair",
    "RepairOutcome",
    "RepoEnvConfig",
    "RequirementsUnreadable",
    "ResolutionError",
    "RunnerOverrides",
    "collect_garbage",
    "ensure_environment",
    "environment_ref",
    "home_usage",
    "in_use",
    "list_environments",
    "overlay_environment",
    "prepare_environment",
    "read_requirements",
    "resolve",
]

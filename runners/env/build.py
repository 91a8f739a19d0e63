"""Build one virtual environment per lock hash, once, and hand it out read-only.

Builders of the same hash take a file lock and re-check after getting it, so a
second builder waits and then finds the first one's environment. A build
happens in a temporary folder next to its final place and is renamed into it
only when complete (the manifest written, write bits dropped): a visible
environment is always a whole one, and a failed build leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock, Timeout

from runners.env.assets import asset_env, ensure_asset_folders
from runners.env.config import EnvHome
from runners.env.dedupe import deduplicate
from runners.env.errors import EnvError
from runners.env.fs import make_read_only, remove_tree, writable_folder
from runners.env.lock import Lock
from runners.env.manifest import (
    Manifest,
    Provenance,
    Repair,
    RepairOutcome,
    manifest_path,
    read_manifest,
    write_manifest,
)
from runners.env.uv import Uv, UvError
from runners.types import EnvironmentRef, EnvironmentSpec

TMP_PREFIX = ".tmp-"
DEFAULT_LOCK_TIMEOUT_S = 3 * 3600.0


class EnvironmentBuildError(EnvError):
    """Installing a resolved set failed; nothing was left on disk."""


class EnvironmentBusy(EnvError):
    """Another process holds the environment's lock (building it, or running in it)."""


@dataclass(frozen=True)
class BuildResult:
    ref: EnvironmentRef
    manifest: Manifest
    built: bool  # False: it was there already (perhaps after waiting for another builder)
    seconds: float  # this call's time, waiting included


def ensure_environment(
    lock: Lock,
    home: EnvHome,
    uv: Uv,
    *,
    provenance: Provenance | None = None,
    repairs: Sequence[Repair] = (),
    lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
    dedupe: bool = True,
) -> BuildResult:
    """The environment for ``lock``, built under ``home`` unless it exists.

    After a build, identical files across the home's environments and the uv cache
    are hard-linked together (``dedupe``), so versions of a package that share most
    of their files store those files once.
    """
    started = time.monotonic()
    home.create()
    ensure_asset_folders(home.assets)
    target = home.env_dir(lock.lock_hash)
    built = False
    if not is_ready(target):
        with FileLock(str(home.lock_file(lock.lock_hash)), timeout=lock_timeout_s):
            if not is_ready(target):
                _build(lock, home, uv, provenance or Provenance(), list(repairs), started)
                built = True
    if built and dedupe:
        deduplicate(home, uv_cache=uv.cache, new=target, lock_timeout_s=lock_timeout_s)
    home.used_marker(lock.lock_hash).touch()
    manifest = read_manifest(target)
    ref = environment_ref(home, lock.lock_hash, manifest)
    return BuildResult(ref, manifest, built, time.monotonic() - started)


def is_ready(env_root: Path) -> bool:
    return manifest_path(env_root).is_file()


def environment_ref(
    home: EnvHome, lock_hash: str, manifest: Manifest | None = None
) -> EnvironmentRef:
    """The reference runs use: the interpreter, and the variables every run gets.

    ``manifest``: the environment's, when the caller has just read it (else it is read here).
    """
    root = home.env_dir(lock_hash)
    env = {
        **asset_env(home.assets),
        "VIRTUAL_ENV": str(root),
        "PATH": f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
        # The environment is shared and frozen: nobody writes bytecode into it.
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
    }
    if manifest is None and is_ready(root):
        manifest = read_manifest(root)
    spec, unavailable = None, {}
    if manifest is not None:
        spec = EnvironmentSpec(
            tuple(manifest.requirements), manifest.exclude_newer, manifest.python_version
        )
        unavailable = unavailable_modules(manifest)
    return EnvironmentRef(
        lock_hash,
        root,
        root / "bin" / "python",
        env,
        assets=home.assets,
        spec=spec,
        unavailable=unavailable,
    )


_UNAVAILABLE = {
    RepairOutcome.excluded: "the repository's environment config excludes {dist}",
    RepairOutcome.unresolvable: "{dist} cannot be resolved in the era on this runner",
}


def unavailable_modules(manifest: Manifest) -> dict[str, str]:
    """Modules the repairs could not supply, each with the reason, from the manifest."""
    return {
        repair.module: _UNAVAILABLE[repair.outcome].format(dist=repair.distribution or "it")
        for repair in manifest.repairs
        if repair.outcome in _UNAVAILABLE
    }


def record_repairs(home: EnvHome, lock_hash: str, repairs: Sequence[Repair]) -> Manifest:
    """Add to the environment's manifest the repair decisions made after it was built.

    The last repair round judges what the final environment still lacks (a GPU-only
    package excluded, one no resolution admits) without building again; those decisions
    belong to that environment too. The manifest is replaced atomically; the environment
    stays read-only.
    """
    root = home.env_dir(lock_hash)
    with FileLock(str(home.locks / f"{lock_hash}.manifest.lock")):
        manifest = read_manifest(root)
        known = {(r.module, r.outcome) for r in manifest.repairs}
        new = [r for r in repairs if (r.module, r.outcome) not in known]
        if not new:
            return manifest
        updated = manifest.model_copy(update={"repairs": [*manifest.repairs, *new]})
        with writable_folder(root):
            write_manifest(root, updated, mode=0o444)
        return updated


def _build(
    lock: Lock,
    home: EnvHome,
    uv: Uv,
    provenance: Provenance,
    repairs: list[Repair],
    started: float,
) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{lock.lock_hash[:12]}-", dir=home.envs))
    tmp.chmod(0o755)  # mkdtemp makes it private; runs may be another user
    try:
        _install(lock, tmp, uv)
        write_manifest(tmp, _manifest(lock, provenance, repairs, time.monotonic() - started))
        make_read_only(tmp)
        os.rename(tmp, home.env_dir(lock.lock_hash))
    except BaseException as exc:
        remove_tree(tmp)
        if isinstance(exc, UvError | OSError | subprocess.TimeoutExpired):
            raise EnvironmentBuildError(f"environment {lock.lock_hash[:12]}: {exc}") from exc
        raise


def _install(lock: Lock, venv: Path, uv: Uv) -> None:
    # Relocatable: scripts find their interpreter relative to themselves, so the
    # rename from the temporary folder (or a mount elsewhere) does not break them.
    uv.run(["venv", "--relocatable", "--python", str(lock.python.path), str(venv)])
    pins = venv / "probewatch-pins.txt"
    pins.write_text("\n".join(lock.pins) + "\n", encoding="utf-8")
    args = ["pip", "sync", str(pins), "--python", str(venv / "bin" / "python")]
    for folder in lock.overrides.find_links:
        args += ["--find-links", str(folder)]
    if lock.exclude_newer:
        args += ["--exclude-newer", lock.exclude_newer]
    uv.run(args)


def _manifest(
    lock: Lock, provenance: Provenance, repairs: list[Repair], seconds: float
) -> Manifest:
    return Manifest(
        lock_hash=lock.lock_hash,
        python_version=lock.python.version,
        platform=lock.python.platform,
        base_python=str(lock.python.path),
        pins=list(lock.pins),
        requirements=list(lock.requirements),
        exclude_newer=lock.exclude_newer,
        overrides=list(lock.overrides.requirements),
        find_links=[str(p) for p in lock.overrides.find_links],
        provenance=provenance,
        repairs=repairs,
        built_at=datetime.now(UTC),
        build_seconds=round(seconds, 3),
    )


@contextlib.contextmanager
def in_use(home: EnvHome, lock_hash: str) -> Iterator[EnvironmentRef]:
    """Hold a shared lock on an environment while a run uses it: ``gc`` will not remove it."""
    home.create()
    with open(home.lock_file(lock_hash), "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
        try:
            home.used_marker(lock_hash).touch()
            yield environment_ref(home, lock_hash)
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def exclusive(home: EnvHome, lock_hash: str) -> Iterator[None]:
    """The build lock, taken without waiting: raises :class:`EnvironmentBusy` when held."""
    try:
        with FileLock(str(home.lock_file(lock_hash)), timeout=0):
            yield
    except Timeout:
        raise EnvironmentBusy(f"environment {lock_hash[:12]} is being built or used") from None

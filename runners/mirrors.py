"""Mirrors the service keeps itself: a bare clone per repository, fetched when a commit is missing.

A repository's history comes from a local clone the curator keeps (used as it is, and
fetched from its own remotes when asked for a commit it lacks) or from a remote URL,
cloned once into ``<home>/mirrors/<owner>__<name>.git`` as a bare mirror (blobs
included: runs check trees out of it). Before a PR is built, :func:`ensure_commit`
fetches when the merge commit is not there yet, which is the normal case for a PR a
webhook just announced. One file lock per mirror keeps two workers from cloning or
fetching into it at once; a clone that fails leaves no folder behind.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from filelock import FileLock

from probewatch.errors import RunnerError
from probewatch.git import run_git
from probewatch.private import private_folder

MIRRORS_FOLDER = "mirrors"
LOCK_TIMEOUT_S = 1800.0


class MirrorError(RunnerError):
    """A mirror that cannot be made or brought up to date; the message names the remote."""


def is_url(source: str) -> bool:
    """A remote (``https://``, ``file://``, ``ssh://``, ``git@host:path``), not a local path."""
    return "://" in source or (":" in source and "@" in source.split(":", 1)[0])


def mirror_path(home: Path, repo_name: str) -> Path:
    return home / MIRRORS_FOLDER / f"{repo_name.replace('/', '__')}.git"


def ensure_mirror(source: str, home: Path, repo_name: str) -> Path:
    """The mirror of ``repo_name``: ``source`` itself when it is a local clone, else a bare
    mirror of the URL under ``home`` (cloned on first use)."""
    if not is_url(source):
        path = Path(source).expanduser()
        if not path.exists():
            raise MirrorError(f"the clone {path} of {repo_name} does not exist")
        return path
    target = mirror_path(home, repo_name)
    private_folder(target.parent)  # a mirror holds every task's future
    with _locked(target):
        if not (target / "HEAD").is_file():
            _clone(source, target, repo_name)
    return private_folder(target)


def ensure_commit(mirror: Path, sha: str) -> bool:
    """Fetch ``mirror`` from its remotes when ``sha`` is not in it; True when it fetched.
    The commit must be there afterwards, or the error says it is not upstream either."""
    if has_commit(mirror, sha):
        return False
    with _locked(_git_dir(mirror) / "probewatch-fetch"):
        if has_commit(mirror, sha):
            return False  # another worker fetched it while this one waited
        remotes = run_git(mirror, "remote").stdout.split()
        if not remotes:
            raise MirrorError(f"{sha} is not in {mirror}, which has no remote to fetch it from")
        for remote in remotes:
            done = run_git(mirror, "fetch", "--quiet", "--prune", remote, check=False)
            if done.returncode != 0:
                raise MirrorError(f"fetching {remote} into {mirror} failed: {done.stderr.strip()}")
    if not has_commit(mirror, sha):
        raise MirrorError(f"{sha} is not in {mirror} even after a fetch: is it upstream?")
    return True


def _git_dir(repo: Path) -> Path:
    found = run_git(repo, "rev-parse", "--absolute-git-dir", check=False)
    if found.returncode != 0:
        raise MirrorError(f"{repo} is not a git repository: {found.stderr.strip()}")
    return Path(found.stdout.strip())


def has_commit(mirror: Path, sha: str) -> bool:
    done = run_git(mirror, "cat-file", "-e", f"{sha}^{{commit}}", check=False)
    return done.returncode == 0


def _clone(url: str, target: Path, repo_name: str) -> None:
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    done = run_git(target.parent, "clone", "--quiet", "--mirror", url, str(partial), check=False)
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise MirrorError(f"cloning {repo_name} from {url} failed: {done.stderr.strip()}")
    partial.rename(target)


def _locked(path: Path) -> FileLock:
    return FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT_S)

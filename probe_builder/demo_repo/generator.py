"""Write the demo upstream repository: a real git history, the same commit SHAs every time.

Every commit is made with fixed author and committer identities and dates, no
user or system git configuration, and files written from the package's
templates, so two generations on any machine give byte-identical objects. The
repository is built in a temporary sibling folder and renamed into place at
the end: an interrupted generation leaves nothing half-written behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from probe_builder.demo_repo.history import (
    COMMITS,
    DEFAULT_BRANCH,
    DEMO_REPO_NAME,
    GAPS,
    MERGER,
    CommitSpec,
    PlantedGap,
    PlantedMutation,
)
from probewatch.errors import BuildError
from task_registry.types import PromiseCategory

TEMPLATE_SUFFIX = ".txt"
WATCH_TEMPLATE = "watch.toml"
WATCH_GIT_LINE = 'git = "minirl"'
# Settings that would make two machines write different objects are pinned here.
GIT_OPTIONS = (
    "-c", "core.autocrlf=false",
    "-c", "core.fileMode=true",
    "-c", "commit.gpgSign=false",
    "-c", f"init.defaultBranch={DEFAULT_BRANCH}",
    "-c", "i18n.commitEncoding=UTF-8",
)  # fmt: skip


class DemoRepoError(BuildError):
    """The demo repository cannot be written where it was asked to go."""


@dataclass(frozen=True)
class DemoPR:
    """One PR of the demo history that plants a gap, with everything needed to show it."""

    number: int
    title: str
    merge_sha: str
    base_sha: str  # the merge commit's first parent: the pre-change snapshot
    category: PromiseCategory
    promise: str
    test_files: tuple[str, ...]
    planted: PlantedMutation
    probe_dir: Path
    probe_files: tuple[Path, ...]


@dataclass(frozen=True)
class DemoRepo:
    path: Path  # the git repository (with a work tree on the default branch)
    name: str  # owner/name as the watch file lists it
    default_branch: str
    commits: tuple[str, ...]  # SHAs, oldest first
    pr_numbers: tuple[int, ...]  # every squash-merged PR, planted or not
    prs: tuple[DemoPR, ...]  # the PRs that plant a gap
    probes_dir: Path
    watch_file: Path

    def pr(self, number: int) -> DemoPR:
        for pr in self.prs:
            if pr.number == number:
                return pr
        raise KeyError(f"demo PR #{number} plants no gap (planted: {[p.number for p in self.prs]})")


def create_demo_repo(
    path: Path | str,
    *,
    probes_dir: Path | str | None = None,
    watch_file: Path | str | None = None,
) -> DemoRepo:
    """Write the demo repository at ``path`` (absent or empty), its probes and its watch file.

    Probes go to ``probes_dir`` (default: ``<path>-probes`` beside the
    repository, one ``pr-<N>`` folder per PR), never into the repository: they
    are hidden from the code under test. The watch file (default:
    ``<path>-watch.toml``) points at the repository by a relative path.
    """
    target = Path(path).resolve()
    probes = Path(probes_dir) if probes_dir else target.with_name(f"{target.name}-probes")
    watch = Path(watch_file) if watch_file else target.with_name(f"{target.name}-watch.toml")
    _check_target(target)
    commits = _build_atomically(target)
    planted = tuple(_demo_pr(gap, target, commits, probes) for gap in GAPS)
    _write_watch_file(watch, target)
    return DemoRepo(
        path=target,
        name=DEMO_REPO_NAME,
        default_branch=DEFAULT_BRANCH,
        commits=tuple(sha for sha, _ in commits),
        pr_numbers=tuple(spec.pr_number for _, spec in commits if spec.pr_number is not None),
        prs=planted,
        probes_dir=probes,
        watch_file=watch,
    )


def _check_target(target: Path) -> None:
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise DemoRepoError(f"{target} exists and is not an empty folder")
    target.parent.mkdir(parents=True, exist_ok=True)


def _build_atomically(target: Path) -> list[tuple[str, CommitSpec]]:
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        commits = _build(staging)
        if target.exists():
            target.rmdir()
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return commits


def _build(repo: Path) -> list[tuple[str, CommitSpec]]:
    _git(repo, "init", "-q", "-b", DEFAULT_BRANCH)
    commits = []
    for spec in COMMITS:
        _write_step(repo, spec)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "--no-verify", "-F", "-", env=_identity(spec),
             stdin=_message(spec))  # fmt: skip
        commits.append((_git(repo, "rev-parse", "HEAD").strip(), spec))
    return commits


def _write_step(repo: Path, spec: CommitSpec) -> None:
    for relative, template in _templates(_package() / "templates" / spec.step):
        destination = repo / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_text(template.read_text(encoding="utf-8"), encoding="utf-8")
    for relative in spec.removed:
        (repo / relative).unlink()


def _templates(folder: Traversable, prefix: str = "") -> Iterator[tuple[str, Traversable]]:
    """(repository path, template) for every template under ``folder``, in a fixed order."""
    for entry in sorted(folder.iterdir(), key=lambda item: item.name):
        if entry.is_dir():
            yield from _templates(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith(TEMPLATE_SUFFIX):
            yield f"{prefix}{entry.name.removesuffix(TEMPLATE_SUFFIX)}", entry


def _message(spec: CommitSpec) -> str:
    return (_package() / "messages" / f"{spec.step}.txt").read_text(encoding="utf-8")


def _identity(spec: CommitSpec) -> dict[str, str]:
    author_name, author_email = spec.author
    # A squash merge is committed by GitHub; a direct commit by its author.
    committer_name, committer_email = MERGER if spec.pr_number is not None else spec.author
    return {
        "GIT_AUTHOR_NAME": author_name,
        "GIT_AUTHOR_EMAIL": author_email,
        "GIT_AUTHOR_DATE": spec.authored,
        "GIT_COMMITTER_NAME": committer_name,
        "GIT_COMMITTER_EMAIL": committer_email,
        "GIT_COMMITTER_DATE": spec.committed,
    }


def _git(
    repo: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None
) -> str:
    isolated = {
        "PATH": os.environ.get("PATH", ""),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "HOME": str(repo),  # no user configuration can leak in
        "LC_ALL": "C",
        **(env or {}),
    }
    proc = subprocess.run(
        ["git", *GIT_OPTIONS, "-C", str(repo), *args],
        input=stdin.encode("utf-8") if stdin is not None else None,
        capture_output=True,
        env=isolated,
        check=False,
    )
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip()
        raise DemoRepoError(f"git {args[0]} failed in {repo}: {message}")
    return proc.stdout.decode("utf-8")


def _demo_pr(
    gap: PlantedGap, repo: Path, commits: list[tuple[str, CommitSpec]], probes_root: Path
) -> DemoPR:
    index = next(i for i, (_, spec) in enumerate(commits) if spec.pr_number == gap.pr_number)
    merge_sha, spec = commits[index]
    probe_dir = probes_root / gap.probe_folder
    return DemoPR(
        number=gap.pr_number,
        title=_message(spec).splitlines()[0],
        merge_sha=merge_sha,
        base_sha=commits[index - 1][0],
        category=gap.category,
        promise=gap.promise,
        test_files=gap.test_files,
        planted=gap.planted,
        probe_dir=probe_dir,
        probe_files=write_probes(gap.probe_folder, probe_dir, gap.category),
    )


def write_probes(folder: str, destination: Path, category: str) -> tuple[Path, ...]:
    """Write the curator's probes of one demo PR (``pr-<N>``) as ``test_*.py`` files, and the
    ``probes.toml`` manifest tagging each with the promise category it checks (as a curator
    would: a mechanical mutant's category is only a guess)."""
    destination.mkdir(parents=True, exist_ok=True)
    written = []
    for relative, template in _templates(_package() / "probes" / folder):
        target = destination / relative
        target.write_text(template.read_text(encoding="utf-8"), encoding="utf-8")
        written.append(target)
    tags = "".join(f'"{p.relative_to(destination).as_posix()}" = "{category}"\n' for p in written)
    (destination / PROBE_MANIFEST).write_text(f"[categories]\n{tags}", encoding="utf-8")
    return tuple(written)


PROBE_MANIFEST = "probes.toml"  # read by probe_builder.pipeline.load_probe_folder


def watch_file_text(repo: Path, watch_file: Path) -> str:
    """The demo's watch-file entry with ``git`` pointing at ``repo`` (relative when it can be)."""
    template = (_package() / WATCH_TEMPLATE).read_text(encoding="utf-8")
    try:
        location = os.path.relpath(repo, watch_file.parent)
    except ValueError:  # another drive (Windows): keep it absolute
        location = str(repo)
    if WATCH_GIT_LINE not in template:
        raise DemoRepoError(f"{WATCH_TEMPLATE} lost its {WATCH_GIT_LINE!r} line")
    return template.replace(WATCH_GIT_LINE, f"git = {_toml_string(location)}")


def _write_watch_file(watch_file: Path, repo: Path) -> None:
    watch_file.parent.mkdir(parents=True, exist_ok=True)
    partial = watch_file.with_name(f".{watch_file.name}.partial")
    partial.write_text(watch_file_text(repo, watch_file), encoding="utf-8")
    partial.replace(watch_file)


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _package() -> Traversable:
    return resources.files("probe_builder.demo_repo")

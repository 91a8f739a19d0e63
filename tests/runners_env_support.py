"""Helpers of the shared-environment tests: fixture repositories, local wheels, fixed eras.

Every resolution in these tests is pinned to a fixed era, which makes the
resolved versions stable whatever PyPI publishes later.
"""

from __future__ import annotations

import subprocess
import zipfile
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

ERA = datetime(2023, 6, 1, tzinfo=UTC)
OLD_ERA = datetime(2019, 1, 1, tzinfo=UTC)
REPO_ROOT = Path(__file__).resolve().parents[1]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.org",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.org",
            "PATH": "/usr/bin:/bin:/usr/local/bin",
        },
    )
    return done.stdout.strip()


def make_repo(path: Path, files: Mapping[str, str]) -> tuple[Path, str]:
    """A git repository at ``path`` with ``files`` in one commit; returns (path, commit)."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "fixture")
    return path, git(path, "rev-parse", "HEAD")


def make_wheel(folder: Path, name: str, version: str) -> Path:
    """A minimal, installable pure-Python wheel (a local build such as a runner's own torch)."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = f"{name}-{version}.dist-info"
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    files = {
        f"{name}/__init__.py": f"VERSION = {version!r}\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{path},,\n" for path in files) + f"{dist}/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in {**files, f"{dist}/RECORD": record}.items():
            archive.writestr(path, text)
    return wheel

"""Mirrors: cloned once from a URL, fetched only when a commit is missing, never half-made."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from runners.mirrors import (
    MirrorError,
    ensure_commit,
    ensure_mirror,
    has_commit,
    is_url,
    mirror_path,
)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def upstream_with_commits(tmp_path: Path, count: int) -> tuple[Path, list[str]]:
    repo = tmp_path / "upstream"
    repo.mkdir()
    git(repo, "init", "--quiet", "--initial-branch=main")
    shas = []
    for n in range(count):
        (repo / "f.txt").write_text(f"{n}\n")
        git(repo, "add", "-A")
        git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", f"c{n}")
        shas.append(git(repo, "rev-parse", "HEAD"))
    return repo, shas


def test_a_url_is_cloned_once_and_a_missing_commit_fetched(tmp_path: Path) -> None:
    upstream, (first, second) = upstream_with_commits(tmp_path, 2)
    git(upstream, "reset", "--quiet", "--hard", first)
    home = tmp_path / "home"

    mirror = ensure_mirror(f"file://{upstream}", home, "acme/lib")
    assert mirror == mirror_path(home, "acme/lib") and has_commit(mirror, first)
    assert not has_commit(mirror, second)
    assert ensure_mirror(f"file://{upstream}", home, "acme/lib") == mirror  # not cloned again
    git(upstream, "reset", "--quiet", "--hard", second)

    assert ensure_commit(mirror, second) is True
    assert has_commit(mirror, second)
    assert ensure_commit(mirror, second) is False  # nothing to fetch the second time


def test_a_failed_clone_leaves_no_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with pytest.raises(MirrorError, match="cloning acme/lib from file://"):
        ensure_mirror(f"file://{tmp_path / 'nowhere'}", home, "acme/lib")
    assert [p for p in (home / "mirrors").iterdir() if p.is_dir()] == []  # no half clone


def test_a_commit_upstream_does_not_have_is_named(tmp_path: Path) -> None:
    upstream, _ = upstream_with_commits(tmp_path, 1)
    mirror = ensure_mirror(f"file://{upstream}", tmp_path / "home", "acme/lib")
    with pytest.raises(MirrorError, match="even after a fetch: is it upstream"):
        ensure_commit(mirror, "0" * 40)


def test_a_local_clone_is_used_as_it_is(tmp_path: Path) -> None:
    upstream, _ = upstream_with_commits(tmp_path, 1)
    assert ensure_mirror(str(upstream), tmp_path / "home", "acme/lib") == upstream
    assert not (tmp_path / "home" / "mirrors").exists()
    with pytest.raises(MirrorError, match="does not exist"):
        ensure_mirror(str(tmp_path / "gone"), tmp_path / "home", "acme/lib")
    with pytest.raises(MirrorError, match="no remote to fetch it from"):
        ensure_commit(upstream, "1" * 40)


@pytest.mark.parametrize(
    ("source", "url"),
    [
        ("https://github.com/acme/lib.git", True),
        ("file:///srv/lib.git", True),
        ("git@github.com:acme/lib.git", True),
        ("/srv/mirrors/lib.git", False),
        ("relative/clone", False),
        ("C:/not/a/url", False),
    ],
)
def test_urls_and_paths_are_told_apart(source: str, url: bool) -> None:
    assert is_url(source) is url

"""Work trees: the base commit from a clone or bare mirror, cheaply, always removed afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from runners.workspace import WorkspaceError, WorkspaceMode, workspace
from tests.runner_repos import FixtureRepo, git, worktrees

ROOT = Path(__file__).parents[2]


@pytest.fixture
def upstream(tmp_path: Path) -> tuple[FixtureRepo, str, str]:
    repo, base = FixtureRepo.create(tmp_path / "upstream", {"pkg/mod.py": "VALUE = 1\n"})
    head = repo.commit({"pkg/mod.py": "VALUE = 2\n", "pkg/later.py": "x = 1\n"}, "later")
    return repo, base, head


@pytest.fixture
def mirror(tmp_path: Path, upstream: tuple[FixtureRepo, str, str]) -> Path:
    return upstream[0].mirror(tmp_path / "mirror.git")


@pytest.mark.parametrize("mode", list(WorkspaceMode))
def test_a_bare_mirror_gives_the_base_commit_and_nothing_is_left(
    tmp_path: Path, upstream: tuple[FixtureRepo, str, str], mirror: Path, mode: WorkspaceMode
) -> None:
    _, base, _ = upstream
    root = tmp_path / "runs"
    with workspace(mirror, base[:10], root=root, label="golden#1", mode=mode) as ws:
        assert (ws.tree / "pkg/mod.py").read_text() == "VALUE = 1\n"
        assert not (ws.tree / "pkg/later.py").exists()
        assert ws.commit == base
        assert git(ws.tree, "rev-parse", "HEAD").strip() == base
        assert git(ws.tree, "status", "--porcelain") == ""
        assert ws.scratch.is_dir() and not ws.scratch.is_relative_to(ws.tree)
        assert ws.tree.parent.name.startswith("run-golden-1-")
    assert list(root.iterdir()) == []
    assert worktrees(mirror) == [str(mirror)]


def test_a_non_bare_clone_works_too(tmp_path: Path, upstream: tuple[FixtureRepo, str, str]) -> None:
    repo, base, _ = upstream
    with workspace(repo.path, base, root=tmp_path / "runs") as ws:
        assert (ws.tree / "pkg/mod.py").read_text() == "VALUE = 1\n"
    assert worktrees(repo.path) == [str(repo.path)]
    assert (repo.path / "pkg/mod.py").read_text() == "VALUE = 2\n"  # the clone's own tree untouched


def test_shared_mode_copies_no_refs_and_leaves_the_mirror_unwritten(
    tmp_path: Path, upstream: tuple[FixtureRepo, str, str], mirror: Path
) -> None:
    _, base, _ = upstream
    before = sorted(p.relative_to(mirror) for p in mirror.rglob("*"))
    with workspace(mirror, base, root=tmp_path / "runs", mode=WorkspaceMode.shared) as ws:
        assert git(ws.tree, "for-each-ref") == ""
        assert (ws.tree / ".git" / "objects" / "info" / "alternates").is_file()
    assert sorted(p.relative_to(mirror) for p in mirror.rglob("*")) == before


def test_worktree_mode_copies_no_objects(
    tmp_path: Path, upstream: tuple[FixtureRepo, str, str], mirror: Path
) -> None:
    _, base, _ = upstream
    with workspace(mirror, base, root=tmp_path / "runs") as ws:
        gitfile = (ws.tree / ".git").read_text()
        assert gitfile.startswith("gitdir: ") and str(mirror) in gitfile


@pytest.mark.parametrize("mode", list(WorkspaceMode))
def test_the_tree_is_removed_when_the_block_raises(
    tmp_path: Path, upstream: tuple[FixtureRepo, str, str], mirror: Path, mode: WorkspaceMode
) -> None:
    root = tmp_path / "runs"
    with (
        pytest.raises(RuntimeError, match="boom"),
        workspace(mirror, upstream[1], root=root, mode=mode) as ws,
    ):
        (ws.tree / "pkg" / "new.py").write_text("made by the run\n")
        os.chmod(ws.tree / "pkg", 0o500)  # a run that leaves a read-only folder behind
        raise RuntimeError("boom")
    assert list(root.iterdir()) == []
    assert worktrees(mirror) == [str(mirror)]


def test_the_tree_is_removed_on_keyboard_interrupt(
    tmp_path: Path, upstream: tuple[FixtureRepo, str, str], mirror: Path
) -> None:
    root = tmp_path / "runs"
    with pytest.raises(KeyboardInterrupt), workspace(mirror, upstream[1], root=root):
        raise KeyboardInterrupt
    assert list(root.iterdir()) == []
    assert worktrees(mirror) == [str(mirror)]


def test_the_tree_is_removed_when_the_process_gets_sigterm(
    tmp_path: Path, upstream: tuple[FixtureRepo, str, str], mirror: Path
) -> None:
    root = tmp_path / "runs"
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from runners.workspace import workspace
        with workspace(Path({str(mirror)!r}), {upstream[1]!r}, root=Path({str(root)!r})) as ws:
            print(ws.tree, flush=True)
            time.sleep(60)
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    tree = Path(child.stdout.readline().strip())
    assert tree.is_dir() and len(worktrees(mirror)) == 2
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=30) != 0
    assert not tree.exists()
    assert list(root.iterdir()) == []
    assert worktrees(mirror) == [str(mirror)]


def test_concurrent_workspaces_get_their_own_trees(
    tmp_path: Path, upstream: tuple[FixtureRepo, str, str], mirror: Path
) -> None:
    root, seen, errors = tmp_path / "runs", [], []

    def one(value: str) -> None:
        try:
            with workspace(mirror, upstream[1], root=root, label=value) as ws:
                (ws.tree / "pkg" / "mod.py").write_text(value)
                seen.append((ws.tree, (ws.tree / "pkg" / "mod.py").read_text() == value))
        except Exception as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(f"v{i}",)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len({tree for tree, _ in seen}) == 6 and all(ok for _, ok in seen)
    assert worktrees(mirror) == [str(mirror)]


def test_an_unknown_commit_is_named(tmp_path: Path, mirror: Path) -> None:
    with (
        pytest.raises(WorkspaceError, match=r"deadbeef.*is not in"),
        workspace(mirror, "deadbeef", root=tmp_path / "runs"),
    ):
        pass
    assert not (tmp_path / "runs").exists() or list((tmp_path / "runs").iterdir()) == []


def test_a_folder_that_is_not_a_repository_is_named(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with (
        pytest.raises(WorkspaceError, match="is not a git repository"),
        workspace(tmp_path / "plain", "HEAD", root=tmp_path / "runs"),
    ):
        pass


def _workspaces_in_a_process(mirror: str, commit: str, root: str, count: int) -> list[str]:
    failures = []
    for index in range(count):
        try:
            with workspace(Path(mirror), commit, root=Path(root), label=f"p{index}") as ws:
                assert (ws.tree / "pkg").is_dir()
        except Exception as exc:  # returned to the parent, which asserts there are none
            failures.append(repr(exc))
    return failures


def test_processes_sharing_a_mirror_do_not_race_on_its_worktree_list(
    tmp_path: Path, upstream: tuple[FixtureRepo, str, str], mirror: Path
) -> None:
    """Regression: runs started at once on one mirror failed with "failed to read
    .git/worktrees/tree/commondir": git's admin entries for trees all named "tree" raced."""
    from concurrent.futures import ProcessPoolExecutor

    root = tmp_path / "runs"
    with ProcessPoolExecutor(max_workers=8) as pool:
        futures = [
            pool.submit(_workspaces_in_a_process, str(mirror), upstream[1], str(root), 12)
            for _ in range(8)
        ]
        failures = [failure for future in futures for failure in future.result()]
    assert failures == []
    assert worktrees(mirror) == [str(mirror)]

"""Reading a tree at a commit: the file names listed once, git started only for files there."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from probe_builder import gitio
from probe_builder.gitio import GitTree
from tests.probe_builder_support import make_pr


def test_a_tree_lists_its_files_once_and_starts_git_only_for_a_file_that_is_there(
    tmp_path, monkeypatch: pytest.MonkeyPatch
):
    pr = make_pr(tmp_path, {"pkg/a.py": "x = 1\n"}, {"pkg/a.py": "x = 2\n", "pkg/b é.py": "y\n"})
    tree = pr.head_tree
    started: list[str] = []
    run = subprocess.run

    def counting(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        started.append(args[3])  # git -C REPO <command>
        return run(args, **kwargs)

    monkeypatch.setattr(gitio.subprocess, "run", counting)
    assert tree.read("pkg/b é.py") == "y\n"
    assert tree.read("pkg/a.py") == "x = 2\n"
    # what resolving an import tries: a module that is not there, a package's __init__
    assert tree.read("pkg/c.py") is None
    assert tree.read("pkg/__init__.py") is None
    assert tree.read("pkg") is None  # a folder is not a file
    assert tree.read("pkg/a.py") == "x = 2\n"  # cached
    assert started == ["ls-tree", "cat-file", "cat-file"]
    assert pr.base_tree.read("pkg/b é.py") is None


def test_a_tree_git_cannot_list_reads_nothing(tmp_path):
    pr = make_pr(tmp_path, {"a.py": "x = 1\n"}, {"a.py": "x = 2\n"})
    assert GitTree(pr.repo, "0" * 40).read("a.py") is None

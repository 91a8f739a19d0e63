"""The grading overlay: old test folders replaced, post-change tests and probes written, safely."""

from __future__ import annotations

from pathlib import Path

import pytest

from runners.overlay import AppliedOverlay, OverlayError, apply_overlay
from runners.types import TestOverlay
from tests.runner_repos import Symlink, tree_listing, write


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    files = {
        "pkg/mod.py": "X = 1\n",
        "tests/test_old.py": "def test_old():\n    pass\n",
        "tests/helpers.py": "H = 1\n",
        "outside.txt": "keep me\n",
    }
    for name, text in files.items():
        write(root / name, text)
    write(root / "pkg/link.py", Symlink(str(tmp_path / "outside.txt")))
    write(root / "linkdir", Symlink(str(tmp_path)))
    (tmp_path / "outside.txt").write_text("outside\n")
    return root


def test_replace_dirs_go_and_the_post_change_tests_and_probes_come(tree: Path) -> None:
    overlay = TestOverlay(
        replace_dirs=("tests/",),
        files={"tests/test_new.py": "def test_new():\n    pass\n", "tests/conftest.py": "C = 1\n"},
        probes={"tests/probes/test_probe_state.py": "def test_probe():\n    pass\n"},
    )
    applied = apply_overlay(tree, overlay)
    assert applied == AppliedOverlay(
        test_files=("tests/test_new.py",), probes=("tests/probes/test_probe_state.py",)
    )
    assert sorted(str(p.relative_to(tree)) for p in (tree / "tests").rglob("*.py")) == [
        "tests/conftest.py",
        "tests/probes/test_probe_state.py",
        "tests/test_new.py",
    ]
    assert (tree / "pkg/mod.py").read_text() == "X = 1\n"
    assert applied.selection == ("tests/test_new.py", "tests/probes/test_probe_state.py")


def test_no_overlay_changes_nothing(tree: Path) -> None:
    before = tree_listing(tree)
    assert apply_overlay(tree, None) == AppliedOverlay()
    assert tree_listing(tree) == before


@pytest.mark.parametrize(
    ("overlay", "reason"),
    [
        (TestOverlay(files={"../escape.py": "x"}), "leaves the tree"),
        (TestOverlay(probes={".git/hooks/post-checkout": "x"}), "writes into .git"),
        (TestOverlay(probes={"linkdir/test_probe.py": "x"}), "through the symlink linkdir"),
        (TestOverlay(replace_dirs=("linkdir/sub",)), "through the symlink linkdir"),
        (TestOverlay(replace_dirs=(".",)), "not a plain relative path"),
        (TestOverlay(replace_dirs=("/",)), "not a plain relative path"),
        (
            TestOverlay(files={"t/test_a.py": "x"}, probes={"t/test_a.py": "y"}),
            "both test files and probes",
        ),
    ],
)
def test_unsafe_overlays_are_refused_before_writing(
    tree: Path, overlay: TestOverlay, reason: str
) -> None:
    before = tree_listing(tree)
    outside = tree_listing(tree.parent)
    with pytest.raises(OverlayError, match=reason):
        apply_overlay(tree, overlay)
    assert tree_listing(tree) == before
    assert tree_listing(tree.parent) == outside


def test_a_file_over_a_symlink_replaces_the_link_not_its_target(tree: Path) -> None:
    apply_overlay(tree, TestOverlay(files={"pkg/link.py": "NEW = 1\n"}))
    assert not (tree / "pkg/link.py").is_symlink()
    assert (tree / "pkg/link.py").read_text() == "NEW = 1\n"
    assert (tree.parent / "outside.txt").read_text() == "outside\n"


def test_a_replaced_folder_that_is_a_symlink_is_unlinked_not_emptied(tree: Path) -> None:
    apply_overlay(tree, TestOverlay(replace_dirs=("linkdir",)))
    assert not (tree / "linkdir").exists()
    assert (tree.parent / "outside.txt").read_text() == "outside\n"

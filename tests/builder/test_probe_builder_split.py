"""Patch split with the repository's test globs, and the diff parser/renderer under it."""

from __future__ import annotations

import pytest

from probe_builder.material.diffs import parse_diff, render_file_diff
from probe_builder.material.split import split_patch
from tests.probe_builder_support import TEST_GLOBS, cache_pr, git, make_pr


def test_split_puts_tests_by_the_repository_globs_and_keeps_every_file_verbatim(tmp_path):
    pr = cache_pr(tmp_path)
    assert pr.split.golden_paths == ("pkg/cache.py", "pkg/grads.py")
    assert pr.split.test_paths == ("tests/test_cache.py",)
    # golden + test is the PR's diff again, file for file
    rejoined = {f.path: f.text for f in parse_diff(pr.split.golden + pr.split.test)}
    original = {f.path: f.text for f in parse_diff(pr.diff)}
    assert rejoined == original


def test_golden_patch_alone_applies_to_the_base(tmp_path):
    pr = cache_pr(tmp_path)
    pr.apply_check(pr.split.golden)
    pr.apply_check(pr.split.test)


def test_split_classifies_deleted_and_helper_files_by_path_not_by_substring(tmp_path):
    pr = make_pr(
        tmp_path,
        {"pkg/testing_utils.py": "X = 1\n", "tests/old_test.py": "Y = 1\n", "pkg/a.py": "a = 1\n"},
        {"pkg/testing_utils.py": "X = 2\n", "tests/old_test.py": None, "pkg/a.py": "a = 2\n"},
    )
    # A splitter that looks for "test" anywhere in the path would call testing_utils a test.
    assert pr.split.golden_paths == ("pkg/a.py", "pkg/testing_utils.py")
    assert pr.split.test_paths == ("tests/old_test.py",)
    assert pr.split.test_files[0].is_deleted


def test_split_uses_segment_aware_globs(tmp_path):
    # fnmatch's '*' crosses '/': a glob 'tests/*.py' must not take tests/a/b.py.
    pr = make_pr(
        tmp_path,
        {"tests/a/b.py": "x = 1\n", "tests/c.py": "y = 1\n"},
        {"tests/a/b.py": "x = 2\n", "tests/c.py": "y = 2\n"},
    )
    split = split_patch(pr.diff, test_globs=["tests/*.py"])
    assert (split.golden_paths, split.test_paths) == (("tests/a/b.py",), ("tests/c.py",))


def test_split_of_a_pr_without_tests_has_an_empty_test_patch(tmp_path):
    pr = make_pr(tmp_path, {"a.py": "a = 1\n"}, {"a.py": "a = 2\n"})
    assert pr.split.test == "" and pr.split.test_files == ()
    assert split_patch("", test_globs=TEST_GLOBS).golden == ""


def test_added_and_changed_lines_are_new_file_line_numbers(tmp_path):
    pr = make_pr(
        tmp_path, {"a.py": "a = 1\nb = 2\nc = 3\nd = 4\n"}, {"a.py": "a = 1\nB = 2\nc = 3\nx = 0\n"}
    )
    (file,) = parse_diff(pr.diff)
    assert file.added_lines() == {2, 4}
    assert file.line_counts() == (2, 2)


def test_deletion_is_anchored_on_the_line_before_it(tmp_path):
    pr = make_pr(
        tmp_path,
        {"a.py": "def f():\n    x = 1\n    return x\n\n\nz = 1\n"},
        {"a.py": "def f():\n    x = 1\n\n\nz = 1\n"},
    )
    (file,) = parse_diff(pr.diff)
    assert file.added_lines() == frozenset()
    assert file.changed_lines() == {2}  # inside f, not the blank line after it


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("a\nb\n", "a\nc"),  # new text lacks the final newline
        ("a\nb", "a\nb\nc\n"),  # old text lacked it
        (None, "new\nfile\n"),
        ("x = 1\n", None),
    ],
)
def test_rendered_file_diff_applies_with_git(tmp_path, before, after):
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "--quiet")
    if before is not None:
        (repo / "f.py").write_text(before)
    patch = render_file_diff("f.py", before, after)
    git(repo, "apply", stdin=patch)
    if after is None:
        assert not (repo / "f.py").exists()
    else:
        assert (repo / "f.py").read_text() == after


def test_render_of_identical_texts_is_empty():
    assert render_file_diff("f.py", "a\n", "a\n") == ""


GITLINK_DIFF = """diff --git a/pkg/a.py b/pkg/a.py
--- a/pkg/a.py
+++ b/pkg/a.py
@@ -1 +1 @@
-x = 1
+x = 2
diff --git a/recipe b/recipe
index 1111111..2222222 160000
--- a/recipe
+++ b/recipe
@@ -1 +1 @@
-Subproject commit 1111111111111111111111111111111111111111
+Subproject commit 2222222222222222222222222222222222222222
"""


def test_a_submodule_pointer_is_left_out_of_both_patches_and_named():
    split = split_patch(GITLINK_DIFF, test_globs=[])
    assert split.golden_paths == ("pkg/a.py",) and split.test_paths == ()
    assert split.submodules == ("recipe",)
    assert "Subproject commit" not in split.golden
    plain = GITLINK_DIFF.replace("index 1111111..2222222 160000", "index 1111111..2222222 100644")
    assert split_patch(plain, test_globs=[]).submodules == ()  # a file that says so is a file

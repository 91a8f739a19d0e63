"""Path globs: ``*`` stays inside a folder (fnmatch's does not), ``**`` spans folders."""

from __future__ import annotations

import fnmatch

import pytest

from probewatch.paths import GlobError, PathMatcher, glob_to_regex
from probewatch.testfiles import DEFAULT_TEST_GLOBS


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("tests/*.py", "tests/test_a.py", True),
        ("tests/*.py", "tests/unit/test_a.py", False),
        ("**/tests/**", "tests/a.py", True),
        ("**/tests/**", "pkg/sub/tests/data/a.json", True),
        ("**/tests/**", "tests", False),
        ("**/tests/**", "pkg/mytests/a.py", False),
        ("**/test_*.py", "test_top.py", True),
        ("**/test_*.py", "a/b/test_deep.py", True),
        ("**/test_*.py", "a/test_dir/x.py", False),
        (
            "tests/functional_tests/**/golden_values*.json",
            "tests/functional_tests/golden_values_dev.json",
            True,
        ),
        (
            "tests/functional_tests/**/golden_values*.json",
            "tests/functional_tests/gpt/x/golden_values.json",
            True,
        ),
        ("tests/functional_tests/**/golden_values*.json", "tests/golden_values.json", False),
        ("a/?.py", "a/b.py", True),
        ("a/?.py", "a//.py", False),
        ("a/[!x]y.py", "a/zy.py", True),
        ("a/[!x]y.py", "a/xy.py", False),
        ("a/[!x]y.py", "a//y.py", False),
        ("a**b/c", "a-xx-b/c", True),
        ("a**b/c", "a/x/b/c", False),
    ],
)
def test_glob_matches_whole_paths_with_star_inside_one_folder(
    pattern: str, path: str, expected: bool
) -> None:
    assert PathMatcher([pattern]).matches(path) is expected


def test_fnmatch_would_let_a_star_cross_folders_which_the_matcher_refuses() -> None:
    # The reason this module exists: fnmatch counts tests/unit/test_a.py as tests/*.py.
    assert fnmatch.fnmatch("tests/unit/test_a.py", "tests/*.py")
    assert not PathMatcher(["tests/*.py"]).matches("tests/unit/test_a.py")


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.lock", "uv.lock", True),
        ("*.lock", "deep/down/poetry.lock", True),
        ("/setup.py", "setup.py", True),
        ("/setup.py", "pkg/setup.py", False),
        ("megatron/core/", "megatron/core/tensor_parallel/layers.py", True),
        ("megatron/core/", "megatron/core.py", False),
        ("megatron/core/", "other/megatron/core/a.py", False),
    ],
)
def test_gitignore_shortcuts_name_folders_and_bare_file_names(
    pattern: str, path: str, expected: bool
) -> None:
    assert PathMatcher([pattern]).matches(path) is expected


@pytest.mark.parametrize(
    ("path", "is_test"),
    [
        ("tests/unit_tests/test_layers.py", True),
        ("verl/tests/helpers.py", True),
        ("pkg/test/conftest.py", True),
        ("pkg/test_utils.py", True),
        ("pkg/utils_test.py", True),
        ("pkg/testing.py", False),
        ("pkg/contest.py", False),
        ("docs/testing.md", False),
    ],
)
def test_default_test_globs_follow_the_issue_definition(path: str, is_test: bool) -> None:
    assert PathMatcher(DEFAULT_TEST_GLOBS).matches(path) is is_test


def test_an_empty_matcher_matches_nothing_and_is_false() -> None:
    matcher = PathMatcher([])
    assert not matcher
    assert not matcher.matches("anything.py")


def test_a_matcher_matches_when_any_of_its_globs_does() -> None:
    matcher = PathMatcher(["docs/", "*.md"])
    assert matcher.matches("docs/conf.py")
    assert matcher.matches("pkg/README.md")
    assert not matcher.matches("pkg/readme.py")


def test_regex_metacharacters_in_a_glob_are_literal() -> None:
    assert PathMatcher(["a+b/(x).py"]).matches("a+b/(x).py")
    assert not PathMatcher(["a.b"]).matches("axb")
    assert glob_to_regex("a.b") == r"(?:[^/]*/)*a\.b"


def test_an_empty_glob_is_refused_with_a_message() -> None:
    with pytest.raises(GlobError, match="empty glob"):
        PathMatcher([" "])

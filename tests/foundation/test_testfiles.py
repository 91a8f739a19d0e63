from __future__ import annotations

import pytest

from probewatch.testfiles import (
    DEFAULT_TEST_GLOBS,
    PYTEST_MODULE_GLOBS,
    TestFiles,
    is_pytest_module,
)

# verl's convention (the example watch file): only the top-level tests/ folder.
ROOT_TESTS_ONLY = ("tests/**", "**/test_*.py", "**/*_test.py")

DEFAULT_TABLE = [
    # tests/ and test/ folders, at the root and at any depth, whatever the file
    ("tests/test_a.py", True),
    ("tests/helpers.py", True),
    ("tests/data/golden.json", True),
    ("pkg/sub/tests/helper.py", True),
    ("test/util.py", True),
    ("pkg/test/fixtures/x.yaml", True),
    # pytest module names, at the root and at any depth
    ("test_top.py", True),
    ("a/b/test_deep.py", True),
    ("mod_test.py", True),
    ("a/b/deep_test.py", True),
    # conftest.py wherever it is
    ("conftest.py", True),
    ("pkg/conftest.py", True),
    ("tests/unit/conftest.py", True),
    # near misses
    ("contest.py", False),
    ("pkg/contest.py", False),
    ("tests_util.py", False),
    ("pkg/tests_util.py", False),
    ("attest.py", False),
    ("pkg/attest.py", False),
    ("mytest_x.py", False),
    ("pkg/mytest_x.py", False),
    ("latest/mod.py", False),
    ("pkg/testing.py", False),
    ("pkg/tests.py", False),
    ("testsuite/x.py", False),
    ("pkg/mytests/x.py", False),
    ("a/test_dir/x.py", False),  # a file-name glob names files, not folders
    ("a/x_test/y.py", False),
    ("my_conftest.py", False),
    ("conftest.py.orig", False),
    ("test_a.pyc", False),
    ("src/model.py", False),
]


@pytest.mark.parametrize(("path", "expected"), DEFAULT_TABLE)
def test_the_default_test_files(path: str, expected: bool) -> None:
    files = TestFiles()
    assert files.matches(path) is expected
    assert (path in files) is expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/helpers.py", True),
        ("tests/unit/data.json", True),
        ("pkg/tests/helper.py", False),  # this repository's tests/ is the top-level one
        ("pkg/test/helper.py", False),
        ("pkg/test_mod.py", True),
        ("pkg/mod_test.py", True),
        ("conftest.py", True),  # not in the globs: conftest.py is always a test file
        ("pkg/conftest.py", True),
        ("scripts/deep/conftest.py", True),
        ("contest.py", False),
        ("tests_util.py", False),
    ],
)
def test_a_repositorys_own_globs_replace_the_defaults(path: str, expected: bool) -> None:
    assert TestFiles(ROOT_TESTS_ONLY).matches(path) is expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("spec/model_spec.py", True),
        ("conftest.py", True),
        ("spec/conftest.py", True),
        ("tests/test_a.py", False),
        ("test_top.py", False),
        ("src/model.py", False),
    ],
)
def test_conftest_stays_a_test_file_under_globs_that_omit_it(path: str, expected: bool) -> None:
    files = TestFiles(["spec/**"])
    assert files.matches(path) is expected
    assert files.globs == ("spec/**",)


def test_no_globs_means_the_default_list() -> None:
    assert TestFiles(()) == TestFiles()
    assert TestFiles([]).globs == DEFAULT_TEST_GLOBS
    assert TestFiles([]).matches("pkg/tests/helper.py")


def test_only_strings_are_in_the_test_files() -> None:
    assert 3 not in TestFiles()
    assert None not in TestFiles()


def test_among_and_split_keep_the_order() -> None:
    paths = ["src/a.py", "tests/b.py", "conftest.py", "src/c.py", "pkg/test_d.py"]
    files = TestFiles()
    assert files.among(paths) == ("tests/b.py", "conftest.py", "pkg/test_d.py")
    assert files.split(paths) == (
        ("src/a.py", "src/c.py"),
        ("tests/b.py", "conftest.py", "pkg/test_d.py"),
    )


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("test_top.py", True),
        ("tests/unit/test_a.py", True),
        ("pkg/mod_test.py", True),
        ("tests/helpers.py", False),  # a test file, not a module pytest collects
        ("tests/data/test_input.json", False),
        ("conftest.py", False),
        ("tests/conftest.py", False),
        ("a/test_dir/x.py", False),
        ("pkg/contest.py", False),
        ("pkg/attest.py", False),
        ("pkg/mytest_x.py", False),
    ],
)
def test_pytest_modules_are_what_pytest_collects(path: str, expected: bool) -> None:
    assert is_pytest_module(path) is expected


def test_every_pytest_module_is_a_test_file_under_the_defaults() -> None:
    modules = [path for path, _ in DEFAULT_TABLE if is_pytest_module(path)]
    assert modules
    assert all(TestFiles().matches(path) for path in modules)
    assert PYTEST_MODULE_GLOBS == ("test_*.py", "*_test.py")

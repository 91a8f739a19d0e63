"""Which paths are test files, decided once for the miner, the split, the runners and grading.

A task is only fair when every stage draws the same line between code and
tests: the miner counts a PR's test files, the split puts them in the test
patch, grading drops an agent's edits to them and the runner refuses a
submission that still touches one. All of them ask :class:`TestFiles`, built
from the repository's ``tests.globs`` (or :data:`DEFAULT_TEST_GLOBS`) and
matched with :class:`probewatch.paths.PathMatcher`, the project's one glob
engine. ``conftest.py`` is a test file whatever the repository configures.
A narrower question, "which files does pytest collect as test modules", is
answered by :data:`PYTEST_MODULE_GLOBS` and :func:`is_pytest_module`: a
``tests/`` folder also holds helpers and data, which are test files but not
modules to run.
"""

from __future__ import annotations

from collections.abc import Iterable

from probewatch.paths import PathMatcher

# Test file = anything under a tests/ or test/ folder at any depth, or a file named
# like a pytest module, or pytest's per-folder configuration.
DEFAULT_TEST_GLOBS: tuple[str, ...] = (
    "**/tests/**",
    "**/test/**",
    "**/test_*.py",
    "**/*_test.py",
    "**/conftest.py",
)

# conftest.py runs inside pytest before any test and can rewrite what a test sees
# (fixtures, hooks, monkeypatching), so a repository's globs cannot opt out of it:
# a submission that adds or edits one must be treated as touching the tests.
ALWAYS_TEST_GLOBS: tuple[str, ...] = ("conftest.py",)

# pytest's default ``python_files``: the modules it collects tests from. Narrower than
# a test file: tests/helpers.py is a test file, not a test module; conftest.py is
# neither collected nor run as one.
PYTEST_MODULE_GLOBS: tuple[str, ...] = ("test_*.py", "*_test.py")

_PYTEST_MODULES = PathMatcher(PYTEST_MODULE_GLOBS)


def is_pytest_module(path: str) -> bool:
    """Whether pytest collects ``path`` (repository-relative, POSIX) as a test module."""
    return _PYTEST_MODULES.matches(path)


class TestFiles:
    """A repository's test files: its globs (empty: :data:`DEFAULT_TEST_GLOBS`) plus conftest.py.

    ``path in test_files`` and ``test_files.matches(path)`` take repository-relative
    POSIX paths.
    """

    __test__ = False  # not a pytest class, despite the name
    __slots__ = ("_matcher", "globs")

    def __init__(self, globs: Iterable[str] = DEFAULT_TEST_GLOBS) -> None:
        # An empty list would make every edit to the tests look like a code change:
        # nobody means that, so it stands for the default.
        self.globs: tuple[str, ...] = tuple(globs) or DEFAULT_TEST_GLOBS
        self._matcher = PathMatcher((*self.globs, *ALWAYS_TEST_GLOBS))

    def matches(self, path: str) -> bool:
        return self._matcher.matches(path)

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self._matcher.matches(path)

    def among(self, paths: Iterable[str]) -> tuple[str, ...]:
        """The test files among ``paths``, in their order."""
        return tuple(p for p in paths if self._matcher.matches(p))

    def split(self, paths: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(others, tests): ``paths`` in two, order kept within each."""
        others: list[str] = []
        tests: list[str] = []
        for path in paths:
            (tests if self._matcher.matches(path) else others).append(path)
        return tuple(others), tuple(tests)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TestFiles) and other.globs == self.globs

    def __hash__(self) -> int:
        return hash(self.globs)

    def __repr__(self) -> str:
        return f"TestFiles({list(self.globs)!r})"

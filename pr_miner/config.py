"""Per-repository mining settings: thresholds, globs, core paths and the auto-accept rule.

The application builds one :class:`MiningConfig` per repository from its watch
file; a repository nobody configured gets the defaults, which are the
InfraDev study's (1,000 changed lines, the project's default test files of
:mod:`probewatch.testfiles`, Python code changed). Compiled path matchers are
cached on the (frozen) config, so filters never recompile globs per PR.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from pydantic import BaseModel, ConfigDict, Field, field_validator

from probewatch.paths import GlobError, PathMatcher, normalise
from probewatch.testfiles import DEFAULT_TEST_GLOBS, TestFiles

DEFAULT_SIZE_THRESHOLD = 1000
DEFAULT_CODE_GLOBS = ("**/*.py",)
# Changes only here (besides tests) make a docs/CI PR, not a task.
DEFAULT_DOCS_CI_GLOBS = (
    "docs/",
    "doc/",
    "*.md",
    "*.rst",
    ".github/",
    ".gitlab/",
    ".gitlab-ci.yml",
    ".ci/",
    "ci/",
    "docker/",
    "Dockerfile*",
)


@dataclass(frozen=True, slots=True)
class PathClass:
    """Which globs of a config match one path."""

    excluded: bool
    test: bool
    code: bool
    core: bool
    docs_ci: bool
    required: bool


class MiningConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    size_threshold: int = Field(default=DEFAULT_SIZE_THRESHOLD, ge=1)
    exclude_globs: tuple[str, ...] = Field(default=(), description="Not counted anywhere.")
    test_globs: tuple[str, ...] = Field(default=DEFAULT_TEST_GLOBS, min_length=1)
    code_globs: tuple[str, ...] = Field(default=DEFAULT_CODE_GLOBS, min_length=1)
    core_paths: tuple[str, ...] = Field(
        default=(), description="Core source folders or globs; empty: all non-test code is core."
    )
    docs_ci_globs: tuple[str, ...] = DEFAULT_DOCS_CI_GLOBS
    reject_docs_ci_only: bool = True
    # A PR whose changed code lines are mostly in Python modules whose syntax tree did
    # not change (a formatter or linter pass) is rejected as formatting only. Off by
    # default: it reads module contents (git sources only), which scanning does not.
    reject_formatting_only: bool = False
    formatting_only_share: float = Field(default=0.9, gt=0.0, le=1.0)
    # Formatting passes are repository-wide; PRs changing fewer modules are not read.
    formatting_min_modules: int = Field(default=20, ge=1)
    max_files: int | None = Field(default=None, ge=1)
    require_paths: tuple[str, ...] = Field(
        default=(), description="If set, a PR must touch at least one matching file."
    )
    auto_accept_min_core_share: float | None = Field(default=None, ge=0.0, le=1.0)

    @field_validator(
        "exclude_globs", "test_globs", "code_globs", "core_paths", "docs_ci_globs", "require_paths"
    )
    @classmethod
    def _globs_compile(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in value:
            try:
                normalise(pattern)
                PathMatcher([pattern])
            except GlobError as exc:
                raise ValueError(str(exc)) from None
        return value

    @cached_property
    def excluded(self) -> PathMatcher:
        return PathMatcher(self.exclude_globs)

    @cached_property
    def tests(self) -> TestFiles:
        return TestFiles(self.test_globs)

    @cached_property
    def code(self) -> PathMatcher:
        return PathMatcher(self.code_globs)

    @cached_property
    def core(self) -> PathMatcher:
        return PathMatcher(self.core_paths)

    @cached_property
    def docs_ci(self) -> PathMatcher:
        return PathMatcher(self.docs_ci_globs)

    @cached_property
    def required(self) -> PathMatcher:
        return PathMatcher(self.require_paths)

    @cached_property
    def _path_classes(self) -> dict[str, PathClass]:
        return {}

    def classify(self, path: str) -> PathClass:
        """The globs matching ``path``; memoised, as the same paths recur across many PRs."""
        known = self._path_classes.get(path)
        if known is None:
            known = self._path_classes[path] = self._classify(path)
        return known

    def _classify(self, path: str) -> PathClass:
        code = self.code.matches(path)
        return PathClass(
            excluded=self.excluded.matches(path),
            test=self.tests.matches(path),
            code=code,
            core=self.core.matches(path) if self.core else code,
            docs_ci=self.docs_ci.matches(path),
            required=self.required.matches(path),
        )

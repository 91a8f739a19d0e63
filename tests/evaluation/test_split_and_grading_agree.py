"""The patch split and grading draw the same line between code and tests.

A PR touching every path of a table is split into golden and test patches; the same diff,
submitted by an agent, is graded. A path is in the test patch exactly when grading drops it
from the submission and exactly when the apply-time check refuses a submission touching it,
with the default test globs and with a repository's own (verl's, from the example watch file).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.evaluate.grading import Grader, GradingTask, RepoSetup, gradable_part
from bot.watchfile import example_watch_file, load_watch_file
from probe_builder.material.diffs import parse_diff
from probe_builder.material.split import split_patch
from probe_builder.pipeline import RepoSettings
from probewatch.testfiles import DEFAULT_TEST_GLOBS
from runners.agents import split_test_changes
from runners.patches import PatchRefused, apply_patches
from runners.types import (
    Capacity,
    Hardware,
    Outcome,
    PatchSpec,
    RunRequest,
    RunResult,
    TestOverlay,
)
from runners.workspace import workspace
from tests.runner_repos import Content, FixtureRepo

EDIT, ADD, DELETE = "edit", "add", "delete"

# (path, how the PR touches it)
TABLE: tuple[tuple[str, str], ...] = (
    ("tests/test_model.py", EDIT),
    ("tests/helpers.py", ADD),
    ("tests/data/input.json", DELETE),
    ("tests/conftest.py", EDIT),
    ("pkg/tests/helper.py", EDIT),
    ("pkg/sub/tests/test_deep.py", ADD),
    ("pkg/test/fixture.py", DELETE),
    ("test/util.py", EDIT),
    ("test_top.py", ADD),
    ("a/b/test_deep.py", EDIT),
    ("a/b/deep_test.py", DELETE),
    ("mod_test.py", EDIT),
    ("conftest.py", ADD),
    ("pkg/conftest.py", EDIT),
    ("scripts/deep/conftest.py", DELETE),
    ("contest.py", EDIT),
    ("pkg/contest.py", ADD),
    ("tests_util.py", EDIT),
    ("pkg/tests_util.py", DELETE),
    ("attest.py", EDIT),
    ("mytest_x.py", ADD),
    ("latest/mod.py", EDIT),
    ("pkg/testing.py", EDIT),
    ("a/test_dir/x.py", EDIT),
    ("testsuite/x.py", ADD),
    ("src/model.py", EDIT),
    ("docs/tests.md", EDIT),
)

NOT_TESTS_ANYWHERE = {
    "contest.py",
    "pkg/contest.py",
    "tests_util.py",
    "pkg/tests_util.py",
    "attest.py",
    "mytest_x.py",
    "latest/mod.py",
    "pkg/testing.py",
    "a/test_dir/x.py",
    "testsuite/x.py",
    "src/model.py",
    "docs/tests.md",
}
DEFAULT_TESTS = {path for path, _ in TABLE} - NOT_TESTS_ANYWHERE
# verl's tests/ is the top-level folder only: helpers in other tests/ or test/ folders are
# code there; test modules and conftest.py are tests anywhere.
VERL_TESTS = DEFAULT_TESTS - {"pkg/tests/helper.py", "pkg/test/fixture.py", "test/util.py"}


def verl_globs() -> tuple[str, ...]:
    return tuple(load_watch_file(example_watch_file()).get("volcengine/verl").tests.globs)


@dataclass(frozen=True)
class Case:
    label: str
    split_globs: tuple[str, ...]  # what the task was built with
    setup_globs: tuple[str, ...]  # what grading is configured with
    expected_tests: frozenset[str]


CASES = [
    # a repository without its own globs: the build uses the default list, grading's
    # RepoSetup and the PatchSpec are left empty (empty means the default list)
    Case("default", DEFAULT_TEST_GLOBS, (), frozenset(DEFAULT_TESTS)),
    Case("verl", verl_globs(), verl_globs(), frozenset(VERL_TESTS)),
]


@dataclass(frozen=True)
class PullRequest:
    repo: FixtureRepo
    base: str
    diff: str


def _text(path: str, version: int) -> str:
    return f"# {path}\nVERSION = {version}\n"


@pytest.fixture(scope="module")
def pr(tmp_path_factory: pytest.TempPathFactory) -> PullRequest:
    before: dict[str, Content] = {p: _text(p, 1) for p, kind in TABLE if kind != ADD}
    after: dict[str, Content] = {p: None if kind == DELETE else _text(p, 2) for p, kind in TABLE}
    repo, base = FixtureRepo.create(tmp_path_factory.mktemp("agree") / "upstream", before)
    head = repo.commit(after, "touch every path of the table")
    return PullRequest(repo, base, repo.diff(base, head))


@dataclass
class ApplyOnlyBackend:
    """Applies a run's patches to one real tree, as a run does before pytest, and stops there:
    the apply-time check is what is compared, not the tests."""

    tree: Path
    name: str = "apply-only"
    requests: list[RunRequest] = field(default_factory=list)

    def capacity(self) -> Capacity:
        return Capacity(cpu_slots=1, gpus=0)

    def run(self, request: RunRequest) -> RunResult:
        self.requests.append(request)
        try:
            apply_patches(self.tree, request.patches)
        except PatchRefused as exc:
            return RunResult(outcome=Outcome.refused, detail=str(exc))
        return RunResult(outcome=Outcome.completed)


@pytest.fixture
def tree(tmp_path: Path, pr: PullRequest) -> Iterator[Path]:
    with workspace(pr.repo.path, pr.base, root=tmp_path / "runs") as ws:
        yield ws.tree


def grader(backend: ApplyOnlyBackend, setup: RepoSetup, pr: PullRequest) -> Grader:
    task = GradingTask(
        task_id=1,
        instance_id="owner__repo-1",
        repo="owner/repo",
        base_commit=pr.base,
        merged_at=datetime(2025, 6, 1, tzinfo=UTC),
        statement="",
        patch="",
        hollow_patch="",
        test_patch="",
        hardware=Hardware(),
    )
    return Grader(backend, setup, task, TestOverlay())


def file_diffs(diff: str) -> Mapping[str, str]:
    return {f.path: f.text for f in parse_diff(diff)}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_the_split_puts_the_expected_paths_in_the_test_patch(case: Case, pr: PullRequest) -> None:
    split = split_patch(pr.diff, test_globs=case.split_globs)
    assert set(split.test_paths) == case.expected_tests
    assert set(split.golden_paths) == {p for p, _ in TABLE} - case.expected_tests


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_grading_drops_exactly_the_split_test_files(case: Case, pr: PullRequest) -> None:
    split = split_patch(pr.diff, test_globs=case.split_globs)
    setup = RepoSetup(pr.repo.path, RepoSettings(test_globs=case.setup_globs))
    kept, dropped = gradable_part(pr.diff, setup)
    assert set(dropped) == set(split.test_paths)
    assert [f.path for f in parse_diff(kept)] == list(split.golden_paths)
    assert split_test_changes(pr.diff, case.split_globs) == (kept, dropped)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_the_apply_time_check_refuses_exactly_the_split_test_files(
    case: Case, pr: PullRequest, tree: Path
) -> None:
    split = split_patch(pr.diff, test_globs=case.split_globs)
    backend = ApplyOnlyBackend(tree)
    graded = grader(backend, RepoSetup(pr.repo.path, RepoSettings(test_globs=case.setup_globs)), pr)
    refused = set()
    for path, text in file_diffs(pr.diff).items():
        result = graded.run_submission(text, f"touches {path}")
        if result.outcome is Outcome.refused:
            assert f"changes the test file {path}" in result.detail
            refused.add(path)
        else:
            assert result.outcome is Outcome.completed
    assert refused == set(split.test_paths)
    for request in backend.requests:
        (spec,) = request.patches
        assert spec.forbid_test_changes and spec.test_globs == case.setup_globs


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_the_graded_part_of_a_submission_is_never_refused(
    case: Case, pr: PullRequest, tree: Path
) -> None:
    setup = RepoSetup(pr.repo.path, RepoSettings(test_globs=case.setup_globs))
    graded = grader(ApplyOnlyBackend(tree), setup, pr)
    assert graded.run_submission(pr.diff, "whole").outcome is Outcome.refused
    kept, _ = gradable_part(pr.diff, setup)
    assert graded.run_submission(kept, "graded part").outcome is Outcome.completed
    for path in split_patch(pr.diff, test_globs=case.split_globs).golden_paths:
        kind = dict(TABLE)[path]
        assert (tree / path).exists() is (kind != DELETE)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_a_patch_spec_with_the_globs_refuses_exactly_the_split_test_files(
    case: Case, pr: PullRequest, tree: Path
) -> None:
    split = split_patch(pr.diff, test_globs=case.split_globs)
    refused = set()
    for path, text in file_diffs(pr.diff).items():
        spec = PatchSpec(path, text, forbid_test_changes=True, test_globs=case.split_globs)
        try:
            apply_patches(tree, [spec])
        except PatchRefused:
            refused.add(path)
    assert refused == set(split.test_paths)

"""The demo upstream repository: deterministic history, and each planted gap shown for real.

For every planted PR, real pytest sessions run in git work trees of the
generated repository with this interpreter and the probe kit's plugin: the
probe passes three times on the merge commit (no skips), fails on the
pre-change snapshot, and the planted one-line mutation passes the PR's own
tests while the probe rejects it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import probe_builder
from bot.watchfile import load_watch_file
from probe_builder.demo_repo import (
    DEMO_REPO_NAME,
    DEMO_SIZE_THRESHOLD,
    DemoPR,
    DemoRepo,
    DemoRepoError,
    MutationNotFound,
    PlantedMutation,
    create_demo_repo,
)

PLANTED = [12, 15, 19]
PLUGIN_ARGS = ["-p", "probe_builder.kit.plugin", "-p", "no:probewatch_probes"]
PROJECT_ROOT = Path(probe_builder.__file__).resolve().parent.parent
SESSION_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoRepo:
    return create_demo_repo(tmp_path_factory.mktemp("demo") / "minirl")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


def work_tree(demo: DemoRepo, sha: str, where: Path) -> Path:
    git(demo.path, "worktree", "add", "--detach", "-q", str(where), sha)
    return where


def run_pytest(tree: Path, *targets: str | Path) -> list[tuple[str, str]]:
    """(test, outcome) per test run (passed, failed, error, skipped) of one pytest session."""
    report = tree / f".report-{len(list(tree.glob('.report-*')))}.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), str(PROJECT_ROOT)]))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *PLUGIN_ARGS, "-p", "no:cacheprovider", "-q",
         f"--junitxml={report}", *map(str, targets)],
        cwd=tree, env=env, capture_output=True, text=True, timeout=SESSION_TIMEOUT_S,
    )  # fmt: skip
    assert report.exists(), proc.stdout + proc.stderr
    outcomes = junit_outcomes(report)
    assert outcomes, proc.stdout + proc.stderr
    return outcomes


JUNIT_OUTCOME = {"failure": "failed", "error": "error", "skipped": "skipped"}


def junit_outcomes(report: Path) -> list[tuple[str, str]]:
    outcomes = []
    for case in ET.parse(report).getroot().iter("testcase"):
        kinds = [JUNIT_OUTCOME[child.tag] for child in case if child.tag in JUNIT_OUTCOME]
        outcomes.append((f"{case.get('classname')}::{case.get('name')}", (kinds or ["passed"])[0]))
    return outcomes


def with_probes(pr: DemoPR, tree: Path) -> list[Path]:
    """The PR's probes copied into the work tree (outside its tests/ folder)."""
    folder = tree / "probes"
    folder.mkdir(exist_ok=True)
    return [Path(shutil.copy(probe, folder / probe.name)) for probe in pr.probe_files]


def outcomes_of(outcomes: list[tuple[str, str]], *, probes: bool) -> list[str]:
    """Outcomes of the probes' tests (``probes=True``) or of the PR's own tests."""
    return [outcome for name, outcome in outcomes if ("test_probe_" in name) == probes]


# --- history -----------------------------------------------------------------------------


def test_two_generations_give_identical_commit_shas(demo: DemoRepo, tmp_path: Path) -> None:
    again = create_demo_repo(tmp_path / "minirl")
    assert again.commits == demo.commits
    assert [pr.merge_sha for pr in again.prs] == [pr.merge_sha for pr in demo.prs]
    assert git(again.path, "rev-parse", "HEAD").strip() == demo.commits[-1]


def test_history_is_linear_with_squash_merged_prs_whose_body_is_the_description(
    demo: DemoRepo,
) -> None:
    log = git(demo.path, "log", "--first-parent", "--reverse", "--format=%H%x00%P%x00%s%x00%b%x1e")
    entries = [entry.strip("\n").split("\x00") for entry in log.split("\x1e") if entry.strip()]
    assert len(entries) == len(demo.commits) >= 6
    assert all(len(parents.split()) <= 1 for _, parents, _, _ in entries)
    squashed = [subject for _, _, subject, _ in entries if subject.endswith(")")]
    assert [int(s.rsplit("(#", 1)[1][:-1]) for s in squashed] == list(demo.pr_numbers)
    bodies = {sha: body for sha, _, _, body in entries}
    for pr in demo.prs:
        assert pr.title.endswith(f"(#{pr.number})")
        assert pr.promise in bodies[pr.merge_sha]
        assert "### What does this PR do?" in bodies[pr.merge_sha]


def test_history_has_fixed_identities_and_dates(demo: DemoRepo) -> None:
    line = git(demo.path, "log", "-1", "--format=%an|%ae|%aI|%cn|%ce|%cI", demo.prs[0].merge_sha)
    assert line.strip() == (
        "Priya Raman|priya.raman@example.net|2025-04-14T18:45:00+05:30|"
        "GitHub|noreply@github.com|2025-04-16T07:10:00+00:00"
    )


def changed_lines(demo: DemoRepo, base: str, head: str) -> dict[str, int]:
    numstat = git(demo.path, "diff", "--numstat", base, head)
    rows = [row.split("\t") for row in numstat.splitlines()]
    return {path: int(added) + int(deleted) for added, deleted, path in rows}


@pytest.mark.parametrize("number", PLANTED)
def test_planted_prs_pass_the_miners_filters_at_the_demo_threshold(
    demo: DemoRepo, number: int
) -> None:
    pr = demo.pr(number)
    files = changed_lines(demo, pr.base_sha, pr.merge_sha)
    assert sum(files.values()) >= DEMO_SIZE_THRESHOLD
    assert any(path.startswith("tests/") for path in files)
    assert set(pr.test_files) <= set(files)
    assert any(path.endswith(".py") and not path.startswith("tests/") for path in files)


def test_other_prs_stay_below_the_demo_threshold(demo: DemoRepo) -> None:
    planted_merges = {pr.merge_sha for pr in demo.prs}
    others = [
        (parent, sha)
        for parent, sha in zip(demo.commits, demo.commits[1:], strict=False)
        if sha not in planted_merges
    ]
    assert len(others) == len(demo.pr_numbers) - len(demo.prs)
    assert all(sum(changed_lines(demo, a, b).values()) < DEMO_SIZE_THRESHOLD for a, b in others)


def test_watch_file_lists_the_demo_with_a_lower_threshold_and_points_at_it(
    demo: DemoRepo,
) -> None:
    watched = load_watch_file(demo.watch_file).get(DEMO_REPO_NAME)
    assert watched.git is not None and watched.git.resolve() == demo.path
    assert watched.size_threshold == DEMO_SIZE_THRESHOLD < 1000
    assert "LOWERED from the default 1000" in demo.watch_file.read_text()


def test_shipped_watch_snippet_is_a_valid_watch_file() -> None:
    snippet = Path(probe_builder.__file__).parent / "demo_repo" / "watch.toml"
    assert tomllib.loads(snippet.read_text())["repo"][0]["size_threshold"] == DEMO_SIZE_THRESHOLD
    assert load_watch_file(snippet).get(DEMO_REPO_NAME).size_threshold == DEMO_SIZE_THRESHOLD


def test_probes_are_written_outside_the_repository(demo: DemoRepo) -> None:
    for pr in demo.prs:
        assert pr.probe_files and all(p.name.startswith("test_") for p in pr.probe_files)
        assert all(p.suffix == ".py" and demo.path not in p.parents for p in pr.probe_files)
    assert "probe" not in git(demo.path, "ls-files")


def test_a_non_empty_target_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "minirl").mkdir()
    (tmp_path / "minirl" / "keep.txt").write_text("mine")
    with pytest.raises(DemoRepoError, match="not an empty folder"):
        create_demo_repo(tmp_path / "minirl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["minirl"]
    assert [p.name for p in (tmp_path / "minirl").iterdir()] == ["keep.txt"]


def test_a_planted_mutation_must_match_exactly_one_line() -> None:
    mutation = PlantedMutation("m.py", "x.clear()", "pass", "delete_call", "")
    assert mutation.apply("def f(x):\n    x.clear()\n") == "def f(x):\n    pass\n"
    with pytest.raises(MutationNotFound, match="found 0 times"):
        mutation.apply("def f(x):\n    return x\n")
    with pytest.raises(MutationNotFound, match="found 2 times"):
        mutation.apply("x.clear()\nx.clear()\n")


# --- each planted gap, shown in real pytest sessions ---------------------------------------


def test_the_demo_libraries_own_suite_passes_at_the_head_commit(
    demo: DemoRepo, tmp_path: Path
) -> None:
    tree = work_tree(demo, demo.commits[-1], tmp_path / "head")
    outcomes = run_pytest(tree, "tests")
    assert len(outcomes) >= 25 and {outcome for _, outcome in outcomes} == {"passed"}, outcomes


@pytest.mark.parametrize("number", PLANTED)
def test_golden_passes_the_prs_tests_and_the_probe_three_times_without_skips(
    demo: DemoRepo, number: int, tmp_path: Path
) -> None:
    pr = demo.pr(number)
    tree = work_tree(demo, pr.merge_sha, tmp_path / "golden")
    probes = with_probes(pr, tree)
    # One session, every probe file collected three times: three runs in a row.
    outcomes = run_pytest(tree, "--keep-duplicates", *pr.test_files, *probes, *probes, *probes)
    assert {outcome for _, outcome in outcomes} == {"passed"}, outcomes
    probe_runs = [name for name, _ in outcomes if "test_probe_" in name]
    assert probe_runs and all(probe_runs.count(name) == 3 for name in probe_runs)
    assert outcomes_of(outcomes, probes=False)


@pytest.mark.parametrize("number", PLANTED)
def test_probe_fails_on_the_pre_change_snapshot(
    demo: DemoRepo, number: int, tmp_path: Path
) -> None:
    pr = demo.pr(number)
    tree = work_tree(demo, pr.base_sha, tmp_path / "snapshot")
    outcomes = outcomes_of(run_pytest(tree, *with_probes(pr, tree)), probes=True)
    assert {"failed", "error"} & set(outcomes), outcomes
    assert "skipped" not in outcomes


@pytest.mark.parametrize("number", PLANTED)
def test_planted_mutation_passes_the_prs_own_tests_but_the_probe_rejects_it(
    demo: DemoRepo, number: int, tmp_path: Path
) -> None:
    pr = demo.pr(number)
    tree = work_tree(demo, pr.merge_sha, tmp_path / "mutant")
    target = tree / pr.planted.path
    target.write_text(pr.planted.apply(target.read_text()))
    outcomes = run_pytest(tree, *pr.test_files, *with_probes(pr, tree))
    own = outcomes_of(outcomes, probes=False)
    assert own and set(own) == {"passed"}, outcomes
    assert "failed" in outcomes_of(outcomes, probes=True), outcomes

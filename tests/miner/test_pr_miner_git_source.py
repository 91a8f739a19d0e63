"""The git source on real repositories: PR styles, per-file counts, windows, cursors, bad input."""

from __future__ import annotations

import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from pr_miner.errors import CursorLost, EmptyRange, NotAGitRepository, ShallowHistory, UnknownBranch
from pr_miner.sources.base import Scan, ScanRequest, source_class
from pr_miner.sources.git_source import GitSource
from pr_miner.sources.gitlog import _split_records, log_commits, parse_record
from pr_miner.types import MergedPR, PRRef
from task_registry.types import CursorSource, PRKind
from tests.miner_repos import RepoBuilder, Scenario, build_scenario, code_lines, git


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    return build_scenario(tmp_path_factory.mktemp("scenario"))


def _scan(path: Path, s: Scenario, **overrides: object) -> Scan:
    request = ScanRequest(since=s.since, until=s.until, cursor=None)
    for key, value in overrides.items():
        object.__setattr__(request, key, value)
    return GitSource(path).scan(request)


def _by_ref(scan: Scan) -> dict[str, MergedPR]:
    return {str(pr.ref): pr for pr in scan.prs}


def test_all_three_merge_styles_are_recognised_and_direct_pushes_are_not(
    scenario: Scenario,
) -> None:
    scan = _scan(scenario.path, scenario)
    refs = [str(pr.ref) for pr in scan.prs]

    assert refs[:3] == ["#1", "#2", "!2"]
    assert len(refs) == 17 and len(set(refs)) == 17
    assert scan.scanned == 19  # initial commit and the direct push are on the mainline too
    gitlab = _by_ref(scan)["!2"]
    assert gitlab.ref == PRRef(PRKind.gitlab, 2)
    assert gitlab.title == "Distributed optimizer for widgets"


def test_a_merge_commit_counts_its_diff_against_the_first_parent(scenario: Scenario) -> None:
    source = GitSource(scenario.path)
    scan = source.scan(ScanRequest(scenario.since, scenario.until, None))
    merge = _by_ref(scan)["#2"]
    files = {change.path: (change.additions, change.deletions) for change in source.files(merge)}

    assert files == {"widgets/core/scheduler.py": (1000, 0), "tests/unit/test_sched.py": (200, 0)}
    assert merge.base_sha == git(scenario.path, "rev-parse", f"{merge.merge_sha}^1")
    assert merge.title == "Add the scheduler"
    assert merge.body == "Overlaps communication with compute."


def test_binary_files_are_flagged_and_renames_keep_the_old_path(scenario: Scenario) -> None:
    source = GitSource(scenario.path)
    scan = source.scan(ScanRequest(scenario.since, scenario.until, None))
    binary = {c.path: c for c in source.files(_by_ref(scan)["#8"])}["widgets/data/weights.bin"]
    renamed = {c.path: c for c in source.files(_by_ref(scan)["#9"])}["widgets/engine/core.py"]

    assert binary.binary and binary.lines == 0
    assert renamed.old_path == "widgets/core/engine.py"
    assert (renamed.additions, renamed.deletions) == (0, 0)


def test_a_bare_clone_gives_the_same_prs_and_files_as_the_work_tree(scenario: Scenario) -> None:
    work, bare = GitSource(scenario.path), GitSource(scenario.bare)
    request = ScanRequest(scenario.since, scenario.until, None)
    work_scan, bare_scan = work.scan(request), bare.scan(request)

    assert work_scan.prs == bare_scan.prs
    assert [work.files(pr) for pr in work_scan.prs] == [bare.files(pr) for pr in bare_scan.prs]
    assert work_scan.history == bare_scan.history


def test_unicode_titles_and_descriptions_survive_the_pass(scenario: Scenario) -> None:
    pr = _by_ref(_scan(scenario.path, scenario))["#15"]
    assert pr.title == "Añadir caché ⚡ für Ünïcødé"
    assert pr.body == "内存优化: 减少显存占用 (less memory)."


def test_the_window_is_half_open_on_commit_time(scenario: Scenario) -> None:
    at_10 = git(scenario.path, "log", "-1", "--format=%cI", scenario.shas["reverted"])
    moment = datetime.fromisoformat(at_10)
    scan = _scan(scenario.path, scenario, since=moment, until=moment + timedelta(days=1))
    assert [str(pr.ref) for pr in scan.prs] == ["#10"]
    before = _scan(scenario.path, scenario, until=moment)
    assert "#10" not in _by_ref(before)


def test_history_reaches_past_the_window_to_later_reverts(scenario: Scenario) -> None:
    moment = datetime.fromisoformat(
        git(scenario.path, "log", "-1", "--format=%cI", scenario.shas["reverted"])
    )
    scan = _scan(scenario.path, scenario, since=moment, until=moment + timedelta(hours=1))
    shas = [entry.sha for entry in scan.history]

    assert scenario.shas["revert"] in shas
    assert shas.index(scenario.shas["reverted"]) < shas.index(
        scenario.shas["revert"]
    )  # oldest first


def test_history_reaches_back_to_the_oldest_stored_pr(scenario: Scenario) -> None:
    late = datetime.fromisoformat(
        git(scenario.path, "log", "-1", "--format=%cI", scenario.shas["unicode"])
    )
    scan = _scan(scenario.path, scenario, since=late, history_since=scenario.since)
    assert [str(pr.ref) for pr in scan.prs] == ["#15", "#16", "#17"]
    assert scenario.shas["feature"] in {entry.sha for entry in scan.history}


def test_an_incremental_scan_starts_after_the_cursor(scenario: Scenario) -> None:
    cursor = scenario.shas["unicode"]
    scan = _scan(scenario.path, scenario, since=None, until=None, cursor=cursor)

    assert [str(pr.ref) for pr in scan.prs] == ["#16", "#17"]
    assert [pr.cursor for pr in scan.prs] == [scenario.shas["follow_up"], scenario.shas["docs_ci"]]
    assert scan.final_cursor == scenario.shas["docs_ci"]


def test_a_window_around_the_cursor_never_moves_it_back(scenario: Scenario) -> None:
    scan = _scan(scenario.path, scenario, cursor=scenario.shas["unicode"])
    moves = {str(pr.ref): pr.cursor for pr in scan.prs}

    assert moves["#1"] is None and moves["#15"] is None
    assert moves["#16"] == scenario.shas["follow_up"]
    assert scan.final_cursor == scenario.shas["docs_ci"]


def test_a_window_that_does_not_reach_the_cursor_leaves_it_alone(scenario: Scenario) -> None:
    late = datetime.fromisoformat(
        git(scenario.path, "log", "-1", "--format=%cI", scenario.shas["unicode"])
    )
    scan = _scan(scenario.path, scenario, since=late, cursor=scenario.shas["feature"])
    assert scan.final_cursor is None
    assert all(pr.cursor is None for pr in scan.prs)
    assert scan.notes == [
        f"cursor left at {scenario.shas['feature'][:12]}: this window does not reach it, "
        "so moving it would skip the commits in between"
    ]


def test_sources_are_registered_by_cursor_kind_and_load_on_demand() -> None:
    from pr_miner.sources.github_source import GitHubSource

    assert source_class(CursorSource.git) is GitSource
    assert source_class(CursorSource.github) is GitHubSource


def test_a_folder_that_is_not_a_repository_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotAGitRepository, match="is not a git repository"):
        GitSource(tmp_path).scan(ScanRequest(None, None, "x"))
    with pytest.raises(NotAGitRepository, match="no such folder"):
        GitSource(tmp_path / "missing").scan(ScanRequest(None, None, "x"))


def test_an_unknown_branch_is_refused_naming_the_branches(scenario: Scenario) -> None:
    with pytest.raises(
        UnknownBranch, match=r"no branch 'trunk' \(branches: feature-2, main, mr-2\)"
    ):
        GitSource(scenario.path, "trunk").scan(ScanRequest(scenario.since, None, None))


def test_a_window_without_commits_is_refused(scenario: Scenario) -> None:
    later = scenario.until + timedelta(days=300)
    with pytest.raises(EmptyRange, match="no commits on main between"):
        _scan(scenario.path, scenario, since=later, until=later + timedelta(days=1))


def test_no_window_and_no_cursor_is_refused(scenario: Scenario) -> None:
    with pytest.raises(EmptyRange, match="no --since and no cursor"):
        _scan(scenario.path, scenario, since=None)


def test_a_cursor_no_longer_on_the_branch_is_refused(scenario: Scenario) -> None:
    with pytest.raises(CursorLost, match="not on main"):
        _scan(scenario.path, scenario, since=None, cursor="0" * 40)


def test_a_shallow_clone_that_ends_inside_the_window_is_refused(
    scenario: Scenario, tmp_path: Path
) -> None:
    shallow = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "3", f"file://{scenario.path}", str(shallow)],
        check=True,
        capture_output=True,
    )
    with pytest.raises(ShallowHistory, match="shallow clone"):
        _scan(shallow, scenario)
    recent = _scan(shallow, scenario, since=scenario.until - timedelta(days=1, hours=12))
    assert [str(pr.ref) for pr in recent.prs] == ["#17"]


def test_records_split_across_read_chunks_parse_the_same(scenario: Scenario) -> None:
    whole = list(log_commits(scenario.path, ["-3", "main"], numstat=True))
    raw = subprocess.run(
        [
            "git",
            "-C",
            str(scenario.path),
            "log",
            "--first-parent",
            "-z",
            "--numstat",
            "-M",
            "--format=%x1e%H%x1f%P%x1f%ct%x1f%aN%x1f%B%x1f",
            "-3",
            "main",
        ],
        capture_output=True,
        check=True,
    ).stdout
    chunks = iter([raw[i : i + 7] for i in range(0, len(raw), 7)])
    assert [parse_record(r) for r in _split_records(chunks)] == whole


def test_numstat_parses_renames_binaries_and_unicode_paths(tmp_path: Path) -> None:
    repo = RepoBuilder.create(tmp_path / "r")
    repo.commit("add", {"src/été.py": code_lines(30), "data.bin": b"\x00\x01" * 50})
    repo.commit("move", {"src/x.py": code_lines(1)}, renames={"src/été.py": "src/sommer.py"})
    newest, older = list(log_commits(repo.path, ["-2", "main"], numstat=True))

    assert {f.path for f in older.files} == {"src/été.py", "data.bin"}
    assert [f.binary for f in older.files if f.path == "data.bin"] == [True]
    moved = {f.path: f for f in newest.files}
    assert moved["src/sommer.py"].old_path == "src/été.py"
    assert moved["src/x.py"].additions == 1

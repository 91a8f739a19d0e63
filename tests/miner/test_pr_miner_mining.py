"""``mine`` against a real registry: funnel, idempotence, increments, interruption, decisions."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from pr_miner.config import MiningConfig
from pr_miner.errors import NotAGitRepository
from pr_miner.mining import mine
from pr_miner.report import MiningReport
from pr_miner.sources.git_source import GitSource
from pr_miner.store import BatchProgress
from task_registry.candidates import decide_candidate, find_candidate, upsert_candidate
from task_registry.models import CandidatePR, CandidatePRCreate
from task_registry.repos import find_repo, get_cursor
from task_registry.types import CursorSource, Decision, DescriptionSource, PRKind
from tests.miner_repos import (
    REJECTED,
    START,
    SURVIVORS,
    RepoBuilder,
    Scenario,
    assert_lines,
    build_scenario,
    code_lines,
    git,
)

REPO = "acme/widgets"
CORE = MiningConfig(core_paths=("widgets/core/",))
VOLATILE = {"id", "created_at", "updated_at"}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    return build_scenario(tmp_path_factory.mktemp("scenario"))


def run(engine: Engine, path: Path, s: Scenario | None = None, **kwargs: Any) -> MiningReport:
    kwargs.setdefault("config", CORE)
    if s is not None:
        kwargs.setdefault("since", s.since)
        kwargs.setdefault("until", s.until)
    return mine(engine=engine, repo=REPO, source=GitSource(path), **kwargs)


def rows(engine: Engine) -> dict[str, CandidatePR]:
    with Session(engine) as session:
        found = session.exec(select(CandidatePR)).all()
        return {f"{'!' if r.kind == 'gitlab' else '#'}{r.number}": r for r in found}


def snapshot(engine: Engine) -> dict[str, dict[str, Any]]:
    return {
        ref: row.model_dump(exclude=VOLATILE, warnings=False) for ref, row in rows(engine).items()
    }


def cursor(engine: Engine) -> str | None:
    with Session(engine) as session:
        repo = find_repo(session=session, full_name=REPO)
        assert repo is not None and repo.id is not None
        return get_cursor(session=session, repo_id=repo.id, source=CursorSource.git)


def test_a_window_stores_every_merged_pr_with_its_verdict(
    engine: Engine, scenario: Scenario
) -> None:
    report = run(engine, scenario.path, scenario)
    stored = rows(engine)

    assert {ref for ref, row in stored.items() if row.filter_verdict == "passed"} == SURVIVORS
    assert {ref: row.failed_filter for ref, row in stored.items() if row.failed_filter} == REJECTED
    assert [(step.name, step.count) for step in report.funnel] == [
        ("scanned", 19),
        ("merged", 17),
        ("size", 13),
        ("adds_tests", 10),
        ("changes_code", 8),
        ("not_reverted", 6),
        ("docs_ci_only", 5),
    ]
    assert (report.created, report.updated, report.unchanged) == (17, 0, 0)
    assert cursor(engine) == scenario.shas["docs_ci"]


def test_stored_rows_carry_counts_files_and_follow_ups(engine: Engine, scenario: Scenario) -> None:
    run(engine, scenario.path, scenario)
    stored = rows(engine)
    feature, paged, gitlab = stored["#1"], stored["#12"], stored["!2"]

    assert (feature.additions, feature.deletions, feature.changed_files) == (1200, 0, 2)
    assert feature.test_lines_added == 300 and feature.core_share == 0.75
    assert feature.description_source == "commit" and "Signed-off-by" not in feature.body
    assert {f["path"] for f in feature.files} == {"widgets/core/engine.py", "tests/test_engine.py"}
    assert [(f["relation"], f["number"]) for f in feature.follow_ups] == [("mention", 16)]
    assert [(f["relation"], f["number"]) for f in paged.follow_ups] == [
        ("revert", 13),
        ("reapply", 14),
    ]
    assert gitlab.kind == "gitlab" and stored["#2"].kind == "github"
    assert feature.merge_sha == scenario.shas["feature"] and feature.rank_score > 0


def test_re_mining_the_same_window_writes_nothing(engine: Engine, scenario: Scenario) -> None:
    run(engine, scenario.path, scenario)
    before = {ref: row.updated_at for ref, row in rows(engine).items()}
    again = run(engine, scenario.path, scenario)

    assert (again.created, again.updated, again.unchanged) == (0, 0, 17)
    assert {ref: row.updated_at for ref, row in rows(engine).items()} == before


def test_a_bare_mirror_stores_the_same_candidates(
    engine: Engine, scenario: Scenario, sqlite_engine: Engine
) -> None:
    run(engine, scenario.path, scenario)
    run(sqlite_engine, scenario.bare, scenario)
    assert snapshot(engine) == snapshot(sqlite_engine)


def _growing_repo(path: Path) -> RepoBuilder:
    repo = RepoBuilder.create(path)
    repo.squash_pr(
        1,
        "Add engine",
        {"pkg/engine.py": code_lines(1100), "tests/test_engine.py": assert_lines(50)},
    )
    repo.squash_pr(
        2,
        "Add cache",
        {"pkg/cache.py": code_lines(1100, "c"), "tests/test_cache.py": assert_lines(50, "c")},
    )
    return repo


def test_a_later_run_from_the_cursor_adds_only_new_prs(engine: Engine, tmp_path: Path) -> None:
    repo = _growing_repo(tmp_path / "r")
    first = run(engine, repo.path, since=repo.clock - timedelta(days=30))
    repo.squash_pr(
        3,
        "Add loader",
        {"pkg/loader.py": code_lines(1100, "l"), "tests/test_loader.py": assert_lines(50, "l")},
    )
    tip = repo.squash_pr(4, "Tiny fix", {"pkg/cache.py": code_lines(1101, "c")})
    later = run(engine, repo.path)

    assert first.created == 2
    assert (later.created, later.updated) == (2, 0)
    assert [s.ref for s in later.survivors] == ["#3"] and [s.ref for s in later.rejects] == ["#4"]
    assert later.cursor_after == tip == cursor(engine)
    nothing = run(engine, repo.path)
    assert (nothing.created, nothing.updated, nothing.funnel[0].count) == (0, 0, 0)


def test_a_revert_after_mining_rejects_the_stored_pr(engine: Engine, tmp_path: Path) -> None:
    repo = _growing_repo(tmp_path / "r")
    run(engine, repo.path, since=repo.clock - timedelta(days=30))
    assert rows(engine)["#2"].filter_verdict == "passed"
    revert = repo.revert(repo_sha(repo, "Add cache"), number=3)
    later = run(engine, repo.path)

    cache = rows(engine)["#2"]
    assert (later.created, later.updated) == (1, 1)
    assert (cache.filter_verdict, cache.failed_filter) == ("rejected", "not_reverted")
    assert revert[:12] in (cache.filter_reason or "")
    assert [(f["relation"], f["number"]) for f in cache.follow_ups] == [("revert", 3)]


def repo_sha(repo: RepoBuilder, subject: str) -> str:
    return git(repo.path, "log", "-1", "--format=%H", f"--grep=^{subject}")


def test_an_interrupted_run_keeps_whole_prs_and_the_next_run_resumes(
    engine: Engine, scenario: Scenario, sqlite_engine: Engine
) -> None:
    batches: list[BatchProgress] = []

    def interrupt_after_three(progress: BatchProgress) -> None:
        batches.append(progress)
        if len(batches) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(engine, scenario.path, scenario, batch_size=2, on_batch=interrupt_after_three)
    partial = rows(engine)
    assert len(partial) == 6
    assert (
        cursor(engine) == partial["#6"].merge_sha
    )  # the sixth PR, oldest first: #1 #2 !2 #4 #5 #6
    assert all(row.files for row in partial.values())

    resumed = run(engine, scenario.path, scenario)
    assert (resumed.created, resumed.unchanged) == (11, 6)
    run(sqlite_engine, scenario.path, scenario)
    assert snapshot(engine) == snapshot(sqlite_engine)
    assert cursor(engine) == scenario.shas["docs_ci"]


def test_curator_decisions_survive_re_mining_even_when_the_verdict_changes(
    engine: Engine, scenario: Scenario
) -> None:
    run(engine, scenario.path, scenario)
    feature = rows(engine)["#1"]
    with Session(engine) as session:
        assert feature.id is not None
        decide_candidate(
            session=session,
            candidate_id=feature.id,
            decision=Decision.accepted,
            reason="core engine",
            decided_by="curator",
        )
        session.commit()
    stricter = run(engine, scenario.path, scenario, config=MiningConfig(size_threshold=5000))

    again = rows(engine)["#1"]
    assert stricter.updated >= 1
    assert again.failed_filter == "size"
    assert (again.decision, again.decision_reason, again.decided_by) == (
        "accepted",
        "core engine",
        "curator",
    )


def test_auto_accept_takes_core_survivors_once_and_never_overrides_a_curator(
    engine: Engine, scenario: Scenario
) -> None:
    run(engine, scenario.path, scenario)
    paged = rows(engine)["#12"]
    with Session(engine) as session:
        assert paged.id is not None
        decide_candidate(
            session=session,
            candidate_id=paged.id,
            decision=Decision.rejected,
            reason="duplicate",
            decided_by="curator",
        )
        session.commit()
    rule = MiningConfig(core_paths=("widgets/core/",), auto_accept_min_core_share=0.8)
    first = run(engine, scenario.path, scenario, config=rule)
    second = run(engine, scenario.path, scenario, config=rule)

    stored = rows(engine)
    assert sorted(first.auto_accepted) == ["!2", "#15", "#2"]
    assert second.auto_accepted == [] and second.updated == 0
    assert {ref for ref, row in stored.items() if row.decided_by == "auto_accept"} == {
        "!2",
        "#15",
        "#2",
    }
    assert stored["#1"].decision == "pending"  # core share 0.75 < 0.8
    assert (stored["#12"].decision, stored["#12"].decided_by) == ("rejected", "curator")


def test_git_mining_never_replaces_a_description_from_the_api(
    engine: Engine, scenario: Scenario
) -> None:
    run(engine, scenario.path, scenario)
    with Session(engine) as session:
        repo = find_repo(session=session, full_name=REPO)
        assert repo is not None and repo.id is not None
        row = find_candidate(session=session, repo_id=repo.id, number=12, kind=PRKind.github)
        assert row is not None and row.description_source == "none"
        data = row.model_dump(include=set(CandidatePRCreate.model_fields), warnings=False)
        data.update(
            body="Pages the cache so memory stays flat.",
            description_source=DescriptionSource.api,
            labels=["perf"],
        )
        upsert_candidate(session=session, candidate_in=CandidatePRCreate(**data))
        session.commit()
    run(engine, scenario.path, scenario)

    paged = rows(engine)["#12"]
    assert (paged.description_source, paged.body) == (
        "api",
        "Pages the cache so memory stays flat.",
    )
    assert paged.labels == ["perf"]
    assert "resource.memory" in {
        h for s in run(engine, scenario.path, scenario).survivors if s.ref == "#12" for h in s.hints
    }


def test_a_source_that_fails_before_any_pr_stores_nothing_not_even_the_repository(
    engine: Engine, tmp_path: Path
) -> None:
    with pytest.raises(NotAGitRepository):
        run(engine, tmp_path, since=START)
    with Session(engine) as session:
        assert find_repo(session=session, full_name=REPO) is None
    assert rows(engine) == {}

"""The GitHub source through real PyGithub against the local emulator: cost, 304s, faults, quota."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from pr_miner.config import MiningConfig
from pr_miner.errors import (
    GitHubAuthFailed,
    GitHubUnavailable,
    NotMerged,
    QuotaExhausted,
    UnknownRepository,
)
from pr_miner.mining import mine, mine_pull
from pr_miner.report import MiningReport
from pr_miner.sources.github_source import STAYS, GitHubCursor, GitHubSource
from probewatch.github import GitHubClientConfig, GitHubTokenMissing, make_client
from task_registry.models import CandidatePR
from task_registry.repos import find_repo, get_cursor
from task_registry.types import CursorSource
from tests.github_emulator import GitHubEmulator, PullFile

REPO = "acme/widgets"
T0 = datetime(2025, 6, 1, tzinfo=UTC)
FILES_ROUTE = "/repos/{owner}/{repo}/pulls/{number}/files"
LIST_ROUTE = "/repos/{owner}/{repo}/pulls"


@pytest.fixture
def emulator(github_emulator: GitHubEmulator) -> GitHubEmulator:
    github_emulator.state.add_repo(REPO)
    return github_emulator


def big_files(name: str = "core", extra: int = 0) -> list[PullFile]:
    files = [
        PullFile(f"widgets/{name}.py", status="added", additions=900, patch="@@ -0,0 +1 @@"),
        PullFile(f"tests/test_{name}.py", status="added", additions=150, patch="@@ -0,0 +1 @@"),
    ]
    return files + [
        PullFile(f"widgets/extra/m{i}.py", additions=1, patch="@@") for i in range(extra)
    ]


def seed(emulator: GitHubEmulator, number: int, hours: int, **kwargs: Any) -> None:
    at = T0 + timedelta(hours=hours)
    kwargs.setdefault("merged", True)
    kwargs.setdefault("files", big_files(f"m{number}"))
    kwargs.setdefault("title", f"Feature {number}")
    if kwargs["merged"]:
        kwargs.setdefault("merged_at", at)
    else:
        kwargs.setdefault("closed_at", at)
    emulator.state.add_pull(
        REPO, number, created_at=T0 - timedelta(days=1), updated_at=at, **kwargs
    )


def source(emulator: GitHubEmulator, token: str = "t", **overrides: Any) -> GitHubSource:
    settings = {
        "token": token,
        "base_url": emulator.base_url,
        "seconds_between_requests": None,
        "seconds_between_writes": None,
        "backoff_factor": 0,
        "max_wait_s": 5,
        **overrides,
    }
    return GitHubSource(make_client(GitHubClientConfig(**settings)), REPO)


def run(
    engine: Engine, emulator: GitHubEmulator, *, since: datetime | None = T0, **kwargs: Any
) -> MiningReport:
    github_source = kwargs.pop("github_source", None) or source(emulator)
    return mine(
        engine=engine, repo=REPO, source=github_source, config=MiningConfig(), since=since, **kwargs
    )


def stored(engine: Engine) -> dict[int, CandidatePR]:
    with Session(engine) as session:
        return {row.number: row for row in session.exec(select(CandidatePR)).all()}


def stored_cursor(engine: Engine) -> str | None:
    with Session(engine) as session:
        repo = find_repo(session=session, full_name=REPO)
        if repo is None or repo.id is None:
            return None
        return get_cursor(session=session, repo_id=repo.id, source=CursorSource.github)


def test_a_new_pr_costs_one_request_beyond_the_shared_list(
    engine: Engine, emulator: GitHubEmulator
) -> None:
    for number in range(1, 6):
        seed(emulator, number, hours=number)
    seed(emulator, 6, hours=6, merged=False)
    seed(emulator, 7, hours=7, files=big_files("wide", extra=150))
    report = run(engine, emulator)

    assert report.created == 6
    per_pr = {n: emulator.count("GET", f"/pulls/{n}/files") for n in range(1, 8)}
    assert per_pr == {1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 0, 7: 2}  # 152 files: two pages
    assert emulator.count("GET", route=LIST_ROUTE) == 1
    assert emulator.count("GET", route="/repos/{owner}/{repo}/pulls/{number}") == 0
    total = len(emulator.requests)
    assert total == 8 and (total - 2) / 5 <= 2  # under 100 files: at most two requests per PR


def test_an_unchanged_repoll_is_one_304_that_costs_no_quota(
    engine: Engine, emulator: GitHubEmulator
) -> None:
    for number in (1, 2):
        seed(emulator, number, hours=number)
    run(engine, emulator)
    quota_before = emulator.state.quota("t").remaining
    emulator.reset_log()
    again = run(engine, emulator, since=None)

    assert again.not_modified and again.funnel[0].count == 0
    assert [(r.status, r.conditional, r.consumed_quota) for r in emulator.requests] == [
        (304, True, False)
    ]
    assert emulator.state.quota("t").remaining == quota_before
    assert again.quota is not None and again.quota.remaining == quota_before


def test_a_changed_repoll_fetches_only_the_new_pr(engine: Engine, emulator: GitHubEmulator) -> None:
    for number in (1, 2):
        seed(emulator, number, hours=number)
    run(engine, emulator)
    seed(emulator, 3, hours=30)
    emulator.reset_log()
    later = run(engine, emulator, since=None)

    assert (later.created, later.updated) == (1, 0)
    assert [r.path for r in emulator.requests] == [
        f"/repos/{REPO}/pulls",
        f"/repos/{REPO}/pulls/3/files",
    ]
    cursor = GitHubCursor.load(stored_cursor(engine) or "")
    assert (cursor.number, cursor.etag is not None) == (3, True)


def test_listing_pages_stop_at_the_first_pr_older_than_the_window(
    engine: Engine, emulator: GitHubEmulator
) -> None:
    for number in range(1, 231):
        seed(emulator, number, hours=number - 100, merged=False)  # 1..99 closed before T0
    seed(emulator, 231, hours=200)
    report = run(engine, emulator)

    assert emulator.count("GET", route=LIST_ROUTE) == 2  # 132 in the window: page 2 reaches older
    assert report.funnel[0].count == 132 and report.funnel[1].count == 1


def test_a_stored_pr_updated_later_is_not_fetched_again(
    engine: Engine, emulator: GitHubEmulator
) -> None:
    seed(emulator, 1, hours=1)
    run(engine, emulator)
    emulator.state.update_pull(REPO, 1, updated_at=T0 + timedelta(days=3), labels=("perf",))
    emulator.reset_log()
    later = run(engine, emulator, since=None)

    assert later.updated == 1 and stored(engine)[1].labels == ["perf"]
    assert emulator.count("GET", route=FILES_ROUTE) == 0


def test_descriptions_labels_renames_and_binaries_come_from_the_api(
    engine: Engine, emulator: GitHubEmulator
) -> None:
    files = [
        *big_files("engine"),
        PullFile(
            "widgets/new_name.py",
            status="renamed",
            additions=0,
            deletions=0,
            previous_filename="widgets/old_name.py",
        ),
        PullFile("widgets/weights.bin", status="added", additions=0, deletions=0),
    ]
    seed(
        emulator,
        1,
        hours=1,
        body="Cuts peak memory in half.",
        labels=["perf"],
        user="ada",
        files=files,
    )
    seed(emulator, 2, hours=2, body="")
    run(engine, emulator)
    rows = stored(engine)

    first = rows[1]
    assert (first.description_source, first.body, first.labels, first.author) == (
        "api",
        "Cuts peak memory in half.",
        ["perf"],
        "ada",
    )
    by_path = {f["path"]: f for f in first.files}
    assert by_path["widgets/new_name.py"]["old_path"] == "widgets/old_name.py"
    assert by_path["widgets/weights.bin"]["binary"] and not by_path["widgets/new_name.py"]["binary"]
    assert rows[2].description_source == "none"


def test_a_revert_pr_rejects_the_pr_it_reverts_even_on_a_later_poll(
    engine: Engine, emulator: GitHubEmulator
) -> None:
    seed(emulator, 1, hours=1, title="Add paged cache")
    run(engine, emulator)
    assert stored(engine)[1].filter_verdict == "passed"
    seed(emulator, 2, hours=5, title='Revert "Add paged cache"', body="Reverts acme/widgets#1")
    later = run(engine, emulator, since=None)

    rows = stored(engine)
    assert (later.created, later.updated) == (1, 1)
    assert rows[1].failed_filter == "not_reverted"
    assert rows[2].failed_filter == "not_reverted" and "is itself a revert" in (
        rows[2].filter_reason or ""
    )


def test_one_pull_from_a_webhook_is_judged_with_the_stored_revert_history(
    engine: Engine, emulator: GitHubEmulator
) -> None:
    seed(emulator, 1, hours=1, title="Add paged cache")
    run(engine, emulator)
    cursor = stored_cursor(engine)
    seed(emulator, 2, hours=5, title='Revert "Add paged cache"', body="Reverts acme/widgets#1")
    judged = mine_pull(
        engine=engine, repo=REPO, source=source(emulator), number=2, config=MiningConfig()
    )

    rows = stored(engine)
    assert judged.verdict.reason and "is itself a revert" in judged.verdict.reason
    assert rows[2].failed_filter == "not_reverted"
    assert rows[1].failed_filter == "not_reverted"  # the stored PR it reverts, judged again
    assert stored_cursor(engine) == cursor  # a later poll still lists PR 2


def test_one_pull_reverted_before_its_webhook_is_judged_as_a_poll_would(
    engine: Engine, emulator: GitHubEmulator
) -> None:
    seed(emulator, 1, hours=1, title="Add paged cache")
    seed(emulator, 2, hours=5, title='Revert "Add paged cache"', body="Reverts acme/widgets#1")
    polled = run(engine, emulator)
    assert polled.created == 2
    by_poll = stored(engine)[1]
    judged = mine_pull(
        engine=engine, repo=REPO, source=source(emulator), number=1, config=MiningConfig()
    )

    assert (judged.verdict.passed, judged.verdict.failed_filter) == (False, "not_reverted")
    assert stored(engine)[1].filter_reason == by_poll.filter_reason


def test_one_pull_that_is_not_merged_is_refused_and_stores_nothing(
    engine: Engine, emulator: GitHubEmulator
) -> None:
    seed(emulator, 3, hours=1, merged=False)
    with pytest.raises(NotMerged, match="#3 is not merged"):
        mine_pull(
            engine=engine, repo=REPO, source=source(emulator), number=3, config=MiningConfig()
        )
    assert stored(engine) == {}


def test_a_secondary_rate_limit_with_retry_after_is_waited_out(
    engine: Engine, emulator: GitHubEmulator
) -> None:
    seed(emulator, 1, hours=1)
    emulator.state.fail_next(403, retry_after=1, path_contains="/files")
    started = time.monotonic()
    report = run(engine, emulator)

    assert report.created == 1 and time.monotonic() - started >= 0.9
    assert [r.status for r in emulator.requests if r.path.endswith("/files")] == [403, 200]


def test_a_retry_after_beyond_the_maximum_wait_fails_at_once_and_stores_nothing(
    engine: Engine, emulator: GitHubEmulator
) -> None:
    seed(emulator, 1, hours=1)
    emulator.state.fail_next(403, retry_after=600)
    started = time.monotonic()
    with pytest.raises(QuotaExhausted, match="rate limit hit"):
        run(engine, emulator, github_source=source(emulator, max_wait_s=2))

    assert time.monotonic() - started < 5
    assert stored(engine) == {} and stored_cursor(engine) is None


def test_server_errors_are_retried(engine: Engine, emulator: GitHubEmulator) -> None:
    seed(emulator, 1, hours=1)
    emulator.state.fail_next(502, count=2, path_contains="/pulls/1/files")
    assert run(engine, emulator).created == 1
    assert [r.status for r in emulator.requests if r.path.endswith("/1/files")] == [502, 502, 200]


def test_a_failure_mid_run_keeps_whole_prs_and_the_next_run_resumes_after_them(
    engine: Engine, emulator: GitHubEmulator
) -> None:
    for number in (1, 2, 3, 4):
        seed(emulator, number, hours=number)
    emulator.state.fail_next(502, count=20, path_contains="/pulls/3/files")
    with pytest.raises(GitHubUnavailable, match="502"):
        run(engine, emulator, github_source=source(emulator, retries=2))

    assert sorted(stored(engine)) == [1, 2]
    assert GitHubCursor.load(stored_cursor(engine) or "").number == 2
    emulator.state.clear_faults()
    emulator.reset_log()
    resumed = run(engine, emulator, since=None)

    assert (resumed.created, sorted(stored(engine))) == (2, [1, 2, 3, 4])
    assert sorted(r.path for r in emulator.requests if r.path.endswith("/files")) == [
        f"/repos/{REPO}/pulls/3/files",
        f"/repos/{REPO}/pulls/4/files",
    ]


def test_an_exhausted_quota_is_one_clear_error_and_stores_nothing(
    engine: Engine, emulator: GitHubEmulator
) -> None:
    seed(emulator, 1, hours=1)
    emulator.state.set_quota(remaining=0, reset_in_s=900)
    with pytest.raises(QuotaExhausted, match=r"quota exhausted \(0 of 5000 requests left, resets"):
        run(engine, emulator)
    assert stored(engine) == {} and stored_cursor(engine) is None


def test_an_unknown_repository_and_a_bad_token_are_named(
    engine: Engine, emulator: GitHubEmulator
) -> None:
    client = make_client(
        GitHubClientConfig(token="t", base_url=emulator.base_url, seconds_between_requests=None)
    )
    with pytest.raises(UnknownRepository, match="no repository acme/nothing"):
        mine(
            engine=engine,
            repo="acme/nothing",
            source=GitHubSource(client, "acme/nothing"),
            config=MiningConfig(),
            since=T0,
        )
    with pytest.raises(GitHubAuthFailed, match="401 Bad credentials"):
        run(engine, emulator, github_source=source(emulator, token="wrong"))
    assert stored(engine) == {}


def test_a_missing_token_is_refused_before_any_request(emulator: GitHubEmulator) -> None:
    with pytest.raises(GitHubTokenMissing, match="PROBEWATCH_GITHUB_TOKEN"):
        make_client(GitHubClientConfig(base_url=emulator.base_url))
    assert emulator.requests == []


def test_a_cursor_written_as_a_bare_time_is_read() -> None:
    cursor = GitHubCursor.load("2025-06-01T10:00:00+00:00")
    assert (cursor.updated_at, cursor.number, cursor.etag) == (T0 + timedelta(hours=10), 0, None)


def test_a_window_with_an_end_never_moves_the_cursor(
    engine: Engine, emulator: GitHubEmulator
) -> None:
    seed(emulator, 1, hours=1)
    report = run(engine, emulator, until=T0 + timedelta(days=1))
    assert report.created == 1 and stored_cursor(engine) is None
    assert report.notes == [STAYS]

"""Behaviour tests for the GitHub emulator, driven through real PyGithub (and httpx where raw
headers matter) over real HTTP, so they pin the REST semantics client code will rely on.
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta

import github
import httpx
import pytest
from github import GithubRetry

from tests.github_emulator import GitHubEmulator, PullFile, WorkflowRun, make_zip
from tests.github_emulator.state import EmulatorState

REPO = "acme/widgets"
T0 = datetime(2025, 1, 1, tzinfo=UTC)


@pytest.fixture
def emulator(github_emulator: GitHubEmulator) -> GitHubEmulator:
    github_emulator.state.add_repo(REPO)
    return github_emulator


def raw_client(emulator: GitHubEmulator, token: str = "t") -> httpx.Client:
    return httpx.Client(base_url=emulator.base_url, headers={"Authorization": f"token {token}"})


def test_closed_pulls_sorted_by_updated_desc_come_back_in_order_across_three_pages(
    emulator: GitHubEmulator,
) -> None:
    minutes = list(range(75))
    random.Random(7).shuffle(minutes)
    for number, minute in enumerate(minutes, start=1):
        emulator.state.add_pull(
            REPO, number, merged=True, created_at=T0, updated_at=T0 + timedelta(minutes=minute)
        )
    emulator.state.add_pull(REPO, 76, created_at=T0, updated_at=T0 + timedelta(days=9))
    expected = sorted(range(1, 76), key=lambda n: minutes[n - 1], reverse=True)

    pulls = (
        emulator.github().get_repo(REPO).get_pulls(state="closed", sort="updated", direction="desc")
    )
    numbers = [p.number for p in pulls]

    assert numbers == expected
    assert emulator.count("GET", route="/repos/{owner}/{repo}/pulls") == 3


def test_pull_list_link_header_preserves_query_and_names_neighbour_pages(
    emulator: GitHubEmulator,
) -> None:
    for number in range(1, 76):
        emulator.state.add_pull(REPO, number, state="closed")
    query = "state=closed&sort=updated&direction=desc&per_page=30"
    with raw_client(emulator) as client:
        response = client.get(f"/repos/{REPO}/pulls?{query}&page=2")

    page = f"{emulator.base_url}/repos/{REPO}/pulls?{query}&page="
    assert response.headers["Link"] == (
        f'<{page}1>; rel="prev", <{page}1>; rel="first", '
        f'<{page}3>; rel="next", <{page}3>; rel="last"'
    )
    assert len(response.json()) == 30


def test_pull_files_are_paged_and_keep_rename_details(emulator: GitHubEmulator) -> None:
    files = [PullFile(f"src/mod_{i:03}.py", additions=i, deletions=1) for i in range(249)]
    files.append(
        PullFile(
            "src/new.py",
            status="renamed",
            additions=0,
            deletions=0,
            previous_filename="src/old.py",
            patch=None,
        )
    )
    emulator.state.add_pull(REPO, 5, files=files, merged=True)
    gh = emulator.github(per_page=100)

    pull = gh.get_repo(REPO).get_pull(5)
    fetched = list(pull.get_files())

    assert [f.filename for f in fetched] == [f.filename for f in files]
    assert fetched[10].additions == 10 and fetched[10].changes == 11
    assert fetched[-1].previous_filename == "src/old.py"
    assert (pull.changed_files, pull.additions, pull.deletions) == (250, sum(range(249)), 249)
    assert emulator.count("GET", route="/repos/{owner}/{repo}/pulls/{number}/files") == 3


def test_comment_is_created_found_edited_in_place_and_deleted(emulator: GitHubEmulator) -> None:
    emulator.state.add_pull(REPO, 3)
    emulator.state.add_comment(REPO, 3, "first!", user="someone")
    pull = emulator.github().get_repo(REPO).get_pull(3)

    created = pull.create_issue_comment("<!-- probewatch --> pending")
    found = [c for c in pull.get_issue_comments() if c.body.startswith("<!-- probewatch -->")]
    found[0].edit("<!-- probewatch --> done")
    after_edit = pull.get_issue_comment(created.id)
    after_edit.delete()

    assert created.user.login == "probewatch-bot"
    assert [c.id for c in found] == [created.id]
    assert after_edit.body == "<!-- probewatch --> done"
    assert [c.body for c in pull.get_issue_comments()] == ["first!"]
    with pytest.raises(github.UnknownObjectException):
        pull.get_issue_comment(created.id)


def test_unchanged_conditional_get_answers_304_without_spending_quota(
    emulator: GitHubEmulator,
) -> None:
    emulator.state.add_pull(REPO, 1)
    with raw_client(emulator) as client:
        first = client.get(f"/repos/{REPO}/pulls/1")
        again = client.get(
            f"/repos/{REPO}/pulls/1", headers={"If-None-Match": first.headers["ETag"]}
        )
        dated = client.get(
            f"/repos/{REPO}/pulls/1", headers={"If-Modified-Since": first.headers["Last-Modified"]}
        )
        plain = client.get(f"/repos/{REPO}/pulls/1")

    assert (first.status_code, again.status_code, dated.status_code) == (200, 304, 304)
    assert again.content == b"" and again.headers["ETag"] == first.headers["ETag"]
    remaining = [int(r.headers["X-RateLimit-Remaining"]) for r in (first, again, dated, plain)]
    assert remaining == [4999, 4999, 4999, 4998]
    assert [(r.status, r.conditional, r.consumed_quota) for r in emulator.requests] == [
        (200, False, True),
        (304, True, False),
        (304, True, False),
        (200, False, True),
    ]


def test_pygithub_update_uses_etag_and_sees_changes(emulator: GitHubEmulator) -> None:
    emulator.state.add_pull(REPO, 1, title="before", updated_at=T0)
    gh = emulator.github()
    pull = gh.get_repo(REPO).get_pull(1)
    etag = pull.etag

    unchanged = pull.update()
    emulator.state.update_pull(REPO, 1, title="after")
    changed = pull.update()

    assert (unchanged, changed) == (False, True)
    assert pull.title == "after" and pull.etag != etag
    assert emulator.requests[-2].status == 304 and not emulator.requests[-2].consumed_quota
    assert gh.rate_limiting[0] == 4997


def test_list_etag_changes_when_the_list_changes(emulator: GitHubEmulator) -> None:
    emulator.state.add_pull(REPO, 1)
    path = f"/repos/{REPO}/issues/1/comments"
    with raw_client(emulator) as client:
        before = client.get(path).headers["ETag"]
        emulator.state.add_comment(REPO, 1, "hello")
        after = client.get(path, headers={"If-None-Match": before})

    assert after.status_code == 200
    assert after.headers["ETag"] != before
    assert [c["body"] for c in after.json()] == ["hello"]


def test_secondary_rate_limit_with_retry_after_is_retried_by_github_retry(
    emulator: GitHubEmulator,
) -> None:
    emulator.state.fail_next(403, retry_after=1, path_contains="/repos/")
    gh = emulator.github(retry=GithubRetry(total=3, backoff_factor=0))

    started = time.monotonic()
    repo = gh.get_repo(REPO)

    assert repo.full_name == REPO
    assert time.monotonic() - started >= 0.9
    assert [r.status for r in emulator.requests] == [403, 200]


def test_secondary_rate_limit_message_matches_what_pygithub_recognises(
    emulator: GitHubEmulator,
) -> None:
    emulator.state.fail_next(403, retry_after=30)
    with raw_client(emulator) as client:
        response = client.get(f"/repos/{REPO}")

    message = response.json()["message"]
    assert response.status_code == 403 and response.headers["Retry-After"] == "30"
    assert github.Requester.Requester.isSecondaryRateLimitError(message)
    assert not github.Requester.Requester.isPrimaryRateLimitError(message)


def test_bad_gateway_is_retried_by_github_retry(emulator: GitHubEmulator) -> None:
    emulator.state.add_pull(REPO, 9)
    gh = emulator.github(retry=GithubRetry(total=3, backoff_factor=0))
    repo = gh.get_repo(REPO)
    emulator.state.fail_next(502, count=2, path_contains="/pulls/9")

    assert repo.get_pull(9).number == 9
    assert [r.status for r in emulator.requests if "/pulls/9" in r.path] == [502, 502, 200]


def test_exhausted_quota_answers_403_with_zero_remaining(emulator: GitHubEmulator) -> None:
    gh = emulator.github(retry=None)
    emulator.state.set_quota(remaining=1, reset_in_s=600)
    gh.get_repo(REPO)

    with pytest.raises(github.RateLimitExceededException) as raised:
        gh.get_repo(REPO)

    assert raised.value.status == 403
    assert raised.value.headers["x-ratelimit-remaining"] == "0"
    assert "retry-after" not in raised.value.headers
    assert raised.value.data["message"].startswith("API rate limit exceeded for user ID")
    assert gh.rate_limiting == (0, 5000)


def test_github_retry_waits_for_primary_quota_reset(emulator: GitHubEmulator) -> None:
    emulator.state.set_quota(remaining=0, reset_in_s=0.5)
    gh = emulator.github(retry=GithubRetry(total=2, backoff_factor=0))

    assert gh.get_repo(REPO).full_name == REPO
    assert [r.status for r in emulator.requests] == [403, 200]


def test_bad_token_raises_bad_credentials(emulator: GitHubEmulator) -> None:
    with pytest.raises(github.BadCredentialsException) as raised:
        emulator.github(token="wrong").get_repo(REPO)

    assert raised.value.status == 401
    assert raised.value.headers["x-ratelimit-limit"] == "60"
    assert emulator.requests[-1].consumed_quota is False
    assert emulator.state.quota("t").remaining == 5000


def test_check_run_is_created_updated_and_listed(emulator: GitHubEmulator) -> None:
    sha = emulator.state.add_pull(REPO, 2).head_sha
    repo = emulator.github().get_repo(REPO)

    run = repo.create_check_run(
        "probewatch/gpu",
        sha,
        status="in_progress",
        output={"title": "Running", "summary": "3 probes"},
    )
    run.edit(conclusion="failure", output={"title": "Missed", "summary": "1 probe missed"})
    listed = list(repo.get_commit(sha).get_check_runs())

    assert (run.status, run.conclusion, run.output.title) == ("completed", "failure", "Missed")
    assert [(c.id, c.name, c.conclusion) for c in listed] == [(run.id, "probewatch/gpu", "failure")]
    assert listed[0].app.slug == "probewatch-bot"
    assert listed[0].completed_at is not None


def test_contents_are_read_by_ref_and_missing_files_are_404(emulator: GitHubEmulator) -> None:
    emulator.state.add_content(REPO, "probewatch.toml", b"[gpu]\nenabled = true\n")
    emulator.state.add_branch(REPO, "dev")
    emulator.state.add_content(REPO, "probewatch.toml", "[gpu]\nenabled = false\n", ref="dev")
    repo = emulator.github().get_repo(REPO)

    main = repo.get_contents("probewatch.toml")
    dev = repo.get_contents("probewatch.toml", ref="dev")

    assert main.decoded_content == b"[gpu]\nenabled = true\n"
    assert dev.decoded_content == b"[gpu]\nenabled = false\n"
    assert [c.path for c in repo.get_contents("")] == ["probewatch.toml"]
    with pytest.raises(github.UnknownObjectException):
        repo.get_contents(".github/probewatch.yml")


def test_dispatched_run_completes_with_an_artifact_that_downloads_intact(
    emulator: GitHubEmulator,
) -> None:
    emulator.state.add_workflow(
        REPO,
        ".github/workflows/probewatch-gpu.yml",
        name="GPU probes",
        inputs=("task_id",),
        run_name="probe {task_id}",
    )
    gh = emulator.github()
    workflow = gh.get_repo(REPO).get_workflow("probewatch-gpu.yml")

    assert workflow.create_dispatch("main", {"task_id": "t-42"}) is True
    runs = list(workflow.get_runs(branch="main", event="workflow_dispatch"))
    assert [(r.status, r.display_title) for r in runs] == [("queued", "probe t-42")]

    archive = make_zip({"report.json": '{"missed": 1}'})
    emulator.state.complete_run(
        runs[0].id, conclusion="success", artifacts=[("probe-report", archive)]
    )
    run = gh.get_repo(REPO).get_workflow_run(runs[0].id)
    artifacts = list(run.get_artifacts())
    _, _, chunks = gh.requester.getStream(artifacts[0].archive_download_url, chunk_size=None)

    assert (run.status, run.conclusion) == ("completed", "success")
    assert [(a.name, a.size_in_bytes) for a in artifacts] == [("probe-report", len(archive))]
    assert b"".join(chunks) == archive
    assert emulator.state.dispatches[0].inputs == {"task_id": "t-42"}
    assert emulator.count(route="/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip") == 1


def test_dispatch_hook_decides_the_run_and_bad_inputs_are_rejected(
    emulator: GitHubEmulator,
) -> None:
    workflow_seed = emulator.state.add_workflow(
        REPO, ".github/workflows/probewatch-gpu.yml", inputs=("task_id",)
    )

    def finish(state: EmulatorState, run: WorkflowRun) -> None:
        state.complete_run(run.id, conclusion="failure")

    emulator.state.on_dispatch = finish
    workflow = emulator.github().get_repo(REPO).get_workflow(workflow_seed.id)

    assert workflow.create_dispatch("main", {"task_id": "x"}) is True
    with pytest.raises(github.GithubException) as raised:
        workflow.create_dispatch("main", {"bogus": "1"}, throw=True)
    with pytest.raises(github.GithubException) as no_branch:
        workflow.create_dispatch("nope", {"task_id": "x"}, throw=True)

    assert [(r.status, r.conclusion) for r in workflow.get_runs()] == [("completed", "failure")]
    assert (raised.value.status, raised.value.data["message"]) == (
        422,
        "Unexpected inputs provided: ['bogus']",
    )
    assert (no_branch.value.status, no_branch.value.data["message"]) == (
        422,
        "No ref found for: nope",
    )


def test_unknown_pull_raises_unknown_object(emulator: GitHubEmulator) -> None:
    repo = emulator.github().get_repo(REPO)

    with pytest.raises(github.UnknownObjectException) as raised:
        repo.get_pull(404)

    assert raised.value.status == 404
    assert raised.value.data["message"] == "Not Found"


def test_emulators_are_independent() -> None:
    with GitHubEmulator() as first, GitHubEmulator() as second:
        first.state.add_repo("one/repo")

        assert first.base_url != second.base_url
        assert first.github().get_repo("one/repo").id == first.state.get_repo("one/repo").id
        with pytest.raises(github.UnknownObjectException):
            second.github().get_repo("one/repo")

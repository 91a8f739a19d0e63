"""A merged-PR webhook, end to end against the GitHub emulator: one job chain, one report, one
comment; redeliveries, replays and reruns add nothing; dry run and `comment: false` post nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import select

from bot.report.render import REPORT_MARKER
from task_registry.coverage import stored_coverage
from task_registry.db import session_scope
from task_registry.jobs import list_jobs
from task_registry.models import Job, Task, WebhookDelivery
from task_registry.reports import get_report
from task_registry.types import JobStatus, ReportStatus
from tests.bot_support import NUMBER, REPO, Bot, comment_event, make_bot, merged_event
from tests.github_emulator import GitHubEmulator

COMMENTS_ROUTE = "/repos/{owner}/{repo}/issues/{number}/comments"
EDIT_ROUTE = "/repos/{owner}/{repo}/issues/comments/{comment_id}"


@pytest.fixture
def bot(engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path) -> Bot:
    return make_bot(engine, github_emulator, tmp_path)


def kinds_run(bot: Bot) -> list[tuple[str, bool]]:
    return [(ran.kind, ran.ok) for ran in bot.worker.run_until_idle()]


def test_a_merged_pr_webhook_posts_exactly_one_report_comment(bot: Bot) -> None:
    answer = bot.deliver("pull_request", merged_event(merge_sha=bot.merge_sha), delivery="d-1")

    assert (answer.status_code, answer.json()["status"]) == (202, "queued")
    assert kinds_run(bot) == [("mine_pr", True), ("build_report", True), ("post_report", True)]
    comments = bot.comments()
    assert len(comments) == 1
    body = comments[0].body
    assert body.startswith(REPORT_MARKER)
    assert "reduces weight-sync traffic" in body and "#### 1. `pkg/sync.py:" in body
    assert "Confirmed: a hidden probewatch test of this promise fails" in body
    assert "test_probe_sync_traffic" not in body  # probes are hidden
    with session_scope(bot.context.engine) as session:
        report = get_report(session=session, repo=REPO, pull_number=NUMBER)
        assert (report.status, report.comment_id) == (ReportStatus.posted, comments[0].id)


def test_redelivery_replay_and_a_rerun_without_change_post_nothing_new(bot: Bot) -> None:
    event = merged_event(merge_sha=bot.merge_sha)
    bot.deliver("pull_request", event, delivery="d-1")
    kinds_run(bot)
    bot.emulator.reset_log()

    again = bot.deliver("pull_request", event, delivery="d-1")
    replayed = bot.deliver("pull_request", event, delivery="d-replayed")
    assert (again.status_code, again.json()["status"]) == (200, "duplicate")
    assert (replayed.status_code, replayed.json()["status"]) == (200, "already queued")
    assert kinds_run(bot) == []

    rerun = bot.deliver("issue_comment", comment_event("/probewatch rerun"))
    assert rerun.status_code == 202
    assert kinds_run(bot) == [("build_report", True), ("post_report", True)]
    assert len(bot.comments()) == 1
    assert bot.emulator.count("POST", route=COMMENTS_ROUTE) == 0
    assert bot.emulator.count("PATCH", route=EDIT_ROUTE) == 0


def test_a_changed_report_edits_the_sticky_comment_in_place(bot: Bot) -> None:
    bot.deliver("pull_request", merged_event(merge_sha=bot.merge_sha))
    kinds_run(bot)
    first = bot.comments()[0]
    with session_scope(bot.context.engine) as session:  # as a new validation would store it
        task = session.exec(select(Task)).one()
        table = stored_coverage(task)
        functional = next(p for p in table.promises if p.category == "functional")
        functional.quote = "final weights match the eager path"
        task.coverage = table.model_dump(mode="json")
        session.add(task)

    bot.deliver("issue_comment", comment_event("/probewatch rerun", comment_id=9002))
    kinds_run(bot)

    comments = bot.comments()
    assert [c.id for c in comments] == [first.id]
    assert "final weights match the eager path" in comments[0].body
    assert bot.emulator.count("DELETE") == 0


def test_forged_signatures_are_refused_and_store_nothing(bot: Bot) -> None:
    forged = bot.deliver("pull_request", merged_event(), secret="not-the-secret")
    body = b'{"action": "closed"}'
    sha1_only = bot.client.post(
        "/webhook",
        content=body,
        headers={
            "X-GitHub-Event": "pull_request",
            "X-GitHub-Delivery": "x",
            "X-Hub-Signature": "sha1=00",
        },
    )

    assert forged.status_code == 401
    assert sha1_only.status_code == 401 and "SHA-1" in sha1_only.json()["detail"]
    with session_scope(bot.context.engine) as session:
        assert session.exec(select(WebhookDelivery)).all() == []
        assert session.exec(select(Job)).all() == []


def test_commands_from_non_maintainers_queue_nothing(bot: Bot) -> None:
    answer = bot.deliver(
        "issue_comment", comment_event("/probewatch rerun", association="CONTRIBUTOR")
    )

    assert (answer.status_code, answer.json()["status"]) == (200, "ignored")
    assert "maintainers" in answer.json()["reason"]
    with session_scope(bot.context.engine) as session:
        assert list_jobs(session=session) == []


def test_ignore_command_keeps_probewatch_quiet_on_that_pr(bot: Bot) -> None:
    bot.deliver("issue_comment", comment_event("/probewatch ignore", association="OWNER"))
    bot.deliver("pull_request", merged_event(merge_sha=bot.merge_sha))

    kinds_run(bot)

    assert bot.comments() == []
    with session_scope(bot.context.engine) as session:
        report = get_report(session=session, repo=REPO, pull_number=NUMBER)
        assert report.status == ReportStatus.skipped and "ignore" in (report.skip_reason or "")


def test_dry_run_stores_the_report_and_posts_nothing(
    engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path
) -> None:
    bot = make_bot(engine, github_emulator, tmp_path, dry_run=True)
    bot.deliver("pull_request", merged_event(merge_sha=bot.merge_sha))

    kinds_run(bot)

    assert bot.comments() == []
    assert bot.emulator.count(path_contains="/comments") == 0
    with session_scope(bot.context.engine) as session:
        report = get_report(session=session, repo=REPO, pull_number=NUMBER)
        assert report.status == ReportStatus.dry_run and report.body.startswith(REPORT_MARKER)
    page = bot.client.get(f"/reports/{REPO}/{NUMBER}")
    assert page.status_code == 200 and "breaks promise" in page.text


def test_in_repo_config_comment_false_is_honoured(bot: Bot) -> None:
    bot.emulator.state.add_content(REPO, ".github/probewatch.yml", "comment: false\n")
    bot.deliver("pull_request", merged_event(merge_sha=bot.merge_sha))

    kinds_run(bot)

    assert bot.comments() == []
    with session_scope(bot.context.engine) as session:
        report = get_report(session=session, repo=REPO, pull_number=NUMBER)
        assert report.skip_reason == "comment: false in .github/probewatch.yml"


def test_check_run_on_the_merge_commit_is_created_once_and_kept(bot: Bot) -> None:
    bot.emulator.state.add_content(REPO, ".github/probewatch.yml", "check_run: true\n")
    bot.deliver("pull_request", merged_event(merge_sha=bot.merge_sha))
    kinds_run(bot)
    bot.deliver("issue_comment", comment_event("/probewatch rerun"))
    kinds_run(bot)

    runs = bot.emulator.state.list_check_runs(REPO, bot.merge_sha, filter="all")
    assert [(r.name, r.conclusion) for r in runs] == [("probewatch", "neutral")]
    output = runs[0].output
    assert output["title"].startswith("1 gap in what #") and "gap in what" in output["summary"]
    assert [(a["path"], a["annotation_level"]) for a in output["annotations"]] == [
        ("pkg/sync.py", "warning")
    ]
    assert len(bot.comments()) == 1


def test_in_repo_ignore_paths_drop_evidence_in_those_paths(bot: Bot) -> None:
    bot.emulator.state.add_content(REPO, ".github/probewatch.yml", "ignore_paths: ['pkg/*']\n")
    bot.deliver("pull_request", merged_event(merge_sha=bot.merge_sha))

    kinds_run(bot)

    assert bot.comments() == []
    with session_scope(bot.context.engine) as session:
        report = get_report(session=session, repo=REPO, pull_number=NUMBER)
        assert not report.actionable and "force_branch_true" not in report.body


def test_a_bad_in_repo_config_fails_the_report_with_its_key(bot: Bot) -> None:
    bot.emulator.state.add_content(REPO, ".github/probewatch.yml", "coment: false\n")
    bot.deliver("pull_request", merged_event(merge_sha=bot.merge_sha))

    kinds_run(bot)

    assert bot.comments() == []
    with session_scope(bot.context.engine) as session:
        build = next(j for j in list_jobs(session=session) if j.kind == "build_report")
        assert build.status == JobStatus.queued and "coment: unknown key" in (build.error or "")


def test_maintainers_feedback_on_an_entry_ranks_the_next_report(bot: Bot) -> None:
    """`/probewatch not-useful N` names the N-th patch the comment shows; once maintainers say
    it of that kind of patch often enough, the next report leaves it to the task page."""
    from bot.report.ranking import SUPPRESS_AFTER
    from bot.report.render import entry_ids
    from task_registry.reports import votes_by_operator

    bot.deliver("pull_request", merged_event(merge_sha=bot.merge_sha))
    kinds_run(bot)
    with session_scope(bot.context.engine) as session:  # no probe confirms the gap: a guess
        task = session.exec(select(Task)).one()
        table = stored_coverage(task)
        for adversarial in table.adversarials:
            adversarial.rejected_by = []
        task.coverage = table.model_dump(mode="json")
        session.add(task)
    bot.deliver("issue_comment", comment_event("/probewatch rerun", comment_id=3))
    kinds_run(bot)
    shown = entry_ids(bot.comments()[0].body)
    assert shown, "the demo report shows at least one entry"

    unnumbered = bot.deliver("issue_comment", comment_event("/probewatch useful", comment_id=1))
    assert "say which entry" in unnumbered.json()["reason"]
    outsider = comment_event("/probewatch not-useful 1", comment_id=2, association="NONE")
    assert bot.deliver("issue_comment", outsider).json()["status"] == "ignored"
    for vote in range(SUPPRESS_AFTER):
        said = comment_event("/probewatch not-useful 1", comment_id=10 + vote, login=f"m{vote}")
        bot.deliver("issue_comment", said)
    bot.deliver("issue_comment", comment_event("/probewatch not-useful 9", comment_id=30))
    ran = bot.worker.run_until_idle()
    assert [r.kind for r in ran] == ["entry_feedback"] * (SUPPRESS_AFTER + 1)
    with session_scope(bot.context.engine) as session:
        votes = votes_by_operator(session=session, repo=REPO)
    assert sum(no for _, no in votes.values()) == SUPPRESS_AFTER  # entry 9 does not exist

    bot.deliver("issue_comment", comment_event("/probewatch rerun", comment_id=40))
    kinds_run(bot)
    assert shown[0] not in entry_ids(bot.comments()[0].body)
    assert "more gap" in bot.comments()[0].body  # on the task page, not dropped

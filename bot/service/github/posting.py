"""Put a rendered report on the PR: one sticky comment, and optionally a check run.

The comment is found again by its stored id and by the hidden marker it starts
with (a worker killed between creating it and storing its id leaves a comment
only the marker finds), edited in place when the body changed, left alone
when it did not, and never deleted and posted again. It is first posted only
when the report is actionable. Skips are data: each rule names its reason, and
the first that applies wins. In dry run nothing reaches GitHub.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from github import UnknownObjectException

from bot.report.check import CheckOutput
from bot.report.render import REPORT_MARKER, body_hash
from bot.service.github.repo_config import RepoConfig
from task_registry.models import PRReport

if TYPE_CHECKING:
    from github.IssueComment import IssueComment
    from github.PullRequest import PullRequest
    from github.Repository import Repository

CHECK_RUN_NAME = "probewatch"


class PostAction(StrEnum):
    created = "created"
    edited = "edited"
    unchanged = "unchanged"
    skipped = "skipped"


@dataclass(frozen=True)
class PostContext:
    """What decides whether a report may reach the PR."""

    report: PRReport
    config: RepoConfig
    labels: frozenset[str]
    dry_run: bool


@dataclass(frozen=True)
class SkipRule:
    reason: str
    applies: Callable[[PostContext], bool]


# Order matters: the first rule that applies is the reason stored and shown.
COMMON_RULES = (
    SkipRule("dry run (watch file)", lambda c: c.dry_run),
    SkipRule("ignored by a maintainer (/probewatch ignore)", lambda c: c.report.ignored),
    SkipRule(
        "the PR carries the skip label",
        lambda c: c.config.skip_label is not None and c.config.skip_label in c.labels,
    ),
)
COMMENT_RULES = (
    *COMMON_RULES,
    SkipRule("comment: false in .github/probewatch.yml", lambda c: not c.config.comment),
    SkipRule(
        "nothing actionable (no missed promise with evidence)",
        lambda c: not c.report.actionable and c.report.comment_id is None,
    ),
)
CHECK_RULES = (
    *COMMON_RULES,
    SkipRule(
        "check_run: true is not set in .github/probewatch.yml", lambda c: not c.config.check_run
    ),
    SkipRule("no merge commit to attach a check run to", lambda c: not c.report.merge_sha),
)


def skip_reason(rules: tuple[SkipRule, ...], context: PostContext) -> str | None:
    return next((rule.reason for rule in rules if rule.applies(context)), None)


@dataclass(frozen=True)
class CommentResult:
    action: PostAction
    comment_id: int | None = None
    reason: str | None = None


def publish_comment(pull: PullRequest, report: PRReport) -> CommentResult:
    """Create, edit or leave the sticky comment so that it carries ``report.body``."""
    if report.comment_id is not None and report.posted_hash == report.body_hash:
        return CommentResult(PostAction.unchanged, report.comment_id)
    existing, deleted = find_sticky(pull, report.comment_id)
    if deleted:
        return CommentResult(
            PostAction.skipped, report.comment_id, "the sticky comment was deleted on GitHub"
        )
    if existing is not None:
        if body_hash(existing.body) == report.body_hash:
            return CommentResult(PostAction.unchanged, existing.id)
        existing.edit(report.body)
        return CommentResult(PostAction.edited, existing.id)
    if not report.actionable:
        return CommentResult(PostAction.skipped, None, "nothing actionable")
    return CommentResult(PostAction.created, pull.create_issue_comment(report.body).id)


def find_sticky(pull: PullRequest, comment_id: int | None) -> tuple[IssueComment | None, bool]:
    """(the sticky comment or None, whether a stored comment was deleted on GitHub)."""
    if comment_id is not None:
        try:
            return pull.get_issue_comment(comment_id), False
        except UnknownObjectException:
            return None, True
    for comment in pull.get_issue_comments():
        if (comment.body or "").startswith(REPORT_MARKER):
            return comment, False
    return None, False


@dataclass(frozen=True)
class CheckResult:
    action: PostAction
    check_run_id: int | None = None


def publish_check_run(repo: Repository, report: PRReport, output: CheckOutput) -> CheckResult:
    """One check run named ``probewatch`` on the merge commit, updated when its output changes."""
    assert report.merge_sha is not None
    if report.check_run_id is not None and report.check_run_hash == output.hash:
        return CheckResult(PostAction.unchanged, report.check_run_id)
    conclusion = _conclusion(report)
    found = _find_check_run(repo, report)
    if found is not None:
        found.edit(status="completed", conclusion=conclusion, output=output.as_github())
        return CheckResult(PostAction.edited, found.id)
    run = repo.create_check_run(
        name=CHECK_RUN_NAME,
        head_sha=report.merge_sha,
        status="completed",
        conclusion=conclusion,
        output=output.as_github(),
    )
    return CheckResult(PostAction.created, run.id)


def _find_check_run(repo: Repository, report: PRReport):  # type: ignore[no-untyped-def]
    if report.check_run_id is not None:
        try:
            return repo.get_check_run(report.check_run_id)
        except UnknownObjectException:
            pass
    assert report.merge_sha is not None
    runs = repo.get_commit(report.merge_sha).get_check_runs(check_name=CHECK_RUN_NAME)
    return next(iter(runs), None)


def _conclusion(report: PRReport) -> str:
    # Upstream CI must not turn red because of probewatch: a gap is "neutral", not "failure".
    return "neutral" if report.actionable else "success"


def wait_for(take: Callable[[], bool], timeout_s: float, step_s: float = 0.2) -> bool:
    """Call ``take`` until it returns True or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        if take():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(step_s)

"""Kinds of work-queue jobs, their payloads and their dedupe keys: one place for each name.

A payload is a pydantic model stored as the job's JSON; :data:`PAYLOADS` maps each
kind to its model, and :func:`job_create` is the one way to queue a job, so a job
is never queued with another kind's payload and a worker validates what it reads
once, against the same model. A dedupe key makes the same work, asked for twice
(a redelivered webhook, a replayed request, a restarted scheduler), one job.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from task_registry.models import JobCreate


class JobKind(StrEnum):
    mine_pr = "mine_pr"  # a merged PR: mine it, then build its report
    build_report = "build_report"  # build and validate the task, render and store the report
    post_report = "post_report"  # put the stored report on GitHub (or not: dry run, config)
    poll_repo = "poll_repo"  # list PRs merged since the last poll; queue mine_pr for each
    ignore_pr = "ignore_pr"  # a maintainer asked probewatch to stay quiet on a PR
    entry_feedback = "entry_feedback"  # a maintainer marked a report entry useful or not
    installation = "installation"  # the GitHub App was installed, removed or changed
    redeliver = "redeliver"  # ask GitHub to redeliver webhook deliveries that never arrived


class JobPayload(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PRPayload(JobPayload):
    repo: str
    number: int
    merge_sha: str | None = None


class IgnorePayload(JobPayload):
    repo: str
    number: int
    by: str


class FeedbackPayload(JobPayload):
    repo: str
    number: int
    entry: int  # the entry's number in the comment, from 1
    useful: bool
    by: str


class PollPayload(JobPayload):
    repo: str


class InstallationPayload(JobPayload):
    installation_id: int
    account: str
    active: bool = True
    repositories: list[str] | None = None  # the full list, when the event carries it
    added: list[str] = []
    removed: list[str] = []


def mine_key(repo: str, number: int, merge_sha: str | None) -> str:
    return f"{JobKind.mine_pr}:{repo}#{number}@{merge_sha or '-'}"


def rerun_key(repo: str, number: int, comment_id: int) -> str:
    # The comment id is inside the signed body: a replayed request cannot mint a new one.
    return f"rerun:{repo}#{number}:comment-{comment_id}"


def ignore_key(repo: str, number: int, comment_id: int) -> str:
    return f"{JobKind.ignore_pr}:{repo}#{number}:comment-{comment_id}"


def feedback_key(repo: str, number: int, comment_id: int) -> str:
    return f"{JobKind.entry_feedback}:{repo}#{number}:comment-{comment_id}"


def followup_key(kind: JobKind, parent_job_id: int) -> str:
    """A job's successor: a reclaimed parent (kill -9, lease expiry) queues it only once."""
    return f"{kind}:after-job-{parent_job_id}"


def poll_key(repo: str, slot: int) -> str:
    return f"{JobKind.poll_repo}:{repo}:slot-{slot}"


class RedeliverPayload(JobPayload):
    pass


def redeliver_key(slot: int) -> str:
    return f"{JobKind.redeliver}:slot-{slot}"


def installation_key(delivery_id: str) -> str:
    return f"{JobKind.installation}:{delivery_id}"


PAYLOADS: dict[JobKind, type[JobPayload]] = {
    JobKind.mine_pr: PRPayload,
    JobKind.build_report: PRPayload,
    JobKind.post_report: PRPayload,
    JobKind.poll_repo: PollPayload,
    JobKind.ignore_pr: IgnorePayload,
    JobKind.entry_feedback: FeedbackPayload,
    JobKind.installation: InstallationPayload,
    JobKind.redeliver: RedeliverPayload,
}


def job_create(kind: JobKind, payload: JobPayload, dedupe_key: str) -> JobCreate:
    """The row that queues ``payload`` as a job of ``kind``; refuses another kind's payload."""
    expected = PAYLOADS[kind]
    if type(payload) is not expected:
        raise TypeError(f"a {kind} job takes a {expected.__name__}, not {type(payload).__name__}")
    return JobCreate(kind=kind, payload=payload.model_dump(mode="json"), dedupe_key=dedupe_key)

"""The JSON API: paginated reads without a token, writes only with the admin token, 404s for
unknown records, the coverage table as the report sees it, and no hidden task material."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from bot.service.app import create_app
from task_registry.candidates import upsert_candidate
from task_registry.db import session_scope
from task_registry.models import CandidatePRCreate, RepoCreate
from task_registry.repos import get_or_create_repo
from tests.bot_support import NUMBER, REPO, Bot, make_bot, merged_event, with_settings
from tests.github_emulator import GitHubEmulator

ADMIN = {"Authorization": "Bearer admin-token"}


@pytest.fixture
def bot(engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path) -> Bot:
    bot = make_bot(engine, github_emulator, tmp_path)
    with session_scope(engine) as session:
        repo = get_or_create_repo(session=session, repo_in=RepoCreate(full_name=REPO))
        for number in range(1, 8):
            upsert_candidate(
                session=session,
                candidate_in=CandidatePRCreate(
                    repo_id=repo.id or 0, number=number, rank_score=number
                ),
            )
    return bot


def test_lists_are_paginated_with_a_total(bot: Bot) -> None:
    first = bot.client.get("/api/candidates", params={"limit": 3}).json()
    third = bot.client.get("/api/candidates", params={"limit": 3, "offset": 6}).json()
    assert (first["total"], len(first["items"]), len(third["items"])) == (7, 3, 1)
    assert [c["number"] for c in first["items"]] == [7, 6, 5]  # best ranked first
    assert bot.client.get("/api/candidates", params={"limit": 0}).status_code == 422


def test_writes_need_the_admin_token(bot: Bot) -> None:
    candidate = bot.client.get("/api/candidates").json()["items"][0]
    url = f"/api/candidates/{candidate['id']}/accept"

    anonymous = bot.client.post(url)
    wrong = bot.client.post(url, headers={"Authorization": "Bearer nope"})
    accepted = bot.client.post(url, headers=ADMIN, json={"reason": "core change"})

    assert (anonymous.status_code, wrong.status_code, accepted.status_code) == (401, 401, 200)
    assert (accepted.json()["decision"], accepted.json()["decision_reason"]) == (
        "accepted",
        "core change",
    )
    rejected = bot.client.post(f"/api/candidates/{candidate['id']}/reject", headers=ADMIN)
    assert rejected.json()["decision"] == "rejected"
    assert bot.client.get("/api/candidates", params={"decision": "rejected"}).json()["total"] == 1


def test_writes_are_refused_when_no_admin_token_is_configured(bot: Bot) -> None:
    client = TestClient(create_app(with_settings(bot.context, admin_token=None)))
    answer = client.post("/api/candidates/1/accept", headers=ADMIN)
    assert answer.status_code == 403 and "no admin token" in answer.json()["detail"]


def test_unknown_records_are_404_with_a_reason(bot: Bot) -> None:
    assert bot.client.get("/api/tasks/acme__nope-1").json() == {"detail": "no task acme__nope-1"}
    assert bot.client.post("/api/candidates/999/accept", headers=ADMIN).status_code == 404
    assert bot.client.get(f"/api/reports/{REPO}/999").status_code == 404


def test_task_coverage_and_runs_read_without_hidden_material(bot: Bot) -> None:
    instance = f"acme__infra-lib-{NUMBER}"
    task = bot.client.get(f"/api/tasks/{instance}").json()
    coverage = bot.client.get(f"/api/tasks/{instance}/coverage").json()

    assert task["instance_id"] == instance and "hollow_patch" not in task and "patch" not in task
    traffic = coverage["promises"][0]
    assert (traffic["category"], traffic["verdict"]) == ("resource.traffic", "unchecked")
    (survivor,) = coverage["adversarials"]
    assert traffic["survivors"] == [survivor["id"]]
    assert survivor["rejected_by"] == ["probes/test_probe_sync_traffic.py"]
    assert "patch" not in survivor  # adversarial patches are hidden material
    assert traffic["probes"] == ["probes/test_probe_sync_traffic.py"]
    assert "content" not in coverage["probes"][0]
    assert bot.client.get(f"/api/tasks/{instance}/runs").json() == []
    assert bot.client.get("/api/tasks", params={"status": "validated"}).json()["total"] == 1


def test_reports_are_listed_after_the_bot_ran(bot: Bot) -> None:
    bot.deliver("pull_request", merged_event(merge_sha=bot.merge_sha))
    bot.worker.run_until_idle()

    listed = bot.client.get("/api/reports").json()
    detail = bot.client.get(f"/api/reports/{REPO}/{NUMBER}").json()

    assert listed["total"] == 1 and listed["items"][0]["status"] == "posted"
    assert "body" not in listed["items"][0] and detail["body"].startswith(
        "<!-- probewatch:report v1 -->"
    )


def test_openapi_docs_list_the_api(bot: Bot) -> None:
    paths = bot.client.get("/openapi.json").json()["paths"]
    assert {
        "/api/repos",
        "/api/candidates",
        "/api/tasks/{instance_id}/coverage",
        "/webhook",
    } <= set(paths)
    assert bot.client.get("/docs").status_code == 200

"""Helpers for the bot's tests: a wired-up service against the GitHub emulator, signed deliveries."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from bot.context import AppContext
from bot.service.app import create_app
from bot.service.github.client import GitHubClients
from bot.service.jobs.worker import Worker
from bot.service.webhook import signature_for
from bot.settings import Settings
from task_registry.db import session_scope
from task_registry.types import TaskStatus
from tests.factories import make_task
from tests.github_emulator import EmulatorError, GitHubEmulator, PullFile

REPO = "acme/infra-lib"
NUMBER = 5
SECRET = "webhook-secret-for-tests"


def watch_file(tmp_path: Path, *, dry_run: bool = False, repo: str = REPO) -> Path:
    path = tmp_path / "watch.toml"
    path.write_text(
        f'[[repo]]\nname = "{repo}"\nsize_threshold = 50\ndry_run = {str(dry_run).lower()}\n',
        encoding="utf-8",
    )
    return path


def db_url(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


@dataclass
class Bot:
    context: AppContext
    client: TestClient
    worker: Worker
    emulator: GitHubEmulator
    merge_sha: str

    def deliver(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        delivery: str | None = None,
        secret: str = SECRET,
    ) -> Any:
        body = json.dumps(payload).encode()
        return self.client.post(
            "/webhook", content=body, headers=signed_headers(body, event, delivery, secret)
        )

    def comments(self, number: int = NUMBER) -> list[Any]:
        return self.emulator.state.list_comments(REPO, number)


def signed_headers(
    body: bytes, event: str, delivery: str | None = None, secret: str = SECRET
) -> dict[str, str]:
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-Hub-Signature-256": signature_for(secret.encode(), body),
        "Content-Type": "application/json",
    }


def bot_settings(**overrides: Any) -> Settings:
    """The service's settings in tests: no write spacing or retries, a short lease."""
    defaults: dict[str, Any] = {
        "github_write_spacing_s": 0,
        "github_retries": 0,
        "worker_lease_s": 30,
        "public_url": "http://dashboard.test",
    }
    return Settings(**{**defaults, **overrides})


def with_settings(context: AppContext, **overrides: Any) -> AppContext:
    """The same registry under settings that differ in ``overrides``."""
    settings = context.settings.model_copy(update=overrides)
    return AppContext(settings, _engine=context.engine)


def make_bot(
    engine: Engine, emulator: GitHubEmulator, tmp_path: Path, *, dry_run: bool = False
) -> Bot:
    """Registry with the PR's task (promises, probe, a surviving adversarial) and the emulator
    holding the merged PR; the app and an in-process worker wired to both."""
    with session_scope(engine) as session:
        task = make_task(session, NUMBER, repo=REPO, status=TaskStatus.validated)
        merge_sha = task.merge_commit
    seed_pull(emulator, merge_sha or "")
    settings = bot_settings(
        home=tmp_path,
        database_url=db_url(engine),
        watch_file=watch_file(tmp_path, dry_run=dry_run),
        github_api_url=emulator.base_url,
        github_token="t",
        webhook_secret=SECRET,
        admin_token="admin-token",
    )
    context = AppContext(settings, _engine=engine)
    worker = Worker(context, github=GitHubClients(settings), name="w-test")
    return Bot(context, TestClient(create_app(context)), worker, emulator, merge_sha or "")


def seed_pull(emulator: GitHubEmulator, merge_sha: str, number: int = NUMBER) -> None:
    try:
        emulator.state.get_repo(REPO)
    except EmulatorError:
        emulator.state.add_repo(REPO)
    emulator.state.add_pull(
        REPO,
        number,
        title="Make weight sync incremental",
        body="Reduces weight-sync traffic: only changed parameters are sent.",
        merged=True,
        merge_commit_sha=merge_sha,
        files=[
            PullFile("pkg/sync.py", additions=80, deletions=10),
            PullFile("tests/test_sync.py", status="added", additions=40),
        ],
    )


def merged_event(number: int = NUMBER, merge_sha: str = "abc", repo: str = REPO) -> dict[str, Any]:
    return {
        "action": "closed",
        "number": number,
        "pull_request": {"number": number, "merged": True, "merge_commit_sha": merge_sha},
        "repository": {"full_name": repo},
    }


def comment_event(
    body: str,
    *,
    association: str = "MEMBER",
    comment_id: int = 9001,
    number: int = NUMBER,
    on_pull: bool = True,
    login: str = "maintainer",
) -> dict[str, Any]:
    issue: dict[str, Any] = {"number": number}
    if on_pull:
        issue["pull_request"] = {"url": f"https://api.github.test/repos/{REPO}/pulls/{number}"}
    return {
        "action": "created",
        "issue": issue,
        "comment": {
            "id": comment_id,
            "body": body,
            "author_association": association,
            "user": {"login": login},
        },
        "repository": {"full_name": REPO},
    }

"""A merged-PR webhook for a repository with a local mirror: the task is built, the survivors
found, and exactly one comment posted — no task seeded by hand. The demo repository's PR #15
(a prefix cache that must be invalidated on reset) plays the upstream PR."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from bot.context import AppContext
from bot.report.render import REPORT_MARKER
from bot.service.app import create_app
from bot.service.github.client import GitHubClients
from bot.service.jobs.worker import Worker
from probe_builder.demo_repo import create_demo_repo
from task_registry.db import session_scope
from task_registry.swebench import instance_id_for
from task_registry.tasks import find_task, list_adversarials
from tests.bot_support import SECRET, bot_settings, db_url, merged_event, signed_headers
from tests.github_emulator import GitHubEmulator, PullFile

NUMBER = 15


def pull_files(repo: Path, merge_sha: str) -> list[PullFile]:
    out = subprocess.run(
        ["git", "-C", str(repo), "show", "--numstat", "--format=", merge_sha],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [line.split("\t") for line in out.splitlines() if line.strip()]
    return [PullFile(path, additions=int(a), deletions=int(d)) for a, d, path in rows]


def test_a_merged_pr_webhook_builds_validates_and_reports_once(
    sqlite_engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path
) -> None:
    demo = create_demo_repo(tmp_path / "minirl")
    pr = demo.pr(NUMBER)
    github_emulator.state.add_repo(demo.name)
    github_emulator.state.add_pull(
        demo.name,
        NUMBER,
        title=pr.title,
        body=subprocess.run(
            ["git", "-C", str(demo.path), "log", "-1", "--format=%b", pr.merge_sha],
            capture_output=True,
            text=True,
            check=True,
        ).stdout,
        merged=True,
        merge_commit_sha=pr.merge_sha,
        base_sha=pr.base_sha,
        files=pull_files(demo.path, pr.merge_sha),
    )
    watch = tmp_path / "watch.toml"
    watch.write_text(
        f'[[repo]]\nname = "{demo.name}"\ngit = "{demo.path}"\nsize_threshold = 100\n'
        f'dry_run = false\nenvironment = "host"\nauto_accept = {{ min_core_share = 0.1 }}\n'
        f'[repo.tests]\nglobs = ["tests/**", "**/test_*.py"]\n',
        encoding="utf-8",
    )
    settings = bot_settings(
        home=tmp_path / "home",
        database_url=db_url(sqlite_engine),
        watch_file=watch,
        github_api_url=github_emulator.base_url,
        github_token="t",
        webhook_secret=SECRET,
    )
    context = AppContext(settings, _engine=sqlite_engine)
    worker = Worker(context, github=GitHubClients(settings), name="w")
    client = TestClient(create_app(context))

    body = json.dumps(merged_event(NUMBER, pr.merge_sha, demo.name)).encode()
    answer = client.post("/webhook", content=body, headers=signed_headers(body, "pull_request"))
    assert answer.status_code == 202
    done = worker.run_until_idle()
    ran = [(r.kind, r.ok) for r in done]

    assert ran == [("mine_pr", True), ("build_report", True), ("post_report", True)]
    with session_scope(sqlite_engine) as session:
        task = find_task(session=session, instance_id=instance_id_for(demo.name, NUMBER))
        assert task is not None
        survivors = [a for a in list_adversarials(session=session, task_id=task.id or 0)]
        assert any(a.survives_original for a in survivors)
    (comment,) = github_emulator.state.list_comments(demo.name, NUMBER)
    assert comment.body.startswith(REPORT_MARKER)
    assert "minirl/rollout.py" in comment.body

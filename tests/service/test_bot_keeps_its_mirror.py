"""The service keeps its own mirror: cloned from the repository's URL on first use, fetched
when a webhook announces a PR merged after the clone. The upstream is a bare repository on
``file://``; the demo's PR #15 merges into it after the service has cloned it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from bot.context import AppContext
from bot.report.render import REPORT_MARKER
from bot.repos import mirror_of
from bot.service.app import create_app
from bot.service.github.client import GitHubClients
from bot.service.jobs.worker import Worker
from probe_builder.demo_repo import create_demo_repo
from runners.mirrors import has_commit, mirror_path
from tests.bot_support import SECRET, bot_settings, db_url, merged_event, signed_headers
from tests.github_emulator import GitHubEmulator
from tests.service.test_bot_builds_the_task import pull_files

NUMBER = 15


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def test_a_pr_merged_after_the_clone_is_fetched_built_validated_and_reported_once(
    sqlite_engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path
) -> None:
    demo = create_demo_repo(tmp_path / "minirl")
    pr = demo.pr(NUMBER)
    upstream = tmp_path / "upstream.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", str(demo.path), str(upstream)], check=True)
    for ref in git(upstream, "for-each-ref", "--format=%(refname)").split():
        if ref != "refs/heads/main":
            git(upstream, "update-ref", "-d", ref)
    git(upstream, "update-ref", "refs/heads/main", pr.base_sha)  # before #15 merged
    github_emulator.state.add_repo(demo.name)
    github_emulator.state.add_pull(
        demo.name,
        NUMBER,
        title=pr.title,
        body=git(demo.path, "log", "-1", "--format=%b", pr.merge_sha),
        merged=True,
        merge_commit_sha=pr.merge_sha,
        base_sha=pr.base_sha,
        files=pull_files(demo.path, pr.merge_sha),
    )
    watch = tmp_path / "watch.toml"
    watch.write_text(
        f'[[repo]]\nname = "{demo.name}"\nurl = "file://{upstream}"\nsize_threshold = 100\n'
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
    mirror = mirror_of(context.watch_file().get(demo.name), settings)  # cloned now
    assert mirror == mirror_path(settings.home, demo.name)
    assert not has_commit(mirror, pr.merge_sha)
    git(upstream, "update-ref", "refs/heads/main", pr.merge_sha)  # upstream merges #15

    worker = Worker(context, github=GitHubClients(settings), name="w")
    client = TestClient(create_app(context))
    body = json.dumps(merged_event(NUMBER, pr.merge_sha, demo.name)).encode()
    assert (
        client.post(
            "/webhook", content=body, headers=signed_headers(body, "pull_request")
        ).status_code
        == 202
    )
    ran = [(r.kind, r.ok) for r in worker.run_until_idle()]

    assert ran == [("mine_pr", True), ("build_report", True), ("post_report", True)], ran
    assert has_commit(mirror, pr.merge_sha)
    (comment,) = github_emulator.state.list_comments(demo.name, NUMBER)
    assert comment.body.startswith(REPORT_MARKER) and "minirl/rollout.py" in comment.body

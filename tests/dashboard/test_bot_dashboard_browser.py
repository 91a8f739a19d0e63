"""Dashboard pages as a real headless Chromium draws them on a 1280-px screen, against a real
uvicorn server on 127.0.0.1: what a person sees fits, reads and links where it should."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from task_registry.coverage import stored_coverage
from task_registry.db import session_scope
from task_registry.swebench import instance_id_for
from task_registry.tasks import find_task
from tests.bot_support import NUMBER, make_bot, merged_event
from tests.bot_support import REPO as BOT_REPO
from tests.browser_support import CHROMIUM, PNG_MAGIC, SCREEN_WIDTH, DevTools, serve
from tests.dashboard_support import GAPS, REPO, make_dashboard, seed_dashboard
from tests.github_emulator import GitHubEmulator

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)"
)
LONG_QUOTE = (
    "Weight sync now sends only the parameters whose `version` changed since the last step, "
    "keyed by name in `_sent`, so a rollout engine that already holds a tensor skips it; "
    "see `src/acme_infra/distributed/weight_sync/incremental_parameter_broadcast_helpers.py` "
    "for the bookkeeping and `tests/distributed/test_incremental_weight_sync_roundtrip.py` "
    "for the round trip across two ranks. " * 3
)
LONG_PATH = "src/acme_infra/distributed/weight_sync/incremental_parameter_broadcast_helpers.py"


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[DevTools]:
    tools = DevTools(tmp_path / "profile")
    yield tools
    tools.close()


@pytest.fixture
def dashboard(sqlite_engine: Engine) -> Iterator[str]:
    """The registry with one PR of each verdict; the task with the gap has a long quote and a
    survivor in a long path, the kind that used to push the table off the screen."""
    seed_dashboard(sqlite_engine)
    with session_scope(sqlite_engine) as session:
        task = find_task(session=session, instance_id=instance_id_for(REPO, GAPS))
        assert task is not None
        table = stored_coverage(task)
        table.promises[0].quote = LONG_QUOTE
        table.adversarials[0].path = LONG_PATH
        task.coverage = table.model_dump(mode="json")
        session.add(task)
    with serve(make_dashboard(sqlite_engine)) as url:
        yield url


def page_width(browser: DevTools, page: str) -> int:
    return int(browser.evaluate(page, "document.documentElement.scrollWidth"))


def shoot(browser: DevTools, page: str, path: Path) -> None:
    browser.screenshot(page, path)
    assert path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 10_000


HOME_ROWS = """JSON.stringify([...document.querySelectorAll('#prs tbody tr')].map(tr => ({
  pr: tr.dataset.pr, verdict: tr.querySelector('.badge').innerText,
  links: [...tr.querySelectorAll('a')].map(a => a.getAttribute('href'))})))"""


def test_home_lists_each_pr_with_its_verdict_and_links(
    dashboard: str, browser: DevTools, tmp_path: Path
) -> None:
    page = browser.open(dashboard + "/")
    rows = json.loads(browser.evaluate(page, HOME_ROWS))
    nav = browser.evaluate(page, "[...document.querySelectorAll('nav a')].map(a => a.innerText)")

    assert [(r["pr"], r["verdict"]) for r in rows] == [
        (f"{REPO}#15", "not validated yet"),
        (f"{REPO}#14", "failed to validate"),
        (f"{REPO}#13", "waiting for GPU"),
        (f"{REPO}#12", "clean"),
        (f"{REPO}#11", "gaps"),
    ]
    assert rows[-1]["links"] == [f"/reports/{REPO}/11", "/tasks/acme__infra-lib-11"]
    assert nav == ["home", "tasks", "reports", "candidates", "leaderboard", "API"]
    assert page_width(browser, page) <= SCREEN_WIDTH
    shoot(browser, page, tmp_path / "home.png")


def test_tasks_and_reports_lists_link_every_page(
    dashboard: str, browser: DevTools, tmp_path: Path
) -> None:
    tasks = browser.open(dashboard + "/tasks")
    reports = browser.open(dashboard + "/reports")
    task_links = browser.evaluate(
        tasks, "[...document.querySelectorAll('#tasks a.task-link')].map(a => a.innerText)"
    )
    report_links = browser.evaluate(
        reports, "[...document.querySelectorAll('#reports a.report-link')].map(a => a.innerText)"
    )

    assert task_links == [f"acme__infra-lib-{n}" for n in (13, 12, 11)]
    assert sorted(report_links) == [f"{REPO}#11", f"{REPO}#12"]
    assert page_width(browser, tasks) <= SCREEN_WIDTH
    assert page_width(browser, reports) <= SCREEN_WIDTH
    shoot(browser, tasks, tmp_path / "tasks.png")
    shoot(browser, reports, tmp_path / "reports.png")


MATRIX = """JSON.stringify([...document.querySelectorAll('#validation tbody tr')].map(tr =>
  [tr.dataset.control, ...[...tr.querySelectorAll('td.cell')].map(td => td.innerText.trim())]))"""


def test_task_page_fits_the_screen_renders_markdown_and_marks_each_control(
    dashboard: str, browser: DevTools, tmp_path: Path
) -> None:
    page = browser.open(f"{dashboard}/tasks/{instance_id_for(REPO, GAPS)}")
    table_width = browser.evaluate(page, "document.getElementById('coverage').scrollWidth")
    quote = browser.evaluate(page, "document.querySelector('#coverage td.quote').innerText")
    code = browser.evaluate(page, "document.querySelectorAll('#coverage td.quote code').length")
    matrix = json.loads(browser.evaluate(page, MATRIX))

    assert table_width <= SCREEN_WIDTH and page_width(browser, page) <= SCREEN_WIDTH
    assert "`" not in quote and "version changed" in quote and code >= 4
    assert matrix[:3] == [
        ["golden", "✓ 3/3 passed", "✓ 3/3 passed"],
        ["snapshot", "✗ passes", "✓ rejected"],
        ["hollow", "✗ passes", "✓ rejected"],
    ]
    assert matrix[3][0] == "adversarial" and matrix[3][1:] == ["✗ survives", "✓ rejected"]
    shoot(browser, page, tmp_path / "task.png")


def test_report_page_renders_the_markdown_with_its_details(
    dashboard: str, browser: DevTools, tmp_path: Path
) -> None:
    page = browser.open(f"{dashboard}/reports/{REPO}/{GAPS}")
    summary = browser.evaluate(
        page, "document.querySelector('#report-body details > summary').innerText"
    )
    text = browser.evaluate(page, "document.body.innerText")
    headings = browser.evaluate(page, "document.querySelectorAll('#report-body h3').length")

    assert summary and headings >= 1
    assert "```" not in text and "<details>" not in text and "<sub>" not in text
    assert page_width(browser, page) <= SCREEN_WIDTH
    shoot(browser, page, tmp_path / "report.png")


@pytest.fixture
def bot_dashboard(
    sqlite_engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path
) -> Iterator[str]:
    """The service after a merged PR's webhook: mined, built, reported and posted."""
    bot = make_bot(sqlite_engine, github_emulator, tmp_path)
    bot.deliver("pull_request", merged_event(merge_sha=bot.merge_sha))
    bot.worker.run_until_idle()
    with serve(bot.client.app) as url:
        yield url


READ_COVERAGE = """JSON.stringify([...document.querySelectorAll('#coverage tbody tr')].map(tr => ({
  category: tr.dataset.category, verdict: tr.dataset.verdict, missed: tr.dataset.missed,
  probes: tr.querySelector('.probes').innerText.trim(),
  survivors: tr.querySelector('.survivors').innerText.trim()})))"""


def test_task_page_shows_the_coverage_table(bot_dashboard: str, browser: DevTools) -> None:
    page = browser.open(f"{bot_dashboard}/tasks/acme__infra-lib-{NUMBER}")

    rows = json.loads(browser.evaluate(page, READ_COVERAGE))

    assert [(r["category"], r["verdict"], r["missed"]) for r in rows] == [
        ("resource.traffic", "unchecked", "yes"),
        ("functional", "checked", "no"),
    ]
    assert (
        "probes/test_probe_sync_traffic.py [accepted]: snapshot, hollow, adversarial #1"
        in rows[0]["probes"]
    )
    assert (
        "force_branch_true pkg/sync.py:4 · caught by probes/test_probe_sync_traffic.py"
        in rows[0]["survivors"]
    )


def test_front_page_funnel_and_report_after_a_merge(bot_dashboard: str, browser: DevTools) -> None:
    front = browser.open(bot_dashboard + "/")
    funnel = browser.evaluate(
        front,
        f"[...document.querySelectorAll('#funnel tr[data-repo=\"{BOT_REPO}\"] td')]"
        ".map(td => td.innerText)",
    )
    verdict = browser.evaluate(front, "document.querySelector('#prs tbody tr').dataset.verdict")
    report = browser.open(f"{bot_dashboard}/reports/{BOT_REPO}/{NUMBER}")
    status = browser.evaluate(report, "document.getElementById('report-status').innerText")
    body = browser.evaluate(report, "document.getElementById('report-body').innerText")

    assert funnel == [BOT_REPO, "1", "1", "0", "1", "1", "1"]
    assert verdict == "gaps"
    assert status == "posted"
    assert "pkg/sync.py" in body  # where the surviving patch breaks the promise
    assert "probewatch:report" not in body and "```" not in body

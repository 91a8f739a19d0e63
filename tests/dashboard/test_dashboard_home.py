"""The home page lists recent PRs, newest merge first, each with one verdict and links to its
report and task; the tasks and reports lists link to every page; every page has navigation."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from bot.service.jobs.kinds import JobKind, PRPayload, job_create
from bot.service.recent_prs import PRVerdict, failed_builds, recent_prs
from task_registry.db import session_scope
from task_registry.jobs import enqueue_job
from task_registry.reports import get_report, record_feedback, save_report
from task_registry.types import JobStatus
from tests.dashboard_support import (
    CLEAN,
    FAILED,
    FAILURE,
    GAPS,
    NOT_VALIDATED,
    REPO,
    WAITING,
    dashboard_app,
    seed_dashboard,
)

ROW = re.compile(r'<tr data-pr="([^"]+)" data-verdict="([^"]+)">(.*?)</tr>', re.DOTALL)


@pytest.fixture
def client(sqlite_engine: Engine) -> TestClient:
    seed_dashboard(sqlite_engine)
    return dashboard_app(sqlite_engine)


def rows(page: str) -> list[tuple[str, str, str]]:
    return [(pr, verdict, body) for pr, verdict, body in ROW.findall(page)]


def test_home_lists_each_pr_newest_first_with_its_verdict(
    client: TestClient, sqlite_engine: Engine
) -> None:
    page = client.get("/").text
    with session_scope(sqlite_engine) as session:
        summary = get_report(session=session, repo=REPO, pull_number=GAPS).summary

    assert [(pr, verdict) for pr, verdict, _ in rows(page)] == [
        (f"{REPO}#{NOT_VALIDATED}", "not-validated"),
        (f"{REPO}#{FAILED}", "failed"),
        (f"{REPO}#{WAITING}", "waiting-gpu"),
        (f"{REPO}#{CLEAN}", "clean"),
        (f"{REPO}#{GAPS}", "gaps"),
    ]
    shown = {pr: body for pr, _, body in rows(page)}
    assert FAILURE in shown[f"{REPO}#{FAILED}"]
    assert "1 test(s) wait for a GPU runner" in shown[f"{REPO}#{WAITING}"]
    assert f'<td class="detail">{summary}</td>' in shown[f"{REPO}#{GAPS}"]


def test_each_pr_links_to_its_report_and_its_task_when_they_exist(client: TestClient) -> None:
    shown = {pr: body for pr, _, body in rows(client.get("/").text)}

    gaps = shown[f"{REPO}#{GAPS}"]
    assert f'href="/reports/{REPO}/{GAPS}"' in gaps
    assert f'href="/tasks/acme__infra-lib-{GAPS}"' in gaps
    assert f'href="/tasks/acme__infra-lib-{WAITING}"' in shown[f"{REPO}#{WAITING}"]
    assert "href=" not in shown[f"{REPO}#{NOT_VALIDATED}"]  # nothing to open yet
    for link in re.findall(r'href="(/(?:reports|tasks)/[^"]+)"', client.get("/").text):
        assert client.get(link).status_code == 200, link


def test_the_list_is_bounded_and_keeps_the_newest(sqlite_engine: Engine) -> None:
    seed_dashboard(sqlite_engine)
    with session_scope(sqlite_engine) as session:
        newest = recent_prs(session, limit=2)
    assert [(r.number, r.verdict) for r in newest] == [
        (NOT_VALIDATED, PRVerdict.not_validated),
        (FAILED, PRVerdict.failed),
    ]


def test_a_report_the_maintainers_ignores_emptied_reads_clean(sqlite_engine: Engine) -> None:
    """The bare table still has the survivor; the stored report (ignores applied) has none."""
    seed_dashboard(sqlite_engine)
    with session_scope(sqlite_engine) as session:
        report = get_report(session=session, repo=REPO, pull_number=GAPS)
        save_report(session=session, report=report, actionable=False)
    with session_scope(sqlite_engine) as session:
        verdicts = {r.number: r.verdict for r in recent_prs(session)}
    assert verdicts[GAPS] is PRVerdict.clean


def test_a_later_build_that_succeeds_clears_the_failure(sqlite_engine: Engine) -> None:
    seed_dashboard(sqlite_engine)
    payload = PRPayload(repo=REPO, number=FAILED)
    with session_scope(sqlite_engine) as session:
        assert failed_builds(session) == {(REPO, FAILED): FAILURE}
        job, _ = enqueue_job(
            session=session, job_in=job_create(JobKind.build_report, payload, "rerun")
        )
        job.status = JobStatus.done
        session.add(job)
    with session_scope(sqlite_engine) as session:
        assert failed_builds(session) == {}
        verdicts = {r.number: r.verdict for r in recent_prs(session)}
    assert verdicts[FAILED] is PRVerdict.not_validated


def test_the_tasks_list_links_each_task_and_its_report(client: TestClient) -> None:
    page = client.get("/tasks").text
    listed = re.findall(r'<tr data-task="([^"]+)" data-verdict="([^"]+)">', page)

    assert listed == [
        (f"acme__infra-lib-{WAITING}", "waiting-gpu"),
        (f"acme__infra-lib-{CLEAN}", "clean"),
        (f"acme__infra-lib-{GAPS}", "gaps"),
    ]
    assert f'href="/tasks/acme__infra-lib-{GAPS}"' in page
    assert f'href="/reports/{REPO}/{GAPS}"' in page


def test_the_reports_list_shows_what_each_report_finds(client: TestClient) -> None:
    page = client.get("/reports").text
    listed = dict(re.findall(r'<tr data-pr="([^"]+)">.*?class="badge (verdict-\w+)"', page, re.S))

    assert listed == {f"{REPO}#{GAPS}": "verdict-gaps", f"{REPO}#{CLEAN}": "verdict-clean"}
    assert f'href="/tasks/acme__infra-lib-{GAPS}"' in page


def test_the_reports_list_shows_the_not_useful_share_by_month(
    client: TestClient, sqlite_engine: Engine
) -> None:
    assert "no vote yet" in client.get("/reports").text
    with session_scope(sqlite_engine) as session:
        for author, useful in (("a", True), ("b", False), ("c", False), ("d", False)):
            record_feedback(
                session=session,
                repo=REPO,
                pull_number=GAPS,
                adversarial_id=1,
                operator="constant",
                useful=useful,
                author=author,
            )
        record_feedback(  # a changed mind replaces the vote: 2 useful, 2 not useful
            session=session,
            repo=REPO,
            pull_number=GAPS,
            adversarial_id=1,
            operator="constant",
            useful=True,
            author="b",
        )
    page = client.get("/reports").text
    month = re.search(r'<tr data-month="([\d-]+)"><td>[\d-]+</td>(.*?)</tr>', page)
    assert month is not None
    assert month.group(2) == "<td>2</td><td>2</td><td>50%</td>"


@pytest.mark.parametrize(
    ("path", "current"),
    [
        ("/", "/"),
        ("/tasks", "/tasks"),
        (f"/tasks/acme__infra-lib-{GAPS}", "/tasks"),
        ("/reports", "/reports"),
        (f"/reports/{REPO}/{GAPS}", "/reports"),
        ("/candidates", "/candidates"),
        ("/leaderboard", "/leaderboard"),
    ],
)
def test_every_page_navigates_to_every_section(client: TestClient, path: str, current: str) -> None:
    page = client.get(path).text
    nav = page.split('<nav id="site-nav">', 1)[1].split("</nav>", 1)[0]

    assert re.findall(r'href="([^"]+)"', nav) == [
        "/",
        "/tasks",
        "/reports",
        "/candidates",
        "/leaderboard",
        "/docs",
    ]
    assert re.findall(r'href="([^"]+)" aria-current="page"', nav) == [current]

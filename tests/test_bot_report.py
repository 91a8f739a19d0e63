"""The Markdown report: snapshots of its layout, and the rules a wrong renderer would break
(problems first, no @-mentions, no raw HTML from quotes, under GitHub's limit with a link)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from bot.report.coverage import CoverageTable, ProbeCell, PromiseRow, Survivor
from bot.report.render import (
    BODY_BUDGET,
    GITHUB_BODY_LIMIT,
    REPORT_MARKER,
    fence,
    render_report,
    short_diff,
)

SNAPSHOTS = Path(__file__).with_name("snapshots")
UPDATE = os.environ.get("PROBEWATCH_UPDATE_SNAPSHOTS") == "1"
URL = "https://probewatch.example/reports/acme/infra-lib/5"
PATCH = """diff --git a/pkg/sync.py b/pkg/sync.py
--- a/pkg/sync.py
+++ b/pkg/sync.py
@@ -1,3 +1,4 @@
 def sync(params, send):
-    if value.version != _sent.get(name):
+    if True:
         send(name, value)
"""


def survivor(number: int = 1, caught: tuple[str, ...] = ("probes/test_traffic.py",)) -> Survivor:
    return Survivor(
        id=number,
        operator="force_branch_true",
        file="pkg/sync.py",
        line=2,
        description="sends every parameter",
        patch=PATCH,
        caught_by=caught,
    )


def table(*rows: PromiseRow) -> CoverageTable:
    return CoverageTable("acme/infra-lib", 5, "acme__infra-lib-5", "c" * 40, 1, rows)


TRAFFIC = PromiseRow(
    category="resource.traffic",
    quote="Reduces weight-sync traffic by sending only changed parameters.",
    verdict="unchecked",
    quantity="only changed parameters",
    probes=(ProbeCell("probes/test_traffic.py", "accepted", ("hollow", "snapshot")),),
    survivors=(survivor(),),
)
STATE = PromiseRow(
    category="state",
    quote="reset() clears the cache",
    verdict="exercised",
    survivors=(survivor(2, caught=()),),
)
FUNCTIONAL = PromiseRow(category="functional", quote="final weights match", verdict="checked")


def check_snapshot(name: str, body: str) -> None:
    path = SNAPSHOTS / name
    if UPDATE:
        path.write_text(body, encoding="utf-8")
    if not path.exists():
        pytest.fail(f"no snapshot {name}: run with PROBEWATCH_UPDATE_SNAPSHOTS=1 and review it")
    assert body == path.read_text(encoding="utf-8"), (
        f"{name} changed (PROBEWATCH_UPDATE_SNAPSHOTS=1)"
    )


def test_report_with_problems_matches_its_snapshot() -> None:
    check_snapshot(
        "report_problems.md", render_report(table(FUNCTIONAL, TRAFFIC, STATE), full_url=URL).body
    )


def test_report_without_problems_matches_its_snapshot() -> None:
    rendered = render_report(table(FUNCTIONAL), full_url=URL)
    check_snapshot("report_all_checked.md", rendered.body)
    assert not rendered.actionable


def test_problems_come_before_what_is_checked_and_the_summary_is_last() -> None:
    body = render_report(table(FUNCTIONAL, TRAFFIC), full_url=URL).body
    assert body.startswith(REPORT_MARKER + "\n")
    assert (
        body.index("resource.traffic")
        < body.index("**What is checked**")
        < body.index("final weights match")
    )
    assert body.rstrip().splitlines()[-1].startswith("probewatch: 1 of 2 promise(s) not checked")


def test_a_checked_promise_with_a_survivor_is_not_a_problem() -> None:
    row = replace(TRAFFIC, verdict="checked")
    assert not render_report(table(row), full_url=URL).actionable


def test_an_unchecked_promise_without_evidence_is_not_a_problem() -> None:
    row = replace(TRAFFIC, survivors=())
    rendered = render_report(table(FUNCTIONAL, row), full_url=URL)
    assert not rendered.actionable
    # ...nor is it called checked.
    assert rendered.summary == (
        "probewatch: the PR's tests check 1 of 2 promise(s) probewatch found; "
        "no surviving patch shows a gap in the other 1."
    )


def test_quoted_text_cannot_mention_anyone_or_inject_html() -> None:
    row = replace(TRAFFIC, quote="Thanks @alice and @org/team <!-- x --> <img src=x>")
    body = render_report(table(row), full_url=URL).body
    assert "@alice" not in body and "@org/team" not in body
    assert "@&#8203;alice" in body
    assert "<img" not in body and "<!-- x -->" not in body


def test_a_long_report_is_cut_to_fit_with_a_link_to_the_full_report() -> None:
    big_patch = "\n".join(f"+line {i} " + "x" * 200 for i in range(39))
    rows = [
        replace(TRAFFIC, quote=f"promise {i}", survivors=(replace(survivor(i), patch=big_patch),))
        for i in range(40)
    ]
    rendered = render_report(table(*rows), full_url=URL)
    assert len(rendered.body) <= BODY_BUDGET < GITHUB_BODY_LIMIT
    assert rendered.omitted > 0
    assert f"…and {rendered.omitted} more: see the [full report]({URL})" in rendered.body
    assert "promise 0" in rendered.body and "promise 39\n" not in rendered.body


def test_fence_outgrows_backticks_inside_the_diff() -> None:
    text = "+ doc = '''```python\n+ x```'''"
    block = fence(text, "diff")
    assert block.startswith("````diff\n") and block.endswith("\n````")


def test_short_diff_keeps_the_head_and_counts_the_rest() -> None:
    patch = "\n".join(f"+{i}" for i in range(50))
    assert short_diff(patch, limit=3) == "+0\n+1\n+2\n… 47 more lines"


@pytest.mark.parametrize("count", [0, 1])
def test_body_hash_follows_the_body(count: int) -> None:
    rows = (FUNCTIONAL, TRAFFIC)[: count + 1]
    rendered = render_report(table(*rows), full_url=URL)
    other = render_report(table(*rows), full_url=URL + "?v=2")
    assert rendered.body_hash == render_report(table(*rows), full_url=URL).body_hash
    assert rendered.body_hash != other.body_hash

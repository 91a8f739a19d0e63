"""The Markdown report: snapshots of its layout, and the rules a wrong renderer would break
(problems first, no @-mentions, no raw HTML from quotes, under GitHub's limit with a link)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from bot.report.render import (
    BODY_BUDGET,
    GITHUB_BODY_LIMIT,
    REPORT_MARKER,
    ReportInput,
    fence,
    render_report,
    short_diff,
)
from task_registry.coverage import (
    AdversarialCoverage,
    ControlRef,
    CoverageTable,
    ProbeCoverage,
    PromiseCoverage,
)

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"
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
TRAFFIC_PROBE = "probes/test_traffic.py"


@dataclass(frozen=True)
class Survivor:
    number: int
    caught_by: tuple[str, ...]
    patch: str = PATCH


@dataclass(frozen=True)
class Row:
    """A promise as the report shows it; ``table`` turns rows into the stored model."""

    category: str
    quote: str
    verdict: str
    quantity: str | None = None
    probes: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # path, status, rejects
    survivors: tuple[Survivor, ...] = ()


def survivor(number: int = 1, caught: tuple[str, ...] = (TRAFFIC_PROBE,)) -> Survivor:
    return Survivor(number, caught)


def table(*rows: Row) -> ReportInput:
    promises, probes, adversarials, patches = [], [], [], {}
    for position, row in enumerate(rows):
        for path, status, rejects in row.probes:
            refs = [ControlRef(kind=kind) for kind in rejects]
            probes.append(
                ProbeCoverage(path=path, promise_position=position, status=status, rejects=refs)
            )
        for s in row.survivors:
            adversarials.append(
                AdversarialCoverage(
                    id=str(s.number),
                    operator="force_branch_true",
                    path="pkg/sync.py",
                    line=2,
                    promise_category=row.category,
                    description="sends every parameter",
                    survives_original=True,
                    rejected_by=list(s.caught_by),
                )
            )
            patches[str(s.number)] = s.patch
        promises.append(
            PromiseCoverage(
                position=position,
                category=row.category,
                quote=row.quote,
                quantity=row.quantity,
                verdict=row.verdict,
                probes=[path for path, _, _ in row.probes],
                survivors=[str(s.number) for s in row.survivors],
            )
        )
    coverage = CoverageTable(
        instance_id="acme__infra-lib-5",
        promises=promises,
        probes=probes,
        adversarials=adversarials,
    )
    return ReportInput(
        repo="acme/infra-lib",
        pull_number=5,
        table=coverage,
        merge_commit="c" * 40,
        task_id=1,
        patches=patches,
    )


TRAFFIC = Row(
    category="resource.traffic",
    quote="Reduces weight-sync traffic by sending only changed parameters.",
    verdict="unchecked",
    quantity="only changed parameters",
    probes=((TRAFFIC_PROBE, "accepted", ("hollow", "snapshot")),),
    survivors=(survivor(),),
)
STATE = Row(
    category="state",
    quote="reset() clears the cache",
    verdict="exercised",
    survivors=(survivor(2, caught=()),),
)
FUNCTIONAL = Row(category="functional", quote="final weights match", verdict="checked")


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

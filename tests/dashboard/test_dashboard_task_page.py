"""The task page: the coverage table renders the PR's Markdown (escaped: PR text is untrusted),
and the validation matrix says, for each control, what it must do and whether it did."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from bot.service.validation_matrix import Mark, build_matrix
from task_registry.coverage import (
    CONTRADICTED,
    AdversarialCoverage,
    ControlRef,
    CoverageTable,
    ProbeCoverage,
    stored_coverage,
)
from task_registry.db import session_scope
from task_registry.models import AdversarialPatchCreate
from task_registry.swebench import instance_id_for
from task_registry.tasks import add_adversarial, find_task
from task_registry.types import Control, ProbeStatus, PromiseCategory, PromiseVerdict
from tests.dashboard_support import GAPS, REPO, WAITING, dashboard_app, seed_dashboard
from tests.factories import GOLDEN

SNAPSHOT, HOLLOW = ControlRef(kind=Control.snapshot), ControlRef(kind=Control.hollow)
CELL = re.compile(
    r'<td class="cell mark-[\w-]+" data-mark="([^"]+)"><span class="mark">.</span> ([^<]*)</td>'
)


def adversarial(id_: str, *, survives: bool | None) -> AdversarialCoverage:
    return AdversarialCoverage(
        id=id_, operator="drop_call", path="pkg/sync.py", line=4, survives_original=survives
    )


def probe(
    path: str, *, passes: int = 3, rejects: tuple[ControlRef, ...] = (), **fields: object
) -> ProbeCoverage:
    return ProbeCoverage(
        path=path,
        golden_passes=passes,
        golden_runs=3,
        rejects=list(rejects),
        **fields,  # type: ignore[arg-type]
    )


def test_each_cell_says_whether_the_control_did_what_it_must() -> None:
    caught = ControlRef(kind=Control.adversarial, adversarial="2")
    table = CoverageTable(
        instance_id="acme__lib-1",
        probes=[
            probe(
                "probes/test_good.py",
                rejects=(SNAPSHOT, HOLLOW, caught),
                status=ProbeStatus.accepted,
            ),
            probe(
                "probes/test_flaky.py", passes=2, rejects=(SNAPSHOT,), status=ProbeStatus.rejected
            ),
            ProbeCoverage(path="probes/test_gpu.py", status=ProbeStatus.waiting),
        ],
        adversarials=[adversarial("1", survives=False), adversarial("2", survives=True)],
        original_rejects=[SNAPSHOT],
    )

    matrix = build_matrix(table, runs=[])
    cells = {row.label: [(c.mark, c.text) for c in row.cells] for row in matrix.rows}

    assert [c.title for c in matrix.columns] == [
        "PR's tests",
        "probes/test_good.py",
        "probes/test_flaky.py",
        "probes/test_gpu.py",
    ]
    waits = (Mark.waiting, "waits for a GPU runner")
    assert cells["golden patch"] == [
        (Mark.not_run, "not run"),
        (Mark.met, "3/3 passed"),
        (Mark.missed, "2/3 passed"),
        waits,
    ]
    assert cells["snapshot"] == [
        (Mark.met, "rejected"),
        (Mark.met, "rejected"),
        (Mark.met, "rejected"),
        waits,
    ]
    assert cells["hollow patch"] == [
        (Mark.missed, "passes"),
        (Mark.met, "rejected"),
        (Mark.missed, "passes"),
        waits,
    ]
    assert cells["adversarial #1"][0] == (Mark.met, "rejected")
    assert {mark for mark, _ in cells["adversarial #1"][1:]} == {Mark.not_run}
    assert cells["adversarial #2"] == [
        (Mark.missed, "survives"),
        (Mark.met, "rejected"),
        (Mark.missed, "passes"),
        waits,
    ]
    assert [row.must for row in matrix.rows[:2]] == [
        "pass, every run, no skip",
        "fail (be rejected)",
    ]


def test_a_table_no_validation_has_judged_has_no_matrix() -> None:
    table = CoverageTable(
        instance_id="acme__lib-1", probes=[ProbeCoverage(path="probes/test_p.py")]
    )
    assert build_matrix(table, runs=[]).rows == []


@pytest.fixture
def client(sqlite_engine: Engine) -> TestClient:
    seed_dashboard(sqlite_engine)
    return dashboard_app(sqlite_engine)


def test_the_page_shows_the_matrix_with_a_mark_per_cell(client: TestClient) -> None:
    page = client.get(f"/tasks/{instance_id_for(REPO, GAPS)}").text
    matrix = page.split('id="validation"', 1)[1].split("</table>", 1)[0]
    rows = dict(re.findall(r'<tr data-control="(\w+)">(.*?)</tr>', matrix, re.S))

    assert CELL.findall(rows["golden"]) == [("met", "3/3 passed"), ("met", "3/3 passed")]
    assert CELL.findall(rows["snapshot"]) == [("missed", "passes"), ("met", "rejected")]
    assert "completed" not in matrix
    runs = page.split('id="runs"', 1)[1]
    assert CELL.findall(runs) == [
        ("met", "passes every test"),
        ("met", "passes every test"),
        ("met", "passes every test"),
        ("met", "passes every test"),
        ("met", "the probes reject it"),
    ]


def test_a_task_that_waits_for_a_gpu_lists_the_test_and_why(client: TestClient) -> None:
    page = client.get(f"/tasks/{instance_id_for(REPO, WAITING)}").text
    waiting = page.split('id="waiting"', 1)[1].split("</table>", 1)[0]

    assert "tests/<wbr>gpu/<wbr>test_sync_on_two_gpus.py" in waiting
    assert "needs 2 GPUs (marker <code>gpu</code>)" in waiting


def test_quotes_render_markdown_and_show_raw_html_as_text(
    client: TestClient, sqlite_engine: Engine
) -> None:
    instance = instance_id_for(REPO, GAPS)
    table = _stored(sqlite_engine, instance)
    table.promises[0].quote = "sends only `changed` tensors <script>alert(1)</script> **fast**"
    _store(sqlite_engine, instance, table)

    page = client.get(f"/tasks/{instance}").text
    quote = page.split('<td class="quote">', 1)[1].split("</td>", 1)[0]

    assert quote.startswith("sends only <code>changed</code> tensors")
    assert "&lt;script&gt;alert(1)&lt;/script&gt; <strong>fast</strong>" in quote
    assert "`" not in quote and "<script>" not in page


def test_survivors_no_promise_lists_are_shown_apart_with_those_set_aside(
    client: TestClient, sqlite_engine: Engine
) -> None:
    instance = instance_id_for(REPO, GAPS)
    table = _stored(sqlite_engine, instance)
    linked = table.linked()
    table.adversarials += [
        AdversarialCoverage(
            id="90",
            operator="early_return",
            path="pkg/init.py",
            line=8,
            description="returns before `self.ready = True` <script>x()</script>",
            symbols=["Engine", "Engine.warm_up"],
            survives_original=True,
        ),
        AdversarialCoverage(
            id="91",
            operator="reduction_swap",
            path="pkg/mask.py",
            line=3,
            survives_original=True,
            equivalent="same outputs on every recorded input",
        ),
        AdversarialCoverage(
            id="92", operator="drop_call", path="pkg/gone.py", line=1, survives_original=False
        ),
    ]
    _store(sqlite_engine, instance, table)

    assert [a.id for a in table.unlinked()] == ["90"]
    assert linked and not linked & {"90", "91", "92"}
    page = client.get(f"/tasks/{instance}").text
    other = page.split('id="other-survivors"', 1)[1].split("</table>", 1)[0]
    rows = dict(re.findall(r'<tr data-survivor="(\d+)" data-place="([\w-]+)">', other))

    assert rows == {"90": "unlinked", "91": "set-aside"}
    assert "returns before <code>" not in other and "returns before `self.ready = True`" in other
    assert "&lt;script&gt;x()&lt;/script&gt;" in other and "<script>" not in page
    assert "set aside: same outputs on every recorded input" in other
    assert ':8 <span class="place">in <code>Engine.warm_up</code></span>' in other  # its place
    assert "<strong>not caught</strong>" in other
    # the promise rows keep their own survivors; none of them is listed twice
    assert not any(f'data-survivor="{i}"' in other for i in linked)


def test_a_survivor_listed_apart_shows_its_own_hunk_beside_its_description(
    client: TestClient, sqlite_engine: Engine
) -> None:
    instance = instance_id_for(REPO, GAPS)
    with session_scope(sqlite_engine) as session:
        task = find_task(session=session, instance_id=instance)
        assert task is not None and task.id is not None
        stored = add_adversarial(
            session=session,
            patch_in=AdversarialPatchCreate(
                task_id=task.id,
                operator="constant_change",
                file="pkg/sync.py",
                line=6,
                description="value.version -> None",
                patch=GOLDEN.replace("_sent[name] = value.version", "_sent[name] = None"),
            ),
        )
        patched = str(stored.id)
    table = _stored(sqlite_engine, instance)
    table.adversarials += [
        AdversarialCoverage(
            id=patched,
            operator="constant_change",
            path="pkg/sync.py",
            line=6,
            description="value.version -> None",
            survives_original=True,
        ),
        # listed apart too, but its patch is not stored: the description alone
        AdversarialCoverage(
            id="93", operator="drop_call", path="pkg/sync.py", line=5, survives_original=True
        ),
    ]
    _store(sqlite_engine, instance, table)

    other = client.get(f"/tasks/{instance}").text.split('id="other-survivors"', 1)[1]
    rows = dict(
        re.findall(r'<tr data-survivor="(\d+)" data-place="[\w-]+">(.*?)</tr>', other, re.S)
    )
    hunk = rows[patched].split('<pre class="hunk">', 1)[1].split("</pre>", 1)[0]

    assert "value.version -&gt; None" in rows[patched]
    # the mutation alone, against the merged code around it: not the rest of the PR's change
    changed = [line for line in hunk.splitlines() if line.startswith(("-", "+"))]
    assert changed == [
        "-            _sent[name] = value.version",
        "+            _sent[name] = None",
    ]
    assert "             send(name, value)" in hunk.splitlines()  # a context line
    assert '<pre class="hunk">' not in rows["93"]


def test_a_table_whose_survivors_all_break_a_promise_has_no_other_section(
    client: TestClient,
) -> None:
    page = client.get(f"/tasks/{instance_id_for(REPO, GAPS)}").text
    assert 'id="other-survivors"' not in page


def _stored(engine: Engine, instance: str) -> CoverageTable:
    with session_scope(engine) as session:
        task = find_task(session=session, instance_id=instance)
        assert task is not None
        return stored_coverage(task)


def _store(engine: Engine, instance: str, table: CoverageTable) -> None:
    with session_scope(engine) as session:
        task = find_task(session=session, instance_id=instance)
        assert task is not None
        task.coverage = table.model_dump(mode="json")
        session.add(task)


def test_a_promise_read_as_checked_beside_a_survivor_of_its_kind_says_a_gap_passes(
    client: TestClient, sqlite_engine: Engine
) -> None:
    instance = instance_id_for(REPO, GAPS)
    table = _stored(sqlite_engine, instance)
    row = next(p for p in table.promises if p.survivors)
    row.verdict, row.category = PromiseVerdict.checked, PromiseCategory.state
    for patch in table.survivors_of(row):  # of the promise's kind, in its own function
        patch.promise_category, patch.symbols = PromiseCategory.state, ["sync"]
    row.concerns = ["sync"]
    _store(sqlite_engine, instance, table)

    page = client.get(f"/tasks/{instance}").text
    coverage = page.split('id="coverage"', 1)[1].split("</table>", 1)[0]
    (cells,) = re.findall(r'<tr class="missed" data-category="state"(.*?)</tr>', coverage, re.S)
    assert 'data-verdict="checked" data-missed="yes"' in cells
    assert f'<td class="verdict">{CONTRADICTED}</td>' in cells

"""The Markdown report a maintainer reads: snapshots of its layout, and the rules a wrong
renderer breaks (one entry per surviving patch, the mutation's own hunk, verdict first with
context, no probe names, no contradictions, a length budget, no @-mentions or raw HTML,
under GitHub's limit with a link)."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from bot.report.evidence import RunContext, gaps, mutation_hunk
from bot.report.render import (
    BODY_BUDGET,
    GITHUB_BODY_LIMIT,
    REPORT_MARKER,
    ReportInput,
    entry_ids,
    fence,
    fit_markdown,
    render_full_report,
    render_report,
    short_diff,
)
from probe_builder.coverage import coverage_text
from task_registry.coverage import (
    CONTRADICTED,
    AdversarialCoverage,
    ControlRef,
    CoverageTable,
    ProbeCoverage,
    PromiseCoverage,
    WaitingTest,
)

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"
UPDATE = os.environ.get("PROBEWATCH_UPDATE_SNAPSHOTS") == "1"
URL = "https://probewatch.example/reports/acme/infra-lib/5"
TRAFFIC_PROBE = "probes/test_traffic.py"
LINE_BUDGET = 60

# The PR: a changelog line first, then the code the promises are about.
GOLDEN = """diff --git a/CHANGELOG.md b/CHANGELOG.md
--- a/CHANGELOG.md
+++ b/CHANGELOG.md
@@ -1,2 +1,3 @@
 # Changes
+- Weight sync sends only changed parameters.
{blank}
diff --git a/pkg/sync.py b/pkg/sync.py
--- a/pkg/sync.py
+++ b/pkg/sync.py
@@ -1,3 +1,9 @@
 def sync(params, send):
-    for name, value in params.items():
-        send(name, value)
+    for name, value in params.items():
+        if value.version != _sent.get(name):
+            send(name, value)
+            _sent[name] = value.version
+
+
+def reset():
+    _sent.clear()
""".format(blank=" ")


def mutated(old: str, new: str) -> str:
    """The golden patch with one of its added lines changed: what a mutant's patch is."""
    assert f"+{old}\n" in GOLDEN
    return GOLDEN.replace(f"+{old}\n", f"+{new}\n")


BRANCH = mutated("        if value.version != _sent.get(name):", "        if True:")
CLEAR = mutated("    _sent.clear()", "    pass")


@dataclass(frozen=True)
class Survivor:
    number: int
    caught_by: tuple[str, ...]
    patch: str = BRANCH
    line: int = 3
    exercised_by: tuple[str, ...] = ("tests/test_sync.py::test_sync_sends",)


@dataclass(frozen=True)
class Row:
    """A promise as the report shows it; ``report`` turns rows into the stored model."""

    category: str
    quote: str
    verdict: str
    quantity: str | None = None
    probes: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # path, status, rejects
    survivors: tuple[Survivor, ...] = ()


def survivor(number: int = 1, caught: tuple[str, ...] = (TRAFFIC_PROBE,)) -> Survivor:
    return Survivor(number, caught)


def report(*rows: Row, context: RunContext | None = None) -> ReportInput:
    promises, probes, adversarials, patches = [], [], {}, {}
    for position, row in enumerate(rows):
        for path, status, rejects in row.probes:
            refs = [ControlRef(kind=kind) for kind in rejects]
            probes.append(
                ProbeCoverage(path=path, promise_position=position, status=status, rejects=refs)
            )
        for s in row.survivors:
            adversarials[str(s.number)] = AdversarialCoverage(
                id=str(s.number),
                operator="force_branch_true",
                path="pkg/sync.py",
                line=s.line,
                promise_category=row.category,
                description=f"'if check_{s.number}:' -> 'if True:'",
                survives_original=True,
                rejected_by=list(s.caught_by),
                reach="covering" if s.exercised_by else "unexecuted",
                exercised_by=list(s.exercised_by),
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
        adversarials=list(adversarials.values()),
        original_rejects=[ControlRef(kind="snapshot")],
    )
    return ReportInput(
        repo="acme/infra-lib",
        pull_number=5,
        table=coverage,
        merge_commit="c" * 40,
        task_id=1,
        patches=patches,
        golden_patch=GOLDEN,
        context=context or CONTEXT,
    )


CONTEXT = RunContext(
    runners=("local",),
    golden_passed=4,
    golden_tests=4,
    probe_runs=3,
    probe_passes=3,
    controls={"snapshot": True, "hollow": False},
    mutants=6,
    survivors=2,
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
    quote="reset() clears what was sent",
    verdict="exercised",
    survivors=(Survivor(2, (), CLEAR, 9, ()),),
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


def visible_lines(body: str) -> list[str]:
    """The non-blank lines a reader sees before unfolding anything."""
    shown, depth = [], 0
    for line in body.splitlines():
        opens = line.count("<details")
        if depth == 0 and line.strip() and not opens:
            shown.append(line)
        depth += opens - line.count("</details>")
    return shown


def entries(body: str) -> list[str]:
    return re.findall(r"^#### \d+\. .*$", body, flags=re.MULTILINE)


def test_report_with_gaps_matches_its_snapshot() -> None:
    check_snapshot(
        "report_problems.md", render_report(report(FUNCTIONAL, TRAFFIC, STATE), full_url=URL).body
    )


def test_report_without_gaps_matches_its_snapshot() -> None:
    rendered = render_report(report(FUNCTIONAL), full_url=URL)
    check_snapshot("report_all_checked.md", rendered.body)
    assert not rendered.actionable


def test_one_surviving_patch_breaking_several_promises_is_one_entry() -> None:
    # The same patch under four promises that restate one behaviour: one entry, listing them.
    rows = [replace(TRAFFIC, quote=f"sends only changed parameters, take {i}") for i in range(4)]
    body = render_report(report(*rows), full_url=URL).body
    assert len(entries(body)) == 1
    assert "breaks promises 1, 2, 3 and 4" in entries(body)[0]
    assert body.count("sends only changed parameters, take 0") == 2  # the entry, the table
    assert "take 1" not in body.split("<details>")[0]


def test_caught_is_said_once_and_the_same_for_every_promise_the_patch_breaks() -> None:
    # A probe written for promise 1 rejects the patch; promise 2 is broken by the same patch.
    other = replace(TRAFFIC, quote="no traffic for unchanged weights", probes=())
    rendered = render_report(report(TRAFFIC, other), full_url=URL)
    assert "no validated probe tests it yet" not in rendered.body
    assert rendered.body.count("Confirmed: a hidden probewatch test") == 1
    assert rendered.summary.endswith("a hidden probe confirms 1.")
    assert "1 gap in what #5 promises" in rendered.summary


def test_an_uncaught_patch_says_its_link_is_inferred() -> None:
    body = render_report(report(STATE), full_url=URL).body
    assert "Inferred from the code the patch changes: no validated probe tests it yet." in body


def test_a_patch_in_the_code_the_promise_is_about_names_that_code() -> None:
    placed = report(STATE)
    table = placed.table
    table.promises[0].concerns = ["Sender"]
    table.adversarials[0].symbols = ["Sender", "Sender.reset"]
    body = render_report(placed, full_url=URL).body
    assert "Inferred: the patch is in `Sender.reset`, the code this promise is about" in body
    # a place the promise is not about: the link rests on the kind of code changed
    table.adversarials[0].symbols = ["sync"]
    body = render_report(placed, full_url=URL).body
    assert "Inferred from the code the patch changes: no validated probe" in body


def test_the_diff_is_the_mutations_own_hunk_against_the_merged_code() -> None:
    body = render_report(report(TRAFFIC), full_url=URL).body
    diff = body.split("```diff\n", 1)[1].split("\n```", 1)[0].splitlines()
    assert "-        if value.version != _sent.get(name):" in diff
    assert "+        if True:" in diff
    assert 3 <= len(diff) <= 7
    assert "CHANGELOG" not in body


def test_mutation_hunk_of_a_removed_line_and_of_a_file_the_golden_patch_leaves_alone() -> None:
    assert mutation_hunk(GOLDEN, CLEAR, "pkg/sync.py") == (
        " \n def reset():\n-    _sent.clear()\n+    pass"
    )
    assert mutation_hunk(GOLDEN, GOLDEN, "pkg/sync.py") is None
    assert mutation_hunk(GOLDEN, "not a diff", "pkg/sync.py") is None


def test_no_probe_path_or_probe_code_appears() -> None:
    body = render_full_report(report(FUNCTIONAL, TRAFFIC, STATE), full_url=URL)
    assert TRAFFIC_PROBE not in body and "test_traffic" not in body


def test_the_verdict_comes_first_then_the_context() -> None:
    body = render_report(report(FUNCTIONAL, TRAFFIC, STATE), full_url=URL).body
    lines = body.splitlines()
    assert lines[0].startswith(REPORT_MARKER)  # and the entries' patches: <!-- … 1 2 -->
    assert entry_ids(body) == ["1", "2"]
    assert lines[1].startswith("### ⚠️ probewatch: 2 gaps in what #5 promises")
    context = lines[3]
    assert context.startswith("<sub>As of merge commit `cccccccccc`")
    for part in ("`local` (CPU only)", "passes 4 of 4 PR tests", "pre-change code fails them"):
        assert part in context
    assert "hollow patch passes them" in context and "2 of 6 mutants" in context


def test_each_entry_names_the_tests_that_run_the_line_and_what_would_catch_it() -> None:
    body = render_report(report(TRAFFIC, STATE), full_url=URL).body
    traffic, state = body.split("#### ")[1:3]
    assert "`test_sync.py::test_sync_sends` runs this line and passes anyway." in traffic
    assert "count what is sent" in traffic and "(promised: only changed parameters)" in traffic
    assert "None of the PR's tests run this line." in state
    assert "after `reset()`" in state


def test_the_wording_is_explained_once_and_the_config_file_named() -> None:
    body = render_report(report(TRAFFIC, STATE), full_url=URL).body
    assert body.count("*exercised*:") == 1
    assert "`.github/probewatch.yml`" in body and "/probewatch rerun" in body


@pytest.mark.parametrize("max_entries", [3, 1, 5])
def test_a_comment_shows_at_most_max_entries_gaps_and_counts_the_rest(max_entries: int) -> None:
    rows = [
        # each far enough from the others that no entry's hunk shows another's line
        replace(TRAFFIC, quote=f"promise {i}", survivors=(replace(survivor(i), line=3 + 10 * i),))
        for i in range(12)
    ]
    found = report(*rows).showing(max_entries)
    rendered = render_report(found, full_url=URL)
    assert len(entries(rendered.body)) == max_entries
    assert rendered.omitted == 12 - max_entries
    assert f"…and {12 - max_entries} more gaps on the [task page]({URL})" in rendered.body
    if max_entries <= 3:  # the default keeps the comment short
        assert len(visible_lines(rendered.body)) <= LINE_BUDGET
    assert len(entries(render_full_report(found, full_url=URL))) == 12  # the task page: all


def test_a_promise_read_as_checked_with_a_survivor_is_a_gap_that_says_so() -> None:
    # Running outweighs reading: the tests assert on the promise, yet a patch that breaks it
    # passes them, so the report shows the patch and never calls the promise checked.
    placed = report(FUNCTIONAL, replace(TRAFFIC, verdict="checked"))
    placed.table.promises[1].concerns = ["sync"]  # the function the patch lies in
    placed.table.adversarials[0].symbols = ["sync"]
    rendered = render_report(placed, full_url=URL)
    assert rendered.actionable and len(entries(rendered.body)) == 1
    assert f"(resource.traffic, {CONTRADICTED})" in rendered.body
    table = rendered.body.split("<details>")[1]
    assert f"| resource.traffic | {CONTRADICTED} |" in table
    assert "| functional | checked |" in table  # no survivor: the reading stands


def test_a_functional_promise_read_as_checked_keeps_its_reading_beside_a_survivor() -> None:
    # Some patch of a checked feature's code always survives (an argument, a log line); only
    # a survivor of a resource, state, mode or numeric promise's own kind outweighs the reading.
    placed = report(replace(TRAFFIC, category="functional", verdict="checked"))
    placed.table.promises[0].concerns = ["sync"]
    placed.table.adversarials[0].symbols = ["sync"]
    rendered = render_report(placed, full_url=URL)
    assert not rendered.actionable
    assert "| functional | checked |" in rendered.body
    # ... and so does any promise's where the patch lies outside the functions it is about
    elsewhere = report(replace(TRAFFIC, verdict="checked"))
    elsewhere.table.promises[0].concerns = ["sync"]
    elsewhere.table.adversarials[0].symbols = ["reset"]
    assert not render_report(elsewhere, full_url=URL).actionable


def test_an_unchecked_promise_without_evidence_is_not_a_gap_nor_called_checked() -> None:
    row = replace(TRAFFIC, survivors=())
    rendered = render_report(report(FUNCTIONAL, row), full_url=URL)
    assert not rendered.actionable
    assert rendered.summary == (
        "probewatch: no gap found in #5: its tests check 1 of 2 promises, and no patch "
        "that breaks the other 1 passes them."
    )


def test_a_task_whose_tests_all_wait_says_so_first() -> None:
    waiting = report(replace(TRAFFIC, survivors=()))
    table = waiting.table.model_copy(
        update={"waiting": [WaitingTest(path="tests/test_gpu.py", reason="needs 1 GPU")]}
    )
    rendered = render_report(replace(waiting, table=table, context=RunContext()), full_url=URL)
    first = rendered.body.splitlines()[1]
    assert first == (
        "### ⏳ probewatch: #5 waits for a runner that can run its tests (1 of its tests need a GPU)"
    )
    assert "not validated yet" in rendered.body and "tests/test_gpu.py" in rendered.body


def test_promise_numbers_match_probewatch_show() -> None:
    found = report(FUNCTIONAL, TRAFFIC, STATE)
    body = render_report(found, full_url=URL).body
    assert "breaks promise 2" in body and "breaks promise 3" in body
    shown = coverage_text(found.table)
    row = next(line for line in shown.splitlines() if "resource.traffic" in line)
    assert row.split("│")[1].strip() == "2"


def test_quoted_text_cannot_mention_anyone_or_inject_html() -> None:
    row = replace(TRAFFIC, quote="Thanks @alice and @org/team <!-- x --> <img src=x>")
    body = render_report(report(row), full_url=URL).body
    assert "@alice" not in body and "@org/team" not in body
    assert "@&#8203;alice" in body
    assert "<img" not in body and "<!-- x -->" not in body


def test_a_long_report_is_cut_to_fit_with_a_link_to_the_full_report() -> None:
    # A thousand gaps, each in code of its own: the comment shows three, counts the rest,
    # and stays within the limit.
    rows = [
        replace(
            TRAFFIC, quote=f"promise {i}", survivors=(Survivor(i, (TRAFFIC_PROBE,), line=10 * i),)
        )
        for i in range(1_000)
    ]
    found = report(*rows)
    rendered = render_report(found, full_url=URL)
    assert len(rendered.body) <= BODY_BUDGET < GITHUB_BODY_LIMIT
    assert rendered.omitted == 997
    assert f"…and 997 more gaps on the [task page]({URL})" in rendered.body
    assert "…and 970 more in the [full report]" in rendered.body  # the promise table's rows
    assert len(gaps(found.table)) == 1_000
    assert render_full_report(found, full_url=URL).count("\n| 1000 |") == 1


def test_a_cut_never_leaves_a_fence_or_a_details_block_open() -> None:
    body = (
        "head\n<details><summary>x</summary>\n\n```diff\n" + "+line\n" * 500 + "```\n</details>\n"
    )
    cut = fit_markdown(body, 400, URL)
    assert len(cut) <= 400
    assert cut.count("```") % 2 == 0
    assert cut.count("<details>") == cut.count("</details>")
    assert cut.endswith(f"see the [full report]({URL}).\n")


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
    rendered = render_report(report(*rows), full_url=URL)
    other = render_report(report(*rows), full_url=URL + "?v=2")
    assert rendered.body_hash == render_report(report(*rows), full_url=URL).body_hash
    assert rendered.body_hash != other.body_hash


def test_no_gap_is_said_only_for_what_ran_here() -> None:
    # One patch judged (it fails the PR's tests), two whose lines no test that ran reaches.
    found = report(replace(TRAFFIC, survivors=()))
    judged = AdversarialCoverage(id="9", operator="x", path="pkg/sync.py", survives_original=False)
    unjudged = [AdversarialCoverage(id=str(i), operator="x", path="pkg/sync.py") for i in (10, 11)]
    table = found.table.model_copy(update={"adversarials": [judged, *unjudged]})
    context = replace(CONTEXT, mutants=1, survivors=0, unjudged=2)
    body = render_report(replace(found, table=table, context=context), full_url=URL).body
    assert body.splitlines()[1] == (
        "### ⏳ probewatch: no gap found in #5 by the tests that run here; 2 of 3 patches wait "
        "for tests that cannot run here"
    )
    assert "2 more not judged: no test that runs here reaches them" in body


def _diff(before: list[str], after: list[str], context: int = 3) -> str:
    lines = difflib.unified_diff(
        [f"{line}\n" for line in before],
        [f"{line}\n" for line in after],
        "a/pkg/mod.py",
        "b/pkg/mod.py",
        n=context,
    )
    return "diff --git a/pkg/mod.py b/pkg/mod.py\n" + "".join(lines)


def test_mutation_hunk_when_the_patches_hunks_do_not_line_up() -> None:
    base = [f"x{n} = {n}" for n in range(1, 41)]
    merged = [*base]
    merged[4], merged[13], merged[30] = "x5 = five", "x14 = fourteen", "x31 = thirty-one"
    golden = _diff(base, merged)
    # a change between two golden hunks: the mutant's diff merges them into one
    between = [*merged]
    between[9] = "x10 = -10"
    assert mutation_hunk(golden, _diff(base, between), "pkg/mod.py") == (
        " x8 = 8\n x9 = 9\n-x10 = 10\n+x10 = -10\n x11 = 11\n x12 = 12"
    )
    # a line of the golden change removed, the patch written with more context
    gone = [line for line in merged if line != "x31 = thirty-one"]
    assert mutation_hunk(golden, _diff(base, gone, context=8), "pkg/mod.py") == (
        " x29 = 29\n x30 = 30\n-x31 = thirty-one\n x32 = 32\n x33 = 33"
    )
    # a line added far from every golden hunk
    added = [*merged[:37], "x = None", *merged[37:]]
    assert mutation_hunk(golden, _diff(base, added), "pkg/mod.py") == (
        " x36 = 36\n x37 = 37\n+x = None\n x38 = 38\n x39 = 39"
    )
    assert mutation_hunk(golden, _diff(base, merged, context=5), "pkg/mod.py") is None


def test_a_patch_beside_the_function_of_a_promise_read_as_checked_is_no_gap_of_it() -> None:
    placed = report(replace(TRAFFIC, verdict="checked", survivors=(survivor(1), survivor(2))))
    placed.table.promises[0].concerns = ["sync"]
    placed.table.adversarials[0].symbols = ["sync"]
    placed.table.adversarials[1].symbols = ["reset"]
    assert [g.patch.id for g in gaps(placed.table)] == ["1"]

"""The report as a check run: the title is the verdict, one annotation per gap at its line
in GitHub's format, and text cut without breaking Markdown."""

from __future__ import annotations

from dataclasses import replace

from bot.report.check import ANNOTATIONS_LIMIT, check_output
from bot.report.render import render_report
from tests.report.test_bot_report import FUNCTIONAL, STATE, TRAFFIC, URL, report, survivor


def output_for(*rows):  # type: ignore[no-untyped-def]
    found = report(*rows)
    rendered = render_report(found, full_url=URL)
    return check_output(found, body=rendered.body, summary=rendered.summary, full_url=URL)


def test_the_title_states_the_verdict() -> None:
    assert output_for(FUNCTIONAL, TRAFFIC, STATE).title.startswith("2 gaps in what #5 promises")
    assert output_for(FUNCTIONAL).title == "#5's tests check all 1 promises probewatch found"


def test_each_gap_is_a_warning_at_its_line() -> None:
    output = output_for(FUNCTIONAL, TRAFFIC, STATE)
    found = [(a.path, a.start_line, a.end_line, a.annotation_level) for a in output.annotations]
    assert found == [("pkg/sync.py", 3, 3, "warning"), ("pkg/sync.py", 9, 9, "warning")]
    first = output.annotations[0]
    assert "breaks promise 2" in first.message and "count what is sent" in first.message
    assert "test_traffic" not in first.message  # probes stay hidden here too
    github = output.as_github()["annotations"][0]
    assert set(github) == {"path", "start_line", "end_line", "annotation_level", "message", "title"}


def test_no_gap_no_annotation_and_at_most_fifty() -> None:
    assert output_for(FUNCTIONAL).annotations == []
    rows = [
        replace(TRAFFIC, quote=f"promise {i}", survivors=(replace(survivor(i), line=3 + i),))
        for i in range(60)
    ]
    assert len(output_for(*rows).annotations) == ANNOTATIONS_LIMIT


def test_without_its_task_the_stored_summary_still_titles_it() -> None:
    output = check_output(
        None, body="body", summary="probewatch: 1 gap in what #5 promises.", full_url=URL
    )
    assert (output.title, output.annotations, output.text) == (
        "1 gap in what #5 promises",
        [],
        "body",
    )


def test_the_hash_follows_the_annotations() -> None:
    one, two = output_for(TRAFFIC), output_for(TRAFFIC, STATE)
    assert one.hash == output_for(TRAFFIC).hash != two.hash

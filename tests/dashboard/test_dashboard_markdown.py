"""Markdown on the dashboard: the report renders as GitHub renders it (headings, tables, fenced
diffs, the <details> it folds patches into), only bare allowed raw tags stay HTML, and PR text
is Markdown with no raw HTML at all."""

from __future__ import annotations

import pytest

from bot.service.markdown_html import filter_raw_html, render_quoted, render_report

REPORT = """<!-- probewatch:report v1 -->
### probewatch · `pkg/sync.py`

<details><summary>Surviving patch <code>drop_call</code> &lt;b&gt;</summary>

```diff
-    send(name, value)
+    pass
```

</details>

| promise | PR's tests |
| --- | --- |
| sends `only` changed | unchecked |

<sub>fine print<br>second line</sub>
"""


def test_the_report_renders_headings_tables_code_and_details() -> None:
    html = str(render_report(REPORT))

    assert "<h3>probewatch · <code>pkg/sync.py</code></h3>" in html
    assert "<details><summary>Surviving patch <code>drop_call</code> &lt;b&gt;</summary>" in html
    assert (
        '<pre><code class="language-diff">-    send(name, value)\n+    pass\n</code></pre>' in html
    )
    assert "<td>sends <code>only</code> changed</td>" in html
    assert "<sub>fine print<br>second line</sub>" in html
    assert "```" not in html and "probewatch:report" not in html  # the marker is dropped


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("<details open>", "&lt;details open&gt;"),
        ('<code onclick="x()">', "&lt;code onclick=&#34;x()&#34;&gt;"),
        ("<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"),
        ("<DETAILS><Summary>s</Summary></DETAILS>", "<details><summary>s</summary></details>"),
        ("<br/>", "<br/>"),
        ("a <!-- hidden --> b", "a  b"),
        ("1 < 2 > 0", "1 &lt; 2 &gt; 0"),
    ],
)
def test_raw_html_keeps_only_bare_allowed_tags(raw: str, shown: str) -> None:
    assert filter_raw_html(raw) == shown


def test_a_raw_tag_in_a_report_paragraph_is_text() -> None:
    html = str(render_report("see <a href='javascript:x()'>here</a> and [link](javascript:x())"))
    assert "<a href" not in html and "&lt;a href=&#39;javascript:x()&#39;&gt;" in html
    assert "javascript:x())" in html  # markdown-it refuses the link: it stays text


def test_pr_text_renders_inline_markdown_with_no_raw_html() -> None:
    assert str(render_quoted("uses `cache` <details>x</details>")) == (
        "uses <code>cache</code> &lt;details&gt;x&lt;/details&gt;"
    )

"""The one Jinja2 environment every dashboard page renders with, and its filters.

Templates live in ``templates/`` beside this module. The filters turn stored text into HTML a
person can read: Markdown (escaped: PR text is untrusted), paths that may break at their
slashes, and dates.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from fastapi.templating import Jinja2Templates
from markupsafe import Markup, escape

from bot.service.markdown_html import render_quoted, render_quoted_block, render_report
from task_registry.swebench import instance_id_for

TEMPLATES = Jinja2Templates(directory=Path(__file__).with_name("templates"))
NAVIGATION = (
    ("/", "home"),
    ("/tasks", "tasks"),
    ("/reports", "reports"),
    ("/candidates", "candidates"),
    ("/leaderboard", "leaderboard"),
)


def breakable_path(path: str) -> Markup:
    """A path or test id that may wrap after each ``/`` or ``::`` (and nowhere else)."""
    text = str(escape(path))
    return Markup(text.replace("/", "/<wbr>").replace("::", "::<wbr>"))  # escaped above


def day(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d") if moment is not None else "—"


def current_section(path: str) -> str:
    """The navigation entry a page belongs to: the longest prefix that matches."""
    matches = [href for href, _ in NAVIGATION if path == href or path.startswith(href + "/")]
    return max(matches, key=len, default="")


TEMPLATES.env.filters.update(
    md=render_quoted,
    md_block=render_quoted_block,
    report_md=render_report,
    path=breakable_path,
    day=day,
)
TEMPLATES.env.globals.update(
    navigation=NAVIGATION, current_section=current_section, instance_id_for=instance_id_for
)

"""Markdown to HTML for the dashboard (markdown-it-py), safe for text a PR's author wrote.

Text quoted from a PR (promises, descriptions, reasons) is rendered with every raw HTML tag
shown as text. The report is rendered as GitHub renders a comment: CommonMark with tables,
and, because the report folds each surviving patch into ``<details>`` and sets its fine print
in ``<sub>``, its raw HTML is kept only for bare ``<details>``, ``<summary>``, ``<code>``,
``<br>``, ``<sub>`` and ``<sup>`` tags (no attributes, so nothing they carry can run); any
other tag is shown as text, attributes included, and comments (the report's hidden marker)
are dropped as GitHub drops them. Links pass markdown-it's own check, which refuses
``javascript:`` and the like. All return :class:`markupsafe.Markup`, so templates print them
as they are.
"""

from __future__ import annotations

import re
from functools import cache

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup, escape

ALLOWED_RAW_TAGS = frozenset({"details", "summary", "code", "br", "sub", "sup"})
_RAW = re.compile(r"<!--.*?-->|<[^<>]*>", re.DOTALL)
_BARE_TAG = re.compile(r"<(/?)([a-zA-Z]+)\s*(/?)>")


def filter_raw_html(raw: str) -> str:
    """Raw HTML from the report with only the allowed bare tags left as HTML."""
    kept: list[str] = []
    position = 0
    for match in _RAW.finditer(raw):
        kept.append(_text(raw[position : match.start()]))
        kept.append(_tag(match.group(0)))
        position = match.end()
    kept.append(_text(raw[position:]))
    return "".join(kept)


def _text(text: str) -> str:
    # Entities stay as written (the report escapes PR text with them); a stray < or > cannot
    # open a tag once escaped, and & alone cannot open one at all.
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _tag(tag: str) -> str:
    if tag.startswith("<!--"):
        return ""
    bare = _BARE_TAG.fullmatch(tag)
    if bare is not None and bare.group(2).lower() in ALLOWED_RAW_TAGS:
        closing, name, self_closing = bare.group(1), bare.group(2).lower(), bare.group(3)
        return f"<{closing}{name}{self_closing}>"
    return str(escape(tag))


def _raw_html_rule(
    renderer: RendererHTML, tokens: list[Token], index: int, options: OptionsDict, env: EnvType
) -> str:
    return filter_raw_html(tokens[index].content)


@cache
def _quoted() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


@cache
def _report() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    parser.add_render_rule("html_block", _raw_html_rule)
    parser.add_render_rule("html_inline", _raw_html_rule)
    return parser


def render_quoted(text: str) -> Markup:
    """PR text, one cell's worth: inline Markdown (code, emphasis, links), no raw HTML."""
    return Markup(_quoted().renderInline(text))  # markdown-it escaped the text


def render_quoted_block(text: str) -> Markup:
    """PR text of several paragraphs or a list: block Markdown, no raw HTML."""
    return Markup(_quoted().render(text))


def render_report(text: str) -> Markup:
    """The report's Markdown as GitHub shows it, with only the allowed raw tags kept."""
    return Markup(_report().render(text))  # raw HTML went through filter_raw_html

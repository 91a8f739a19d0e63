"""PR descriptions without template boilerplate, and split into sentences.

Upstream PR templates (verl's "What does this PR do?", checklists, the
instructions in block quotes) are the same in every PR and promise nothing;
code blocks, HTML, images and links are not prose. What is left is the
author's own text: the statement's context and the promise extractor's input.
The template phrases and section names are data below, not branches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

# Sections whose whole content is template (dropped with their body).
DROP_SECTIONS = re.compile(
    r"^(checklist.*|before submitting|who can review\??|additional info\.?:?|reference|references"
    r"|co-?authored.*)$",
    re.I,
)
# Headings that are template labels: the heading goes, its section's prose stays.
TEMPLATE_HEADINGS = re.compile(
    r"^(what does this pr do\??|test(s|ing| plan)?|api( and usage example)?|usage( example)?"
    r"|design & code changes|high-level design|specific changes|summary|changes|changelog:?"
    r"|motivation|problem|solution|description|overview|background|key changes:?|todo"
    r"|add code snippet or script demonstrating how to use this|new features?|root cause)$",
    re.I,
)
# Section names templates and authors put before a colon on the line their prose starts.
INLINE_LABELS = (
    r"purpose|motivation|summary|overview|background|problem|root cause|solution"
    r"|test plan|test results?|testing"
)
# Instructions the templates put in every PR, matched across line breaks and '>' markers.
TEMPLATE_SENTENCES = (
    "Add **concise** overview of what this PR aims to achieve or accomplish. Reference related "
    "GitHub issues and PRs that help with the review.",
    "Add one-line overview of what this PR aims to achieve or accomplish.",
    "For changes that can not be tested by CI (e.g., algorithm implementation, new model "
    "support), validate by experiment(s) and show results like training curve plots, evaluation "
    "results, etc.",
    "For changes that can not be tested by CI (e.g., algorithm implementation, new model "
    "support), validate by experiment(s) and show results like training curve plots, evaluatuion "
    "results, etc.",
    "Demonstrate how the API changes if any, and provide usage example(s) if possible.",
    "Demonstrate the high-level design if this PR is complex, and list the specific changes.",
    "Demonstrate the high-level design if this PR is complex.",
    "Demonstrate how the API changes if any.",
    "List the specific changes.",
    "Provide usage example(s) for easier usage.",
    "Please check all the following items before requesting a review, otherwise the reviewer "
    "might deprioritize this PR for review.",
    "[!IMPORTANT]",
    "Add code snippet or script demonstrating how to use this",
)
TITLE_PREFIXES = (
    re.compile(r"^\s*(\[[^\]]*\]\s*)+"),  # [megatron, fsdp] [BREAKING]
    re.compile(r"^\s*ADLR/megatron-lm!\d+\s*-\s*", re.I),
    re.compile(
        r"^\s*(feat|fix|refactor|chore|test|tests|perf|doc|docs|ci|build|misc|hotfix)(\([^)]*\))?!?\s*:\s*",
        re.I,
    ),
)
TITLE_SUFFIX = re.compile(r"\s*\((#|!)\d+\)\s*$")
_DROP_LINE = re.compile(
    r"^\s*([-*+]\s*\[[ xX]\]|\||(co-authored-by|signed-off-by|see merge request)\b|[-=*_]{3,}\s*$)",
    re.I,
)
_LIST_ITEM = re.compile(r"^\s*([-*+•]|\d+[.)、]|\(\d+\))\s+")
# Marks where a heading stood once headings are gone: a control character no author types.
SECTION_MARK = "\x00"
SHORT_LINE = 56  # wrapped commit bodies run to ~72 columns; shorter lines end on purpose
_SENTENCE_END = re.compile(r"(?<=[.!?;\u3002\uff1b])\s+(?=[A-Z`*(\[\"'])")


class Origin(StrEnum):
    pr_title = "title"
    body = "body"


@dataclass(frozen=True)
class Sentence:
    text: str
    origin: Origin
    position: int  # order in the description, the title being 0
    section: str = ""  # the heading it falls under, lower case ("" before any heading)
    listed: bool = False  # a list item (a bullet or a number) rather than a paragraph


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    # Emphasis markers are gone by the time phrases are matched.
    words = [re.escape(w) for w in phrase.replace("**", "").split()]
    return re.compile(r"(?:\s|>)+".join(words), re.I)


_TEMPLATE_PATTERNS = tuple(_phrase_pattern(p) for p in TEMPLATE_SENTENCES)
_MARKUP = (
    (re.compile(r"^[ \t]*\*\*([^*\n]{1,60}?):?\*\*:?[ \t]*$", re.M), r"### \1"),  # bold heading
    (re.compile(r"<!--.*?-->", re.S), ""),
    (re.compile(r"<details>.*?</details>", re.S | re.I), ""),
    (re.compile(r"^\s*(```|~~~).*?^\s*(```|~~~)[^\n]*$", re.S | re.M), ""),
    (re.compile(r"!\[[^\]]*\]\([^)]*\)"), ""),  # images
    (re.compile(r"\[([^\]]*)\]\((?:[^()]|\([^)]*\))*\)"), r"\1"),  # links keep their text
    (re.compile(r"<[^>\n]+>", re.S), ""),  # HTML tags
    (re.compile(r"\b(https?|diffhunk)://\S+"), ""),
    (re.compile(r"\*\*|__"), ""),
    # a template section's label at the start of its prose ("Test Plan: ran the suite")
    (re.compile(rf"^[ \t]*({INLINE_LABELS})[ \t]*:[ \t]+(?=\S)", re.M | re.I), r"### \1\n"),
)


def clean_title(title: str) -> str:
    """A PR title without module tags, commit-type prefix and PR number."""
    out = title
    for pattern in TITLE_PREFIXES:
        out = pattern.sub("", out, count=1)
    return TITLE_SUFFIX.sub("", out).strip()


def _strip_markup(text: str) -> str:
    for pattern, replacement in _MARKUP:
        text = pattern.sub(replacement, text)
    for pattern in _TEMPLATE_PATTERNS:
        text = pattern.sub("", text)
    return text


def _keep_section_lines(lines: list[str]) -> list[str]:
    kept, dropping = [], False
    for line in lines:
        heading = re.match(r"^\s*#{1,6}\s*(.*?)\s*#*\s*$", line)
        if heading is None:
            if not dropping:
                kept.append(line)
            continue
        name = heading.group(1).strip(" :*_")
        dropping = DROP_SECTIONS.match(name) is not None
        if dropping or not name:
            continue
        kept.append(SECTION_MARK + name.lower())
        if not TEMPLATE_HEADINGS.match(name):
            kept.extend(["", name, ""])  # an author's heading is prose of its own
    return kept


def _clean_sections(body: str) -> str:
    """The author's prose, a SECTION_MARK line where each kept heading stood."""
    text = _strip_markup(body.replace("\r\n", "\n"))
    lines = _keep_section_lines(text.split("\n"))
    out = []
    for line in lines:
        line = re.sub(r"^\s*>\s?", "", line).rstrip()
        if _DROP_LINE.match(line) or (line.strip() and not re.search(r"\w", line)):
            continue
        out.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()


def clean_description(body: str) -> str:
    """The author's prose: no template, code, markup, checklists, tables or trailers."""
    lines = _clean_sections(body).split("\n")
    text = "\n".join(line for line in lines if not line.startswith(SECTION_MARK))
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _starts_sentence(previous: str, line: str) -> bool:
    """A short line without end punctuation, then a capital: a break the author meant."""
    stripped = previous.rstrip()
    return (
        len(stripped) < SHORT_LINE
        and not re.search(r"[.,;:!?(\-]$", stripped)
        and re.match(r"\s*[A-Z]", line) is not None
    )


def _blocks(text: str) -> list[tuple[str, bool]]:
    """Paragraphs and list items, each joined onto one line, with whether it was a list item."""
    blocks: list[tuple[list[str], bool]] = []
    current: list[str] = []
    listed = False
    for line in text.split("\n"):
        if current and line.strip() and _starts_sentence(current[-1], line):
            blocks.append((current, listed))
            current, listed = [], False
        if not line.strip() or _LIST_ITEM.match(line):
            if current:
                blocks.append((current, listed))
            current = [_LIST_ITEM.sub("", line).strip()] if line.strip() else []
            listed = bool(line.strip())
            continue
        current.append(line.strip())
    if current:
        blocks.append((current, listed))
    joined = ((" ".join(block).strip(), listed) for block, listed in blocks)
    return [(text, listed) for text, listed in joined if text]


def _sentences(text: str) -> list[tuple[str, bool]]:
    return [
        (s.strip(), listed)
        for block, listed in _blocks(text)
        for s in _SENTENCE_END.split(block)
        if s.strip()
    ]


def split_sentences(text: str) -> list[str]:
    return [s for s, _ in _sentences(text)]


def description_sentences(title: str, body: str) -> list[Sentence]:
    """The cleaned title, then each sentence of the cleaned body with its section."""
    sentences = []
    cleaned_title = clean_title(title)
    if cleaned_title:
        sentences.append(Sentence(cleaned_title, Origin.pr_title, 0))
    # re.split with a group: text before the first heading, then (heading, text) pairs.
    parts = re.split(rf"^{SECTION_MARK}(.*)$", _clean_sections(body), flags=re.M)
    sections = ["", *parts[1::2]]
    for section, chunk in zip(sections, parts[0::2], strict=True):
        for text, listed in _sentences(chunk):
            sentences.append(Sentence(text, Origin.body, len(sentences), section, listed))
    return sentences

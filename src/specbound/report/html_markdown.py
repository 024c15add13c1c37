"""The small Markdown subset of an answer file (``specbound study --answer FILE``), rendered
safely without a Markdown library (the core has none).

The text is cut into plain-text segments that templates/_markdown.html escapes; only these
marks become markup:
paragraphs (blocks separated by blank lines), lists (lines starting ``- ``, ``* `` or ``1. ``,
continued by indented lines), headings (``#`` to ``######``: a bold paragraph), ``**bold**``,
``*emphasis*`` (an asterisk that opens must be followed, and one that closes preceded, by a
non-space: ``p* = 0`` keeps its asterisk), ```code``` and citations ``[C12]`` (a link to
``#claim-C12`` when the page lists that claim, else left as text). HTML comments are dropped.
No other markup (links, images, raw HTML) is interpreted: it shows as the escaped text."""

from __future__ import annotations

import re
from collections.abc import Container
from typing import Any

from markupsafe import Markup

from .html import render

_LIST = re.compile(r"^(?:[-*]|\d+\.)\s+")
#: One inline mark: code, bold, emphasis (an asterisk that opens is followed, and one that
#: closes preceded, by a non-space, and neither touches a word: ``p* = 0`` is text), citation.
_INLINE = re.compile(
    r"`(?P<code>[^`]+)`"
    r"|\*\*(?=\S)(?P<b>.+?)(?<=\S)\*\*"
    r"|(?<![\w*])\*(?=[^\s*])(?P<i>[^*]+?)(?<=[^\s*])\*(?![\w*])"
    r"|\[(?P<cite>C\d+)\]"
)


def claim_id(claim: str) -> str:
    """The anchor of a claim's row on the page (``claim-C12``)."""
    return f"claim-{claim}"


def inline(text: str, claims: Container[str] = ()) -> list[dict[str, Any]]:
    """One paragraph of the subset as segments (``kind``: text, code, b, i or cite; ``text``;
    ``href`` of a citation whose claim is in ``claims``), plain text all: the template
    (templates/_markdown.html) escapes them. Marks inside bold or emphasis are kept as text
    (backticks dropped)."""
    out: list[dict[str, Any]] = []
    at = 0
    for m in _INLINE.finditer(text):
        if m.start() > at:
            out.append({"kind": "text", "text": text[at : m.start()]})
        kind = m.lastgroup or "text"
        body = m.group(kind)
        if kind == "cite":
            href = claim_id(body) if body in claims else None
            out.append({"kind": "cite" if href else "text", "text": m.group(0), "href": href})
        else:
            out.append({"kind": kind, "text": body.replace("`", "")})
        at = m.end()
    if at < len(text):
        out.append({"kind": "text", "text": text[at:]})
    return out


def blocks(text: str) -> list[tuple[str, list[str]]]:
    """The text as blocks: ("p", [paragraph]), ("h", [heading]), ("ul" or "ol", [items])."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    out: list[tuple[str, list[str]]] = []
    para: list[str] = []
    items: list[list[str]] = []
    kind = ""

    def flush() -> None:
        nonlocal para, items, kind
        if para:
            out.append(("p", [" ".join(para)]))
        if items:
            out.append((kind, [" ".join(i) for i in items]))
        para, items, kind = [], [], ""

    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            flush()
            continue
        if re.match(r"^#{1,6}\s", line):
            flush()
            out.append(("h", [re.sub(r"^#{1,6}\s+", "", line)]))
            continue
        m = _LIST.match(line)
        if m:
            if para:
                flush()
            kind = kind or ("ol" if line[0].isdigit() else "ul")
            items.append([line[m.end() :]])
        elif items and raw[:1] in (" ", "\t"):
            items[-1].append(line)
        else:
            if items:
                flush()
            para.append(line)
    flush()
    return out


def render_markdown(text: str, claims: Container[str] = ()) -> Markup:
    """The answer text as HTML (module doc): :func:`blocks` of :func:`inline` segments,
    rendered by templates/_markdown.html (every character of ``text`` escaped there)."""
    parts = [{"kind": kind, "items": [inline(x, claims) for x in xs]} for kind, xs in blocks(text)]
    return render("_markdown.html", blocks=parts)

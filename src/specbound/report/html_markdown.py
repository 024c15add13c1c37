"""The small Markdown subset of an answer file (``specbound study --answer FILE``), rendered
safely without a Markdown library (the core has none).

The text is escaped first (``markupsafe.escape``), then only these marks become markup:
paragraphs (blocks separated by blank lines), lists (lines starting ``- ``, ``* `` or ``1. ``,
continued by indented lines), headings (``#`` to ``######``: a bold paragraph), ``**bold**``,
``*emphasis*`` (an asterisk that opens must be followed, and one that closes preceded, by a
non-space: ``p* = 0`` keeps its asterisk), ```code``` and citations ``[C12]`` (a link to
``#claim-C12`` when the page lists that claim, else left as text). HTML comments are dropped.
No other markup (links, images, raw HTML) is interpreted: it shows as the escaped text."""

from __future__ import annotations

import re
from collections.abc import Container

from markupsafe import Markup, escape

_LIST = re.compile(r"^(?:[-*]|\d+\.)\s+")
_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_EM = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*]+?)(?<=[^\s*])\*(?![\w*])")
_CITE = re.compile(r"\[(C\d+)\]")


def claim_id(claim: str) -> str:
    """The anchor of a claim's row on the page (``claim-C12``)."""
    return f"claim-{claim}"


def inline(text: str, claims: Container[str] = ()) -> Markup:
    """One line or paragraph of the subset: escaped, then code, bold, emphasis, citations."""
    codes: list[str] = []

    def keep(m: re.Match[str]) -> str:
        codes.append(f"<code>{m.group(1)}</code>")
        return f"\x00{len(codes) - 1}\x00"

    s = _CODE.sub(keep, str(escape(text)))
    s = _BOLD.sub(r"<b>\1</b>", s)
    s = _EM.sub(r"<i>\1</i>", s)

    def cite(m: re.Match[str]) -> str:
        c = m.group(1)
        return f'<a href="#{claim_id(c)}">[{c}]</a>' if c in claims else m.group(0)

    s = _CITE.sub(cite, s)
    s = re.sub("\x00(\\d+)\x00", lambda m: codes[int(m.group(1))], s)
    return Markup(s)


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
    """The answer text as HTML (module doc): every user character escaped, only the subset's
    marks turned into tags."""
    parts: list[str] = []
    for kind, xs in blocks(text):
        if kind == "p":
            parts.append(f"<p>{inline(xs[0], claims)}</p>")
        elif kind == "h":
            parts.append(f"<p><b>{inline(xs[0], claims)}</b></p>")
        else:
            lis = "".join(f"<li>{inline(x, claims)}</li>" for x in xs)
            parts.append(f"<{kind}>{lis}</{kind}>")
    return Markup("\n".join(parts))

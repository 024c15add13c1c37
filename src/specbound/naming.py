"""Names for display: model names without a shared path prefix, natural order, short paths."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

_DIGITS = re.compile(r"(\d+)")
#: C0 controls, DEL and C1 controls (ESC starts an ANSI sequence, CR overwrites a line).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_LAYOUT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: Unicode bidirectional controls: the embeddings and overrides U+202A-U+202E, the isolates
#: U+2066-U+2069, the marks U+200E, U+200F and U+061C. Inside a name they reorder the text
#: around them (a model "abc<U+202E>fed" reads "abcdef"), so a page, a figure or a terminal
#: could show one name as another.
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")


def without_bidi(text: Any) -> str:
    """``str(text)`` without the bidirectional controls of :data:`BIDI_CONTROLS` (nothing else
    changes). The one helper for user-derived text shown on a page or in a figure (the pages'
    jinja environment and the figures' label helper call it); :func:`printable` applies it
    for the terminal."""
    return _BIDI.sub("", str(text))


def printable(text: Any, *, layout: bool = False) -> str:
    """``str(text)`` without bidirectional controls (:func:`without_bidi`) and with every
    control character written as a visible escape (``\\x1b``, ``\\r``, ``\\n``,
    ``\\x9b``): a model path holding ANSI sequences cannot recolour, move or clear the
    terminal, nor a newline split a header. ``layout=True`` keeps newlines and tabs (a table
    cell's own line breaks, where the caller made them). The one helper for user-derived text
    printed to a terminal (tables and ``error:`` lines)."""
    pattern = _CONTROL_BUT_LAYOUT if layout else _CONTROL
    return pattern.sub(lambda m: ascii(m.group())[1:-1], without_bidi(text))


def natural_key(text: str) -> tuple[Any, ...]:
    """Sort key that orders digit runs by value: "L2-N64" < "L2-N128" < "L10-N64"."""
    return tuple(
        (0, int(p), "") if p.isdigit() else (1, 0, p.lower())
        for p in _DIGITS.split(str(text))
        if p != ""
    )


def _looks_like_path(name: str) -> bool:
    return name.startswith(("/", "~", "./", "../")) or bool(re.match(r"^[A-Za-z]:[\\/]", name))


def display_name(name: str) -> str:
    """A model name fit for a title: a filesystem path becomes its last component(s); a hub id
    (``org/name``) stays as it is."""
    name = str(name)
    if not _looks_like_path(name):
        return name
    parts = [p for p in re.split(r"[\\/]+", name) if p not in ("", ".")]
    if not parts:
        return name
    last = parts[-1]
    # checkpoint dirs named like "model" or "snapshot hashes" say little on their own
    if len(parts) >= 2 and (
        last in ("model", "checkpoint", "final") or re.fullmatch(r"[0-9a-f]{16,}", last)
    ):
        return f"{parts[-2]}/{last}"
    return last


def display_names(names: Sequence[str]) -> list[str]:
    """Names without the path (or ``org/``) prefix that every name shares; unique if possible."""
    names = [str(n) for n in names]
    if not names:
        return []
    if len(names) == 1:
        return [display_name(names[0])]
    split = [re.split(r"[\\/]+", n) for n in names]
    common = 0
    for parts in zip(*split, strict=False):
        if len(set(parts)) != 1:
            break
        common += 1
    common = min(common, min(len(s) for s in split) - 1)
    out = ["/".join(s[common:]) for s in split]
    if len(set(out)) != len(out):
        return names
    return out


def short_path(path: Any, width: int = 48) -> str:
    """A path shortened to about ``width`` characters: ``.../parent/name``, fit for a terminal
    line (:func:`printable`: a newline or an ANSI escape in a folder name is shown escaped)."""
    text = printable(path)
    if len(text) <= width:
        return text
    parts = text.split(os.sep)
    tail = parts[-1]
    for p in reversed(parts[:-1]):
        cand = p + os.sep + tail
        if len(cand) + 4 > width:
            break
        tail = cand
    return "..." + os.sep + tail

"""User-derived text on the terminal: control characters (ANSI escapes in a model path) are
shown escaped, never obeyed; rich markup in a name is shown as it is."""

from __future__ import annotations

import io

import pytest

from specbound.naming import printable

pytest.importorskip("rich")

NASTY = "runs/m\x1b[2J\x1b[31mred\x07\r\x9b[0m\x7f[bold]x[/bold]"


def test_printable_escapes_every_control_character() -> None:
    for code in [*range(0x20), *range(0x7F, 0xA0)]:
        out = printable(f"a{chr(code)}b")
        assert out.isprintable() and out.startswith("a\\") and out.endswith("b"), (code, out)
    assert printable("é ✓ ü-中") == "é ✓ ü-中"  # printable text is unchanged
    assert printable("a\nb\tc", layout=True) == "a\nb\tc"
    assert printable("a\nb\tc") == "a\\nb\\tc"


def test_terminal_table_cells_show_escapes_not_obey_them() -> None:
    from rich.console import Console
    from rich.table import Table

    from specbound.report.terminal import shown

    buf = io.StringIO()
    console = Console(file=buf, width=200, force_terminal=False, color_system=None)
    t = Table()
    t.add_column("model")
    t.add_row(shown(NASTY))
    console.print(t)
    console.print(f"[bold]{shown(NASTY)}[/bold]", highlight=False)
    text = buf.getvalue()
    assert not any(c in text for c in "\x1b\x07\r\x9b\x7f")
    assert text.count("runs/m\\x1b[2J\\x1b[31mred\\x07\\r\\x9b[0m\\x7f[bold]x[/bold]") == 2

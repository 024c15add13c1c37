"""The correlation table ``correlate`` prints on a terminal: the answer, the primary contrasts
(protocol v3) and every measure's statistics, stacked so that 80 columns keep the key columns
(the rules of :mod:`.terminal`)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from ..naming import short_path
from .numbers import UNDEFINED, fixed, is_undefined, sig_small, spec
from .terminal import make_console, print_title, shown, wrap_name


def _f3(v: Any) -> str:
    """A statistic with 3 decimals; undefined (NaN/None) as :data:`.numbers.UNDEFINED`."""
    return fixed(v, 3)


def _interval(lo: Any, hi: Any) -> str:
    if is_undefined(lo) and is_undefined(hi):
        return UNDEFINED
    return f"[{_f3(lo)}, {_f3(hi)}]"


def _rendered_width(table: Any) -> int:
    """Characters of the widest line of ``table`` rendered without a width limit."""
    from rich.console import Console

    probe = Console(width=10_000, record=True, file=io.StringIO())
    probe.print(table)
    return max((len(line.rstrip()) for line in probe.export_text().splitlines()), default=0)


def _correlation_table(rows: list[Any], stacked: bool, name_width: int) -> Any:
    from rich import box
    from rich.table import Table

    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    t.add_column("measure", no_wrap=True)
    t.add_column("n", justify="right", no_wrap=True)
    if stacked:
        heads = ["tau\n95% interval", "Psi\n95% interval", "sign-err\nrobust"]
    else:
        heads = ["tau", "95% interval", "Psi", "95% interval", "sign-err\nrobust"]
    for c in heads:
        t.add_column(c, justify="right", no_wrap=True)
    for r in rows:
        tau, tau_i = _f3(r.kendall_tau), _interval(r.kendall_tau_low, r.kendall_tau_high)
        psi, psi_i = _f3(r.psi), _interval(r.psi_low, r.psi_high)
        cells = [f"{tau}\n{tau_i}", f"{psi}\n{psi_i}"] if stacked else [tau, tau_i, psi, psi_i]
        t.add_row(
            shown(wrap_name(str(r.measure), name_width)),
            str(r.n_models),
            *cells,
            _f3(r.sign_error_robust),
        )
    return t


def correlation_answer(result: Any, measure: str = "spectrum_adaptive") -> str | None:
    """The answer first for ``correlate``: the SPEC 10 verdict (``verdict`` column) of this
    tool's own proxy, in words, e.g. "spectrum_adaptive: undetermined: tau interval [...]"."""
    c = result.correlation
    if "verdict" not in c.columns or "measure" not in c.columns:
        return None
    rows = c[c["measure"] == measure]
    if rows.empty:
        return None
    return f"{measure}: {rows['verdict'].iloc[0]}"


#: A difference or endpoint: 3 decimals, or 3 significant digits below 0.01 (a value near 0
#: never rounds to 0 or across it); undefined for NaN/None (:func:`.numbers.sig_small`).
_sig = sig_small


def _primary_table(rows: list[dict[str, Any]]) -> Any:
    from rich import box
    from rich.table import Table

    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    t.add_column("", no_wrap=True)
    for c in ("delta\n95% interval", "p\np_holm", "B"):
        t.add_column(c, justify="right", no_wrap=True)
    t.add_column("verdict", no_wrap=False)
    for r in rows:
        t.add_row(
            shown(str(r["contrast"])),
            f"{_sig(r['delta'])}\n[{_sig(r['low'])}, {_sig(r['high'])}]",
            f"{_sig(r['p'])}\n{_sig(r['p_holm'])}",
            f"{int(r['B']):,}",
            shown(str(r["verdict"])),
        )
    return t


def print_primary(result: Any, console: Any) -> None:
    """The primary contrasts of protocol v3 (differences.csv, family primary): delta, its
    interval, p and p_holm, the draws and the verdict; then what they compare, the evidence and
    a count of the exploratory verdicts (q_bh)."""
    d = getattr(result, "differences", None)
    if d is None or "family" not in d.columns:
        return
    prim = d[d["family"] == "primary"].to_dict("records")
    if prim:
        st = prim[0]["statistic"]
        print_title(console, f"primary contrasts on {st} (Holm over {len(prim)})")
        console.print(_primary_table(prim))
        for r in prim:
            console.print(
                shown(f"{r['contrast']} = {r['measure']} − {r['versus']}: {r['evidence']}"),
                highlight=False,
            )
    expl = d[d["family"] != "primary"]
    if len(expl):
        counts = expl["verdict"].value_counts()
        said = ", ".join(f"{int(n)} {w}" for w, n in counts.items())
        console.print(
            shown(f"exploratory ({len(expl)} rows, BH q-values; not claims): {said}"),
            highlight=False,
        )


def print_correlation(result: Any, out: Path | None = None, width: int | None = None) -> None:
    """The correlation table of ``correlate``: per measure n, Kendall tau, Psi with their 95%
    intervals and the robust sign error.

    One column per number when that fits the terminal; else (80 columns) each interval is
    stacked under its value, so that n, tau, Psi and sign-err robust always keep their values;
    measure names then wrap at ``_`` only, never mid-word."""
    console = make_console(width)
    rows = list(result.correlation.itertuples())
    longest = max((len(str(r.measure)) for r in rows), default=7)
    answer = correlation_answer(result)
    if answer:
        console.print(f"[bold]{shown(answer)}[/bold]", highlight=False)
    print_title(console, f"correlation ({len(result.models)} models)")
    table = _correlation_table(rows, stacked=False, name_width=longest)
    if _rendered_width(table) > console.width:
        table = _correlation_table(rows, stacked=True, name_width=longest)
        excess = _rendered_width(table) - console.width
        if excess > 0:
            table = _correlation_table(rows, stacked=True, name_width=max(8, longest - excess))
    console.print(table)
    print_primary(result, console)
    missing = list(getattr(result, "missing", []) or [])
    if missing:
        console.print(
            shown(f"missing {len(missing)} of the grid (no usable model): " + ", ".join(missing)),
            highlight=False,
        )
    if out is not None:
        console.print(
            f"wrote {shown(short_path(out, 40))}/: models.csv, correlation.csv, "
            "differences.csv, skipped.csv, correlate.json, "
            f"figures/, report.html ({len(result.skipped)} skipped)",
            highlight=False,
        )


def _said(v: Any) -> bool:
    """A cell with something to say (not empty, not missing)."""
    return not is_undefined(v) and str(v) != ""


def study_table(primary: Any, independent_zoos: int | None = None) -> Any:
    """The terminal table of ``specbound study``: every primary contrast of every folder
    (``Study.primary`` rows) with delta, its 95% interval, p_holm and the verdict. A value
    that is not defined (a contrast without a statistic) is written as the glossary says,
    never ``+nan``."""
    from rich.table import Table

    family = (
        "Holm over all"
        if independent_zoos is None
        else f"Holm over the family of {independent_zoos} independent zoos, secondary folders "
        "beside it"
    )
    t = Table(title=f"primary contrasts ({len(primary)} rows; {family})")
    for c in ("contrast", "folder", "role", "delta", "95% interval", "p_holm", "verdict"):
        t.add_column(c)
    for r in primary.to_dict("records"):
        lo, hi = spec(r["low"], "+.3g"), spec(r["high"], "+.3g")
        t.add_row(
            shown(str(r["contrast"])),
            shown(Path(str(r["folder"])).name),
            shown(
                str(r["role"]) + (" (secondary)" if r.get("independence") == "secondary" else "")
            ),
            spec(r["delta"], "+.3g"),
            UNDEFINED if is_undefined(r["low"]) and is_undefined(r["high"]) else f"[{lo}, {hi}]",
            spec(r["p_holm"], ".3g"),
            shown(
                str(r["verdict"])
                + (f" (replicated: {r['replicated']})" if _said(r["replicated"]) else "")
                + (" (unstable over seeds)" if r.get("verdict_stable") == "no" else "")
            ),
        )
    return t

"""Every CSV specbound writes goes through ``io.files.csv_text``: each float in the shortest form
that reads back to the same float64 (``0.8``, not ``0.80000000000000004``), with no number
changed: what the old ``float_format="%.17g"`` text and the new text read back to is the same
float64, bit for bit, on every committed CSV and on the files ``analyze`` writes."""

from __future__ import annotations

import io
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from specbound.io.files import csv_text

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = sorted((ROOT / "benchmarks").rglob("*.csv"))


def _number(cell: str) -> float:
    return math.nan if cell == "" else float(cell)


def read(text: str) -> pd.DataFrame:
    """A CSV text read back with Python's own float parser (correctly rounded, independent of
    pandas' parser): a column whose every non-empty cell is a number becomes float64 (empty:
    NaN), any other column stays text."""
    raw = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    out = {}
    for c in raw.columns:
        try:
            out[c] = np.array([_number(v) for v in raw[c]], dtype=np.float64)
        except ValueError:
            out[c] = raw[c]
    return pd.DataFrame(out, columns=raw.columns)


def float_cells(text: str) -> list[str]:
    """The non-empty cells of the numeric columns of a CSV text, as written."""
    raw = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    parsed = read(text)
    return [v for c in raw.columns if parsed[c].dtype.kind == "f" for v in raw[c] if v != ""]


def same_bits(a: pd.Series, b: pd.Series) -> bool:
    """Float columns equal bit for bit (NaN where NaN); other columns equal as values."""
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        x = a.to_numpy(dtype=np.float64)
        y = b.to_numpy(dtype=np.float64)
        nan = np.isnan(x)
        return bool(
            np.array_equal(nan, np.isnan(y))
            and np.array_equal(x[~nan].view(np.int64), y[~nan].view(np.int64))
        )
    return bool(a.equals(b))


def assert_same_numbers(before: pd.DataFrame, after: pd.DataFrame) -> None:
    assert list(before.columns) == list(after.columns)
    for c in before.columns:
        assert same_bits(before[c], after[c]), c


def float_tokens_are_shortest(text: str) -> None:
    """Every cell of a float column is Python's repr of its own value (the shortest round
    trip), or a whole number (an integer column)."""
    for token in float_cells(text):
        assert repr(float(token)) == token or re.fullmatch(r"-?\d+", token), token


def test_the_committed_csvs_read_back_bit_for_bit() -> None:
    """Each committed CSV (written with %.17g, "before") rewritten by csv_text ("after"): the
    same float64 everywhere, and no 17-digit noise left."""
    assert len(COMMITTED) > 20
    changed = 0
    for path in COMMITTED:
        text = path.read_text()
        before = read(text)
        after_text = csv_text(before)
        assert_same_numbers(before, read(after_text))
        float_tokens_are_shortest(after_text)
        changed += after_text != text
    assert changed > 0  # the committed files do hold %.17g noise that the new format drops


def test_analyze_csvs_hold_the_in_memory_values(tiny_bert, tmp_path: Path) -> None:
    from specbound.analysis import analyze

    a = analyze(tiny_bert(), cache=False)
    out = a.to_dir(tmp_path / "out")
    frames = {"matrices.csv": a.matrices, "layers.csv": a.layers, "weights.csv": a.weights}
    for name, frame in frames.items():
        text = (out / name).read_text()
        written = read(text)
        old = read(frame.to_csv(index=False, float_format="%.17g"))
        for c in frame.columns:
            if frame[c].dtype.kind == "f":
                assert same_bits(frame[c], written[c]), (name, c)  # no number changed
                assert same_bits(old[c], written[c]), (name, c)  # as the old text read back
        float_tokens_are_shortest(text)


def test_a_float32_column_keeps_its_exact_value() -> None:
    f32 = pd.DataFrame({"x": np.array([0.8, 0.1, 3.0], dtype=np.float32)})
    back = read(csv_text(f32))
    assert np.array_equal(back["x"].to_numpy(), f32["x"].to_numpy().astype(np.float64))
    assert np.array_equal(back["x"], read(f32.to_csv(index=False, float_format="%.17g"))["x"])


def test_the_example_of_the_issue() -> None:
    frame = pd.DataFrame({"v": [0.8, 1 / 3, float("nan")], "w": [1e-5, -0.0, 2.0]})
    assert csv_text(frame) == "v,w\n0.8,1e-05\n0.3333333333333333,-0.0\n,2.0\n"
    assert frame.to_csv(index=False, float_format="%.17g").startswith("v,w\n0.80000000000000004,")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True, width=64),
        min_size=1,
        max_size=20,
    ),
    st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=20),
)
def test_any_float_round_trips_as_the_old_format_did(xs: list[float], ys: list[float]) -> None:
    n = min(len(xs), len(ys))
    frame = pd.DataFrame(
        {
            "x": np.array(xs[:n], dtype=np.float64),
            "y": np.array(ys[:n], dtype=np.float32),
            "label": [f"m{i}" for i in range(n)],
        }
    )
    new = read(csv_text(frame))
    old = read(frame.to_csv(index=False, float_format="%.17g"))
    for c in ("x", "y"):
        want = frame[c].to_numpy(dtype=np.float64)
        got = new[c].to_numpy(dtype=np.float64)
        was = old[c].to_numpy(dtype=np.float64)
        nan = np.isnan(want)
        assert np.array_equal(nan, np.isnan(got))
        assert np.array_equal(want[~nan].view(np.int64), got[~nan].view(np.int64))
        assert np.array_equal(was[~nan].view(np.int64), got[~nan].view(np.int64))  # as before


def test_one_csv_writer() -> None:
    """No module of src/ formats a CSV itself: ``to_csv`` and ``float_format`` appear only in
    io/files.py."""
    src = ROOT / "src" / "specbound"
    by_hand = [
        f"{p.relative_to(src)}:{i}"
        for p in sorted(src.rglob("*.py"))
        if p.relative_to(src) != Path("io/files.py")
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if ".to_csv(" in line or "float_format" in line
    ]
    assert by_hand == []

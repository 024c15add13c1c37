"""Hostile-case sweep for issue 44: every case of the issue's "Why" section and variants of it.

Runs the ``specbound`` CLI (and a few library calls) as subprocesses, each under a time limit,
in a temp dir, and checks for each case:

- the exit status is the expected one (0 success, 1 runtime failure, 2 bad input, 130/143 an
  interrupt);
- stderr holds no ``Traceback``; a failing run prints exactly one line starting ``error:``;
- every input is unchanged (a hash of its tree before and after);
- a failing run leaves no output (the ``--out`` path is as before) and no temp folder beside it;
- a successful run prints no ``nan`` / ``inf`` as a number.

Prints one line per case, ``PASS`` or ``FAIL`` with the reason, and exits 1 when any case fails.
Standard library and the package only; the committed folders under benchmarks/ are copied into
the temp dir before anything is tampered with.

    python benchmarks/hostile/sweep.py [--quick] [--only PATTERN] [--keep] [--base DIR]

``--quick``: a subset that runs in under 3 minutes; ``--only``: cases whose name contains
PATTERN (a regular expression); ``--base DIR``: keep the trained tiny zoos in DIR and reuse
them on the next run (they take about a minute to train); ``--jobs N``: cases run side by side
(default 2).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "generalization" / "results"
TRACK = ROOT / "benchmarks" / "grokking" / "track"
CLAIMS = ROOT / "benchmarks" / "generalization" / "claims.csv"
PY = sys.executable
TEMP_NAME = re.compile(r"^\.specbound-.*\.tmp$")
NAN_NUMBER = re.compile(r"(?<![\w./-])[+-]?(nan|inf)(?![\w./-])", re.IGNORECASE)


@dataclass
class Case:
    """One hostile run. ``argv``: after ``specbound`` (or, with ``python``, a script's text);
    ``expect``: the allowed exit statuses; ``inputs``: paths whose tree must be unchanged;
    ``out``: the output path (untouched by a failing run); ``prepare``: runs just before (in
    the case's own folder); ``check``: an extra check of the finished case (a reason or None);
    ``signal_after``: send this (signal, seconds) to the process."""

    name: str
    argv: list[str]
    expect: tuple[int, ...]
    inputs: list[Path] = field(default_factory=list)
    out: Path | None = None
    prepare: Callable[[], None] | None = None
    check: Callable[[subprocess.CompletedProcess[str]], str | None] | None = None
    python: bool = False
    quick: bool = False
    timeout: float = 120.0
    signal_after: tuple[int, float] | None = None
    allow_output_on_fail: bool = False


def tree_hash(p: Path) -> str:
    """Hash of a path's tree: names, kinds, modes and contents (FIFOs and devices by kind)."""
    h = hashlib.sha256()
    if not os.path.lexists(p):
        return "absent"
    items = [p]
    if p.is_dir() and not p.is_symlink():
        items += sorted(p.rglob("*"))
    for q in items:
        st = q.lstat()
        h.update(
            f"{q.relative_to(p)}|{stat.S_IFMT(st.st_mode)}|{stat.S_IMODE(st.st_mode)}".encode()
        )
        if stat.S_ISREG(st.st_mode):
            h.update(q.read_bytes())
    return h.hexdigest()


def spec_cmd(args: list[str]) -> list[str]:
    return [PY, "-m", "specbound", *args]


def run_case(c: Case, env: dict[str, str]) -> tuple[str, bool, str, float]:
    t0 = time.monotonic()
    try:
        if c.prepare is not None:
            c.prepare()
    except Exception as exc:  # a broken case, not a specbound failure: reported as such
        return c.name, False, f"prepare failed: {exc!r}", 0.0
    before = {p: tree_hash(p) for p in c.inputs}
    out_before = tree_hash(c.out) if c.out is not None else None
    parent_temps = _temps(c.out)
    cmd = [PY, "-c", c.argv[0]] if c.python else spec_cmd(c.argv)
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    hung = False
    try:
        if c.signal_after is not None:
            sig, after = c.signal_after
            try:
                proc.wait(after)
            except subprocess.TimeoutExpired:
                proc.send_signal(sig)
        out, err = proc.communicate(timeout=c.timeout)
    except subprocess.TimeoutExpired:
        hung = True
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    rc = proc.returncode
    done = subprocess.CompletedProcess(cmd, rc, out, err)
    reasons = []
    if hung:
        reasons.append(f"hang (> {c.timeout:.0f} s)")
    elif rc not in c.expect:
        reasons.append(f"exit {rc}, expected {'/'.join(map(str, c.expect))}")
    if "Traceback" in err:
        reasons.append("traceback")
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    if rc in (130, 143):  # an interrupt: one line ("interrupted" / "terminated")
        lines = [ln for ln in err.splitlines() if ln.strip()]
        if len(lines) != 1:
            reasons.append(f"{len(lines)} lines on stderr after the signal")
    elif rc not in (0, None) and not hung and len(errors) != 1:
        reasons.append(f"{len(errors)} 'error:' lines")
    if rc == 0 and errors:
        reasons.append("exit 0 with an 'error:' line")
    if rc == 0 and NAN_NUMBER.search(out):
        reasons.append(f"prints {NAN_NUMBER.search(out).group(0)!r} as a number")  # type: ignore[union-attr]
    for p, h in before.items():
        if tree_hash(p) != h:
            reasons.append(f"input {p.name} changed")
    failed_changed = c.out is not None and rc != 0 and tree_hash(c.out) != out_before
    if failed_changed and not c.allow_output_on_fail:
        reasons.append("failed run changed its --out")
    left = _temps(c.out) - parent_temps
    if left:
        reasons.append(f"temp left: {sorted(left)[0]}")
    if not reasons and c.check is not None:
        why = c.check(done)
        if why:
            reasons.append(why)
    first = next((ln for ln in err.splitlines() if ln.strip()), "")
    detail = "; ".join(reasons) if reasons else f"exit {rc}" + (f": {first[:90]}" if first else "")
    if reasons and first:
        detail += f" [{first[:100]}]"
    return c.name, not reasons, detail, time.monotonic() - t0


def _temps(out: Path | None) -> set[str]:
    if out is None:
        return set()
    try:
        return {p.name for p in out.parent.iterdir() if TEMP_NAME.match(p.name)}
    except OSError:
        return set()


# --- tampering --------------------------------------------------------------------------------


def csv_tampers(numeric: str, required: str) -> dict[str, Callable[[str], str]]:
    """Text -> tampered text, for a CSV whose ``numeric`` column holds numbers and whose
    ``required`` column must be there."""

    def set_cell(value: str) -> Callable[[str], str]:
        def f(text: str) -> str:
            lines = text.splitlines(keepends=True)
            head = _split(lines[0])
            i = head.index(numeric)
            cells = _split(lines[1])
            cells[i] = value
            lines[1] = ",".join(cells) + "\n"
            return "".join(lines)

        return f

    def drop(text: str) -> str:
        lines = text.splitlines()
        i = _split(lines[0]).index(required)
        return "".join(
            ",".join(c for j, c in enumerate(_split(ln)) if j != i) + "\n" for ln in lines
        )

    def dup(text: str) -> str:
        lines = text.splitlines(keepends=True)
        return "".join(lines) + lines[-1]

    return {
        "dup-row": dup,
        "nan": set_cell("nan"),
        "inf": set_cell("inf"),
        "text": set_cell("abc"),
        "bool": set_cell("True"),
        "missing-col": drop,
        "header-only": lambda t: t.splitlines(keepends=True)[0],
        "truncated": lambda t: t[: len(t) - max(3, len(t.splitlines()[-1]) // 2)],
        "empty": lambda t: "",
        "bom": lambda t: "\ufeff" + t,
        "crlf": lambda t: t.replace("\n", "\r\n"),
    }


def _split(line: str) -> list[str]:
    import csv

    return next(csv.reader([line.rstrip("\r\n")]))


def json_tampers(number_key: str) -> dict[str, Callable[[str], str]]:
    def set_key(value: str) -> Callable[[str], str]:
        def f(text: str) -> str:
            d = json.loads(text)
            d[number_key] = "__V__"
            return json.dumps(d, indent=2).replace('"__V__"', value)

        return f

    return {
        "truncated": lambda t: t[: len(t) // 2],
        "empty": lambda t: "",
        "dup-key": lambda t: t.replace("{", '{"' + number_key + '": 1, ', 1),
        "nan": set_key("NaN"),
        "text": set_key('"happiness"'),
        "list": lambda t: "[" + t + "]",
        "bom": lambda t: "\ufeff" + t,
    }


def tamper(src: Path, dst: Path, name: str, f: Callable[[str], str]) -> Callable[[], None]:
    def prepare() -> None:
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(src, dst)
        p = dst / name
        p.write_bytes(f(p.read_text(encoding="utf-8")).encode("utf-8"))

    return prepare


# --- the cases --------------------------------------------------------------------------------


def build_cases(t: Path, base: Path) -> list[Case]:
    cA, cB = t / "in" / "cA", t / "in" / "cB"
    zA, zB = base / "zA", base / "zB"
    track = t / "in" / "track"
    model = t / "in" / "model"
    w = t / "w"
    cases: list[Case] = []
    fast = ["--bootstrap", "200", "-q"]

    def add(name: str, argv: list[str], expect: tuple[int, ...] | int, **kw: object) -> None:
        ex = (expect,) if isinstance(expect, int) else expect
        cases.append(Case(name, argv, ex, **kw))  # type: ignore[arg-type]

    def out(name: str) -> Path:
        return w / name / "out"

    # baselines: every command works on the untampered inputs
    add(
        "ok/analyze",
        ["analyze", str(model), "--out", str(out("ok-an")), "-q"],
        0,
        inputs=[model],
        out=out("ok-an"),
        quick=True,
    )
    add(
        "ok/correlate-folder",
        ["correlate", str(cA), "--out", str(out("ok-cf")), *fast],
        0,
        inputs=[cA],
        quick=False,  # pool-zoos and the read-backs cover it
    )
    add(
        "ok/correlate-zoo",
        ["correlate", str(zA), "--out", str(out("ok-cz")), "--include-unconverged", *fast],
        0,
        inputs=[zA],
    )
    add(
        "ok/pool-zoos",
        ["correlate", str(zA), str(zB), "--out", str(out("ok-pz")), "--include-unconverged", *fast],
        0,
        inputs=[zA, zB],
        quick=True,
    )
    add(
        "ok/study",
        ["study", str(cA), str(cB), "--out", str(out("ok-st"))],
        0,
        inputs=[cA, cB],
        quick=True,
    )
    add(
        "ok/trajectory",
        ["trajectory", str(track), "--out", str(out("ok-tr"))],
        0,
        inputs=[track],
        quick=True,
    )
    add(
        "ok/layers",
        ["layers", str(model), "--for", "alphapruning", "--out", str(w / "ok-la.csv"), "-q"],
        0,
        inputs=[model],
    )
    add(
        "ok/scale",
        ["scale", str(model), str(t / "in" / "model2"), "--out", str(out("ok-sc")), "-q"],
        0,
        inputs=[model],
    )

    # read-back files, tampered
    readers = {
        # file: (source folder, command builder, numeric column, required column, quick kinds)
        "models.csv": (
            cA,
            lambda d, o: ["correlate", str(d), "--out", str(o), *fast],
            "gap",
            "model",
        ),
        "differences.csv": (
            cA,
            lambda d, o: ["study", str(d), str(cB), "--out", str(o), "-q"],
            "p",
            "measure",
        ),
        "correlation.csv": (
            cA,
            lambda d, o: [
                _api(
                    "from specbound.studies.readback import read_correlate_json, "
                    f"read_correlation_csv\nread_correlation_csv({str(d)!r}, "
                    f"read_correlate_json({str(d)!r}))"
                )
            ],
            "n_models",
            "measure",
        ),
        "zoo.csv": (
            zA,
            lambda d, o: ["correlate", str(d), "--out", str(o), "--include-unconverged", *fast],
            "train_acc",
            "model",
        ),
        "track.csv": (
            track,
            lambda d, o: ["trajectory", str(d), "--out", str(o)],
            "train_acc",
            "step",
        ),
    }
    quick_kinds = {"dup-row", "nan", "text", "header-only", "truncated"}
    for fname, (src, cmd, num, req) in readers.items():
        for kind, f in csv_tampers(num, req).items():
            d = w / f"{fname}-{kind}" / "in"
            o = w / f"{fname}-{kind}" / "out"
            ok = (0, 2) if kind in ("bom", "crlf") else (2,)
            if fname == "zoo.csv" and kind == "nan":
                ok = (0, 2)  # the manifest reader (a user's first read too): undefined, the
                # model is listed in skipped.csv with its reason
            if fname == "track.csv" and kind in ("nan", "truncated"):
                ok = (0, 2)  # by design: an older tracker's nan is undefined; a torn last row
                # of a live or killed run is left out with a warning
            add(
                f"readback/{fname}/{kind}",
                cmd(d, o),
                ok,
                inputs=[d],
                out=o,
                prepare=tamper(src, d, fname, f),
                quick=kind in quick_kinds and fname != "zoo.csv" and ok == (2,),
                python=fname == "correlation.csv",
            )
    json_readers = {
        "correlate.json": (
            cA,
            lambda d, o: ["correlate", str(d), "--out", str(o), *fast],
            "n_models",
        ),
        "correlate.json@study": (
            cA,
            lambda d, o: ["study", str(d), str(cB), "--out", str(o), "-q"],
            "n_models",
        ),
        "zoo.json": (
            zA,
            lambda d, o: ["correlate", str(d), "--out", str(o), "--include-unconverged", *fast],
            "max_steps",
        ),
        "track.json": (
            track,
            lambda d, o: [
                _api(
                    "from specbound.track.trackfile import "
                    f"read_track_json\nread_track_json({str(d)!r})"
                )
            ],
            "format",
        ),
    }
    for label, (src, cmd, key) in json_readers.items():
        fname = label.split("@")[0]
        for kind, f in json_tampers(key).items():
            d = w / f"{label}-{kind}" / "in"
            o = w / f"{label}-{kind}" / "out"
            ok = (0, 2) if kind == "bom" else (2,)
            add(
                f"readback/{label}/{kind}",
                cmd(d, o),
                ok,
                inputs=[d],
                out=o,
                prepare=tamper(src, d, fname, f),
                quick=kind in ("truncated", "nan"),
                python=fname == "track.json",
            )

    # the issue's named read-back cases
    def edit_models(fn: Callable[[list[list[str]]], None]) -> Callable[[str], str]:
        def f(text: str) -> str:
            import csv
            import io

            rows = list(csv.reader(io.StringIO(text)))
            fn(rows)
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerows(rows)
            return buf.getvalue()

        return f

    def col_set(col: str, value: str, row: int = 1) -> Callable[[list[list[str]]], None]:
        def g(rows: list[list[str]]) -> None:
            rows[row][rows[0].index(col)] = value

        return g

    for name, fn in {
        "gap-5": col_set("gap", "5.0"),
        "train_size-nan": col_set("train_size", "nan"),
        "train_size-frac": col_set("train_size", "10.5"),
        "measure-True": col_set("spectrum_adaptive", "True"),
        "measure-abc": col_set("spectrum_adaptive", "abc"),
        "test_acc-2": col_set("test_acc", "2"),
        "model-empty": col_set("model", ""),
    }.items():
        d, o = w / f"models-{name}" / "in", w / f"models-{name}" / "out"
        add(
            f"readback/models.csv/{name}",
            ["correlate", str(d), "--out", str(o), *fast],
            2,
            inputs=[d],
            out=o,
            prepare=tamper(cA, d, "models.csv", edit_models(fn)),
            quick=name in ("gap-5", "measure-abc"),
        )
    for name, f in {
        "gap-happiness": lambda t: t.replace('"gap": "accuracy"', '"gap": "happiness"'),
        "n_models-wrong": lambda t: re.sub(r'"n_models": \d+', '"n_models": 3', t),
        "axes-dup": lambda t: re.sub(r'"axes": \[', '"axes": ["depth", ', t, count=1),
    }.items():
        d, o = w / f"cjson-{name}" / "in", w / f"cjson-{name}" / "out"
        add(
            f"readback/correlate.json/{name}",
            ["correlate", str(d), "--out", str(o), *fast],
            2,
            inputs=[d],
            out=o,
            prepare=tamper(cA, d, "correlate.json", f),
            quick=True,
        )

    def diff_edit(fn: Callable[[list[list[str]]], None]) -> Callable[[str], str]:
        return edit_models(fn)

    def first_primary(rows: list[list[str]]) -> int:
        fam = rows[0].index("family")
        return next(i for i, r in enumerate(rows) if i and r[fam] == "primary")

    def p_neg(rows: list[list[str]]) -> None:
        rows[first_primary(rows)][rows[0].index("p")] = "-0.5"

    def dup_primary(rows: list[list[str]]) -> None:
        rows.append(list(rows[first_primary(rows)]))

    def no_primary(rows: list[list[str]]) -> None:
        fam = rows[0].index("family")
        rows[:] = [r for i, r in enumerate(rows) if not i or r[fam] != "primary"]

    def p_holm_low(rows: list[list[str]]) -> None:
        i = first_primary(rows)
        rows[i][rows[0].index("p_holm")] = "0"
        rows[i][rows[0].index("p")] = "0.5"

    for name, fn in {
        "p-neg": p_neg,
        "dup-primary": dup_primary,
        "no-primary": no_primary,
        "p_holm-below-p": p_holm_low,
    }.items():
        d, o = w / f"diff-{name}" / "in", w / f"diff-{name}" / "out"
        add(
            f"readback/differences.csv/{name}",
            ["study", str(d), str(cB), "--out", str(o), "-q"],
            2,
            inputs=[d, cB],
            out=o,
            prepare=tamper(cA, d, "differences.csv", diff_edit(fn)),
            quick=True,
        )

    def track_edit(col: str, value: str) -> Callable[[str], str]:
        return edit_models(col_set(col, value, row=2))

    for name, (col, value) in {
        "train_acc-5": ("train_acc", "5.0"),
        "step-2.5": ("step", "2.5"),
        "step-neg": ("step", "-3"),
        "step-dup": ("step", "0"),
        "wall-text": ("wall_s", "abc"),
    }.items():
        d, o = w / f"track-{name}" / "in", w / f"track-{name}" / "out"
        add(
            f"readback/track.csv/{name}",
            ["trajectory", str(d), "--out", str(o)],
            2,
            inputs=[d],
            out=o,
            prepare=tamper(track, d, "track.csv", track_edit(col, value)),
            quick=name in ("train_acc-5", "step-2.5"),
        )
    for kind, f in csv_tampers("verdict", "claim").items():
        if kind in ("nan", "inf", "bool"):
            continue
        d = w / f"claims-{kind}"
        body = (
            "from specbound.studies.readback import read_claims_csv\n"
            f"print(len(read_claims_csv({str(d / 'claims.csv')!r})))"
        )
        ok = (0, 2) if kind in ("bom", "crlf", "header-only") else (2,)  # header only: no claims
        add(
            f"readback/claims.csv/{kind}",
            [_api(body)],
            ok,
            python=True,
            inputs=[d],
            prepare=_claims(d, f),
        )

    # pooling a folder or a zoo twice
    add(
        "pool/correlate-cA-cA",
        ["correlate", str(cA), str(cA), "--out", str(out("p1")), *fast],
        2,
        inputs=[cA],
        out=out("p1"),
        quick=True,
    )
    add(
        "pool/zoo-twice",
        ["correlate", str(zA), str(zA), "--out", str(out("p2")), "--include-unconverged", *fast],
        2,
        inputs=[zA],
        out=out("p2"),
        quick=True,
    )
    cA2 = t / "in" / "cA-copy"
    add(
        "pool/correlate-copy",
        ["correlate", str(cA), str(cA2), "--out", str(out("p3")), *fast],
        2,
        inputs=[cA, cA2],
        out=out("p3"),
    )
    add(
        "pool/study-cA-cA",
        ["study", str(cA), str(cA), "--out", str(out("p4"))],
        2,
        inputs=[cA],
        out=out("p4"),
    )
    zA2 = t / "in" / "zA-copy"
    add(
        "pool/zoo-copy",
        ["correlate", str(zA), str(zA2), "--out", str(out("p5")), "--include-unconverged", *fast],
        2,
        inputs=[zA, zA2],
        out=out("p5"),
    )

    # --out equal to / inside / containing an input, for every command
    def overlap(
        tag: str, src: Path, argv: Callable[[Path, Path], list[str]], quick: bool, file: str = ""
    ) -> None:
        """``file``: the input is this file of ``src`` (equal: --out is the file; contains:
        its folder); else the folder ``src`` is."""
        for rel in ("equal", "contains") if file else ("equal", "inside", "contains"):
            root = w / f"ov-{tag}-{rel}"

            def prep(root: Path = root) -> None:
                if root.exists():
                    shutil.rmtree(root)
                shutil.copytree(src, root / "x" / "in")

            inp = root / "x" / "in"
            o = {"equal": inp, "inside": inp / "sub", "contains": root / "x"}[rel]
            if file:
                o = inp / file if rel == "equal" else inp
            if tag == "trajectory" and rel == "inside":  # by design: a report folder inside
                # the tracker's folder is fine; its files are the inputs
                add(
                    f"overlap/{tag}/{rel}",
                    argv(inp, o),
                    0,
                    prepare=prep,
                    inputs=[inp / "track.csv", inp / "track.json"],
                )
                continue
            add(
                f"overlap/{tag}/{rel}",
                argv(inp, o),
                2,
                inputs=[root],
                prepare=prep,
                quick=quick and rel != "inside",
            )

    overlap(
        "correlate-folder",
        cA,
        lambda i, o: ["correlate", str(i), str(cB), "--out", str(o), *fast],
        True,
    )
    overlap(
        "correlate-zoo",
        zA,
        lambda i, o: ["correlate", str(i), "--out", str(o), "--include-unconverged", *fast],
        False,
    )
    overlap("study-first", cA, lambda i, o: ["study", str(i), str(cB), "--out", str(o)], True)
    overlap("study-second", cB, lambda i, o: ["study", str(cA), str(i), "--out", str(o)], False)
    overlap("trajectory", track, lambda i, o: ["trajectory", str(i), "--out", str(o)], False)
    overlap("analyze", model, lambda i, o: ["analyze", str(i), "--out", str(o), "-q"], True)
    overlap("scale", model, lambda i, o: ["scale", str(i), "--out", str(o), "-q"], False)
    overlap(
        "zoo-train-grid",
        t / "in" / "griddir",
        lambda i, o: [
            "zoo",
            "train",
            "modular-addition",
            "--grid",
            str(i / "grid.yaml"),
            "--out",
            str(o),
            "-q",
        ],
        False,
        "grid.yaml",
    )
    # layers writes one file: over a file specbound did not write it must refuse
    mine = w / "layers-foreign" / "mine.csv"
    add(
        "overlap/layers-foreign-file",
        ["layers", str(model), "--for", "alphapruning", "--out", str(mine), "-q"],
        2,
        inputs=[mine],
        prepare=lambda: _file(mine),
    )
    overlap(
        "analyze-mapping",
        t / "in" / "mapdir",
        lambda i, o: [
            "analyze",
            str(model),
            "--mapping",
            str(i / "map.yaml"),
            "--out",
            str(o),
            "-q",
        ],
        False,
        "map.yaml",
    )
    # correlate re-evaluating one folder in place is allowed (the folder is its own earlier output)
    inplace = w / "inplace" / "cA"
    add(
        "overlap/correlate-in-place-allowed",
        ["correlate", str(inplace), "--out", str(inplace), *fast],
        0,
        prepare=lambda: _fresh_copy(cA, inplace),
    )

    # --out that cannot be written
    fifo = w / "fifo"
    ro = w / "ro"
    long_name = w / "long" / ("n" * 300)
    targets: dict[str, tuple[Path, Callable[[], None] | None]] = {
        "fifo": (fifo, lambda: _mkfifo(fifo)),
        "devnull": (Path("/dev/null"), None),
        "long-name": (long_name, lambda: long_name.parent.mkdir(parents=True, exist_ok=True)),
        # root writes through a mode 0555 folder: then a folder of a read-only file system
        "read-only-dir": (ro / "out", lambda: _readonly(ro))
        if os.geteuid()
        else (Path("/sys/specbound-sweep-out"), None),
        "parent-is-file": (w / "afile" / "out", lambda: _file(w / "afile")),
        "empty-string": (Path(""), None),
    }
    file_outs = {"layers"}
    commands: dict[str, Callable[[str], list[str]]] = {
        "analyze": lambda o: ["analyze", str(model), "--out", o, "-q"],
        "correlate": lambda o: ["correlate", str(cA), "--out", o, *fast],
        "study": lambda o: ["study", str(cA), str(cB), "--out", o, "-q"],
        "trajectory": lambda o: ["trajectory", str(track), "--out", o],
        "layers": lambda o: ["layers", str(model), "--for", "alphapruning", "--out", o, "-q"],
        "scale": lambda o: ["scale", str(model), "--out", o, "-q"],
        "zoo-train": lambda o: [
            "zoo",
            "train",
            "modular-addition",
            "--preset",
            "tiny",
            "--out",
            o,
            "-q",
        ],
    }
    for cname, argv in commands.items():
        for tname, (target, prep) in targets.items():
            o = "" if tname == "empty-string" else str(target)
            if cname in file_outs and tname in ("long-name", "read-only-dir", "parent-is-file"):
                o += ".csv"
            inputs = [target] if tname in ("fifo", "devnull", "read-only-dir") else []
            # read-only: the environment's (1) or caught up front as the user's (2)
            ok = (1, 2) if tname == "read-only-dir" else (2,)
            add(
                f"out/{cname}/{tname}",
                argv(o),
                ok,
                prepare=prep,
                inputs=inputs,
                timeout=60,
                quick=cname in ("analyze", "layers", "zoo-train") and tname != "devnull",
            )
    del file_outs

    # a folder the user named like a temp survives a write beside it
    user_tmp = w / "usertmp" / ".specbound-myrun01.tmp"

    def prep_user_tmp() -> None:
        user_tmp.mkdir(parents=True, exist_ok=True)
        (user_tmp / "keep.txt").write_text("mine\n")

    add(
        "out/user-temp-name-kept",
        ["analyze", str(model), "--out", str(user_tmp.parent / "o"), "-q"],
        0,
        prepare=prep_user_tmp,
        inputs=[user_tmp],
        quick=True,
    )
    # an --out holding files specbound did not write is refused, left as it was
    foreign = w / "foreign" / "out"

    def prep_foreign() -> None:
        foreign.mkdir(parents=True, exist_ok=True)
        (foreign / "thesis.tex").write_text("x\n")

    add(
        "out/foreign-folder",
        ["analyze", str(model), "--out", str(foreign), "-q"],
        2,
        prepare=prep_foreign,
        inputs=[foreign],
        quick=True,
    )

    # zoo train: modes and a too-long name
    zmode = w / "zmode" / "zoo"

    def check_modes(_: subprocess.CompletedProcess[str]) -> str | None:
        umask = 0o022
        for p in zmode.rglob("*"):
            want = (0o777 if p.is_dir() else 0o666) & ~umask
            if not p.is_symlink() and stat.S_IMODE(p.stat().st_mode) != want:
                return f"{p.relative_to(zmode)} has mode {oct(stat.S_IMODE(p.stat().st_mode))}"
        return None

    add(
        "zoo/modes",
        [
            "zoo",
            "train",
            "modular-addition",
            "--grid",
            str(t / "in" / "griddir" / "grid.yaml"),
            "--out",
            str(zmode),
            "-q",
        ],
        0,
        check=check_modes,
        timeout=300,
    )

    # concurrent writers
    an = t / "in" / "analysis"
    for name, same in (("siblings", False), ("same-folder", True)):
        par = w / f"conc-{name}"
        script = _concurrent_script(model, par, same, seconds=3.0)
        add(
            f"concurrent/to_dir-{name}",
            [script],
            0,
            python=True,
            inputs=[model],
            timeout=120,
            quick=not same,
        )
    del an
    par = w / "conc-cli"
    add("concurrent/cli-analyze-4", [_concurrent_cli(model, par)], 0, python=True, timeout=180)

    # interrupts
    add(
        "signal/analyze-sigint",
        ["analyze", str(model), "--out", str(out("sig1")), "--no-cache"],
        (0, 130),
        out=out("sig1"),
        signal_after=(signal.SIGINT, 1.0),
    )
    add(
        "signal/correlate-sigint",
        ["correlate", str(cA), "--out", str(out("sig2")), *fast],
        130,
        out=out("sig2"),
        signal_after=(signal.SIGINT, 3.0),
        inputs=[cA],
        quick=True,
    )
    add(
        "signal/correlate-sigterm",
        ["correlate", str(cA), "--out", str(out("sig3")), *fast],
        143,
        out=out("sig3"),
        signal_after=(signal.SIGTERM, 3.0),
        inputs=[cA],
    )
    add(
        "signal/zoo-sigterm",
        ["zoo", "train", "modular-addition", "--preset", "tiny", "--out", str(out("sig4")), "-q"],
        143,
        signal_after=(signal.SIGTERM, 6.0),
        timeout=120,
    )
    add(
        "signal/zoo-sigint-workers",
        [
            "zoo",
            "train",
            "modular-addition",
            "--preset",
            "tiny",
            "--workers",
            "2",
            "--out",
            str(out("sig5")),
            "-q",
        ],
        130,
        signal_after=(signal.SIGINT, 6.0),
        timeout=120,
    )

    # a zoo worker killed by SIGKILL: its job retried once, then listed as failed; exit 1
    add(
        "signal/zoo-worker-sigkill",
        [_kill_worker(out("kw"), t / "in" / "griddir" / "grid.yaml")],
        (0, 1),
        python=True,
        timeout=300,
    )
    # Ray: SIGTERM / Ctrl-C during start-up or shutdown, one line, 143 / 130
    if _has("ray"):
        for sig, code, after in ((signal.SIGTERM, 143, 1.5), (signal.SIGINT, 130, 2.5)):
            add(
                f"signal/ray-{signal.Signals(sig).name.lower()}-{after:g}s",
                ["analyze", str(model), "--engine", "ray", "-q", "--out", str(out(f"ray{code}"))],
                (0, code),
                out=out(f"ray{code}"),
                signal_after=(sig, after),
                timeout=120,
            )

    # bad parameter values per flag
    bad = {"neg": "-1", "zero": "0", "nan": "nan", "huge": "1e300", "text": "abc"}

    def zoo_argv(flag: str, value: str) -> list[str]:
        """``zoo train`` of the tiny modular-addition preset with ``flag value``."""
        out_z = str(out("bp-z"))
        return [
            "zoo",
            "train",
            "modular-addition",
            "--preset",
            "tiny",
            "--out",
            out_z,
            flag,
            value,
            "-q",
        ]

    flags: list[tuple[str, Callable[[str, str], list[str]], str, tuple[str, ...]]] = [
        (
            "analyze",
            lambda f, v: ["analyze", str(model), f, v, "-q"],
            "--grid-m",
            ("neg", "zero", "nan", "huge", "text"),
        ),
        (
            "analyze",
            lambda f, v: ["analyze", str(model), f, v, "-q"],
            "--l-phi",
            ("neg", "zero", "nan", "huge", "text"),
        ),
        (
            "correlate",
            lambda f, v: ["correlate", str(cA), "--out", str(out("bp-c")), f, v, "-q"],
            "--bootstrap",
            ("neg", "zero", "nan", "huge", "text"),
        ),
        (
            "correlate",
            lambda f, v: [
                "correlate",
                str(cA),
                "--out",
                str(out("bp-c")),
                f,
                v,
                "-q",
                "--bootstrap",
                "200",
            ],
            "--seed",
            ("neg", "nan", "text"),
        ),
        (
            "correlate",
            lambda f, v: [
                "correlate",
                str(zA),
                "--out",
                str(out("bp-c")),
                f,
                v,
                "-q",
                "--data-measures",
                "--bootstrap",
                "200",
            ],
            "--data-workers",
            ("neg", "zero", "nan", "huge", "text"),
        ),
        (
            "layers",
            lambda f, v: ["layers", str(model), "--for", "alphapruning", f, v, "-q"],
            "--sparsity",
            ("neg", "nan", "huge", "text"),
        ),
        (
            "layers",
            lambda f, v: ["layers", str(model), "--for", "alphapruning", f, v, "-q"],
            "--epsilon",
            ("neg", "nan", "huge", "text"),
        ),
        (
            "layers",
            lambda f, v: ["layers", str(model), "--for", "tempbalance", f, v, "-q"],
            "--lr-min",
            ("neg", "nan", "huge", "text"),
        ),
        (
            "scale",
            lambda f, v: ["scale", str(model), "--out", str(out("bp-s")), f, v, "-q"],
            "--grid-m",
            ("neg", "zero", "nan", "text"),
        ),
        (
            "zoo",
            zoo_argv,
            "--workers",
            ("neg", "zero", "nan", "huge", "text"),
        ),
        (
            "zoo",
            zoo_argv,
            "--threads",
            ("neg", "zero", "nan", "huge", "text"),
        ),
    ]
    for cmdname, argv, flag, kinds in flags:
        for kind in kinds:
            add(
                f"param/{cmdname}{flag}/{kind}",
                argv(flag, bad[kind]),
                (0, 2) if flag == "--l-phi" and kind == "huge" else 2,  # bounds are in log form
                timeout=90,
                quick=kind in ("neg", "nan") and cmdname in ("analyze", "layers", "zoo"),
            )
    for name, argv in {
        "analyze-device-tpu": ["analyze", str(model), "--device", "tpu", "-q"],
        "analyze-measure-unknown": ["analyze", str(model), "--measures", "htsr_alpha,nope", "-q"],
        "analyze-esd-bad": [
            "analyze",
            str(model),
            "--report",
            "--esd",
            "some",
            "--out",
            str(out("bp-e")),
        ],
        "analyze-figure-formats-without-report": [
            "analyze",
            str(model),
            "--figure-formats",
            "png",
            "-q",
        ],
        "analyze-figure-formats-bad": [
            "analyze",
            str(model),
            "--report",
            "--figure-formats",
            "gif",
            "--out",
            str(out("bp-ff")),
        ],
        "layers-lr-max-below-min": [
            "layers",
            str(model),
            "--for",
            "tempbalance",
            "--lr-min",
            "2",
            "--lr-max",
            "1",
            "-q",
        ],
        "layers-for-bad": ["layers", str(model), "--for", "pruning", "-q"],
        "correlate-gap-bad": [
            "correlate",
            str(cA),
            "--out",
            str(out("bp-g")),
            "--gap",
            "happiness",
            "-q",
        ],
        "correlate-primary-bad": [
            "correlate",
            str(cA),
            "--out",
            str(out("bp-p")),
            "--primary",
            "zzz",
            "-q",
        ],
        "scale-revisions-huge": [
            "scale",
            "EleutherAI/pythia-70m",
            "--revisions",
            "pythia:0:100000000000:1",
            "--out",
            str(out("bp-r")),
            "-q",
        ],
        "trajectory-gap-bad": [
            "trajectory",
            str(track),
            "--gap",
            "happiness",
            "--out",
            str(out("bp-t")),
        ],
        "study-replicates-bad": [
            "study",
            str(cA),
            str(cB),
            "--replicates",
            "nonsense",
            "--out",
            str(out("bp-st")),
        ],
        "zoo-preset-bad": [
            "zoo",
            "train",
            "modular-addition",
            "--preset",
            "huge",
            "--out",
            str(out("bp-zp")),
        ],
        "zoo-task-bad": ["zoo", "train", "chess", "--preset", "tiny", "--out", str(out("bp-zt"))],
        "zoo-device-bad": [
            "zoo",
            "train",
            "modular-addition",
            "--preset",
            "tiny",
            "--device",
            "tpu",
            "--out",
            str(out("bp-zd")),
        ],
        "engine-bad": ["analyze", str(model), "--engine", "spark", "-q"],
    }.items():
        add(
            f"param/{name}",
            argv,
            2,
            timeout=90,
            quick=name.startswith(("scale-rev", "analyze-fig")),
        )

    # mapping files: a duplicate key, ANSI escapes in a path
    mdup = t / "in" / "mapdup.yaml"
    add(
        "input/mapping-duplicate-key",
        ["analyze", str(model), "--mapping", str(mdup), "-q"],
        2,
        inputs=[mdup],
        quick=True,
    )
    ansi = "\x1b[31mred\x1b[0m"

    def no_raw_escape(done: subprocess.CompletedProcess[str]) -> str | None:
        return (
            "raw ANSI escape on the terminal" if "\x1b[31m" in done.stdout + done.stderr else None
        )

    add(
        "input/ansi-model-path",
        ["analyze", str(t / "in" / ansi), "-q"],
        2,
        check=no_raw_escape,
        quick=True,
    )
    add(
        "input/ansi-missing-track",
        ["trajectory", str(t / "in" / ansi), "--out", str(out("an2"))],
        2,
        check=no_raw_escape,
    )

    # library calls (the API boundary)
    tiny = (  # a one-layer BERT with random weights: enough for the tracker's checks
        "from transformers import BertConfig, BertModel\n"
        "m = BertModel(BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, "
        "intermediate_size=16, vocab_size=32))\n"
    )
    api = {  # name -> (script, words the error line must hold)
        "TrackerConfig-bad": (
            "from specbound.track import TrackerConfig\n"
            f"TrackerConfig(out={str(w / 'api-tc')!r}, l_phi=-1, grid_m=0, device='tpu')",
            ("l_phi", "grid_m", "device"),
        ),
        "Analysis-measures-one-name": (
            f"import specbound\nspecbound.analyze({str(model)!r}, measures='htsr_alpha')",
            ("measures",),
        ),
        "to_dir-empty": (
            f"import specbound\nspecbound.analyze({str(model)!r}).to_dir('')",
            ("out",),
        ),
        "step-str": (
            "from specbound.track import Tracker\n"
            + tiny
            + f"t = Tracker(m, out={str(w / 'api-track')!r}, every=1)\nt.step('3')",
            ("step",),
        ),
    }

    def names_a_parameter(
        words: tuple[str, ...],
    ) -> Callable[[subprocess.CompletedProcess[str]], str | None]:
        def check(done: subprocess.CompletedProcess[str]) -> str | None:
            if done.returncode == 0:
                return None
            first = (done.stderr.strip().splitlines() or [""])[-1]
            return None if any(x in first for x in words) else f"the error names none of {words}"

        return check

    for name, (body, words) in api.items():
        ok = (0, 2) if name == "Analysis-measures-one-name" else (2,)  # one name, or refused
        add(
            f"api/{name}",
            [_api(body)],
            ok,
            python=True,
            quick=True,
            timeout=90,
            check=names_a_parameter(words),
        )
    issue54_cases(t, model, cA, cB, add)
    return cases


# --- issue 54: hostile files of the newest surfaces ------------------------------------------

#: The GGUF cases of issue 54 (the header reader in io/gguf_file.py).
ISSUE54_GGUF = "issue54-gguf/"
BIDI_RE = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def issue54_cases(t: Path, model: Path, cA: Path, cB: Path, add: Callable[..., None]) -> None:
    """The 11 defects of issue 54: each case fails on the tree the issue was filed against."""
    w = t / "w" / "i54"
    fast = ["--bootstrap", "200", "-q"]

    def error_has(*words: str, absent: tuple[str, ...] = ()) -> Callable[..., str | None]:
        def check(done: subprocess.CompletedProcess[str]) -> str | None:
            line = next((ln for ln in done.stderr.splitlines() if ln.startswith("error:")), "")
            gone = [x for x in words if x not in line]
            there = [x for x in absent if x in line]
            if gone or there:
                return f"the error line lacks {gone} or holds {there}"
            return None

        return check

    # 2. a mapping YAML: size-bounded, no alias bombs
    def write_big(f: Path) -> None:
        with open(f, "w") as fh:
            fh.write("roles:\n")
            for i in range(200_000):  # 6.5 MB (5 MB took 10 s to parse, 50 MB never ended)
                fh.write(f"  k{i}: blocks.{{layer}}.w{i}\n")

    def write_laughs(f: Path) -> None:  # 400 bytes standing for 9^9 values
        rows = ["a0: &a0 [" + ", ".join(["lol"] * 9) + "]"]
        rows += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
        f.write_text("\n".join(rows) + "\n")

    def write_loop(f: Path) -> None:
        f.write_text("roles: &r\n  x: *r\n")

    def in_w(write: Callable[[Path], None], f: Path) -> Callable[[], None]:
        def prepare() -> None:
            f.parent.mkdir(parents=True, exist_ok=True)
            write(f)

        return prepare

    for name, write, words in (
        ("5mb", write_big, ("1 MiB",)),
        ("laughs", write_laughs, ("aliases",)),
        ("self-alias", write_loop, ("its own alias",)),
    ):
        f = w / f"map-{name}.yaml"
        add(
            f"issue54/mapping-{name}",
            ["analyze", str(model), "--mapping", str(f), "-q"],
            2,
            inputs=[f],
            prepare=in_w(write, f),
            timeout=30,
            quick=True,
            check=error_has(f.name, *words),
        )

    # 3, 5. tampered read-back values and the protocol number
    def edit_csv(
        src: Path, d: Path, name: str, fn: Callable[[list[list[str]]], None]
    ) -> Callable[[], None]:
        def prepare() -> None:
            import csv
            import io

            _fresh_copy(src, d)
            rows = list(csv.reader(io.StringIO((d / name).read_text(encoding="utf-8"))))
            fn(rows)
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerows(rows)
            (d / name).write_text(buf.getvalue(), encoding="utf-8")

        return prepare

    def cell(col: str, value: str, row: int = 1) -> Callable[[list[list[str]]], None]:
        def g(rows: list[list[str]]) -> None:
            rows[row][rows[0].index(col)] = value

        return g

    def primary_p_zero(rows: list[list[str]]) -> None:
        fam = rows[0].index("family")
        i = next(i for i, r in enumerate(rows) if i and r[fam] == "primary")
        rows[i][rows[0].index("p")] = "0"
        rows[i][rows[0].index("p_holm")] = "0"

    for name, fname, fn, words in (
        ("num_parameters-neg", "models.csv", cell("num_parameters", "-5"), "'num_parameters'"),
        ("num_parameters-zero", "models.csv", cell("num_parameters", "0"), "'num_parameters'"),
        ("gap-not-accuracies", "models.csv", cell("gap", "0.9"), "train_acc - test_acc"),
        ("p-zero", "differences.csv", primary_p_zero, "1/(B+1)"),
    ):
        d, o = w / f"rb-{name}" / "in", w / f"rb-{name}" / "out"
        argv = (
            ["correlate", str(d), "--out", str(o), *fast]
            if fname == "models.csv"
            else ["study", str(d), str(cB), "--out", str(o), "-q"]
        )
        add(
            f"issue54/readback-{name}",
            argv,
            2,
            inputs=[d, cB],
            out=o,
            prepare=edit_csv(cA, d, fname, fn),
            quick=name in ("gap-not-accuracies", "p-zero"),
            check=error_has(fname, words),
        )

    def protocol_99(d: Path) -> Callable[[], None]:
        def prepare() -> None:
            _fresh_copy(cA, d)
            f = d / "correlate.json"
            f.write_text(re.sub(r'"protocol": \d+', '"protocol": 99', f.read_text()))

        return prepare

    for cmd in ("study", "correlate"):
        d, o = w / f"proto-{cmd}" / "in", w / f"proto-{cmd}" / "out"
        argv = (
            ["study", str(d), str(cB), "--out", str(o), "-q"]
            if cmd == "study"
            else ["correlate", str(d), "--out", str(o), *fast]
        )
        add(
            f"issue54/protocol-99-{cmd}",
            argv,
            2,
            inputs=[d],
            out=o,
            prepare=protocol_99(d),
            quick=cmd == "study",
            check=error_has("correlate.json", "'protocol' is 99"),
        )

    # 9. models.csv / correlate.json that is no regular file
    def not_a_file(d: Path, name: str, kind: str) -> Callable[[], None]:
        def prepare() -> None:
            _fresh_copy(cA, d)
            f = d / name
            f.unlink()
            if kind == "directory":
                f.mkdir()
            elif kind == "loop":
                os.symlink(name, f)
            else:
                os.symlink("/dev/zero", f)

        return prepare

    said = {"directory": "is a directory", "loop": "symlink loop", "dev-zero": "/dev/zero"}
    for name, cmd in (("models.csv", "correlate"), ("correlate.json", "study")):
        for kind, words in said.items():
            d, o = w / f"nf-{name}-{kind}" / "in", w / f"nf-{name}-{kind}" / "out"
            argv = (
                ["correlate", str(d), "--out", str(o), *fast]
                if cmd == "correlate"
                else ["study", str(d), str(cB), "--out", str(o), "-q"]
            )
            add(
                f"issue54/{name}-{kind}-{cmd}",
                argv,
                2,
                inputs=[d],
                out=o,
                prepare=not_a_file(d, name, kind),
                quick=(name, kind) in (("models.csv", "directory"), ("correlate.json", "dev-zero")),
                timeout=60,  # /dev/zero never ends: a reader that opened it would hang
                check=error_has(name, words, absent=("zoo.csv",)),
            )

    # 4. bidirectional controls in names reach no page, figure or terminal
    bidi_model = w / "bidi" / "ab\u202edcba"
    bidi_out = w / "bidi-out"

    def no_bidi(*roots: Path) -> Callable[[subprocess.CompletedProcess[str]], str | None]:
        def check(done: subprocess.CompletedProcess[str]) -> str | None:
            if BIDI_RE.search(done.stdout + done.stderr):
                return "a bidi control on the terminal"
            for root in roots:
                for f in sorted(root.rglob("*")):
                    if f.suffix in (".html", ".svg") and BIDI_RE.search(f.read_text("utf-8")):
                        return f"a bidi control in {f.name}"
            return None

        return check

    add(
        "issue54/bidi-model-analyze-report",
        ["analyze", str(bidi_model), "--report", "--out", str(bidi_out), "--no-cache"],
        0,
        inputs=[bidi_model],
        prepare=lambda: _fresh_copy(model, bidi_model),
        quick=True,
        check=no_bidi(bidi_out),
    )
    bidi_c, bidi_co = w / "bidi-c" / "in", w / "bidi-c" / "out"

    def bidi_names(rows: list[list[str]]) -> None:
        m, z = rows[0].index("model"), rows[0].index("zoo")
        for i, r in enumerate(rows[1:]):
            r[m] = f"m\u202e{i}\u2067x\u2069"
            r[z] = "zoo\u202eA"

    add(
        "issue54/bidi-model-zoo-correlate",
        ["correlate", str(bidi_c), "--out", str(bidi_co), *fast],
        0,
        inputs=[bidi_c],
        prepare=edit_csv(cA, bidi_c, "models.csv", bidi_names),
        quick=False,  # 27 s: the analyze page covers the quick run
        check=no_bidi(bidi_co),
    )

    # 10. an mmap failing for lack of memory names the file and says memory
    huge = w / "huge"

    def write_huge() -> None:
        _fresh_copy(model, huge)
        _append_sparse_tensor(next(huge.glob("*.safetensors")), 6 * 2**30)

    add(
        "issue54/mmap-out-of-memory",
        [_limited_address_space(["analyze", str(huge), "--no-cache", "-q"], 3 * 2**30)],
        1,  # the machine's limit, not bad input: exit 1 as for MemoryError
        python=True,  # (not an input: hashing it would read its 6 GiB hole)
        prepare=write_huge,
        quick=True,
        check=error_has("model.safetensors", "not enough memory", absent=("free space",)),
    )

    # 11. the prefix flag, overflow warnings, a newline in a model folder's name
    two = w / "two-models"

    def write_two() -> None:
        _fresh_copy(model, two)
        _duplicate_under_prefixes(next(two.glob("*.safetensors")), ("student.", "teacher."))

    add(
        "issue54/several-prefixes-names-the-flag",
        ["analyze", str(two), "-q"],
        2,
        inputs=[two],
        prepare=write_two,
        quick=True,
        check=error_has("--prefix student.", absent=("in Python", "prefix=")),
    )
    big_c, big_o = w / "nb-1e308" / "in", w / "nb-1e308" / "out"

    def no_warning(done: subprocess.CompletedProcess[str]) -> str | None:
        return "a warning on stderr" if "warning" in done.stderr.lower() else None

    add(
        "issue54/norm_based-1e308-no-warning",
        ["correlate", str(big_c), "--out", str(big_o), *fast],
        0,
        inputs=[big_c],
        prepare=edit_csv(cA, big_c, "models.csv", cell("norm_based", "1e308")),
        quick=False,
        check=no_warning,
    )
    nl_model = w / "nl" / "mod\nel"

    def one_header(done: subprocess.CompletedProcess[str]) -> str | None:
        lines = done.stdout.splitlines()
        if any(ln.startswith("el ") for ln in lines) or not any("mod\\nel" in ln for ln in lines):
            return "the name's newline split the header"
        return None

    add(
        "issue54/newline-model-name-header",
        ["analyze", str(nl_model), "--no-cache"],
        0,
        inputs=[nl_model],
        prepare=lambda: _fresh_copy(model, nl_model),
        quick=True,
        check=one_header,
    )

    # 1, 6, 7, 8: GGUF (fixed on the "gguf" branch)
    if not _has("gguf"):
        return
    g = w / "gguf"
    for name, make, words in (
        ("non-utf8-general.name", lambda p: _gguf_bad_text(p, "general.name"), ("general.name",)),
        (
            "non-utf8-general.architecture",
            lambda p: _gguf_bad_text(p, "general.architecture"),
            ("general.architecture",),
        ),
        ("misaligned-offset", _gguf_misaligned, ("align",)),
        ("overlapping-offsets", _gguf_overlapping, ("overlap",)),
        ("heads-no-config-json", lambda p: _write_gguf(p, heads=5), ()),
    ):
        f = g / f"{name}.gguf"
        add(
            f"{ISSUE54_GGUF}{name}",
            ["analyze", str(f), "-q"],
            2,
            inputs=[f],
            prepare=(lambda f=f, make=make: make(f)),
            quick=True,
            check=error_has(f.name, *words, absent=("config.json",)),
        )
    two_g = g / "two-case"

    def write_two_gguf() -> None:
        two_g.mkdir(parents=True, exist_ok=True)
        _write_gguf(two_g / "a.gguf")
        _write_gguf(two_g / "b.GGUF")

    add(
        f"{ISSUE54_GGUF}a.gguf-and-b.GGUF",
        ["analyze", str(two_g), "-q"],
        2,
        inputs=[two_g],
        prepare=write_two_gguf,
        quick=True,
        check=error_has("a.gguf", "b.GGUF"),
    )


def _safetensors_parts(path: Path) -> tuple[dict[str, Any], bytes]:
    """The header (a dict) and the data bytes of a safetensors file (standard library only)."""
    import struct

    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + n]), raw[8 + n :]


def _write_safetensors(path: Path, header: dict[str, Any], data: bytes, size: int = 0) -> None:
    """A safetensors file of ``header`` and ``data``, extended (sparse) to ``size`` data bytes."""
    import struct

    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(h)) + h + data)
        if size > len(data):
            fh.truncate(8 + len(h) + size)


def _append_sparse_tensor(path: Path, nbytes: int) -> None:
    """Add one float32 tensor of ``nbytes`` after the others, as a hole of the file."""
    header, data = _safetensors_parts(path)
    n = nbytes // 4
    header["zzz.huge"] = {
        "dtype": "F32",
        "shape": [n],
        "data_offsets": [len(data), len(data) + 4 * n],
    }
    _write_safetensors(path, header, data, len(data) + 4 * n)


def _duplicate_under_prefixes(path: Path, prefixes: tuple[str, ...]) -> None:
    """Every tensor of ``path`` once under each prefix (two models in one file)."""
    header, data = _safetensors_parts(path)
    meta = header.pop("__metadata__", None)
    out: dict[str, Any] = {} if meta is None else {"__metadata__": meta}
    for k, pre in enumerate(prefixes):
        for name, info in header.items():
            a, b = info["data_offsets"]
            out[pre + name] = {**info, "data_offsets": [a + k * len(data), b + k * len(data)]}
    _write_safetensors(path, out, data * len(prefixes))


def _limited_address_space(argv: list[str], limit: int) -> str:
    """A script running ``specbound argv`` with at most ``limit`` bytes of address space."""
    return textwrap.dedent(f"""
        import resource, runpy, sys
        resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
        sys.argv = ["specbound", *{argv!r}]
        runpy.run_module("specbound", run_name="__main__")
    """)


def _write_gguf(path: Path, heads: int = 4, name: str = "XXXXXXXX") -> None:
    """A one-block llama GGUF (float32, 32 wide, 4 heads, 2 KV heads); ``heads`` other than
    4 is inconsistent with the KV heads."""
    import gguf  # type: ignore[import-untyped]
    import numpy as np

    n, kv, f = 32, 2, 64
    d = n // 4
    path.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(name)
    w.add_block_count(1)
    w.add_embedding_length(n)
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_feed_forward_length(f)
    rng = np.random.default_rng(0)
    w.add_tensor("token_embd.weight", rng.standard_normal((7, n)).astype(np.float32))
    for stem, shape in (
        ("attn_q", (4 * d, n)),
        ("attn_k", (kv * d, n)),
        ("attn_v", (kv * d, n)),
        ("attn_output", (n, 4 * d)),
        ("ffn_gate", (f, n)),
        ("ffn_up", (f, n)),
        ("ffn_down", (n, f)),
    ):
        w.add_tensor(f"blk.0.{stem}.weight", rng.standard_normal(shape).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _gguf_bad_text(path: Path, key: str) -> None:
    """A GGUF whose text field ``key`` holds bytes that are not UTF-8 (same length)."""
    import struct

    _write_gguf(path)
    raw = bytearray(path.read_bytes())
    at = raw.index(key.encode()) + len(key) + 4  # the key, then its value type (uint32)
    (n,) = struct.unpack("<Q", raw[at : at + 8])
    raw[at + 8 : at + 8 + n] = b"\xff\xfe" * (n // 2) + b"\xff" * (n % 2)
    path.write_bytes(bytes(raw))


def _gguf_set_offset(path: Path, index: int, offset: Callable[[list[int]], int]) -> None:
    """Tensor ``index``'s data offset set to ``offset(all offsets)`` in the header."""
    import struct

    import gguf

    r = gguf.GGUFReader(str(path))
    fields = [t.field for t in r.tensors]
    offsets = [int(f.parts[-1][0]) for f in fields]
    at = fields[index].offset + sum(int(p.nbytes) for p in fields[index].parts[:-1])
    value = offset(offsets)
    del r, fields
    with open(path, "r+b") as fh:
        fh.seek(at)
        fh.write(struct.pack("<Q", value))


def _gguf_overlapping(path: Path) -> None:
    """The second tensor's data starts where the first one's does (aligned, overlapping)."""
    _write_gguf(path)
    _gguf_set_offset(path, 1, lambda offs: offs[0])


def _gguf_misaligned(path: Path) -> None:
    """The last tensor's data 16 bytes later (not a multiple of the 32-byte alignment), the file
    16 bytes longer so that it still ends inside the file, overlapping nothing."""
    _write_gguf(path)
    _gguf_set_offset(path, -1, lambda offs: offs[-1] + 16)
    with open(path, "ab") as fh:
        fh.write(b"\0" * 32)


def _api(body: str) -> str:
    """A script running ``body``; a SpecboundError (or the ValueError / TypeError of a checked
    parameter) becomes one ``error:`` line and exit 2, anything else a traceback."""
    return (
        "import sys\nfrom specbound.errors import SpecboundError\ntry:\n"
        + textwrap.indent(body, "    ")
        + "\nexcept (SpecboundError, ValueError, TypeError) as e:\n"
        "    print('error: ' + str(e).splitlines()[0], file=sys.stderr); sys.exit(2)\n"
    )


def _claims(d: Path, f: Callable[[str], str]) -> Callable[[], None]:
    def prepare() -> None:
        d.mkdir(parents=True, exist_ok=True)
        (d / "claims.csv").write_bytes(f(CLAIMS.read_text(encoding="utf-8")).encode())

    return prepare


def _fresh_copy(src: Path, dst: Path) -> None:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)


def _mkfifo(p: Path) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    if not p.exists():
        os.mkfifo(p)


def _readonly(p: Path) -> None:
    p.mkdir(parents=True, exist_ok=True)
    p.chmod(0o555)


def _file(p: Path) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("x\n")


def _concurrent_script(model: Path, parent: Path, same: bool, seconds: float) -> str:
    """Four processes write Analysis.to_dir into sibling folders (or one folder) of ``parent``
    for ``seconds``; every write must succeed and leave a whole folder."""
    return textwrap.dedent(f"""
        import multiprocessing as mp, os, sys, time, json
        from pathlib import Path
        PARENT = Path({str(parent)!r})

        def work(i, q):
            import specbound
            a = specbound.analyze({str(model)!r})
            end = time.monotonic() + {seconds}
            n = bad = 0
            while time.monotonic() < end:
                d = PARENT / ("same" if {same} else f"r{{i}}")
                try:
                    a.to_dir(d)
                    n += 1
                    if not {same} and not (d / "summary.json").is_file():
                        bad += 1
                except Exception as e:
                    bad += 1
                    q.put(f"{{type(e).__name__}}: {{e}}")
            q.put((n, bad))

        if __name__ == "__main__":
            PARENT.mkdir(parents=True, exist_ok=True)
            q = mp.Queue()
            ps = [mp.Process(target=work, args=(i, q)) for i in range(4)]
            for p in ps: p.start()
            msgs = []
            done = 0
            while done < 4:
                m = q.get(timeout=120)
                if isinstance(m, tuple):
                    done += 1
                    msgs.append(m)
                else:
                    print("error: " + m.splitlines()[0], file=sys.stderr); sys.exit(1)
            for p in ps: p.join()
            n = sum(m[0] for m in msgs); bad = sum(m[1] for m in msgs)
            names = sorted(p.name for p in PARENT.iterdir())
            for d in PARENT.iterdir():
                if not (d / "summary.json").is_file():
                    print(f"error: {{d.name}} has no summary.json", file=sys.stderr); sys.exit(1)
            if bad or n == 0 or any(x.startswith(".specbound") for x in names):
                print(f"error: {{bad}} of {{n}} writes failed, left {{names}}", file=sys.stderr)
                sys.exit(1)
            print(f"{{n}} writes")
    """)


def _concurrent_cli(model: Path, parent: Path) -> str:
    """Four ``specbound analyze --out`` runs at once into one folder: all exit 0, one whole
    folder remains."""
    return textwrap.dedent(f"""
        import subprocess, sys
        from pathlib import Path
        o = Path({str(parent)!r}) / "o"
        cmd = [sys.executable, "-m", "specbound", "analyze", {str(model)!r}, "--out", str(o), "-q"]
        ps = [subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True) for _ in range(4)]
        errs = [p.communicate()[1] for p in ps]
        rcs = [p.returncode for p in ps]
        if any(rcs) or not (o / "summary.json").is_file():
            first = next((e for e in errs if e.strip()), "").strip().splitlines()
            print(f"error: exits {{rcs}}: {{first[-1] if first else ''}}", file=sys.stderr)
            sys.exit(1)
    """)


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _kill_worker(out: Path, grid: Path) -> str:
    """``zoo train --workers 2``; the first worker process is SIGKILLed once. Passes when the
    run exits 0 (the job was retried) or 1 naming the lost job (not 2: not bad input)."""
    return textwrap.dedent(f"""
        import os, signal, subprocess, sys, time
        cmd = [sys.executable, "-m", "specbound", "zoo", "train", "modular-addition", "--grid",
               {str(grid)!r}, "--workers", "2", "--out", {str(out)!r}, "-q"]
        p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        def children(pid):
            try:
                with open(f"/proc/{{pid}}/task/{{pid}}/children") as fh:
                    return [int(x) for x in fh.read().split()]
            except OSError:
                return []
        killed = None
        end = time.monotonic() + 120
        while killed is None and p.poll() is None and time.monotonic() < end:
            time.sleep(0.5)
            kids = children(p.pid)
            if len(kids) >= 2:  # the pool's workers are up (one may be a resource tracker)
                time.sleep(2.0)
                killed = kids[-1]
                os.kill(killed, signal.SIGKILL)
        err = p.communicate(timeout=280)[1]
        lines = [ln for ln in err.splitlines() if ln.strip()]
        sys.stderr.write(err)
        if killed is None:
            print("error: no worker process to kill", file=sys.stderr); sys.exit(3)
        if "Traceback" in err:
            sys.exit(4)
        sys.exit(p.returncode)
    """)


def setup_inputs(t: Path, base: Path, env: dict[str, str]) -> None:
    """The inputs every case reads: two correlate folders (copies of committed ones), two tiny
    trained zoos (in ``base``, reused), a track folder, a small checkpoint and a grid file."""
    inp = t / "in"
    inp.mkdir(parents=True, exist_ok=True)
    shutil.copytree(RESULTS / "digits-arch", inp / "cA")
    shutil.copytree(RESULTS / "digits-arch-replicate", inp / "cB")
    shutil.copytree(RESULTS / "digits-arch", inp / "cA-copy")
    shutil.copytree(TRACK, inp / "track")
    grid = (
        "task: modular-addition\naxes:\n  depth: [1]\n  width: [32]\n  lr: [0.01]\n"
        "  weight_decay: [0.0, 1.0]\n  train_fraction: [0.3, 0.8]\n  seed: [{s}]\nmax_steps: 60\n"
    )
    (inp / "griddir").mkdir()
    (inp / "griddir" / "grid.yaml").write_text(grid.format(s="5"))
    base.mkdir(parents=True, exist_ok=True)
    for name, seeds in (("zA", "0, 1"), ("zB", "2, 3")):
        z = base / name
        if not (z / "zoo.csv").is_file():
            g = base / f"{name}.yaml"
            g.write_text(grid.format(s=seeds))
            subprocess.run(
                spec_cmd(
                    ["zoo", "train", "modular-addition", "--grid", str(g), "--out", str(z), "-q"]
                ),
                check=True,
                env=env,
                timeout=600,
            )
    shutil.copytree(base / "zA", inp / "zA-copy")
    # a small checkpoint: the first model of zoo A (a BERT classifier)
    first = sorted((base / "zA" / "models").iterdir())[0]
    shutil.copytree(first, inp / "model", ignore=shutil.ignore_patterns("init"))
    second = sorted((base / "zA" / "models").iterdir())[-1]
    shutil.copytree(second, inp / "model2", ignore=shutil.ignore_patterns("init"))
    (inp / "mapdir").mkdir()
    (inp / "mapdir" / "map.yaml").write_text("{}\n")
    (inp / "mapdup.yaml").write_text("QK: a\nQK: b\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a subset that runs in < 3 minutes")
    ap.add_argument("--only", default=None, help="cases whose name matches this regex")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    ap.add_argument("--base", default=None, help="folder keeping the trained zoos between runs")
    ap.add_argument("--jobs", type=int, default=2, help="cases run side by side")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    args = ap.parse_args(argv)
    t = Path(tempfile.mkdtemp(prefix="specbound-sweep-"))
    base = Path(args.base) if args.base else t / "base"
    env = dict(os.environ)
    src = str(ROOT / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("SPECBOUND_CACHE_DIR", str(t / "cache"))
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "200"
    try:
        cases = build_cases(t, base)
        if args.quick:
            cases = [c for c in cases if c.quick]
        if args.only:
            cases = [c for c in cases if re.search(args.only, c.name)]
        if args.list:
            print("\n".join(c.name for c in cases))
            return 0
        t0 = time.monotonic()
        setup_inputs(t, base, env)
        (t / "w").mkdir()
        results = []
        # cases that take the whole machine (signals, concurrency) run alone, after the others
        alone = [c for c in cases if c.signal_after or c.name.startswith("concurrent/")]
        shared = [c for c in cases if c not in alone]
        with cf.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            for r in pool.map(lambda c: run_case(c, env), shared):
                results.append(r)
                _show(r)
        for c in alone:
            r = run_case(c, env)
            results.append(r)
            _show(r)
        failed = [r for r in results if not r[1]]
        print(
            f"\n{len(results) - len(failed)} of {len(results)} cases pass "
            f"({time.monotonic() - t0:.0f} s)"
        )
        return 1 if failed else 0
    finally:
        if args.keep:
            print(f"kept {t}")
        else:
            _chmod_all(t)
            shutil.rmtree(t, ignore_errors=True)


def _show(r: tuple[str, bool, str, float]) -> None:
    name, ok, detail, secs = r
    print(f"{'PASS' if ok else 'FAIL'}  {name:<52} {secs:5.1f}s  {detail}", flush=True)


def _chmod_all(t: Path) -> None:
    for p in t.rglob("*"):
        try:
            if p.is_dir() and not p.is_symlink():
                p.chmod(0o755)
        except OSError:
            pass


if __name__ == "__main__":
    sys.exit(main())

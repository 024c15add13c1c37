"""The size ladder: growth exponents of the proxies and of the rank ceiling, refitted here.

Usage:
    python benchmarks/generalization/ladder.py           # print the ladder tables
    python benchmarks/generalization/ladder.py --check   # exit 1 unless growth.csv's pooled
                                                         # exponents match this refit

Reads results/digits-ladder/models.csv (``specbound scale`` over the trained ladder zoo) and
zoos/digits-ladder/zoo.csv (test accuracies). The refit is written here with numpy alone (it
shares no code with specbound): for axis x (hidden_size or num_layers) and the other axis z,
log10 B = a_z + b log10 x by ordinary least squares with one intercept per value of z (groups
with >= 2 distinct x), SE = sqrt(sigma^2 (X^T X)^-1)_bb with sigma^2 = RSS / (n - k).

Series: log10 of each proxy (the columns hold log10 B already), the log10 rank ceiling, their
difference ``spectrum_adaptive - norm_based`` (the paired question: does the adaptive proxy grow
more slowly than the norm-based one?) and ``ceiling_gap`` = log10 ceiling - log10 B (does the
proxy leave its ceiling as the model grows?).

Refits of the transition (the pooled exponent averages two regimes): the local exponent of each
width step at each depth (difference of the mean log10 B of the two widths over the difference of
their log10 width), the pooled width fit on widths >= 256 alone, and the width fit at each depth
(one line per depth, compared with growth.csv's ``per_fixed`` rows by ``--check``).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
FOLDER = HERE / "results" / "digits-ladder"
CEILING = "log10_spectrum_adaptive_ceiling"
AXES = ("hidden_size", "num_layers")


def series(m: pd.DataFrame) -> dict[str, np.ndarray]:
    sa = m["spectrum_adaptive"].to_numpy(float)
    nb = m["norm_based"].to_numpy(float)
    ce = m[CEILING].to_numpy(float)
    return {
        "spectrum_adaptive": sa,
        "norm_based": nb,
        CEILING: ce,
        "spectrum_adaptive - norm_based": sa - nb,
        "ceiling_gap": ce - sa,
    }


def pooled_fit(y: np.ndarray, x: np.ndarray, z: np.ndarray) -> tuple[float, float, int, int]:
    """(slope on log10 x, its SE, points, residual df) with one intercept per z group."""
    keep = np.zeros(len(y), dtype=bool)
    groups = []
    for g in np.unique(z):
        sel = z == g
        if np.unique(x[sel]).size >= 2:
            keep |= sel
            groups.append(g)
    keep &= np.isfinite(y)
    n = int(keep.sum())
    if not groups:
        return math.nan, math.nan, n, 0
    cols = [np.log10(x[keep])] + [(z[keep] == g).astype(float) for g in groups]
    X = np.column_stack(cols)
    beta, *_ = np.linalg.lstsq(X, y[keep], rcond=None)
    df = n - X.shape[1]
    if df <= 0:
        return float(beta[0]), math.nan, n, df
    rss = float(np.sum((y[keep] - X @ beta) ** 2))
    cov = rss / df * np.linalg.inv(X.T @ X)
    return float(beta[0]), float(math.sqrt(cov[0, 0])), n, df


def fits(m: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for name, y in series(m).items():
        for axis in AXES:
            other = AXES[1 - AXES.index(axis)]
            b, se, n, df = pooled_fit(y, m[axis].to_numpy(float), m[other].to_numpy(float))
            rows.append(
                dict(series=name, axis=axis, exponent=b, exponent_se=se, n_points=n, resid_df=df)
            )
    return pd.DataFrame(rows)


def local_exponents(m: pd.DataFrame, name: str) -> pd.DataFrame:
    """Local width exponents of series ``name``: per depth, for consecutive widths w1 < w2,
    (mean log10 B at w2 - mean log10 B at w1) / (log10 w2 - log10 w1)."""
    y = series(m)[name]
    rows = []
    for depth in sorted(m["num_layers"].unique()):
        sel = m["num_layers"].to_numpy() == depth
        widths = sorted(m.loc[sel, "hidden_size"].unique())
        means = [float(np.mean(y[sel & (m["hidden_size"].to_numpy() == w)])) for w in widths]
        for k in range(1, len(widths)):
            slope = (means[k] - means[k - 1]) / (math.log10(widths[k]) - math.log10(widths[k - 1]))
            rows.append(dict(depth=int(depth), step=f"{widths[k - 1]}-{widths[k]}", exponent=slope))
    return pd.DataFrame(rows)


def per_depth_fits(m: pd.DataFrame, name: str, min_width: int = 0) -> pd.DataFrame:
    """Width fit of series ``name`` at each depth alone (widths >= ``min_width``), and pooled
    over depths (one intercept per depth)."""
    y = series(m)[name]
    w = m["hidden_size"].to_numpy(float)
    d = m["num_layers"].to_numpy(float)
    keep = w >= min_width
    rows = []
    for depth in sorted(np.unique(d)):
        sel = keep & (d == depth)
        b, se, n, _ = pooled_fit(y[sel], w[sel], d[sel])
        rows.append(dict(depth=str(int(depth)), exponent=b, exponent_se=se, n_points=n))
    b, se, n, _ = pooled_fit(y[keep], w[keep], d[keep])
    rows.append(dict(depth="pooled", exponent=b, exponent_se=se, n_points=n))
    return pd.DataFrame(rows)


def se(x: float) -> str:
    """A standard error, 2 significant digits; one below 1e-9 (a fit through points that lie
    exactly on a line, up to rounding) is printed as 0."""
    return "0" if abs(x) < 1e-9 else f"{x:.2g}"


def transition_tables(m: pd.DataFrame) -> str:
    """The local width exponents and the width fits (all widths, widths >= 256) per depth."""
    names = ("spectrum_adaptive", "norm_based")
    loc = {k: local_exponents(m, k) for k in names}
    steps = list(dict.fromkeys(loc[names[0]]["step"]))
    rows = []
    for k in names:
        t = loc[k]
        for depth in sorted(t["depth"].unique()):
            sub = t[t["depth"] == depth].set_index("step")["exponent"]
            rows.append([f"`{k}`", str(depth), *[f"{sub[s]:+.2f}" for s in steps]])
    t1 = md(["series", "depth", *[f"width {s}" for s in steps]], rows)
    rows = []
    for k in names:
        for lo in (0, 256):
            for r in per_depth_fits(m, k, lo).to_dict("records"):
                rows.append(
                    [
                        f"`{k}`",
                        "all" if lo == 0 else f">= {lo}",
                        r["depth"],
                        f"{r['exponent']:+.3g} ± {se(r['exponent_se'])}",
                        str(r["n_points"]),
                    ]
                )
    t2 = md(["series", "widths", "depth", "width exponent ± SE", "points"], rows)
    return t1 + "\n\n" + t2


def by_size(m: pd.DataFrame, zoo: pd.DataFrame | None) -> pd.DataFrame:
    m = m.copy()
    if zoo is not None:
        names = [Path(str(x)).name for x in zoo["model"]]
        acc = dict(zip(names, zoo["test_acc"], strict=True))
        steps = dict(zip(names, zoo["steps"], strict=True))
        m["test_acc"] = [acc.get(Path(str(p)).name, math.nan) for p in m["model"]]
        m["steps"] = [steps.get(Path(str(p)).name, math.nan) for p in m["model"]]
    out = m.groupby(["num_layers", "hidden_size"]).agg(
        models=("model", "size"),
        share_p0=("spectrum_adaptive_share_p0", "mean"),
        ceiling_gap=("spectrum_adaptive_ceiling_gap", "mean"),
        gap_min=("spectrum_adaptive_ceiling_gap", "min"),
        gap_max=("spectrum_adaptive_ceiling_gap", "max"),
        log10_sa=("spectrum_adaptive", "mean"),
        log10_nb=("norm_based", "mean"),
        log10_ceiling=(CEILING, "mean"),
        **({"test_acc": ("test_acc", "mean")} if "test_acc" in m else {}),
        **({"steps_min": ("steps", "min"), "steps_max": ("steps", "max")} if "steps" in m else {}),
    )
    return out.reset_index()


def md(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def ladder_tables(folder: Path = FOLDER) -> str:
    m = pd.read_csv(folder / "models.csv")
    zoo_csv = HERE / "zoos" / "digits-ladder" / "zoo.csv"
    zoo = pd.read_csv(zoo_csv) if zoo_csv.is_file() else None
    f = fits(m)
    t1 = md(
        ["series", "axis", "exponent ± SE", "points", "resid df"],
        [
            [
                f"`{r['series']}`",
                r["axis"],
                f"{r['exponent']:+.3g} ± {r['exponent_se']:.2g}",
                str(r["n_points"]),
                str(r["resid_df"]),
            ]
            for r in f.to_dict("records")
        ],
    )
    s = by_size(m, zoo)
    t2 = md(
        [
            "depth",
            "width",
            "models",
            "share p*=0",
            "ceiling gap (models)",
            "log10 B_SA",
            "log10 B_NB",
            "log10 ceiling",
            *(["test acc"] if "test_acc" in s else []),
            *(["steps (models)"] if "steps_min" in s else []),
        ],
        [
            [
                str(int(r["num_layers"])),
                str(int(r["hidden_size"])),
                str(int(r["models"])),
                f"{r['share_p0']:.3f}",
                f"{r['ceiling_gap']:.3g} ({r['gap_min']:.3g}-{r['gap_max']:.3g})",
                f"{r['log10_sa']:.3f}",
                f"{r['log10_nb']:.3f}",
                f"{r['log10_ceiling']:.3f}",
                *([f"{r['test_acc']:.3f}"] if "test_acc" in r else []),
                *([f"{int(r['steps_min'])}-{int(r['steps_max'])}"] if "steps_min" in r else []),
            ]
            for r in s.to_dict("records")
        ],
    )
    return t1 + "\n\n" + t2 + "\n\n" + transition_tables(m)


def check(folder: Path = FOLDER) -> list[str]:
    """Rows where growth.csv's pooled exponents (specbound's fit) differ from this refit."""
    m = pd.read_csv(folder / "models.csv")
    g = pd.read_csv(folder / "growth.csv")
    mine = fits(m).set_index(["series", "axis"])
    bad = []
    for r in g[g["fit"] == "pooled"].to_dict("records"):
        key = (r["measure"], r["axis"])
        if key not in mine.index:
            continue
        b = mine.loc[key, "exponent"]
        if not (abs(b - r["exponent"]) <= 1e-9 * max(1.0, abs(b))):
            bad.append(f"{key}: growth.csv {r['exponent']!r}, refit {b!r}")
    # the width fit at each depth alone (growth.csv's per_fixed rows on hidden_size)
    for name in ("spectrum_adaptive", "norm_based"):
        per = per_depth_fits(m, name).set_index("depth")
        rows = g[(g["fit"] == "per_fixed") & (g["measure"] == name) & (g["axis"] == "hidden_size")]
        if rows.empty:
            bad.append(f"({name!r}, 'hidden_size'): growth.csv has no per-depth rows")
        for r in rows.to_dict("records"):
            key = str(int(r["fixed_value"]))
            b = float(per.loc[key, "exponent"]) if key in per.index else math.nan
            if not (abs(b - r["exponent"]) <= 1e-9 * max(1.0, abs(b))):
                bad.append(f"({name!r}, depth {key}): growth.csv {r['exponent']!r}, refit {b!r}")
    return bad


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        problems = check()
        for line in problems:
            print(line, file=sys.stderr)
        sys.exit(1 if problems else 0)
    print(ladder_tables())

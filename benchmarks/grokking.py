"""Measures during a grokking run (SPEC 11): tracker overhead and what the measures show.

    python benchmarks/grokking.py [--p 31] [--frac 0.5] [--steps 2000] [--out benchmarks/grokking]

Modular addition a + b mod P with a 1-layer BERT-like transformers model (hidden 128, 4 heads,
no dropout), full-batch AdamW (lr 3e-3, betas 0.9/0.98, weight decay 1.0) on a random
``frac`` of the P^2 pairs. The same run (same seed, same data, same arithmetic) is done twice,
side by side in one process: without a tracker, and with ``Tracker(every="auto")`` (5% budget).
Printed: wall and CPU time of both, the overhead, and when each series moved (the step at which
it had covered half of its net change) next to the step at which test accuracy jumps. Writes
``OUT/track/track.csv``, ``OUT/history.csv`` (accuracies every ``--metrics-every`` steps) and
``OUT/grokking_trajectory.png``.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np
import torch


def make_data(p: int, frac: float, seed: int):
    pairs = torch.tensor([(a, b) for a in range(p) for b in range(p)])
    x = torch.cat([pairs, torch.full((len(pairs), 1), p)], dim=1)  # tokens: a, b, "="
    y = (pairs[:, 0] + pairs[:, 1]) % p
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    n = int(frac * len(x))
    return (x[perm[:n]], y[perm[:n]]), (x[perm[n:]], y[perm[n:]])


def make_model(p: int, seed: int):
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(seed)
    cfg = BertConfig(
        vocab_size=p + 1,
        hidden_size=128,
        num_hidden_layers=1,
        num_attention_heads=4,
        intermediate_size=512,
        max_position_embeddings=4,
        type_vocab_size=1,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        num_labels=p,
    )
    return BertForSequenceClassification(cfg)


def metrics(model, train, test) -> dict[str, float]:
    with torch.no_grad():
        out = {}
        for name, (x, y) in (("train", train), ("test", test)):
            logits = model(input_ids=x).logits
            out[f"{name}_loss"] = float(torch.nn.functional.cross_entropy(logits, y))
            out[f"{name}_acc"] = float((logits.argmax(-1) == y).float().mean())
    return out


def train(args, tracker_dir: Path | None) -> dict:
    """One run; returns times, the metric history and the tracker (or None)."""
    from specbound.track import Tracker

    train_set, test_set = make_data(args.p, args.frac, args.seed)
    model = make_model(args.p, args.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=1.0)
    tracker = None
    wall0, cpu0 = time.perf_counter(), time.process_time()
    if tracker_dir is not None:
        tracker = Tracker(
            model, every="auto", budget=args.budget, out=tracker_dir, tensorboard=False
        )
    history, last = [], {}
    x, y = train_set
    for step in range(args.steps + 1):
        if step % args.metrics_every == 0:
            model.eval()
            last = metrics(model, train_set, test_set)
            model.train()
            history.append({"step": step, **last})
        if tracker is not None:
            tracker.step(step, **last)
        if step == args.steps:
            break
        loss = torch.nn.functional.cross_entropy(model(input_ids=x).logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    if tracker is not None:
        tracker.close()
    return {"wall": wall, "cpu": cpu, "history": history, "tracker": tracker, "final": last}


def first_step(history, key, threshold) -> int | None:
    for h in history:
        if h[key] >= threshold:
            return h["step"]
    return None


def figure(track_rows, history, out: Path, names: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hs = np.array([h["step"] for h in history])
    tr = np.array([h["train_acc"] for h in history])
    te = np.array([h["test_acc"] for h in history])
    steps = np.array([r["step"] for r in track_rows], dtype=float)
    cols = 3
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(13, 2.9 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names, strict=False):
        v = np.array([np.nan if r[name] is None else r[name] for r in track_rows], dtype=float)
        ax.plot(steps, v, color="#3b6fb6", marker=".", ms=3)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("step")
        tw = ax.twinx()
        tw.plot(hs, tr, color="#999999", lw=1, label="train acc")
        tw.plot(hs, te, color="#c0504d", lw=1, label="test acc")
        tw.set_ylim(-0.02, 1.02)
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    axes.flat[0].figure.legend(*tw.get_legend_handles_labels(), loc="lower right")
    fig.suptitle("Modular addition: measures (blue) vs train (grey) / test (red) accuracy")
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)


def print_milestones(rows, hist, names) -> None:
    """Each series at the evaluation nearest (at or before) the accuracy milestones."""
    from specbound.track import half_change_step

    marks = [("init", 0), ("train acc >= 0.99", first_step(hist, "train_acc", 0.99))]
    for thr in (0.05, 0.5, 0.95):
        marks.append((f"test acc >= {thr}", first_step(hist, "test_acc", thr)))
    marks.append(("end", hist[-1]["step"]))
    print("\n" + "; ".join(f"{m}: step {s}" for m, s in marks))
    steps = np.array([r["step"] for r in rows])
    idx = [int(np.nonzero(steps <= s)[0][-1]) if s is not None else None for _, s in marks]
    print(
        "\n| series | " + " | ".join(f"{m} (step {s})" for m, s in marks) + " | half-change step |"
    )
    print("|---|" + "---|" * (len(marks) + 1))
    for name in names:
        v = np.array([np.nan if r[name] is None else r[name] for r in rows], dtype=float)
        cells = ["" if k is None else f"{v[k]:.4g}" for k in idx]
        print(f"| {name} | " + " | ".join(cells) + f" | {half_change_step(steps, v)} |")
    mem = idx[1]
    if mem is not None:
        print(
            "\nafter memorization, the first evaluation where each mean p* rises above its value "
            "at memorization:"
        )
        for name in names:
            if name.endswith("_p_star"):
                v = np.array([r[name] for r in rows], dtype=float)
                up = np.nonzero(v[mem:] > v[mem])[0]
                print(f"  {name}: step {steps[mem + up[0]] if len(up) else None}")


def report_only(out: Path) -> None:
    """Print the milestone table from the files of an earlier run (no training)."""

    def read(path):
        with path.open(newline="") as fh:
            return [
                {k: (None if v == "" else float(v)) for k, v in r.items()}
                for r in csv.DictReader(fh)
            ]

    rows = read(out / "track" / "track.csv")
    hist = read(out / "history.csv")
    names = [
        c
        for c in rows[0]
        if c not in ("step", "wall_s", "analysis_s", "num_parameters")
        and not c.startswith(("train_", "test_"))
        and not c.endswith(("share_p0", "contribution"))
    ]
    print(f"evaluations: {len(rows)}; analysis total {sum(r['analysis_s'] for r in rows):.2f} s")
    print_milestones(rows, hist, names)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p", type=int, default=31)
    ap.add_argument("--frac", type=float, default=0.5)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--budget", type=float, default=0.05)
    ap.add_argument("--metrics-every", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (both runs)")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/grokking"))
    ap.add_argument("--order", default="base,tracked", help="run order, e.g. tracked,base")
    ap.add_argument(
        "--report-only",
        action="store_true",
        help="print the tables of an earlier run in --out (no training)",
    )
    args = ap.parse_args()
    if args.report_only:
        report_only(args.out)
        return
    torch.set_num_threads(args.threads)
    track_dir = args.out / "track"
    if (track_dir / "track.csv").exists():
        raise SystemExit(f"{track_dir}/track.csv exists; remove it or pass another --out")
    args.out.mkdir(parents=True, exist_ok=True)
    runs = {}
    for which in args.order.split(","):
        runs[which] = train(args, track_dir if which == "tracked" else None)
        r = runs[which]
        print(
            f"{which}: wall {r['wall']:.1f} s, cpu {r['cpu']:.1f} s, final {r['final']}", flush=True
        )
    base, tracked = runs["base"], runs["tracked"]
    tk = tracked["tracker"]
    hist = tracked["history"]
    assert hist == base["history"], "the tracker changed the training run"
    with (args.out / "history.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(hist[0]))
        w.writeheader()
        w.writerows(hist)
    n_eval = len(tk.rows)
    print(
        f"\nevaluations: {n_eval}; analysis total {tk.analysis_seconds:.2f} s "
        f"({100 * tk.analysis_seconds / tracked['wall']:.2f}% of the tracked run's wall)"
    )
    print(
        f"wall overhead: {100 * (tracked['wall'] / base['wall'] - 1):+.2f}%  "
        f"cpu overhead: {100 * (tracked['cpu'] / base['cpu'] - 1):+.2f}%"
    )
    names = [m for m in tk.measures if m != "num_parameters"]
    names += ["QK_mean_p_star", "OV_mean_p_star", "M_in_mean_p_star", "M_out_mean_p_star"]
    print_milestones(tk.rows, hist, names)
    figure(tk.rows, hist, args.out / "grokking_trajectory.png", names)
    print(f"\nwrote {args.out}/grokking_trajectory.png, {track_dir}/track.csv, history.csv")


if __name__ == "__main__":
    main()

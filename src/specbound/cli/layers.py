"""``specbound layers MODEL --for alphapruning|tempbalance --out FILE.csv``: per-tensor values of
a layerwise method from the HTSR fits (``specbound.layerwise``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from .app import Command, app, fail, handle_errors
from .common import print_json, resolve_model
from .options import Device, Json, Mapping, Model, NoCache, Prefix, Quiet, out_path


def _header(columns: list[str]) -> str:
    """The first line of every CSV this command writes: an existing --out file without it was
    not written by specbound and is never overwritten."""
    return ",".join(columns)


def _check_out(out: Path, header: str, model: str) -> None:
    """Refuse an --out that is a directory, a FIFO or device (never opened: it would block),
    inside or around the model, or a file this command did not write."""
    from ..io.files import check_output_file, output_file_kind

    if output_file_kind(out) == "a directory":  # never raises (a name too long: below)
        fail(f"--out {out} is a directory; give a file name such as layers.csv")
    check_output_file(out, inputs=[model])
    if out.suffix.lower() != ".csv":
        fail(f"--out {out}: expected a .csv file name")
    if out.exists():
        try:
            with out.open("r", encoding="utf-8", errors="replace") as fh:
                first = fh.readline().rstrip("\r\n")
        except OSError as exc:
            fail(f"cannot read --out {out}: {exc.strerror or exc}")
        if first != header:
            fail(
                f"--out {out} exists and is not a specbound layers export of the same method; "
                "choose a new file name: specbound never overwrites files it did not write"
            )


@app.command("layers", cls=Command)
@handle_errors
def layers_command(
    model: Model,
    method: Annotated[
        Literal["alphapruning", "tempbalance"],
        typer.Option(
            "--for",
            help="alphapruning (layerwise sparsities, Lu et al. 2024) or tempbalance "
            "(per-layer learning-rate factors, Zhou et al. 2023).",
            show_default=False,
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Write the per-tensor values to this CSV file.", parser=out_path
        ),
    ] = None,
    sparsity: Annotated[
        float,
        typer.Option("--sparsity", help="alphapruning: the target sparsity S (0 < S < 1)."),
    ] = 0.7,
    epsilon: Annotated[
        float,
        typer.Option(
            "--epsilon",
            help="alphapruning: ratios in [1 - epsilon, 1 + epsilon] before the rescaling to S.",
        ),
    ] = 0.2,
    granularity: Annotated[
        Literal["layer", "matrix"],
        typer.Option(
            "--granularity",
            help="alphapruning: layer (one sparsity per layer from the mean alpha of its ok "
            "fits, as in the authors' code) or matrix (one per weight matrix).",
        ),
    ] = "layer",
    lr_min: Annotated[
        float,
        typer.Option("--lr-min", help="tempbalance: the factor of the smallest alpha (s1)."),
    ] = 0.5,
    lr_max: Annotated[
        float,
        typer.Option("--lr-max", help="tempbalance: the factor of the largest alpha (s2)."),
    ] = 1.5,
    device: Device = None,
    no_cache: NoCache = False,
    mapping: Mapping = None,
    prefix: Prefix = None,
    as_json: Json = False,
    quiet: Quiet = False,
) -> None:
    """Per-tensor AlphaPruning sparsities or TempBalance learning-rate factors from the HTSR
    power-law fits, keyed by the checkpoint's tensor names. Failed fits (htsr_fit short_tail or
    poor) are not mapped: they get the target sparsity or the factor 1."""
    from ..io.files import atomic_file, write_csv
    from ..layerwise import (
        ALPHAPRUNING_COLUMNS,
        TEMPBALANCE_COLUMNS,
        alphapruning_sparsities,
        layerwise,
        tempbalance_factors,
    )

    # --for and --granularity are choices (typer refuses other values: one error line)
    # the options first, before any reading
    if method == "alphapruning":
        alphapruning_sparsities([], [], sparsity, epsilon)
    else:
        tempbalance_factors([], lr_min, lr_max)
    columns = ALPHAPRUNING_COLUMNS if method == "alphapruning" else TEMPBALANCE_COLUMNS
    if out is not None:
        _check_out(out, _header(columns), model)
    df = layerwise(
        resolve_model(model),
        method,
        sparsity=sparsity,
        epsilon=epsilon,
        lr_min=lr_min,
        lr_max=lr_max,
        granularity=granularity,
        device=device,
        cache=not no_cache,
        mapping=mapping,
        prefix=prefix,
        name=model,
    )
    if out is not None:
        try:
            with atomic_file(out, "w") as fh:
                write_csv(df, fh)
        except OSError as exc:
            fail(f"cannot write --out {out}: {exc.strerror or exc}")
    value = "sparsity" if method == "alphapruning" else "lr_factor"
    failed = int((df["htsr_fit"] != "ok").sum())
    if as_json:
        params = (
            {"sparsity": sparsity, "epsilon": epsilon, "granularity": granularity}
            if method == "alphapruning"
            else {"lr_min": lr_min, "lr_max": lr_max}
        )
        print_json(
            {"model": model, "method": method, **params, "rows": df.to_dict(orient="records")}
        )
        return
    if quiet:
        return
    w = df["parameters"].to_numpy(dtype=float)
    v = df[value].to_numpy(dtype=float)
    lines = [
        f"{method}: {len(df)} tensors, {value} from {v.min():.4g} to {v.max():.4g}",
    ]
    if method == "alphapruning":
        lines.append(
            f"parameter-weighted mean sparsity {float((w * v).sum() / w.sum()):.12g} "
            f"(target {sparsity:g}, epsilon {epsilon:g}, per {granularity})"
        )
    unmapped = int((~df["mapped"].astype(bool)).sum())
    fallback = "the target sparsity" if method == "alphapruning" else "the factor 1"
    text = (
        f"{failed} tensors have a short_tail or poor fit; {unmapped} were not mapped and got "
        f"{fallback}"
    )
    if method == "alphapruning" and granularity == "layer":
        text += " (per layer: a failed fit is left out of its layer's mean alpha)"
    lines.append(text)
    if out is not None:
        lines.append(f"wrote {out}")
    for line in lines:
        typer.echo(line)

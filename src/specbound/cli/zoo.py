"""``specbound zoo train TASK``: a factorial grid of small Transformers trained offline."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import extras
from .app import Command, fail, handle_errors, zoo_app
from .common import make_engine, print_json
from .options import DEFAULT_ENGINE, Engine, Json, RayAddress, out_option


@zoo_app.command("train", cls=Command)
@handle_errors
def zoo_train(
    task: Annotated[
        str,
        typer.Argument(
            help="modular-addition, digits or sparse-parity (see specbound.studies.zoo.TASKS).",
            show_default=False,
        ),
    ],
    out: Path = out_option("Zoo directory (zoo.csv, zoo.json, models/)."),
    grid: Annotated[
        Path | None,
        typer.Option(
            "--grid",
            help="YAML: {axes: {axis: [values]}, max_steps, target_loss}; "
            "its axes replace the preset's.",
        ),
    ] = None,
    preset: Annotated[
        str,
        typer.Option(
            "--preset",
            help="standard (144 models: 3 seeds, 3 values of n), fixed-n (48: n held at one "
            "value), standard-v1 (the 128-model grid of the first answer) or tiny (8 models, "
            "plumbing only).",
        ),
    ] = "standard",
    device: Annotated[str, typer.Option("--device", help="cpu or cuda.")] = "cpu",
    threads: Annotated[
        int, typer.Option("--threads", help="torch intra-op threads per model.")
    ] = 1,
    ensemble: Annotated[
        str,
        typer.Option(
            "--ensemble",
            help="Models of one architecture trained together as one batched computation: "
            "N, or auto (the mode measured fastest on the device: 1 on the CPU, up to 16 "
            "memory permitting on CUDA); 1 = one at a time.",
        ),
    ] = "auto",
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            help="Processes training models side by side, each with --threads torch threads "
            "(the files do not depend on it); local engine only.",
            show_default="one per usable CPU (divided by --threads; 1 on CUDA)",
        ),
    ] = None,
    engine: Engine = DEFAULT_ENGINE,
    ray_address: RayAddress = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No per-model lines.")] = False,
    as_json: Json = False,
) -> None:
    """Train a factorial grid on TASK; re-running skips finished models."""
    from ..studies.zoo import train_zoo

    eng = make_engine(engine, ray_address)  # bad engine options fail before any training
    missing = [m for m in ("torch", "transformers") if not extras.available(m)]
    if missing:  # the zoo extra installs them (and scikit-learn), not the torch extra alone
        fail(
            f"zoo train needs {' and '.join(missing)}; install the zoo extra: "
            f"{extras.install_hint('zoo')}"
        )

    def note(i: int, n: int, name: str, m: dict[str, Any] | None) -> None:
        if quiet:
            return
        if m is None:
            sys.stderr.write(f"[{i}/{n}] {name}: done before, skipped\n")
        else:
            sys.stderr.write(
                f"[{i}/{n}] {name}: train {m['train_acc']:.3f} test {m['test_acc']:.3f} "
                f"loss {m['train_loss']:.3g} steps {m['steps']} "
                f"{'converged' if m['converged'] else 'NOT converged'} {m['wall_s']:.1f}s\n"
            )

    df = train_zoo(
        task,
        out,
        preset=preset,
        grid=grid,
        device=device,
        threads=threads,
        on_model=note,
        ensemble=ensemble,
        engine=eng,
        workers=workers,
    )
    if as_json:
        print_json({"out": str(out), "models": df})
    elif not quiet:
        typer.echo(
            f"wrote {out}/zoo.csv ({len(df)} models, {int(df['converged'].sum())} "
            "converged) and zoo.json"
        )

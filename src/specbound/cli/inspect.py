"""``specbound inspect MODEL``: every tensor of a checkpoint and the role it plays."""

from __future__ import annotations

import typer

from .app import Command, app, handle_errors
from .common import print_json, resolve_model
from .options import Json, Mapping, Model, Prefix


@app.command("inspect", cls=Command)
@handle_errors
def inspect_command(
    model: Model, mapping: Mapping = None, as_json: Json = False, prefix: Prefix = None
) -> None:
    """Every tensor of a checkpoint, the role it plays (or that it is ignored)."""
    from ..inspection import format_inspection, inspect_model

    info = inspect_model(resolve_model(model), mapping=mapping, name=model, prefix=prefix)
    if as_json:
        print_json(info)
    else:
        typer.echo(format_inspection(info))

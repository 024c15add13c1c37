"""``specbound measures``: the registered generalization measures (SPEC 9)."""

from __future__ import annotations

import typer

from .app import Command, app, handle_errors
from .common import print_json
from .options import Json


@app.command("measures", cls=Command)
@handle_errors
def measures_command(as_json: Json = False) -> None:
    """List the generalization measures (SPEC 9) with a one-line description each."""
    from ..measures import get_measure, measure_names

    names = measure_names()
    if as_json:
        print_json(
            [
                {
                    "name": n,
                    "description": get_measure(n).description,
                    "needs_init": bool(getattr(get_measure(n), "needs_init", False)),
                }
                for n in names
            ]
        )
        return
    width = max(len(n) for n in names)
    for n in names:
        typer.echo(f"{n:<{width}}  {get_measure(n).description}")

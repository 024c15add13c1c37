"""``specbound version`` (also ``specbound --version``)."""

from __future__ import annotations

import typer

from .app import Command, app


@app.command(cls=Command)
def version() -> None:
    """Print the specbound version."""
    from .._version import __version__

    typer.echo(__version__)

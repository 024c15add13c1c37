"""``specbound version`` (also ``specbound --version``)."""

from __future__ import annotations

import typer

from .._version import __version__
from .app import Command, app


@app.command(cls=Command)
def version() -> None:
    """Print the specbound version."""
    typer.echo(__version__)

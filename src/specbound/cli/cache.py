"""``specbound cache info|clear``: the on-disk spectra cache."""

from __future__ import annotations

import typer

from .app import Command, cache_app, handle_errors
from .common import print_json
from .options import Json


@cache_app.command("info", cls=Command)
@handle_errors
def cache_info(as_json: Json = False) -> None:
    """Where the cache is and how much it holds."""
    from ..io import cache

    i = cache.info()
    if as_json:
        print_json({"path": str(i["path"]), "entries": i["entries"], "bytes": i["bytes"]})
        return
    typer.echo(f"{i['path']}: {i['entries']} entries, {i['bytes'] / 2**20:.1f} MiB")


@cache_app.command("clear", cls=Command)
@handle_errors
def cache_clear(as_json: Json = False) -> None:
    """Delete every record specbound cached (spectra and data measures), nothing else."""
    from ..io import cache

    done = cache.clear_records()
    if as_json:
        print_json(
            {"path": str(cache.cache_dir()), "removed": done["entries"], "bytes": done["bytes"]}
        )
        return
    typer.echo(
        f"removed {done['entries']} records ({done['bytes'] / 2**20:.1f} MiB freed) from "
        f"{cache.cache_dir()}"
    )

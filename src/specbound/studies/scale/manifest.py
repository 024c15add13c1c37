"""The scale manifest: a text file listing models, one per line."""

from __future__ import annotations

from typing import Any

from ...errors import SpecboundError
from ...io.files import check_regular_file


def read_manifest(path: Any) -> list[str]:
    """Models listed in a text file: one per line, ``#`` comments and blank lines ignored.

    Relative paths are taken relative to the manifest's directory when they exist there.
    """
    from pathlib import Path

    p = Path(path)
    try:
        if p.exists():  # a FIFO would block forever: refuse anything but a regular file
            check_regular_file(p, "manifest", advice="pass a text file listing models")
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise SpecboundError(f"cannot read manifest {p}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SpecboundError(
            f"manifest {p} is not UTF-8 text; pass a text file listing models, one per line"
        ) from None
    out = []
    for line in lines:
        item = line.split("#", 1)[0].strip()
        if not item:
            continue
        local = p.parent / item
        out.append(str(local) if not Path(item).is_absolute() and local.exists() else item)
    if not out:
        raise SpecboundError(f"manifest {p} lists no models")
    return out

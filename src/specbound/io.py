"""Output helpers: nothing half-written ever appears at the destination."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary directory; on success its files replace those in ``path``.

    On any error the temporary directory is removed and ``path`` is left as it was.
    """
    dest = Path(path)
    if dest.exists() and not dest.is_dir():
        from .errors import SpecboundError

        raise SpecboundError(f"--out {dest} exists and is not a directory; choose another path")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent))
    try:
        yield tmp
        if not dest.exists():
            os.replace(tmp, dest)
            return
        for item in tmp.iterdir():
            target = dest / item.name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            os.replace(item, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise

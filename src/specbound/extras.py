"""The heavy optional packages (torch, transformers, matplotlib, Ray): the one place each is
imported, on the first call that needs it, never at start-up.

Each package has its function (:func:`torch`, :func:`transformers`, :func:`matplotlib` and
:func:`pyplot`, :func:`ray`), and :func:`load` gives one of their submodules. Each returns the
module, importing it when it is not loaded yet; when it cannot be imported it raises a one-line
``error`` (SpecboundError unless the caller names a subclass) with ``message``, by default one
naming the extra that installs it (:func:`install_hint`: ``pip install '.[<extra>]'`` from a
clone, or ``pip install 'specbound[<extra>]'`` once specbound is published). Every message that
names an extra takes its install line from :func:`install_hint`. Nothing is cached
here: Python's module table is the cache, so a package hidden from ``sys.modules``
(``sys.modules[name] = None``) reads as missing on the next call. :func:`available` says
whether a package can be imported without importing it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

from .errors import SpecboundError

#: root package -> (its name in messages, the specbound extra that installs it)
PACKAGES: dict[str, tuple[str, str]] = {
    "torch": ("PyTorch", "torch"),
    "transformers": ("transformers", "zoo"),
    "matplotlib": ("matplotlib", "plot"),
    "ray": ("Ray", "ray"),
}


def install_hint(extra: str) -> str:
    """How to install specbound's extra ``extra`` (several: ``"torch,tensorboard"``).
    specbound is not on the package index yet, so the line names both forms: the one that works
    from a clone of the repository and the one for once it is published."""
    return (
        f"pip install '.[{extra}]' in a clone of specbound, or pip install "
        f"'specbound[{extra}]' once it is published"
    )


def missing_message(root: str) -> str:
    """The default one-line reason for a missing heavy package ``root`` (a key of PACKAGES)."""
    what, extra = PACKAGES[root]
    return f"this needs {what}; install it with {install_hint(extra)}"


def load(
    name: str, message: str | None = None, error: type[SpecboundError] = SpecboundError
) -> Any:
    """The module ``name``: a submodule of one of PACKAGES (``"torch.func"``,
    ``"transformers.utils.logging"``), its package loaded first by that package's function
    below; ``error(message)`` (default :func:`missing_message`) when either import fails
    (ImportError)."""
    root = name.split(".")[0]
    if root not in PACKAGES:
        raise ValueError(f"{name!r} is not one of the heavy packages {sorted(PACKAGES)}")
    _ROOT[root](message, error)
    try:
        return importlib.import_module(name)
    except ImportError:
        raise error(message or missing_message(root)) from None


def torch(message: str | None = None, error: type[SpecboundError] = SpecboundError) -> Any:
    """The ``torch`` module, or ``error(message)`` (default :func:`missing_message`)."""
    try:
        import torch
    except ImportError:
        raise error(message or missing_message("torch")) from None
    return torch


def transformers(message: str | None = None, error: type[SpecboundError] = SpecboundError) -> Any:
    """The ``transformers`` module, or ``error(message)`` (default :func:`missing_message`)."""
    try:
        import transformers
    except ImportError:
        raise error(message or missing_message("transformers")) from None
    return transformers


def matplotlib(message: str | None = None, error: type[SpecboundError] = SpecboundError) -> Any:
    """The ``matplotlib`` package on the non-interactive Agg backend (forced, before pyplot is
    imported: figures are written to files, never shown), or ``error(message)`` (default: the
    one figures and reports have always said)."""
    try:
        import matplotlib
    except ImportError:
        raise error(message or _PLOT_MESSAGE) from None
    matplotlib.use("Agg", force=True)
    return matplotlib


def pyplot(message: str | None = None) -> Any:
    """``matplotlib.pyplot`` on the Agg backend (:func:`matplotlib`), or a one-line
    SpecboundError."""
    return load("matplotlib.pyplot", message or _PLOT_MESSAGE)


def ray(message: str | None = None, error: type[SpecboundError] = SpecboundError) -> Any:
    """The ``ray`` module, or ``error(message)`` (default :func:`missing_message`)."""
    try:
        import ray
    except ImportError:
        raise error(message or missing_message("ray")) from None
    return ray


_PLOT_MESSAGE = (
    f"figures and reports need matplotlib; install the plot extra: {install_hint('plot')}"
)
#: root package -> the function above that imports it
_ROOT: dict[str, Callable[[str | None, type[SpecboundError]], Any]] = {
    "torch": torch,
    "transformers": transformers,
    "matplotlib": matplotlib,
    "ray": ray,
}


def available(name: str) -> bool:
    """Whether the top-level package ``name`` can be imported, without importing it (a name
    set to None in ``sys.modules`` is not)."""
    if name in sys.modules:
        return sys.modules[name] is not None
    return importlib.util.find_spec(name) is not None

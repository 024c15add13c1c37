"""Every environment variable specbound reads, in one place.

Each is read by a function, at call time (tests and users may set them after import); no other
module reads ``os.environ``, and specbound never writes it.

Specbound's own:

``SPECBOUND_CACHE_DIR``
    Folder of the spectra cache (default: the user cache dir, ``~/.cache/specbound`` on Linux).
    :func:`cache_dir_override`.
``SPECBOUND_DEBUG``
    Any non-empty value: the CLI prints the full traceback of an internal error instead of one
    line. :func:`debug`.
``SPECBOUND_PARALLEL``
    How the spectra of one block use the cores: ``pool`` (the block's matrices on a pool of
    threads, BLAS single-threaded; the default) or ``blas`` (one at a time, BLAS threads).
    :func:`parallel_mode`.
``SPECBOUND_LAPACK``
    ``numpy`` forces numpy's SVD instead of the direct LAPACK driver (``auto``, the default).
    :func:`lapack_backend`.
``SPECBOUND_HYPOTHESIS_PROFILE``
    Test suite only: the hypothesis profile (``ci``). :func:`hypothesis_profile`.

Other tools' variables that specbound honours:

``RAY_ADDRESS``
    The Ray cluster to join when no address is given. :func:`ray_address`.
``HTTPS_PROXY`` / ``https_proxy`` / ``ALL_PROXY`` / ``all_proxy``
    A proxy is in use: the hub's host name is not resolved up front (the proxy resolves it).
    :func:`https_proxy`.
``HF_HUB_OFFLINE``
    Hugging Face offline mode: hub ids come from the local cache only. :func:`hf_hub_offline`
    (as huggingface_hub read it at its import).
``HF_HOME`` / ``HF_HUB_CACHE`` / ``HF_ENDPOINT``
    Read by huggingface_hub itself (where its cache is, which hub); specbound asks
    huggingface_hub (:func:`hf_hub_cache`, :func:`hf_endpoint`) rather than re-deriving them.

And what the machine gives this process, asked in one place: :func:`usable_cpus` (every
default number of workers and threads, and every limit on them, is counted from it).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "VARIABLES",
    "cache_dir_override",
    "debug",
    "hf_endpoint",
    "hf_hub_cache",
    "hf_hub_offline",
    "https_proxy",
    "hypothesis_profile",
    "lapack_backend",
    "parallel_mode",
    "ray_address",
    "usable_cpus",
]

#: Every variable named above (for documentation and tests).
VARIABLES = (
    "SPECBOUND_CACHE_DIR",
    "SPECBOUND_DEBUG",
    "SPECBOUND_PARALLEL",
    "SPECBOUND_LAPACK",
    "SPECBOUND_HYPOTHESIS_PROFILE",
    "RAY_ADDRESS",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "HF_HUB_OFFLINE",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HF_ENDPOINT",
)

_PROXIES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


def _get(name: str) -> str | None:
    """The variable's value, None when unset or empty."""
    return os.environ.get(name) or None


def cache_dir_override() -> Path | None:
    """``$SPECBOUND_CACHE_DIR`` as a path, None when unset (then the user cache dir is used)."""
    v = _get("SPECBOUND_CACHE_DIR")
    return Path(v) if v else None


def debug() -> bool:
    """``$SPECBOUND_DEBUG`` is set (non-empty): show tracebacks of internal errors."""
    return _get("SPECBOUND_DEBUG") is not None


def parallel_mode(default: str) -> str:
    """``$SPECBOUND_PARALLEL``, else ``default`` (the caller validates the value)."""
    return _get("SPECBOUND_PARALLEL") or default


def lapack_backend() -> str:
    """``$SPECBOUND_LAPACK``: ``"numpy"`` or ``"auto"`` (the default)."""
    return _get("SPECBOUND_LAPACK") or "auto"


def hypothesis_profile() -> str:
    """``$SPECBOUND_HYPOTHESIS_PROFILE``, else ``"ci"`` (the test suite's profile)."""
    return _get("SPECBOUND_HYPOTHESIS_PROFILE") or "ci"


def ray_address() -> str | None:
    """``$RAY_ADDRESS``, None when unset."""
    return _get("RAY_ADDRESS")


def https_proxy() -> str | None:
    """The first of ``HTTPS_PROXY``, ``https_proxy``, ``ALL_PROXY``, ``all_proxy`` that is set."""
    for name in _PROXIES:
        v = _get(name)
        if v:
            return v
    return None


def _truthy(value: str | None) -> bool:
    # huggingface_hub's rule for its boolean variables
    return value is not None and value.strip().upper() in {"1", "ON", "YES", "TRUE"}


def hf_hub_offline() -> bool:
    """Hugging Face offline mode as huggingface_hub itself obeys it (it reads
    ``$HF_HUB_OFFLINE`` when imported); without huggingface_hub, the variable now."""
    try:
        from huggingface_hub import constants
    except ImportError:
        return _truthy(_get("HF_HUB_OFFLINE"))
    return bool(constants.HF_HUB_OFFLINE)


def hf_hub_cache() -> Path:
    """huggingface_hub's cache folder (``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else its
    default), as huggingface_hub resolved it. Needs huggingface_hub."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def hf_endpoint() -> str:
    """The hub's URL as huggingface_hub resolved it (``$HF_ENDPOINT`` or huggingface.co)."""
    from huggingface_hub import constants

    return str(constants.ENDPOINT)


def usable_cpus() -> int:
    """CPUs this process may run on, >= 1: ``len(os.sched_getaffinity(0))`` (a container's or
    ``taskset``'s limit), ``os.cpu_count()`` where the platform has no affinity."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)

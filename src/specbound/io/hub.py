"""Hub ids (``org/name``, or ``name`` without an organisation as the hub allows) -> a local
snapshot directory in huggingface_hub's standard cache.

Only config.json and one set of weight files are fetched (safetensors preferred). Offline
(``HF_HUB_OFFLINE=1``, or no network) the snapshot is read from the cache; a model that is not
there gives a one-line error.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from pathlib import Path

from .. import config
from ..errors import CheckpointError, Param
from ..extras import install_hint

#: Weight layouts in order of preference: (files that identify it, allow_patterns to fetch).
WEIGHT_PATTERNS = (
    ("model.safetensors", ["model.safetensors"]),
    ("model.safetensors.index.json", ["model.safetensors.index.json", "model-*.safetensors"]),
    ("pytorch_model.bin", ["pytorch_model.bin"]),
    ("pytorch_model.bin.index.json", ["pytorch_model.bin.index.json", "pytorch_model-*.bin"]),
)


def _has_weights(path: Path) -> bool:
    return any((path / marker).is_file() for marker, _ in WEIGHT_PATTERNS)


#: One part of a hub id, as huggingface_hub validates it: letters, digits, ``_ - .``, starting and
#: ending with a letter, digit or ``_``, at most 96 characters.
_HUB_PART_RE = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?$")

#: ``org/name@revision``: a branch, tag or commit after the last ``@``.
_REVISION_RE = re.compile(r"^(?P<repo>[^@\s]+)@(?P<rev>[A-Za-z0-9][A-Za-z0-9._/-]*)$")


@contextlib.contextmanager
def _quiet_hub_logs() -> Iterator[None]:
    """huggingface_hub logs a warning per HTTP retry on stderr; the CLI prints one line."""
    log = logging.getLogger("huggingface_hub")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def _check_hub_reachable(endpoint: str, label: str) -> None:
    """Fail at once when the hub's host name does not resolve (offline): huggingface_hub would
    retry for ~30 s. Skipped behind a proxy (the proxy resolves names)."""
    import socket
    from urllib.parse import urlsplit

    if config.https_proxy():
        return
    host = urlsplit(endpoint).hostname
    if not host:
        return
    try:
        socket.getaddrinfo(host, 443)
    except (socket.gaierror, UnicodeError) as exc:
        raise CheckpointError(
            f"could not fetch hub id '{label}': cannot resolve {host} ({exc}); it is not in the "
            "local Hugging Face cache and there is no network: go online or pass a local directory"
        ) from None


def split_revision(text: str) -> tuple[str, str | None]:
    """``"org/name@rev"`` -> ``("org/name", "rev")``; without ``@rev`` the revision is None."""
    m = _REVISION_RE.match(text)
    return (m["repo"], m["rev"]) if m else (text, None)


def is_hub_id(text: str) -> bool:
    """``name`` or ``org/name``, optionally ``@revision``, valid by huggingface_hub's rules
    (``validate_repo_id``: no ``--`` or ``..``, no ``.git`` ending)."""
    repo, _ = split_revision(text)
    parts = repo.split("/")
    return (
        len(parts) in (1, 2)
        and all(_HUB_PART_RE.match(p) for p in parts)
        and "--" not in repo
        and ".." not in repo
        and not repo.endswith(".git")
    )


def resolve_hub_id(repo_id: str, revision: str | None = None) -> Path:
    """Local directory holding config.json and weights for ``repo_id`` (``name``, ``org/name``,
    either with ``@revision``; an explicit ``revision`` wins)."""
    repo_id, at = split_revision(repo_id)
    revision = revision if revision is not None else at
    label = f"{repo_id}@{revision}" if revision else repo_id
    try:
        import huggingface_hub as hf
    except ImportError:
        raise CheckpointError(
            f"huggingface_hub is not installed, so '{repo_id}' cannot be read as a hub id; pass "
            f"a local directory, or install the hub extra: {install_hint('hub')}"
        ) from None
    from huggingface_hub.errors import LocalEntryNotFoundError

    patterns = ["config.json"] + [p for _, ps in WEIGHT_PATTERNS for p in ps]
    try:  # cache first: no network at all when the snapshot is complete
        local = Path(
            hf.snapshot_download(
                repo_id, revision=revision, allow_patterns=patterns, local_files_only=True
            )
        )
        if (local / "config.json").is_file() and _has_weights(local):
            return local
    except (LocalEntryNotFoundError, OSError, ValueError):
        pass
    if config.hf_hub_offline():
        raise CheckpointError(
            f"hub id '{label}' is not in the local Hugging Face cache and the hub is offline "
            "(HF_HUB_OFFLINE=1); download it while online or pass a local directory"
        )
    _check_hub_reachable(config.hf_endpoint(), label)
    try:
        with _quiet_hub_logs():
            files = set(hf.list_repo_files(repo_id, revision=revision))
        chosen = next((ps for marker, ps in WEIGHT_PATTERNS if marker in files), None)
        if chosen is None:
            raise CheckpointError(
                f"hub repo '{repo_id}' has no safetensors or pytorch_model.bin weights"
            )
        with _quiet_hub_logs():
            local = Path(
                hf.snapshot_download(
                    repo_id, revision=revision, allow_patterns=["config.json", *chosen]
                )
            )
    except CheckpointError:
        raise
    except Exception as exc:  # network errors, missing repos, gated repos ...
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise CheckpointError(
            f"could not fetch hub id '{label}' ({first}); check the id and the network, or "
            "pass a local directory"
        ) from None
    return local


# --- training runs as sweeps: revision ranges ---------------------------------------------------

#: Named revision schemes for ``--revisions``: ``{N}`` is the step, ``{M}`` any number (matched
#: against the revisions that exist, e.g. OLMo's token count).
REVISION_SCHEMES = {"pythia": "step{N}", "olmo": "step{N}-tokens{M}B"}

#: Most revisions one ``--revisions`` range may name (Pythia has 154 checkpoints, OLMo a few
#: hundred): ``pythia:0:100000000000:1`` is refused before any list is built.
MAX_REVISIONS = 10_000


def parse_revision_range(text: str) -> tuple[str, list[int]]:
    """``SCHEME:START:STOP[:STEP]`` or ``SCHEME:N1,N2,...`` -> (template, steps).

    SCHEME is a name in ``REVISION_SCHEMES`` or a template holding ``{N}`` (and optionally
    ``{M}``). STOP is inclusive; STEP defaults to 1.
    """
    head, _, rest = text.partition(":")
    template = REVISION_SCHEMES.get(head, head)
    bad = CheckpointError(
        Param("revisions", f"'{text}'"),
        " is not SCHEME:START:STOP[:STEP] or SCHEME:N1,N2,... with SCHEME "
        f"one of {', '.join(REVISION_SCHEMES)} or a template holding {{N}} "
        "(e.g. pythia:0:3000:1000)",
    )
    if "{N}" not in template or not rest:
        raise bad
    try:
        if ":" in rest:
            nums = [int(x) for x in rest.split(":")]
            if len(nums) not in (2, 3) or (len(nums) == 3 and nums[2] <= 0):
                raise bad
            start, stop, step = nums[0], nums[1], nums[2] if len(nums) == 3 else 1
            count = max(0, (stop - start) // step + 1)  # counted, not built (len(range) overflows)
            numbers: range | list[int] = range(start, stop + 1, step)
        else:
            numbers = [int(x) for x in rest.split(",")]
            count = len(numbers)
    except ValueError:
        raise bad from None
    if count > MAX_REVISIONS:  # before a list of 10^11 steps is built
        raise CheckpointError(
            Param("revisions", f"'{text}'"),
            f" names {count:,} revisions, more than {MAX_REVISIONS:,}; raise STEP or "
            "narrow START:STOP (e.g. pythia:0:143000:1000)",
        )
    steps = list(numbers)
    if not steps or min(steps) < 0:
        raise bad
    return template, steps


def cached_revisions(repo_id: str) -> set[str]:
    """Branch/tag names with a ref in the local Hugging Face cache (``refs/<name>`` files)."""
    refs = config.hf_hub_cache() / f"models--{repo_id.replace('/', '--')}" / "refs"
    if not refs.is_dir():
        return set()
    return {p.relative_to(refs).as_posix() for p in refs.rglob("*") if p.is_file()}


def known_revisions(repo_id: str) -> set[str]:
    """The revisions of ``repo_id`` that exist: cached refs, plus the hub's branches and tags
    when online (offline or unreachable: the cache alone)."""
    try:
        import huggingface_hub as hf
    except ImportError:
        raise CheckpointError(
            Param("revisions"),
            f" needs huggingface_hub; install the hub extra: {install_hint('hub')}",
        ) from None
    found = cached_revisions(repo_id)
    if not config.hf_hub_offline():
        try:
            _check_hub_reachable(config.hf_endpoint(), repo_id)  # offline: the cache, at once
            with _quiet_hub_logs():
                refs = hf.list_repo_refs(repo_id)
            found |= {r.name for r in list(refs.branches) + list(refs.tags)}
        except Exception:  # offline in practice, gated, missing: the cache is what we have
            pass
    return found


def expand_revisions(repo_id: str, text: str) -> tuple[list[str], list[str]]:
    """(``org/name@revision`` ids that exist, revisions that do not) for a ``--revisions`` range.

    Existing revisions come from ``known_revisions``; a template with ``{M}`` matches any
    number there (the first match in sorted order when several do).
    """
    repo_id, _ = split_revision(repo_id)
    template, steps = parse_revision_range(text)
    known = known_revisions(repo_id)
    present, missing = [], []
    for n in steps:
        want = template.replace("{N}", str(n))
        if "{M}" in want:
            pattern = re.compile(
                "^" + re.escape(want).replace(re.escape("{M}"), r"[0-9]+(?:\.[0-9]+)?") + "$"
            )
            hits = sorted(r for r in known if pattern.match(r))
            if hits:
                present.append(f"{repo_id}@{hits[0]}")
            else:
                missing.append(want)
        elif want in known:
            present.append(f"{repo_id}@{want}")
        else:
            missing.append(want)
    return present, missing

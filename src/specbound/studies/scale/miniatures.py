"""The BERT Miniatures of Turc et al. 2019 (SPEC 7's grid): hub ids and where to find them."""

from __future__ import annotations

from typing import Any

from ...errors import SpecboundError
from ...io.hub import resolve_hub_id

MINIATURE_LAYERS = (2, 4, 6, 8, 10, 12)
MINIATURE_HIDDEN = (128, 256, 512, 768)


def miniature_ids() -> list[str]:
    """The 24 hub ids ``google/bert_uncased_L-{L}_H-{N}_A-{N/64}``."""
    return [
        f"google/bert_uncased_L-{L}_H-{N}_A-{N // 64}"
        for L in MINIATURE_LAYERS
        for N in MINIATURE_HIDDEN
    ]


def find_local_miniature(local_dir: Any, hub_id: str) -> Any:
    """``DIR/<name>/`` or ``DIR/google/<name>/`` holding config.json, else None."""
    from pathlib import Path

    name = hub_id.split("/", 1)[1]
    for cand in (Path(local_dir) / name, Path(local_dir) / hub_id):
        if (cand / "config.json").is_file():
            return cand
    return None


def locate_miniatures(local_dir: Any = None) -> tuple[list[tuple[str, Any]], list[str], list[str]]:
    """(present (hub id, source) pairs, missing ids, reasons) for the 24 Miniatures.

    With ``local_dir`` the checkpoints are read from it; otherwise through huggingface_hub
    (cache first, then config and weights only when online).
    """
    present, missing, reasons = [], [], []
    for hub_id in miniature_ids():
        if local_dir is not None:
            path = find_local_miniature(local_dir, hub_id)
            if path is None:
                missing.append(hub_id)
                reasons.append(f"{hub_id}: not in {local_dir}")
            else:
                present.append((hub_id, str(path)))
            continue

        try:
            present.append((hub_id, str(resolve_hub_id(hub_id))))
        except SpecboundError as exc:
            missing.append(hub_id)
            reasons.append(str(exc))
    return present, missing, reasons

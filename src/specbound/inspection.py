"""``specbound inspect``: which tensor of a checkpoint plays which role, and which are ignored.

So a user can see the mapping from tensor names to canonical matrices before trusting a number.
Nothing but shapes and dtypes is read (no tensor data).
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import numpy as np

from .adapters.registry import adapter_for
from .errors import ConfigError
from .io.checkpoint import load_checkpoint

if TYPE_CHECKING:
    import pandas as pd


def _ranges(layers: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5"."""
    out: list[str] = []
    xs = sorted(set(layers))
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(out)


def describe_uses(uses: list[tuple[int, str]]) -> str:
    """ "query+key+value @ layer 0" style text for one tensor's (layer, role) uses."""
    by_roles: dict[str, list[int]] = defaultdict(list)
    per_layer: dict[int, list[str]] = defaultdict(list)
    for layer, role in uses:
        if role not in per_layer[layer]:
            per_layer[layer].append(role)
    for layer, layer_roles in per_layer.items():
        by_roles["+".join(layer_roles)].append(layer)
    parts = []
    for roles, layers in by_roles.items():
        word = "layer" if len(layers) == 1 else "layers"
        parts.append(f"{roles} @ {word} {_ranges(layers)}")
    return "; ".join(parts)


def _tensor_uses(
    model: Any, config: Any, mapping: Any, name: str | None, prefix: str | None
) -> tuple[Any, Any, Any, dict[str, list[tuple[int, str]]]]:
    """(checkpoint, adapter, spec, {tensor: [(layer, role), ...]}) without reading tensor data."""
    ckpt = load_checkpoint(model, config, name=name)
    adapter = adapter_for(ckpt, mapping, prefix=prefix)
    spec = adapter.spec()
    uses: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for tr in adapter.tensor_roles():
        for role, names in tr.roles.items():
            for t in names:
                uses[t].append((tr.layer, role))
    return ckpt, adapter, spec, uses


#: Columns of ``describe``.
DESCRIBE_COLUMNS = ["name", "role", "layer", "uses", "shape", "dtype", "num_parameters", "analyzed"]


def describe(
    model: Any,
    *,
    config: Any = None,
    mapping: str | os.PathLike[str] | dict | None = None,
    name: str | None = None,
    prefix: str | None = None,
) -> pd.DataFrame:
    """What ``analyze`` will read, before any spectral work: one row per tensor of ``model``.

    Columns (``DESCRIBE_COLUMNS``): ``name``; ``role`` (query, key, value, output, ffn_gate,
    ffn_in, ffn_out, joined by "+" for a fused tensor; empty when ignored); ``layer`` (its block,
    <NA> when ignored or used by several blocks, as shared ALBERT layers are); ``uses`` (every
    role and block, e.g. "query+key+value @ layers 0-11"); ``shape`` (a tuple); ``dtype``;
    ``num_parameters``; ``analyzed`` (True when the tensor enters the canonical matrices and
    SPEC 9's raw weights). Only shapes and dtypes are read. The counterpart of WeightWatcher's
    ``describe()``; ``inspect_model`` gives the same as a dict (and ``specbound inspect``).
    """
    import pandas as pd

    ckpt, _, _, uses = _tensor_uses(model, config, mapping, name, prefix)
    rows = []
    for t in sorted(ckpt.source.names()):
        u = uses.get(t, [])
        roles: list[str] = []
        for _, r in u:
            if r not in roles:
                roles.append(r)
        layers = sorted({layer for layer, _ in u})
        shape = tuple(int(d) for d in ckpt.source.shape(t))
        rows.append(
            {
                "name": t,
                "role": "+".join(roles),
                "layer": layers[0] if len(layers) == 1 else None,
                "uses": describe_uses(u) if u else "",
                "shape": shape,
                "dtype": str(ckpt.source.dtype(t)),
                "num_parameters": int(np.prod(shape, dtype=np.int64)),
                "analyzed": bool(u),
            }
        )
    out = pd.DataFrame(rows, columns=DESCRIBE_COLUMNS)
    out["layer"] = out["layer"].astype("Int64")
    return out


def inspect_model(
    model: Any,
    *,
    config: Any = None,
    mapping: str | os.PathLike[str] | dict | None = None,
    name: str | None = None,
    prefix: str | None = None,
) -> dict[str, Any]:
    """Spec, adaptations, every tensor with its role(s), and the ignored tensors of ``model``.

    ``prefix``: the tensor-name prefix of the model to inspect when the checkpoint holds several
    (``student.``/``teacher.``); None detects it.
    """
    ckpt, adapter, spec, uses = _tensor_uses(model, config, mapping, name, prefix)
    tensors = []
    for t in sorted(ckpt.source.names()):
        tensors.append(
            {
                "name": t,
                "shape": list(ckpt.source.shape(t)),
                "dtype": str(ckpt.source.dtype(t)),
                "role": describe_uses(uses[t]) if t in uses else None,
            }
        )
    missing = sorted(set(uses) - set(ckpt.source.names()))
    return {
        "model": ckpt.name,
        "adapter": type(adapter).__name__,
        "spec": {
            k: (list(v) if isinstance(v, tuple) else v)
            for k, v in asdict(spec).items()
            if k != "adaptations"
        },
        "L_phi": spec.l_phi if _known_activation(spec) else None,
        "adaptations": list(spec.adaptations) + list(ckpt.notes),
        "tensors": tensors,
        "ignored": [t["name"] for t in tensors if t["role"] is None],
        "missing": missing,
    }


def _known_activation(spec: Any) -> bool:
    try:
        _ = spec.l_phi
    except ConfigError:
        return False
    return True


def format_inspection(info: dict[str, Any]) -> str:
    """Plain-text rendering of ``inspect_model``'s result."""
    s = info["spec"]
    lines = [
        f"{info['model']}: {s['architecture']} via {info['adapter']}",
        f"  L={s['num_layers']} N={s['hidden_size']} H={s['num_heads']}"
        + (f" H_kv={s['num_kv_heads']}" if s.get("num_kv_heads") else "")
        + f" d_h={s['head_dim']} F={s['intermediate_size']} activation={s['activation']}"
        + (
            f" (L_phi={info['L_phi']:g})"
            if info["L_phi"] is not None
            else " (L_phi unknown: pass l_phi=, the CLI's --l-phi)"
        ),
    ]
    for a in info["adaptations"]:
        lines.append(f"  adaptation: {a}")
    width = max([len(t["name"]) for t in info["tensors"]] + [6])
    lines.append("")
    lines.append(f"{'tensor':<{width}}  {'shape':<16} {'dtype':<8} role")
    for t in info["tensors"]:
        shape = "x".join(str(d) for d in t["shape"]) or "scalar"
        lines.append(
            f"{t['name']:<{width}}  {shape:<16} {t['dtype']:<8} {t['role'] or '(ignored)'}"
        )
    for t in info["missing"]:
        lines.append(f"{t:<{width}}  MISSING: the adapter needs it; analyze will fail")
    used = len(info["tensors"]) - len(info["ignored"])
    lines.append("")
    lines.append(
        f"{used} tensors used, {len(info['ignored'])} ignored "
        "(embeddings, norms, biases, heads and anything not in SPEC section 2)"
    )
    return "\n".join(lines)

"""User mapping files: analyze an architecture specbound does not know, without writing code.

A mapping (YAML or JSON file, or a dict) names the tensor of each role with ``{layer}`` standing
for the block index, gives the sizes (a number, or the name of a config.json key), and says how
fused tensors split and how weights are oriented::

    architecture: tinynet            # name shown in outputs (default: "custom")
    num_layers: n_layer              # config.json key ...
    hidden_size: 64                  # ... or a number
    num_heads: 4
    num_kv_heads: 2                  # optional, default num_heads (grouped-query attention)
    head_dim: 16                     # optional, default hidden_size / num_heads
    intermediate_size: 256
    activation: gelu                 # sets L_phi (see specbound.activations); --l-phi overrides
    orientation: out_in              # default layout: out_in (nn.Linear) or in_out (Conv1D)
    roles:
      output: "blocks.{layer}.attn.proj.weight"
      ffn_in: {tensor: "blocks.{layer}.mlp.w1", orientation: in_out}
      ffn_out: "blocks.{layer}.mlp.w2.weight"
    fused:
      - tensor: "blocks.{layer}.attn.qkv.weight"
        roles: [query, key, value]   # in the order they are stacked
        layout: concat               # concat: [q | k | v]; per_head: NeoX-style per KV group

Roles: query, key, value, output (attention), ffn_in, optional ffn_gate (gated MLP: M_in =
[gate; up]) and ffn_out. Fused tensors may hold query/key/value or ffn_gate/ffn_in; ``per_head``
means the output rows repeat, per key/value head g, [queries of g's group | k_g | v_g] (GPT-NeoX
when num_kv_heads = num_heads). A pattern without ``{layer}`` names one tensor shared by every
block (ALBERT-style); its spectra are computed once. Every tensor of every block is checked to
exist when the mapping is loaded.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, Param
from ..io.checkpoint import Checkpoint
from ..io.files import parse_json, read_small_file
from ..io.yamlfiles import MAX_YAML_BYTES, DuplicateKeyError, load_yaml
from .base import (
    GATED_NOTE,
    GQA_NOTE,
    Adapter,
    LayerWeights,
    ModelSpec,
    TensorRoles,
    positive_int,
    split_interleaved,
    split_rows,
)

REQUIRED_ROLES = ("query", "key", "value", "output", "ffn_in", "ffn_out")
ALL_ROLES = ("query", "key", "value", "output", "ffn_gate", "ffn_in", "ffn_out")
FUSABLE = {"query", "key", "value", "ffn_gate", "ffn_in"}
TOP_KEYS = {
    "architecture",
    "num_layers",
    "hidden_size",
    "num_heads",
    "num_kv_heads",
    "head_dim",
    "intermediate_size",
    "activation",
    "orientation",
    "roles",
    "fused",
}
ORIENTATIONS = {"out_in": "out_in", "linear": "out_in", "in_out": "in_out", "conv1d": "in_out"}
LAYOUTS = ("concat", "per_head")


def load_mapping(mapping: str | os.PathLike[str] | dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The mapping as a dict, and a name for messages (the file path, or "mapping")."""
    if isinstance(mapping, dict):
        return dict(mapping), "mapping (dict)"
    path = Path(mapping)
    name = str(path)
    if not os.path.lexists(path):
        raise ConfigError(f"mapping file {name} does not exist")
    raw = read_small_file(  # a regular file of at most MAX_YAML_BYTES (1 MiB)
        path, "mapping file", ConfigError, MAX_YAML_BYTES, "pass a YAML or JSON mapping file"
    )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"mapping file {name} is not UTF-8 text; save it as UTF-8") from None
    if path.suffix.lower() == ".json":
        data = parse_json(text, f"mapping file {name}", ConfigError)  # duplicate keys refused
    else:
        try:
            data = load_yaml(text)  # duplicate keys refused, as in config.json and grid files
        except DuplicateKeyError as exc:
            raise ConfigError(f"mapping file {name}: {exc}; keep one of them") from None
        except Exception as exc:  # yaml.YAMLError
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(f"mapping file {name} is not valid YAML/JSON ({first})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"mapping file {name} must hold a mapping of keys (see README)")
    return data, name


class MappingAdapter(Adapter):
    """An adapter built from a user mapping (see the module docstring for the format)."""

    def __init__(self, checkpoint: Checkpoint, mapping: dict[str, Any], name: str) -> None:
        super().__init__(checkpoint)
        self.mapping = mapping
        self.mapping_name = name
        self._tensors = self._parse_roles()
        self._spec = self._build_spec()
        self._check_depth()
        self._check_tensors()

    @classmethod
    def from_spec(
        cls,
        checkpoint: Checkpoint,
        mapping: str | os.PathLike[str] | dict[str, Any],
        prefix: str | None = None,
    ) -> MappingAdapter:
        """Adapter for ``checkpoint`` from a YAML/JSON file path or a dict."""
        data, name = load_mapping(mapping)
        if prefix is not None:
            raise ConfigError(
                Param("prefix"),
                f"/prefix= does not apply with a mapping ({name}): its patterns are full "
                "tensor names; write the prefix into them",
            )
        return cls(checkpoint, data, name)

    # ---- parsing --------------------------------------------------------------------------
    def _err(self, what: str) -> ConfigError:
        return ConfigError(f"{self.mapping_name}: {what}")

    def _size(self, key: str, default: int | None = None) -> int:
        v = self.mapping.get(key)
        if v is None:
            if default is not None:
                return default
            raise self._err(f"'{key}' is missing; give a number or a config.json key name")
        if isinstance(v, str) and v.strip().isdigit():
            v = int(v)
        if isinstance(v, str):
            if v not in self.config or self.config[v] is None:
                raise self._err(
                    f"'{key}: {v}' names a config.json key that {self.checkpoint.name} lacks; "
                    "give a number instead"
                )
            return positive_int(self.config[v], v, f"config.json of {self.checkpoint.name}")
        return positive_int(v, key, self.mapping_name)

    def _heads(self) -> tuple[int, int, int, int]:
        """``(hidden_size, num_heads, num_kv_heads, head_dim)``, checked against each other."""
        n = self._size("hidden_size")
        h = self._size("num_heads")
        kv = self._size("num_kv_heads", default=h)
        if h % kv:
            raise self._err(f"num_heads {h} is not a multiple of num_kv_heads {kv}")
        if self.mapping.get("head_dim") is None and n % h:
            raise self._err(f"hidden_size {n} is not divisible by num_heads {h}; set head_dim")
        return n, h, kv, self._size("head_dim", default=n // h)

    def _activation(self) -> Any:
        """The ``activation``: a name, or a config.json key such as hidden_act that holds one."""
        act = self.mapping.get("activation", "gelu")
        if isinstance(act, str) and act in self.config and isinstance(self.config[act], str):
            act = self.config[act]
        return act

    def _gated(self) -> bool:
        """Whether a tensor holds ``ffn_gate`` (a gated MLP), in 'roles' or in 'fused'."""
        fused = self.mapping.get("fused") or []
        return "ffn_gate" in (self.mapping.get("roles") or {}) or any(
            "ffn_gate" in (f.get("roles") or []) for f in fused if isinstance(f, dict)
        )

    def _shared(self) -> bool:
        """Whether a pattern lacks ``{layer}`` (one tensor used by every block)."""
        roles = self.mapping.get("roles") or {}
        fused = self.mapping.get("fused") or []
        pats = [e if isinstance(e, str) else (e or {}).get("tensor", "") for e in roles.values()]
        pats += [f.get("tensor", "") for f in fused if isinstance(f, dict)]
        return any(isinstance(p, str) and "{layer}" not in p for p in pats)

    def _notes(self, h: int, kv: int) -> list[str]:
        """The adaptations the mapping implies (``ModelSpec.adaptations``), in output order."""
        notes = [
            f"user mapping {self.mapping_name}: tensor roles as declared there, not verified "
            "against the model's code"
        ]
        if kv != h:
            notes.append(f"{GQA_NOTE}; H = {h}, H_kv = {kv}")
        if self._gated():
            notes.append(GATED_NOTE)
        if self._shared():
            notes.append(
                "shared weights: tensors named without {layer} are used by every block; each "
                "application counts in depth (SPEC 8), spectra of identical blocks computed once"
            )
        notes += [
            f"fused tensor {fe['pattern']} split into {' + '.join(fe['roles'])} "
            f"({fe['layout']}, {fe['orientation']}) before slicing heads (SPEC 8)"
            for fe in self._fused
        ]
        transposed = [r for r, e in self._tensors.items() if e.get("orientation") == "in_out"]
        if transposed:
            notes.append(f"stored (in, out) and transposed: {', '.join(transposed)}")
        return notes

    def _build_spec(self) -> ModelSpec:
        unknown = sorted(set(self.mapping) - TOP_KEYS)
        if unknown:
            raise self._err(f"unknown key '{unknown[0]}'; allowed: {', '.join(sorted(TOP_KEYS))}")
        n, h, kv, d = self._heads()
        act = self._activation()
        notes = self._notes(h, kv)
        return ModelSpec(
            architecture=str(self.mapping.get("architecture", "custom")),
            num_layers=self._size("num_layers"),
            hidden_size=n,
            num_heads=h,
            head_dim=d,
            intermediate_size=self._size("intermediate_size"),
            activation=str(act),
            num_kv_heads=kv if kv != h else None,
            adaptations=tuple(notes),
        )

    def _orientation(self, value: Any, where: str) -> str:
        o = ORIENTATIONS.get(str(value).lower()) if value is not None else None
        if o is None:
            raise self._err(
                f"{where}: orientation must be out_in (nn.Linear) or in_out (Conv1D), got {value!r}"
            )
        return o

    def _parse_role(self, role: Any, entry: Any, default: str) -> dict[str, Any]:
        """One entry of 'roles': ``{pattern, orientation}``."""
        if role not in ALL_ROLES:
            raise self._err(f"unknown role '{role}'; roles are {', '.join(ALL_ROLES)}")
        if isinstance(entry, str):
            entry = {"tensor": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("tensor"), str):
            raise self._err(f"role '{role}' needs a tensor-name pattern (a string)")
        o = self._orientation(entry.get("orientation", default), f"role '{role}'")
        return {"pattern": entry["tensor"], "orientation": o}

    def _parse_fused(
        self, i: int, f: Any, default: str, out: dict[str, dict[str, Any]]
    ) -> dict[str, Any]:
        """Fused entry ``i``: ``{pattern, roles, layout, orientation}``; its roles go into
        ``out`` as ``{fused: index}`` (none of them given in 'roles' or an earlier entry)."""
        if not isinstance(f, dict) or not isinstance(f.get("tensor"), str):
            raise self._err(f"fused entry {i} needs 'tensor' (a name pattern)")
        parts = f.get("roles")
        if not isinstance(parts, list) or len(parts) < 2:
            raise self._err(f"fused entry {i} needs 'roles', a list of 2 or more roles")
        for r in parts:
            if r not in FUSABLE:
                raise self._err(
                    f"fused entry {i}: role '{r}' cannot be fused (fusable: "
                    f"{', '.join(sorted(FUSABLE))})"
                )
            if r in out:
                raise self._err(f"role '{r}' is given both in 'roles' and in 'fused'")
            out[r] = {"fused": len(self._fused)}
        layout = f.get("layout", "concat")
        if layout not in LAYOUTS:
            raise self._err(f"fused entry {i}: layout must be concat or per_head")
        if layout == "per_head" and list(parts) != ["query", "key", "value"]:
            raise self._err(f"fused entry {i}: layout per_head needs roles [query, key, value]")
        return {
            "pattern": f["tensor"],
            "roles": list(parts),
            "layout": layout,
            "orientation": self._orientation(f.get("orientation", default), f"fused entry {i}"),
        }

    def _parse_roles(self) -> dict[str, dict[str, Any]]:
        """role -> {pattern, orientation} or {fused: index}; fused entries in self._fused."""
        default = self._orientation(self.mapping.get("orientation", "out_in"), "orientation")
        roles = self.mapping.get("roles") or {}
        if not isinstance(roles, dict):
            raise self._err("'roles' must map role names to tensor-name patterns")
        out = {role: self._parse_role(role, entry, default) for role, entry in roles.items()}
        self._fused: list[dict[str, Any]] = []
        fused = self.mapping.get("fused") or []
        if not isinstance(fused, list):
            raise self._err("'fused' must be a list of {tensor, roles, layout}")
        for i, f in enumerate(fused):
            self._fused.append(self._parse_fused(i, f, default, out))
        missing = [r for r in REQUIRED_ROLES if r not in out]
        if missing:
            raise self._err(
                f"no tensor for role '{missing[0]}'; give it under 'roles' or in 'fused'"
            )
        return out

    # ---- tensors --------------------------------------------------------------------------
    @staticmethod
    def _name(pattern: str, layer: int) -> str:
        return pattern.replace("{layer}", str(layer))

    def _check_depth(self) -> None:
        """Block num_layers - 1 is stored and block num_layers is not (patterns with {layer})."""
        if not any("{layer}" in p for p in self._patterns()):
            return
        v = self.mapping.get("num_layers")
        key = "'num_layers'" + (f" (config.json key '{v}')" if isinstance(v, str) else "")
        L = self._spec.num_layers
        last = [self._name(p, L - 1) for p in self._patterns() if "{layer}" in p]
        if not any(t in self._names for t in last):
            raise self._err(
                f"{key} says {L} blocks, but {self.checkpoint.name} has no block {L - 1} "
                f"(no tensor '{last[0]}'); set num_layers to the number of stored blocks"
            )
        extra = [self._name(p, L) for p in self._patterns() if "{layer}" in p]
        extra = [t for t in extra if t in self._names]
        if extra:
            raise self._err(
                f"{key} says {L} blocks, but {self.checkpoint.name} also holds block {L} "
                f"('{extra[0]}'); set num_layers to the number of stored blocks"
            )

    def verify_blocks(self) -> None:
        self._check_depth()

    def _check_tensors(self) -> None:
        for l in range(self._spec.num_layers):
            for role, names in self.layer_roles(l).roles.items():
                for t in names:
                    if t not in self._names:
                        close = difflib.get_close_matches(t, sorted(self._names), n=1)
                        hint = f" (closest: '{close[0]}')" if close else ""
                        raise self._err(
                            f"tensor '{t}' (role {role}, layer {l}) is not in "
                            f"{self.checkpoint.name}{hint}; fix the pattern"
                        )

    def spec(self) -> ModelSpec:
        return self._spec

    def layer_roles(self, layer: int) -> TensorRoles:
        roles: dict[str, list[str]] = {}
        for role in ALL_ROLES:
            e = self._tensors.get(role)
            if e is None:
                continue
            pattern = e["pattern"] if "pattern" in e else self._fused[e["fused"]]["pattern"]
            roles[role] = [self._name(pattern, layer)]
        return TensorRoles(layer, roles)

    def _read(self, name: str, orientation: str, shape: tuple[int, int], role: str) -> np.ndarray:
        got = tuple(self.source.shape(name))
        want = shape if orientation == "out_in" else shape[::-1]
        if got != want:
            raise self._err(
                f"tensor '{name}' ({role}) has shape {got} but the mapping implies {want} "
                f"({orientation}); check the sizes and orientation"
            )
        w = self.source.get(name)
        return np.ascontiguousarray(w.T) if orientation == "in_out" else w

    def _sizes(self) -> dict[str, int]:
        s = self._spec
        return {
            "query": s.num_heads * s.head_dim,
            "key": s.kv_heads * s.head_dim,
            "value": s.kv_heads * s.head_dim,
            "ffn_gate": s.intermediate_size,
            "ffn_in": s.intermediate_size,
        }

    def layer(self, layer: int) -> LayerWeights:
        s = self._spec
        n, f = s.hidden_size, s.intermediate_size
        hd = s.num_heads * s.head_dim
        sizes = self._sizes()
        got: dict[str, np.ndarray] = {}
        for fe in self._fused:
            name = self._name(fe["pattern"], layer)
            parts = [sizes[r] for r in fe["roles"]]
            w = self._read(name, fe["orientation"], (sum(parts), n), "+".join(fe["roles"]))
            if fe["layout"] == "per_head":
                g = s.num_heads // s.kv_heads
                split = split_interleaved(w, s.kv_heads, (g * s.head_dim, s.head_dim, s.head_dim))
            else:
                split = split_rows(w, parts)
            got.update(zip(fe["roles"], split, strict=True))
        shapes = {**{r: (sizes[r], n) for r in sizes}, "output": (n, hd), "ffn_out": (n, f)}
        for role, e in self._tensors.items():
            if "pattern" in e:
                got[role] = self._read(
                    self._name(e["pattern"], layer), e["orientation"], shapes[role], role
                )
        w_in = (
            got["ffn_in"]
            if "ffn_gate" not in got
            else np.concatenate([got["ffn_gate"], got["ffn_in"]], axis=0)
        )
        return LayerWeights(
            index=layer,
            wq=got["query"],
            wk=got["key"],
            wv=got["value"],
            wo=got["output"],
            w_in=w_in,
            w_out=got["ffn_out"],
            share_key=self.share_key(layer),
        )

    def _patterns(self) -> list[str]:
        return [e["pattern"] for e in self._tensors.values() if "pattern" in e] + [
            fe["pattern"] for fe in self._fused
        ]

    def share_key(self, layer: int) -> Any:
        """Blocks reading exactly the same tensors share spectra (patterns without {layer})."""
        if all("{layer}" in p for p in self._patterns()):
            return None
        return tuple(t for ts in self.layer_roles(layer).roles.values() for t in ts)

"""Cross-check an adapter against the model's own forward computation.

A tiny random ``transformers`` model (biases zeroed, float64 for the forward) is saved with
``save_pretrained``, read back by specbound, and its canonical factors (``spectra.head_factors``,
``M_in``, ``M_out``) are compared with tensors captured inside the model while it runs on random
inputs:

- the q, k, v handed to the model's ``eager_attention_forward`` (rotary embeddings patched to the
  identity, so these are the projections before rotation) against ``x @ X_q[h]`` etc., x being
  the input of the attention's first projection;
- the output projection's output against ``sum_h z_h @ W_O^h`` (z: the per-head attention output);
- softmax of ``x QK_h x^T`` (times the model's scaling, plus its mask / position bias) against the
  attention probabilities the model returns (what ``output_attentions`` returns);
- the output projection's output against ``sum_h P_h x OV_h`` (value and output together);
- the FFN's output against ``act(u M_in) M_out`` (gated: ``act(u Wg^T) * (u Wu^T)``).

With B*T > N random rows, x has full column rank, so a match pins each factor down exactly.
"""

from __future__ import annotations

import inspect
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# Importing this module skips the importing test module when torch/transformers are missing.
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from specbound.adapters import get_adapter  # noqa: E402
from specbound.analysis import analyze  # noqa: E402
from specbound.io.checkpoint import load_checkpoint  # noqa: E402
from specbound.linalg.spectra import head_factors  # noqa: E402

#: Config keyword that makes every family run the eager attention the harness hooks into.
EAGER = {"attn_implementation": "eager"}


@pytest.fixture(autouse=True)
def seeded_torch():
    """Autouse in every module that imports it: the random models are the same on every run."""
    torch.manual_seed(0)


TOL = 1e-9
#: Several models' eager attention runs softmax in float32 even for a float64 model (ViT,
#: LLaMA...), so checks through the model's probabilities are held to float32 accuracy.
SOFTMAX_TOL = 1e-6
FP32_SOFTMAX_CHECKS = ("softmax(QK logits)",)


@dataclass
class Family:
    """How to find a family's modules: attention modules and FFN (first, last) linears, in
    specbound's block order; ``x_from``/``y_from``: attributes of an attention module whose input
    is x and whose output is the attention output (the output projection)."""

    attn: Callable[[Any], list[Any]]
    x_from: str
    y_from: str
    ffn: Callable[[Any], list[tuple[Any, Any]]]
    inputs: Callable[[Any, torch.Generator], dict[str, torch.Tensor]]
    q_scale: float = 1.0  # OPT scales q by 1/sqrt(d_h) before the interface


@dataclass
class Report:
    errors: dict[str, float] = field(default_factory=dict)

    def add(self, key: str, got: Any, want: Any) -> None:
        g = np.asarray(got.detach() if hasattr(got, "detach") else got, dtype=np.float64)
        w = np.asarray(want.detach() if hasattr(want, "detach") else want, dtype=np.float64)
        assert g.shape == w.shape, (key, g.shape, w.shape)
        err = float(np.max(np.abs(g - w)) / max(float(np.max(np.abs(w))), 1e-300))
        self.errors[key] = max(self.errors.get(key, 0.0), err)

    def assert_ok(self, tol: float = TOL) -> None:
        bad = {
            k: v
            for k, v in self.errors.items()
            if not v < (SOFTMAX_TOL if k in FP32_SOFTMAX_CHECKS else tol)
        }
        assert not bad, f"relative errors above {tol}: {bad}"


def text_inputs(vocab: int, batch: int = 3, seq: int = 17, decoder: bool = False):
    def make(model: Any, gen: torch.Generator) -> dict[str, torch.Tensor]:
        out = {"input_ids": torch.randint(0, vocab, (batch, seq), generator=gen)}
        if decoder:
            out["decoder_input_ids"] = torch.randint(0, vocab, (batch, seq - 3), generator=gen)
        return out

    return make


def zero_biases(model: Any) -> None:
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias") or name == "bias":
                p.zero_()


def _identity_rotary(q: Any, k: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    return q, k


def _softmax(a: np.ndarray) -> np.ndarray:
    a = a - a.max(axis=-1, keepdims=True)
    e = np.exp(a)
    return e / e.sum(axis=-1, keepdims=True)


def _np(t: Any) -> np.ndarray:
    return t.detach().to(torch.float64).numpy()


def check_family(
    model: Any, family: Family, tmp_path: Path, seed: int = 0, check_analysis: bool = True
) -> Report:
    """Save ``model``, analyze it with specbound, compare with its own forward. Returns errors."""
    model.eval()
    zero_biases(model)
    save_dir = tmp_path / "ckpt"
    model.save_pretrained(save_dir)
    adapter = get_adapter(load_checkpoint(str(save_dir)))
    spec = adapter.spec()
    model.double()

    attn_modules = family.attn(model)
    ffn_modules = family.ffn(model)
    assert len(attn_modules) == spec.num_layers == len(ffn_modules)

    # ---- capture --------------------------------------------------------------------------
    calls: dict[int, list[dict[str, Any]]] = defaultdict(list)
    xs: dict[int, list[Any]] = defaultdict(list)
    ys: dict[int, list[Any]] = defaultdict(list)
    fin: dict[int, list[Any]] = defaultdict(list)
    fout: dict[int, list[Any]] = defaultdict(list)
    handles = []
    patched: list[tuple[Any, str, Any]] = []
    for a in {id(m): m for m in attn_modules}.values():
        mod = sys.modules[type(a).__module__]
        if getattr(mod, "eager_attention_forward", None) is not None and not any(
            p[0] is mod and p[1] == "eager_attention_forward" for p in patched
        ):
            orig = mod.eager_attention_forward
            sig = inspect.signature(orig)

            def wrapper(*args: Any, _orig: Any = orig, _sig: Any = sig, **kwargs: Any) -> Any:
                bound = _sig.bind(*args, **kwargs).arguments
                out, weights = _orig(*args, **kwargs)
                calls[id(bound["module"])].append(
                    {
                        "q": bound["query"],
                        "k": bound["key"],
                        "v": bound["value"],
                        "mask": bound.get("attention_mask"),
                        "scaling": bound.get("scaling"),
                        "pos": bound.get("position_bias"),
                        "z": out,
                        "p": weights,
                    }
                )
                return out, weights

            patched.append((mod, "eager_attention_forward", orig))
            mod.eager_attention_forward = wrapper
            if hasattr(mod, "apply_rotary_pos_emb"):
                patched.append((mod, "apply_rotary_pos_emb", mod.apply_rotary_pos_emb))
                mod.apply_rotary_pos_emb = _identity_rotary
        key = id(a)
        handles.append(
            getattr(a, family.x_from).register_forward_pre_hook(
                lambda m, args, key=key: xs[key].append(args[0])
            )
        )
        handles.append(
            getattr(a, family.y_from).register_forward_hook(
                lambda m, args, out, key=key: ys[key].append(out)
            )
        )
    for first, last in {id(f): (f, la) for f, la in ffn_modules}.values():
        key = id(first)
        handles.append(
            first.register_forward_pre_hook(lambda m, args, key=key: fin[key].append(args[0]))
        )
        handles.append(
            last.register_forward_hook(lambda m, args, out, key=key: fout[key].append(out))
        )
    gen = torch.Generator().manual_seed(seed)
    inputs = family.inputs(model, gen)
    try:
        with torch.no_grad():
            outputs = model(**inputs, output_attentions=True)
    finally:
        for h in handles:
            h.remove()
        for mod, name, orig in patched:
            setattr(mod, name, orig)

    # ---- compare --------------------------------------------------------------------------
    rep = Report()
    h, kv, d = spec.num_heads, spec.kv_heads, spec.head_dim
    group = h // kv
    seen: dict[int, int] = defaultdict(int)
    seen_ffn: dict[int, int] = defaultdict(int)
    from transformers.activations import ACT2FN

    act = ACT2FN[spec.activation]
    probs_in_order = []
    for l in range(spec.num_layers):
        w = adapter.layer(l)
        f = head_factors(w, spec)
        a = attn_modules[l]
        i = seen[id(a)]
        seen[id(a)] += 1
        c = calls[id(a)][i]
        x = _np(xs[id(a)][i])  # (B, T, N)
        y = _np(ys[id(a)][i])
        q, k, v, z, p = _np(c["q"]), _np(c["k"]), _np(c["v"]), _np(c["z"]), _np(c["p"])
        assert q.shape[1] == h and k.shape[1] == kv and v.shape[1] == kv
        scaling = c["scaling"] if c["scaling"] is not None else d**-0.5
        bias = 0.0
        for extra in (c["pos"], c["mask"]):
            if extra is not None:
                e = _np(extra) if extra.dtype != torch.bool else np.where(_np(extra), 0.0, -np.inf)
                bias = bias + e[..., : x.shape[1]]
        y_heads = np.zeros_like(y)
        y_ov = np.zeros_like(y)
        for hh in range(h):
            rep.add("q", q[:, hh], family.q_scale * x @ f["q"][hh])
            rep.add("k", k[:, hh // group], x @ f["k"][hh])
            rep.add("v", v[:, hh // group], x @ f["v"][hh])
            y_heads += z[:, :, hh, :] @ f["o"][hh].T
            qk = f["q"][hh] @ f["k"][hh].T
            ov = f["v"][hh] @ f["o"][hh].T
            logits = np.einsum("bin,nm,bjm->bij", x, qk, x) * family.q_scale * scaling
            model_logits = q[:, hh] @ np.swapaxes(k[:, hh // group], -1, -2) * scaling
            rep.add("QK logits (vs q k^T)", logits, model_logits)
            if np.ndim(bias) == 4:
                logits = logits + bias[:, hh if np.shape(bias)[1] > 1 else 0]
            rep.add("softmax(QK logits)", _softmax(logits), p[:, hh])
            y_ov += p[:, hh] @ x @ ov
        rep.add("W_O", y_heads, y)
        rep.add("OV (P x OV summed over heads)", y_ov, y)
        probs_in_order.append(p)

        first, _ = ffn_modules[l]
        j = seen_ffn[id(first)]
        seen_ffn[id(first)] += 1
        u = _np(fin[id(first)][j])
        out = _np(fout[id(first)][j])
        pre = u @ w.w_in.T
        fdim = spec.intermediate_size
        if pre.shape[-1] == 2 * fdim:
            hid = _np(act(torch.from_numpy(pre[..., :fdim]))) * pre[..., fdim:]
        else:
            assert pre.shape[-1] == fdim
            hid = _np(act(torch.from_numpy(pre)))
        rep.add("M_in/M_out (FFN output)", hid @ w.w_out.T, out)

    att = getattr(outputs, "attentions", None)
    if att is None and getattr(outputs, "encoder_attentions", None) is not None:
        att = tuple(outputs.encoder_attentions) + tuple(outputs.decoder_attentions or ())
    if att is not None and len(att) == spec.num_layers:
        for l in range(spec.num_layers):
            rep.add("output_attentions", probs_in_order[l], _np(att[l]))

    if check_analysis:
        res = analyze(str(save_dir), cache=False)
        mats = res.matrices
        for l in range(spec.num_layers):
            w = adapter.layer(l)
            f = head_factors(w, spec)
            want = {}
            for hh in range(h):
                want[("QK", hh)] = f["q"][hh] @ f["k"][hh].T
                want[("OV", hh)] = f["v"][hh] @ f["o"][hh].T
            want[("M_in", -1)] = w.w_in.T
            want[("M_out", -1)] = w.w_out.T
            for (t, hh), m in want.items():
                row = mats[(mats["layer"] == l) & (mats["matrix_type"] == t) & (mats["head"] == hh)]
                assert len(row) == 1
                rep.add(
                    f"analyze {t} spectral",
                    row.spectral_norm.to_numpy(),
                    np.array([np.linalg.norm(m, 2)]),
                )
                rep.add(
                    f"analyze {t} frobenius",
                    row.frobenius_norm.to_numpy(),
                    np.array([np.linalg.norm(m)]),
                )
        rep.analysis = res  # type: ignore[attr-defined]
    rep.spec = spec  # type: ignore[attr-defined]
    # shown with ``pytest -s``: the worst relative error of each check
    worst = ", ".join(f"{k}: {v:.1e}" for k, v in rep.errors.items())
    print(f"\n[{type(model).__name__}] {worst}")
    return rep

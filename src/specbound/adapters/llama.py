"""LLaMA family (``llama``, ``mistral``, ``qwen2``, ``gemma``; ``phi3`` with fused projections):
grouped-query attention, gated MLP.

Keys, after an optional ``model.`` prefix (``*ForCausalLM``), block l:
``layers.{l}.self_attn.{q,k,v,o}_proj.weight`` and ``layers.{l}.mlp.{gate,up,down}_proj.weight``.
``k_proj``/``v_proj`` have ``num_key_value_heads * head_dim`` rows; ``head_dim`` is read from
config.json when given (it need not equal hidden_size / num_attention_heads). M_in stacks
[W_gate; W_up] (N x 2F) and M_out = W_down (SPEC 8). Qwen2's q/k/v biases, RMSNorm weights,
embeddings and the LM head are not part of the proxies. Rotary embeddings rotate q and k after the
projections; QK = W_Q W_K^T is the logit form at relative distance 0. Gemma has the same layout
(its sqrt(N) embedding scale and (1 + w) RMSNorm are not in the proxies). Phi-3 fuses
``self_attn.qkv_proj`` (rows [q: H d_h | k: H_kv d_h | v: H_kv d_h]) and ``mlp.gate_up_proj``
(rows [gate: F | up: F]), split before slicing heads. Not registered, because the matrices would
not describe the logits: Qwen3 / Gemma-2/3 (per-head q/k norms, logit soft-capping) -- use a
mapping file and read its adaptation notes critically.
"""

from __future__ import annotations

from typing import ClassVar

from ..errors import ConfigError
from .base import (
    FUSED_QKV_NOTE,
    GATED_NOTE,
    GQA_NOTE,
    LayerWeights,
    ModelSpec,
    PatternAdapter,
    split_rows,
)
from .registry import register

_P = "layers.{layer}."
ROPE_NOTE = (
    "rotary position embeddings: QK = W_Q W_K^T is the query-key form before the rotation "
    "(relative distance 0); the rotation itself is not in the proxies"
)


@register
class LlamaAdapter(PatternAdapter):
    extra_notes: tuple[str, ...] = ()
    model_types: ClassVar[tuple[str, ...]] = ("llama", "mistral", "qwen2", "gemma")
    layouts = (
        (
            "layers.0.self_attn.q_proj.weight",
            {
                "query": (_P + "self_attn.q_proj.weight",),
                "key": (_P + "self_attn.k_proj.weight",),
                "value": (_P + "self_attn.v_proj.weight",),
                "output": (_P + "self_attn.o_proj.weight",),
                "ffn_gate": (_P + "mlp.gate_proj.weight",),
                "ffn_in": (_P + "mlp.up_proj.weight",),
                "ffn_out": (_P + "mlp.down_proj.weight",),
            },
        ),
    )

    def spec(self) -> ModelSpec:
        n = self.size("hidden_size")
        h = self.size("num_attention_heads")
        kv = self.size("num_key_value_heads", default=h)
        if kv <= 0 or h % kv:
            raise ConfigError(
                f"{self.key_name('num_attention_heads')} {h} is not a multiple of "
                f"{self.key_name('num_key_value_heads')} {kv} in {self.where}; "
                + self.advice("fix config.json")
            )
        notes = [GATED_NOTE, ROPE_NOTE, *self.extra_notes]
        if kv != h:
            notes.insert(0, f"{GQA_NOTE}; H = {h}, H_kv = {kv}")
        return ModelSpec(
            architecture=str(self.config.get("model_type", "llama")),
            num_layers=self.size("num_hidden_layers"),
            hidden_size=n,
            num_heads=h,
            head_dim=self.head_dim(n, h),
            intermediate_size=self.size("intermediate_size"),
            activation=str(self.cfg("hidden_activation", "hidden_act", default="silu")),
            num_kv_heads=kv,
            adaptations=tuple(notes),
        )


@register
class Phi3Adapter(LlamaAdapter):
    model_types = ("phi3",)
    extra_notes: tuple[str, ...] = (
        f"{FUSED_QKV_NOTE}: qkv_proj rows [q | k | v]; gate_up_proj rows [gate | up]",
    )
    layouts = (
        (
            "layers.0.self_attn.qkv_proj.weight",
            {
                "query": (_P + "self_attn.qkv_proj.weight",),
                "key": (_P + "self_attn.qkv_proj.weight",),
                "value": (_P + "self_attn.qkv_proj.weight",),
                "output": (_P + "self_attn.o_proj.weight",),
                "ffn_gate": (_P + "mlp.gate_up_proj.weight",),
                "ffn_in": (_P + "mlp.gate_up_proj.weight",),
                "ffn_out": (_P + "mlp.down_proj.weight",),
            },
        ),
    )

    def layer(self, layer: int) -> LayerWeights:
        s = self.spec()
        n, f = s.hidden_size, s.intermediate_size
        hd, kvd = s.num_heads * s.head_dim, s.kv_heads * s.head_dim
        r = self.layer_roles(layer).roles
        wq, wk, wv = split_rows(self.tensor(r["query"][0], (hd + 2 * kvd, n)), (hd, kvd, kvd))
        return LayerWeights(
            index=layer,
            wq=wq,
            wk=wk,
            wv=wv,
            wo=self.tensor(r["output"][0], (n, hd)),
            w_in=self.tensor(r["ffn_in"][0], (2 * f, n)),  # [gate; up], as M_in stacks them
            w_out=self.tensor(r["ffn_out"][0], (n, f)),
        )

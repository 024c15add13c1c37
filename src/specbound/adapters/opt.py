"""OPT: ``decoder.layers.{l}.self_attn.{q,k,v,out}_proj``, FFN ``fc1``/``fc2`` (ReLU).

Config keys: ``hidden_size``, ``num_attention_heads``, ``num_hidden_layers``, ``ffn_dim`` (F),
``activation_function``. Prefixes ``model.`` (OPTForCausalLM) or none (OPTModel) are handled.
OPT multiplies the query projection by 1/sqrt(d_h) before the dot product; like every other
model here the scale is not part of QK (SPEC 2). ``project_in``/``project_out`` (when
``word_embed_proj_dim`` != ``hidden_size``), embeddings and the LM head are ignored.
"""

from __future__ import annotations

from .base import ModelSpec, PatternAdapter
from .registry import register

_P = "decoder.layers.{layer}."


@register
class OPTAdapter(PatternAdapter):
    model_types = ("opt",)
    layouts = (
        (
            "decoder.layers.0.self_attn.q_proj.weight",
            {
                "query": (_P + "self_attn.q_proj.weight",),
                "key": (_P + "self_attn.k_proj.weight",),
                "value": (_P + "self_attn.v_proj.weight",),
                "output": (_P + "self_attn.out_proj.weight",),
                "ffn_in": (_P + "fc1.weight",),
                "ffn_out": (_P + "fc2.weight",),
            },
        ),
    )

    def spec(self) -> ModelSpec:
        n = self.size("hidden_size")
        h = self.size("num_attention_heads")
        return ModelSpec(
            architecture="opt",
            num_layers=self.size("num_hidden_layers"),
            hidden_size=n,
            num_heads=h,
            head_dim=self.head_dim(n, h),
            intermediate_size=self.size("ffn_dim", "intermediate_size"),
            activation=str(self.cfg("activation_function", "hidden_act", default="relu")),
        )

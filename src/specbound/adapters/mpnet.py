"""MPNet (``model_type`` mpnet; sentence-transformers' all-mpnet-base-v2 among others).

Keys, after an optional ``mpnet.`` prefix (``MPNetForMaskedLM``...), block l:
``encoder.layer.{l}.attention.attn.{q,k,v,o}.weight`` (Q, K, V and the output projection, all
``nn.Linear`` (out, in)), ``encoder.layer.{l}.intermediate.dense.weight`` (M_in) and
``encoder.layer.{l}.output.dense.weight`` (M_out) (SPEC 8). The relative attention bias
(``encoder.relative_attention_bias``) is added to the logits like a bias and, like every bias, is
not part of the proxies; embeddings, pooler and task heads are ignored. Config keys as BERT's.
"""

from __future__ import annotations

from .base import ModelSpec, PatternAdapter
from .registry import register

_P = "encoder.layer.{layer}."

RELATIVE_BIAS_NOTE = (
    "MPNet: the relative position bias added to the attention logits is a bias and not part of "
    "the proxies (SPEC 8)"
)


@register
class MPNetAdapter(PatternAdapter):
    model_types = ("mpnet",)
    layouts = (
        (
            "encoder.layer.0.attention.attn.q.weight",
            {
                "query": (_P + "attention.attn.q.weight",),
                "key": (_P + "attention.attn.k.weight",),
                "value": (_P + "attention.attn.v.weight",),
                "output": (_P + "attention.attn.o.weight",),
                "ffn_in": (_P + "intermediate.dense.weight",),
                "ffn_out": (_P + "output.dense.weight",),
            },
        ),
    )

    def spec(self) -> ModelSpec:
        n = self.size("hidden_size")
        h = self.size("num_attention_heads")
        return ModelSpec(
            architecture="mpnet",
            num_layers=self.size("num_hidden_layers"),
            hidden_size=n,
            num_heads=h,
            head_dim=self.head_dim(n, h),
            intermediate_size=self.size("intermediate_size"),
            activation=str(self.cfg("hidden_act", default="gelu")),
            adaptations=(RELATIVE_BIAS_NOTE,),
        )

"""ViT (Hugging Face layout), in both key layouts transformers uses.

- Saved checkpoints (``save_pretrained``, the hub): ``encoder.layer.{l}.attention.attention.
  {query,key,value}``, ``attention.output.dense``, ``intermediate.dense`` (M_in) and
  ``output.dense`` (M_out).
- In-memory modules of transformers >= 5: ``layers.{l}.attention.{q,k,v,o}_proj``,
  ``mlp.fc1``/``mlp.fc2``.

Prefix ``vit.`` (ViTForImageClassification, ViTForMaskedImageModeling) is handled. Patch and
position embeddings, the CLS token, the pooler and classifier are ignored. Config keys as BERT's
(``hidden_size``, ``num_attention_heads``, ``num_hidden_layers``, ``intermediate_size``,
``hidden_act``). Inputs are patch tokens; no adaptation of the formulas is needed.
"""

from __future__ import annotations

from .base import ModelSpec, PatternAdapter
from .registry import register

_L = "encoder.layer.{layer}."
_M = "layers.{layer}."


@register
class ViTAdapter(PatternAdapter):
    model_types = ("vit",)
    layouts = (
        (
            "encoder.layer.0.attention.attention.query.weight",
            {
                "query": (_L + "attention.attention.query.weight",),
                "key": (_L + "attention.attention.key.weight",),
                "value": (_L + "attention.attention.value.weight",),
                "output": (_L + "attention.output.dense.weight",),
                "ffn_in": (_L + "intermediate.dense.weight",),
                "ffn_out": (_L + "output.dense.weight",),
            },
        ),
        (
            "layers.0.attention.q_proj.weight",
            {
                "query": (_M + "attention.q_proj.weight",),
                "key": (_M + "attention.k_proj.weight",),
                "value": (_M + "attention.v_proj.weight",),
                "output": (_M + "attention.o_proj.weight",),
                "ffn_in": (_M + "mlp.fc1.weight",),
                "ffn_out": (_M + "mlp.fc2.weight",),
            },
        ),
    )

    def spec(self) -> ModelSpec:
        n = self.size("hidden_size")
        h = self.size("num_attention_heads")
        return ModelSpec(
            architecture="vit",
            num_layers=self.size("num_hidden_layers"),
            hidden_size=n,
            num_heads=h,
            head_dim=self.head_dim(n, h),
            intermediate_size=self.size("intermediate_size"),
            activation=str(self.cfg("hidden_act", default="gelu")),
        )

"""BERT family: bert, roberta, xlm-roberta, electra, camembert (MiniLM-style BERTs included).

Keys (after an optional ``bert.``/``roberta.``/``electra.`` prefix), block l:
``encoder.layer.{l}.attention.self.{query,key,value}.weight``,
``encoder.layer.{l}.attention.output.dense.weight``, ``encoder.layer.{l}.intermediate.dense.weight``
(M_in) and ``encoder.layer.{l}.output.dense.weight`` (M_out). Task heads are ignored.
"""

from __future__ import annotations

from .base import Adapter, ModelSpec, TensorRoles
from .registry import register


@register
class BertAdapter(Adapter):
    model_types = ("bert", "roberta", "xlm-roberta", "electra", "camembert")
    _anchor = "encoder.layer.0.attention.self.query.weight"

    def spec(self) -> ModelSpec:
        n = self.size("hidden_size")
        h = self.size("num_attention_heads")
        return ModelSpec(
            architecture=str(self.config.get("model_type", "bert")),
            num_layers=self.size("num_hidden_layers"),
            hidden_size=n,
            num_heads=h,
            head_dim=self.head_dim(n, h),
            intermediate_size=self.size("intermediate_size"),
            activation=str(self.cfg("hidden_act", default="gelu")),
        )

    def layer_roles(self, layer: int) -> TensorRoles:
        p = f"{self.find_prefix((self._anchor,))}encoder.layer.{layer}."
        return TensorRoles(
            layer,
            {
                "query": [p + "attention.self.query.weight"],
                "key": [p + "attention.self.key.weight"],
                "value": [p + "attention.self.value.weight"],
                "output": [p + "attention.output.dense.weight"],
                "ffn_in": [p + "intermediate.dense.weight"],
                "ffn_out": [p + "output.dense.weight"],
            },
        )

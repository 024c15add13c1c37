"""DistilBERT: ``transformer.layer.{l}.attention.{q,k,v,out}_lin``, FFN ``ffn.lin1``/``ffn.lin2``.

Config keys: ``dim`` (N), ``n_heads``, ``n_layers``, ``hidden_dim`` (F), ``activation``. An optional
``distilbert.`` prefix (task-head models) is handled; the classifier/pre-classifier heads and the
embeddings are ignored. Separate ``nn.Linear`` projections in (out, in) layout: no adaptation.
"""

from __future__ import annotations

from .base import ModelSpec, PatternAdapter
from .registry import register


@register
class DistilBertAdapter(PatternAdapter):
    model_types = ("distilbert",)
    layer_keys = ("n_layers", "num_hidden_layers")
    layouts = (
        (
            "transformer.layer.0.attention.q_lin.weight",
            {
                "query": ("transformer.layer.{layer}.attention.q_lin.weight",),
                "key": ("transformer.layer.{layer}.attention.k_lin.weight",),
                "value": ("transformer.layer.{layer}.attention.v_lin.weight",),
                "output": ("transformer.layer.{layer}.attention.out_lin.weight",),
                "ffn_in": ("transformer.layer.{layer}.ffn.lin1.weight",),
                "ffn_out": ("transformer.layer.{layer}.ffn.lin2.weight",),
            },
        ),
    )

    def spec(self) -> ModelSpec:
        n = self.size("dim", "hidden_size")
        h = self.size("n_heads", "num_attention_heads")
        return ModelSpec(
            architecture="distilbert",
            num_layers=self.size("n_layers", "num_hidden_layers"),
            hidden_size=n,
            num_heads=h,
            head_dim=self.head_dim(n, h),
            intermediate_size=self.size("hidden_dim", "intermediate_size"),
            activation=str(self.cfg("activation", "hidden_act", default="gelu")),
        )

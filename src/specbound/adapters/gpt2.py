"""GPT-2: ``Conv1D`` weights stored (in, out) and a fused ``c_attn`` = [W_q | W_k | W_v].

Keys, after an optional ``transformer.`` prefix (GPT2LMHeadModel...), block l:
``h.{l}.attn.c_attn.weight`` (N x 3N), ``h.{l}.attn.c_proj.weight`` (N x N),
``h.{l}.mlp.c_fc.weight`` (N x F) and ``h.{l}.mlp.c_proj.weight`` (F x N). Every Conv1D weight is
transposed to the ``nn.Linear`` layout, then ``c_attn`` is split into its three N-column blocks
q, k, v (the order of ``c_attn(x).split(N, dim=2)``) before heads are sliced. Config keys:
``n_embd``, ``n_head``, ``n_layer``, ``n_inner`` (default 4N), ``activation_function``
(``gelu_new``). Cross-attention (``add_cross_attention``), embeddings, the LM head and the
``attn.bias`` mask buffers of old checkpoints are ignored.
"""

from __future__ import annotations

from .base import (
    FUSED_QKV_NOTE,
    LayerWeights,
    ModelSpec,
    PatternAdapter,
    conv1d_to_linear,
    split_rows,
)
from .registry import register

_P = "h.{layer}."


@register
class GPT2Adapter(PatternAdapter):
    model_types = ("gpt2",)
    layer_keys = ("n_layer", "num_hidden_layers")
    layouts = (
        (
            "h.0.attn.c_attn.weight",
            {
                "query": (_P + "attn.c_attn.weight",),
                "key": (_P + "attn.c_attn.weight",),
                "value": (_P + "attn.c_attn.weight",),
                "output": (_P + "attn.c_proj.weight",),
                "ffn_in": (_P + "mlp.c_fc.weight",),
                "ffn_out": (_P + "mlp.c_proj.weight",),
            },
        ),
    )

    def spec(self) -> ModelSpec:
        n = self.size("n_embd", "hidden_size")
        h = self.size("n_head", "num_attention_heads")
        notes = [
            "GPT-2 Conv1D weights (stored in x out) transposed to the nn.Linear layout",
            f"{FUSED_QKV_NOTE}: c_attn columns [q | k | v], N each",
        ]
        if self.config.get("add_cross_attention"):
            notes.append("GPT-2 cross-attention (crossattention.*) not included")
        return ModelSpec(
            architecture="gpt2",
            num_layers=self.size("n_layer", "num_hidden_layers"),
            hidden_size=n,
            num_heads=h,
            head_dim=self.head_dim(n, h),
            intermediate_size=self.size("n_inner", default=4 * n),
            activation=str(self.cfg("activation_function", default="gelu_new")),
            adaptations=tuple(notes),
        )

    def layer(self, layer: int) -> LayerWeights:
        s = self.spec()
        n, f = s.hidden_size, s.intermediate_size
        hd = s.num_heads * s.head_dim
        r = self.layer_roles(layer).roles
        qkv = conv1d_to_linear(self.tensor(r["query"][0], (n, 3 * hd)))
        wq, wk, wv = split_rows(qkv, (hd, hd, hd))
        return LayerWeights(
            index=layer,
            wq=wq,
            wk=wk,
            wv=wv,
            wo=conv1d_to_linear(self.tensor(r["output"][0], (hd, n))),
            w_in=conv1d_to_linear(self.tensor(r["ffn_in"][0], (n, f))),
            w_out=conv1d_to_linear(self.tensor(r["ffn_out"][0], (f, n))),
        )

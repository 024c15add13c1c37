"""GPT-NeoX / Pythia: fused ``query_key_value`` with the per-head interleave [q_h | k_h | v_h].

Keys, after an optional ``gpt_neox.`` prefix (GPTNeoXForCausalLM), block l:
``layers.{l}.attention.query_key_value.weight`` (3N x N, nn.Linear layout),
``layers.{l}.attention.dense.weight``, ``layers.{l}.mlp.dense_h_to_4h.weight`` (M_in) and
``layers.{l}.mlp.dense_4h_to_h.weight`` (M_out). The fused output is viewed as
(heads, 3 * d_h) and chunked into q, k, v per head, as the model does, so rows
[3 d_h h, 3 d_h h + d_h) are q of head h, the next d_h rows k, the next v. Config keys:
``hidden_size``, ``num_attention_heads``, ``num_hidden_layers``, ``intermediate_size``,
``hidden_act``. Rotary embeddings (on the first ``rotary_pct`` of each head) come after the
projections; ``embed_out``, the mask/rotary buffers of old checkpoints and norms are ignored.
"""

from __future__ import annotations

from .base import FUSED_QKV_NOTE, LayerWeights, ModelSpec, PatternAdapter, split_interleaved
from .llama import ROPE_NOTE
from .registry import register

_P = "layers.{layer}."


@register
class GPTNeoXAdapter(PatternAdapter):
    model_types = ("gpt_neox",)
    layouts = (
        (
            "layers.0.attention.query_key_value.weight",
            {
                "query": (_P + "attention.query_key_value.weight",),
                "key": (_P + "attention.query_key_value.weight",),
                "value": (_P + "attention.query_key_value.weight",),
                "output": (_P + "attention.dense.weight",),
                "ffn_in": (_P + "mlp.dense_h_to_4h.weight",),
                "ffn_out": (_P + "mlp.dense_4h_to_h.weight",),
            },
        ),
    )

    def spec(self) -> ModelSpec:
        n = self.size("hidden_size")
        h = self.size("num_attention_heads")
        return ModelSpec(
            architecture="gpt_neox",
            num_layers=self.size("num_hidden_layers"),
            hidden_size=n,
            num_heads=h,
            head_dim=self.head_dim(n, h),
            intermediate_size=self.size("intermediate_size", default=4 * n),
            activation=str(self.cfg("hidden_act", default="gelu")),
            adaptations=(
                f"{FUSED_QKV_NOTE}: query_key_value rows interleaved per head [q_h | k_h | v_h]",
                ROPE_NOTE,
            ),
        )

    def layer(self, layer: int) -> LayerWeights:
        s = self.spec()
        n, f, h, d = s.hidden_size, s.intermediate_size, s.num_heads, s.head_dim
        r = self.layer_roles(layer).roles
        qkv = self.tensor(r["query"][0], (3 * h * d, n))
        wq, wk, wv = split_interleaved(qkv, h, (d, d, d))
        return LayerWeights(
            index=layer,
            wq=wq,
            wk=wk,
            wv=wv,
            wo=self.tensor(r["output"][0], (n, h * d)),
            w_in=self.tensor(r["ffn_in"][0], (f, n)),
            w_out=self.tensor(r["ffn_out"][0], (n, f)),
        )

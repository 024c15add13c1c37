"""T5 / mT5: encoder and decoder self-attention blocks; cross-attention is not included.

Keys (optional prefix), encoder block l: ``encoder.block.{l}.layer.0.SelfAttention.{q,k,v,o}``
and ``encoder.block.{l}.layer.1.DenseReluDense.{wi,wo}`` (gated variants: ``wi_0`` gate,
``wi_1`` up). Decoder block l: ``decoder.block.{l}.layer.0.SelfAttention.*`` and
``decoder.block.{l}.layer.2.DenseReluDense.*``; ``layer.1.EncDecAttention.*`` (cross-attention)
is left out and reported as ignored.

Depth: the encoder's L_e blocks followed by the decoder's L_d blocks form one chain of
L = L_e + L_d blocks (blocks 0..L_e-1 encoder, L_e.. decoder), the path from the input tokens
through the encoder output into the decoder. A checkpoint without decoder weights (T5EncoderModel)
gives the encoder's blocks only. Head size is ``d_kv`` (H * d_kv need not equal ``d_model``). T5
does not scale logits by 1/sqrt(d_kv) and adds a learned relative position bias; neither changes
the matrices, the bias (like every bias) is not in the proxies.
"""

from __future__ import annotations

from .base import GATED_NOTE, ModelSpec, PatternAdapter, TensorRoles
from .registry import register

_ENC_ANCHOR = "encoder.block.0.layer.0.SelfAttention.q.weight"


@register
class T5Adapter(PatternAdapter):
    model_types = ("t5", "mt5")
    layouts = ((_ENC_ANCHOR, {}),)

    def _gated(self) -> bool:
        if "is_gated_act" in self.config:
            return bool(self.config["is_gated_act"])
        return str(self.config.get("feed_forward_proj", "relu")).startswith("gated")

    def _activation(self) -> str:
        act = self.config.get("dense_act_fn")
        if act:
            return str(act)
        proj = str(self.config.get("feed_forward_proj", "relu"))
        return "gelu_new" if proj == "gated-gelu" else proj.split("-")[-1]

    def _stacks(self) -> tuple[int, int]:
        prefix, _ = self._layout()
        enc = self.size("num_layers", "num_hidden_layers")
        dec = 0
        if prefix + "decoder.block.0.layer.0.SelfAttention.q.weight" in self._names:
            dec = self.size("num_decoder_layers", "num_layers")
        return enc, dec

    def spec(self) -> ModelSpec:
        n = self.size("d_model", "hidden_size")
        h = self.size("num_heads", "num_attention_heads")
        d = self.size("d_kv", default=max(n // h, 1))
        enc, dec = self._stacks()
        notes = []
        if dec:
            notes.append(
                f"T5: depth = {enc} encoder blocks then {dec} decoder blocks (blocks 0..{enc - 1} "
                f"encoder, {enc}..{enc + dec - 1} decoder self-attention); cross-attention "
                "(EncDecAttention) of decoder blocks not included"
            )
        else:
            notes.append(f"T5: encoder only ({enc} blocks); no decoder weights in the checkpoint")
        notes.append("T5: logits are not scaled by 1/sqrt(d_kv); relative position bias ignored")
        if self._gated():
            notes.append(GATED_NOTE.replace("W_gate; W_up", "wi_0; wi_1").replace("W_down", "wo"))
        return ModelSpec(
            architecture=str(self.config.get("model_type", "t5")),
            num_layers=enc + dec,
            hidden_size=n,
            num_heads=h,
            head_dim=d,
            intermediate_size=self.size("d_ff", "intermediate_size"),
            activation=self._activation(),
            adaptations=tuple(notes),
        )

    def verify_blocks(self) -> None:
        """Encoder blocks 0..L_e-1 (and decoder blocks 0..L_d-1 when present), no more."""
        enc, dec = self._stacks()
        self.check_stack(
            enc,
            self.which("num_layers", "num_hidden_layers"),
            lambda i: self._block_roles(i, i, decoder=False),
        )
        if dec:
            self.check_stack(
                dec,
                self.which("num_decoder_layers", "num_layers"),
                lambda i: self._block_roles(enc + i, i, decoder=True),
            )

    def layer_roles(self, layer: int) -> TensorRoles:
        enc, _ = self._stacks()
        if layer < enc:
            return self._block_roles(layer, layer, decoder=False)
        return self._block_roles(layer, layer - enc, decoder=True)

    def _block_roles(self, layer: int, i: int, decoder: bool) -> TensorRoles:
        prefix, _ = self._layout()
        if not decoder:
            p, ffn = f"{prefix}encoder.block.{i}.", "layer.1.DenseReluDense."
        else:
            p, ffn = f"{prefix}decoder.block.{i}.", "layer.2.DenseReluDense."
        a = p + "layer.0.SelfAttention."
        roles = {
            "query": [a + "q.weight"],
            "key": [a + "k.weight"],
            "value": [a + "v.weight"],
            "output": [a + "o.weight"],
        }
        if self._gated():
            roles["ffn_gate"] = [p + ffn + "wi_0.weight"]
            roles["ffn_in"] = [p + ffn + "wi_1.weight"]
        else:
            roles["ffn_in"] = [p + ffn + "wi.weight"]
        roles["ffn_out"] = [p + ffn + "wo.weight"]
        return TensorRoles(layer, roles)

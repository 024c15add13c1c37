"""T5 / mT5: encoder then decoder self-attention blocks; cross-attention left out."""

from __future__ import annotations

from tests.support.adapter_harness import (  # noqa: F401  (seeded_torch: autouse fixture)
    EAGER,
    Family,
    check_family,
    seeded_torch,
    text_inputs,
    torch,
    transformers,
)


def _ffn(block, decoder):
    ff = block.layer[2 if decoder else 1].DenseReluDense
    return (ff.wi_0 if hasattr(ff, "wi_0") else ff.wi, ff.wo)


def _family(encoder_only=False):
    def attn(m):
        out = [b.layer[0].SelfAttention for b in m.encoder.block]
        if not encoder_only:
            out += [b.layer[0].SelfAttention for b in m.decoder.block]
        return out

    def ffn(m):
        out = [_ffn(b, False) for b in m.encoder.block]
        if not encoder_only:
            out += [_ffn(b, True) for b in m.decoder.block]
        return out

    return Family(
        attn=attn, x_from="q", y_from="o", ffn=ffn, inputs=text_inputs(50, decoder=not encoder_only)
    )


def test_t5_encoder_decoder(tmp_path):
    # d_kv * num_heads (40) != d_model (32): the head size comes from d_kv
    cfg = transformers.T5Config(
        d_model=32,
        num_heads=4,
        d_kv=10,
        num_layers=2,
        num_decoder_layers=3,
        d_ff=48,
        vocab_size=50,
        decoder_start_token_id=0,
        **EAGER,
    )
    model = transformers.T5ForConditionalGeneration(cfg)
    rep = check_family(model, _family(), tmp_path)
    rep.assert_ok()
    s = rep.spec
    assert (s.num_layers, s.head_dim, s.activation) == (5, 10, "relu")
    notes = " ".join(s.adaptations)
    assert "cross-attention" in notes and "not included" in notes
    from specbound.adapters import get_adapter
    from specbound.io.checkpoint import load_checkpoint

    ignored = get_adapter(load_checkpoint(str(tmp_path / "ckpt"))).ignored_tensors()
    assert "decoder.block.0.layer.1.EncDecAttention.q.weight" in ignored


def test_t5_encoder_only(tmp_path):
    cfg = transformers.T5Config(
        d_model=32, num_heads=4, d_kv=8, num_layers=2, d_ff=48, vocab_size=50, **EAGER
    )
    model = transformers.T5EncoderModel(cfg)
    rep = check_family(model, _family(encoder_only=True), tmp_path)
    rep.assert_ok()
    assert rep.spec.num_layers == 2
    assert any("encoder only" in a for a in rep.spec.adaptations)


def test_mt5_gated_gelu(tmp_path):
    cfg = transformers.MT5Config(
        d_model=32,
        num_heads=4,
        d_kv=8,
        num_layers=2,
        d_ff=48,
        vocab_size=50,
        feed_forward_proj="gated-gelu",
        decoder_start_token_id=0,
        **EAGER,
    )
    model = transformers.MT5ForConditionalGeneration(cfg)
    rep = check_family(model, _family(), tmp_path)
    rep.assert_ok()
    s = rep.spec
    assert (s.architecture, s.activation, s.num_layers) == ("mt5", "gelu_new", 4)
    assert any(a.startswith("gated MLP") for a in s.adaptations)

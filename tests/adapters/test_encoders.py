"""DistilBERT, ALBERT and ViT adapters against the models' own forward (see adapter_harness)."""

from __future__ import annotations

import pytest

from tests.support.adapter_harness import (  # noqa: F401  (seeded_torch: autouse fixture)
    EAGER,
    Family,
    check_family,
    seeded_torch,
    text_inputs,
    torch,
    transformers,
)


def test_distilbert(tmp_path):
    cfg = transformers.DistilBertConfig(
        dim=32,
        n_heads=4,
        n_layers=2,
        hidden_dim=48,
        vocab_size=50,
        max_position_embeddings=32,
        activation="gelu",
        **EAGER,
    )
    model = transformers.DistilBertForSequenceClassification(cfg)
    fam = Family(
        attn=lambda m: [b.attention for b in m.distilbert.transformer.layer],
        x_from="q_lin",
        y_from="out_lin",
        ffn=lambda m: [(b.ffn.lin1, b.ffn.lin2) for b in m.distilbert.transformer.layer],
        inputs=text_inputs(50),
    )
    rep = check_family(model, fam, tmp_path)
    rep.assert_ok()
    assert rep.spec.architecture == "distilbert" and rep.spec.adaptations == ()


@pytest.mark.parametrize(("groups", "inner"), [(1, 1), (2, 2)])
def test_albert_shared_layers(tmp_path, groups, inner):
    cfg = transformers.AlbertConfig(
        hidden_size=32,
        num_attention_heads=4,
        num_hidden_layers=4,
        intermediate_size=48,
        embedding_size=16,
        vocab_size=50,
        num_hidden_groups=groups,
        inner_group_num=inner,
        hidden_act="gelu_new",
        **EAGER,
    )
    model = transformers.AlbertForMaskedLM(cfg)
    enc = model.albert.encoder
    L = cfg.num_hidden_layers

    def layers(m):
        out = []
        for i in range(L):
            g = int(i / (L / groups))
            out.extend(enc.albert_layer_groups[g].albert_layers)
        return out

    fam = Family(
        attn=lambda m: [lay.attention for lay in layers(m)],
        x_from="query",
        y_from="dense",
        ffn=lambda m: [(lay.ffn, lay.ffn_output) for lay in layers(m)],
        inputs=text_inputs(50),
    )
    rep = check_family(model, fam, tmp_path)
    rep.assert_ok()
    spec = rep.spec
    assert spec.num_layers == L * inner
    assert any("ALBERT" in a and f"applied {L * inner} times" in a for a in spec.adaptations)
    res = rep.analysis
    assert res.summary()["adaptations"] == list(spec.adaptations)
    # shared layers: identical spectra in every application of the same layer
    mats = res.matrices
    first = mats[mats["layer"] == 0].spectral_norm.to_numpy()
    same = [b for b in range(L * inner) if int(b // inner / (L / groups)) == 0 and b % inner == 0]
    assert len(same) == L // groups
    for b in same:
        assert (mats[mats["layer"] == b].spectral_norm.to_numpy() == first).all()


def test_vit(tmp_path):
    cfg = transformers.ViTConfig(
        hidden_size=32,
        num_attention_heads=4,
        num_hidden_layers=2,
        intermediate_size=48,
        image_size=16,
        patch_size=4,
        num_labels=3,
        **EAGER,
    )
    model = transformers.ViTForImageClassification(cfg)

    def pixels(m, gen):
        return {"pixel_values": torch.randn(3, 3, 16, 16, generator=gen, dtype=torch.float64)}

    blocks = lambda m: m.vit.layers  # noqa: E731
    fam = Family(
        attn=lambda m: [b.attention for b in blocks(m)],
        x_from="q_proj",
        y_from="o_proj",
        ffn=lambda m: [(b.mlp.fc1, b.mlp.fc2) for b in blocks(m)],
        inputs=pixels,
    )
    rep = check_family(model, fam, tmp_path)
    rep.assert_ok()
    assert rep.spec.architecture == "vit"


def test_vit_in_memory_layout_matches_saved(tmp_path):
    """transformers >= 5 modules name ViT tensors layers.{l}.attention.q_proj...; save_pretrained
    writes the classic encoder.layer.{l}.attention.attention.query... layout. Both must agree."""
    from specbound.analysis import analyze
    from tests.support.spectral_checks import assert_spectra_sv_match

    cfg = transformers.ViTConfig(
        hidden_size=32,
        num_attention_heads=4,
        num_hidden_layers=2,
        intermediate_size=48,
        image_size=8,
        patch_size=4,
    )
    model = transformers.ViTForImageClassification(cfg)
    model.save_pretrained(tmp_path)
    names = list(model.state_dict())
    assert any(".layers.0.attention.q_proj.weight" in n for n in names)
    saved = analyze(str(tmp_path), cache=False).spectra
    live = analyze(model, cache=False).spectra
    assert_spectra_sv_match(live, saved)

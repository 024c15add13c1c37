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


def test_mpnet_against_its_forward(tmp_path):
    """MPNet computes attention inline (no eager_attention_forward to hook), so this test hooks
    the self-attention module itself: softmax(x QK x^T / sqrt(d_h) + relative bias + mask) must
    be the probabilities it returns, sum_h P_h x OV_h its output, act(u M_in) M_out its FFN."""
    import numpy as np

    from specbound.adapters import get_adapter
    from specbound.io.checkpoint import load_checkpoint
    from specbound.linalg.spectra import head_factors
    from tests.support.adapter_harness import Report, zero_biases

    cfg = transformers.MPNetConfig(
        hidden_size=32,
        num_attention_heads=4,
        num_hidden_layers=2,
        intermediate_size=48,
        vocab_size=50,
        max_position_embeddings=40,
        hidden_act="gelu",
    )
    model = transformers.MPNetForMaskedLM(cfg).eval()
    zero_biases(model)  # the relative_attention_bias embedding stays: it is not a proxy matrix
    model.save_pretrained(tmp_path)
    adapter = get_adapter(load_checkpoint(str(tmp_path)))
    spec = adapter.spec()
    assert (spec.architecture, spec.num_layers, spec.num_heads) == ("mpnet", 2, 4)
    model.double()
    seen: dict[str, list] = {k: [] for k in ("x", "bias", "o", "p", "u", "f")}
    handles = []
    for lay in model.mpnet.encoder.layer:
        att = lay.attention.attn
        handles.append(att.q.register_forward_pre_hook(lambda m, a: seen["x"].append(a[0])))

        def pre(m, args, kwargs):
            bias = kwargs.get("position_bias", args[2] if len(args) > 2 else None)
            mask = kwargs.get("attention_mask", args[1] if len(args) > 1 else None)
            seen["bias"].append((bias, mask))

        handles.append(att.register_forward_pre_hook(pre, with_kwargs=True))

        def post(m, a, out):
            seen["o"].append(out[0])
            seen["p"].append(out[1])

        handles.append(att.register_forward_hook(post))
        handles.append(
            lay.intermediate.dense.register_forward_pre_hook(lambda m, a: seen["u"].append(a[0]))
        )
        handles.append(
            lay.output.dense.register_forward_hook(lambda m, a, out: seen["f"].append(out))
        )
    ids = torch.randint(0, 50, (3, 17), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        model(input_ids=ids, output_attentions=True)
    for hd in handles:
        hd.remove()
    rep = Report()
    act = transformers.activations.ACT2FN["gelu"]
    d = spec.head_dim
    for l in range(spec.num_layers):
        w = adapter.layer(l)
        f = head_factors(w, spec)
        x = seen["x"][l].numpy()
        bias, mask = seen["bias"][l]
        extra = 0.0
        for e in (bias, mask):
            if e is not None:
                extra = extra + e.numpy()
        p = seen["p"][l].numpy()
        y = np.zeros_like(seen["o"][l].numpy())
        for h in range(spec.num_heads):
            qk = f["q"][h] @ f["k"][h].T
            ov = f["v"][h] @ f["o"][h].T
            logits = np.einsum("bin,nm,bjm->bij", x, qk, x) / np.sqrt(d)
            logits = logits + (
                extra[:, h]
                if np.ndim(extra) == 4 and extra.shape[1] > 1
                else (extra[:, 0] if np.ndim(extra) == 4 else extra)
            )
            e = np.exp(logits - logits.max(-1, keepdims=True))
            rep.add("softmax(QK logits)", e / e.sum(-1, keepdims=True), p[:, h])
            y += p[:, h] @ x @ ov
        rep.add("OV (P x OV summed over heads)", y, seen["o"][l])
        u = seen["u"][l].numpy()
        hid = act(torch.from_numpy(u @ w.w_in.T)).numpy()
        rep.add("M_in/M_out (FFN output)", hid @ w.w_out.T, seen["f"][l])
    assert set(rep.errors) == {
        "softmax(QK logits)",
        "OV (P x OV summed over heads)",
        "M_in/M_out (FFN output)",
    }
    rep.assert_ok()
    assert any("relative position bias" in a for a in spec.adaptations)

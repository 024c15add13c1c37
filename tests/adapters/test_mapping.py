"""Mapping files: the README's worked example, agreement with the built-in adapters, errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from specbound.adapters import get_adapter
from specbound.adapters.base import split_interleaved
from specbound.adapters.mapping import MappingAdapter
from specbound.analysis import analyze
from specbound.errors import CheckpointError, ConfigError
from specbound.io.checkpoint import load_checkpoint
from tests.support.spectral_checks import assert_spectra_sv_match

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_mapping() -> dict:
    text = README.read_text()
    section = text.split("## Architectures and mapping files", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block, "README lacks the worked mapping example"
    return yaml.safe_load(block.group(1))


def save_safetensors(path: Path, tensors: dict[str, np.ndarray], config: dict) -> Path:
    from tests.support.safetensors_np import save_file

    path.mkdir(parents=True, exist_ok=True)
    save_file(
        {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in tensors.items()},
        str(path / "model.safetensors"),
    )
    (path / "config.json").write_text(json.dumps(config))
    return path


def tinynet(tmp_path: Path, seed: int = 0) -> tuple[Path, dict[str, np.ndarray], dict]:
    """The README's tinynet: fused qkv, fused gate_up, down stored (in, out)."""
    cfg = {
        "model_type": "tinynet",
        "d_model": 64,
        "n_layers": 2,
        "n_heads": 4,
        "d_ff": 128,
        "act": "silu",
    }
    rng = np.random.default_rng(seed)
    n, f = 64, 128
    t: dict[str, np.ndarray] = {"embed.weight": rng.standard_normal((10, n))}
    for l in range(2):
        t[f"blocks.{l}.attn.qkv.weight"] = rng.standard_normal((3 * n, n))
        t[f"blocks.{l}.attn.proj.weight"] = rng.standard_normal((n, n))
        t[f"blocks.{l}.mlp.gate_up.weight"] = rng.standard_normal((2 * f, n))
        t[f"blocks.{l}.mlp.down"] = rng.standard_normal((f, n))
        t[f"blocks.{l}.norm.weight"] = np.ones(n)
    t = {k: v.astype(np.float32).astype(np.float64) for k, v in t.items()}
    return save_safetensors(tmp_path / "tinynet", t, cfg), t, cfg


def rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


def test_readme_worked_example(tmp_path):
    path, t, _ = tinynet(tmp_path)
    mapping = readme_mapping()
    mfile = tmp_path / "tinynet.yaml"
    mfile.write_text(yaml.safe_dump(mapping))
    res = analyze(str(path), mapping=mfile, cache=False)
    assert res.spec.activation == "silu" and res.spec.num_layers == 2
    assert any(a.startswith("gated MLP") for a in res.adaptations)
    mats = res.matrices
    n, d = 64, 16
    worst = 0.0
    for l in range(2):
        qkv = t[f"blocks.{l}.attn.qkv.weight"]
        wq, wk, wv = qkv[:n], qkv[n : 2 * n], qkv[2 * n :]
        wo = t[f"blocks.{l}.attn.proj.weight"]
        want = {}
        for h in range(4):
            hs = slice(h * d, (h + 1) * d)
            want[("QK", h)] = wq[hs].T @ wk[hs]
            want[("OV", h)] = wv[hs].T @ wo[:, hs].T
        want[("M_in", -1)] = t[f"blocks.{l}.mlp.gate_up.weight"].T
        want[("M_out", -1)] = t[f"blocks.{l}.mlp.down"]  # stored (in, out) = row-vector form
        for (kind, h), m in want.items():
            row = mats[(mats["layer"] == l) & (mats["matrix_type"] == kind) & (mats["head"] == h)]
            worst = max(
                worst,
                rel(float(row.spectral_norm.iloc[0]), np.linalg.norm(m, 2)),
                rel(float(row.frobenius_norm.iloc[0]), np.linalg.norm(m)),
            )
    assert worst < 1e-9


def test_unknown_architecture_points_to_mapping(tmp_path):
    path, _, _ = tinynet(tmp_path)
    with pytest.raises(ConfigError) as exc:
        analyze(str(path), cache=False)
    msg = str(exc.value)
    assert "tinynet" in msg and "mapping" in msg and "\n" not in msg


def test_cli_unknown_architecture_and_inspect(tmp_path):
    from typer.testing import CliRunner

    from specbound.cli import app

    path, _, _ = tinynet(tmp_path)
    runner = CliRunner()
    r = runner.invoke(app, ["analyze", str(path), "--quiet", "--no-cache"])
    assert r.exit_code == 2
    err = r.stderr.strip()
    assert err.startswith("error:") and "--mapping" in err and len(err.splitlines()) == 1

    mfile = tmp_path / "tinynet.json"
    mfile.write_text(json.dumps(readme_mapping()))
    r = runner.invoke(app, ["inspect", str(path), "--mapping", str(mfile), "--json"])
    assert r.exit_code == 0, r.output
    info = json.loads(r.stdout)
    roles = {t["name"]: t["role"] for t in info["tensors"]}
    assert roles["blocks.0.attn.qkv.weight"] == "query+key+value @ layer 0"
    assert roles["blocks.1.mlp.gate_up.weight"] == "ffn_gate+ffn_in @ layer 1"
    assert roles["blocks.1.mlp.down"] == "ffn_out @ layer 1"
    assert set(info["ignored"]) == {"embed.weight", "blocks.0.norm.weight", "blocks.1.norm.weight"}
    r = runner.invoke(app, ["inspect", str(path), "--mapping", str(mfile)])
    assert r.exit_code == 0 and "(ignored)" in r.stdout and "embed.weight" in r.stdout


def test_missing_tensor_is_named(tmp_path):
    path, _, _ = tinynet(tmp_path)
    mapping = readme_mapping()
    mapping["roles"]["output"] = "blocks.{layer}.attn.out.weight"
    with pytest.raises(ConfigError) as exc:
        MappingAdapter.from_spec(load_checkpoint(str(path)), mapping)
    msg = str(exc.value)
    assert "'blocks.0.attn.out.weight'" in msg and "role output" in msg and "layer 0" in msg
    assert "blocks.0.attn.proj.weight" in msg  # closest match suggested

    from typer.testing import CliRunner

    from specbound.cli import app

    mfile = tmp_path / "bad.yaml"
    mfile.write_text(yaml.safe_dump(mapping))
    r = CliRunner().invoke(app, ["analyze", str(path), "--mapping", str(mfile), "--quiet"])
    assert r.exit_code == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "blocks.0.attn.out.weight" in r.stderr


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda m: m.update(num_heads=5), "not divisible"),
        (lambda m: m.update(hidden_size="no_such_key"), "no_such_key"),
        (lambda m: m.update(colour="red"), "unknown key 'colour'"),
        (lambda m: m["roles"].pop("output"), "role 'output'"),
        (lambda m: m["roles"].update(query="x.{layer}"), "both in 'roles' and in 'fused'"),
        (lambda m: m["roles"]["ffn_out"].update(orientation="sideways"), "orientation"),
        (lambda m: m["roles"]["ffn_out"].update(orientation="out_in"), "has shape (128, 64)"),
        (lambda m: m.update(intermediate_size=96), "shape"),
    ],
)
def test_mapping_errors(tmp_path, edit, needle):
    path, _, _ = tinynet(tmp_path)
    mapping = readme_mapping()
    edit(mapping)

    def build_and_read() -> None:
        MappingAdapter.from_spec(load_checkpoint(str(path)), mapping).layer(0)

    with pytest.raises(ConfigError) as exc:
        build_and_read()
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_mapping_file_errors(tmp_path):
    path, _, _ = tinynet(tmp_path)
    ckpt = load_checkpoint(str(path))
    with pytest.raises(ConfigError, match="does not exist"):
        MappingAdapter.from_spec(ckpt, tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("roles: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML/JSON"):
        MappingAdapter.from_spec(ckpt, bad)
    bad.write_text("- a list\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        MappingAdapter.from_spec(ckpt, bad)


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("dup.yaml", "arch: a\nroles: {}\narch: b\n", "key 'arch' appears twice (lines 1 and 3)"),
        ("nested.yaml", "roles:\n  qkv: x\n  qkv: y\n", "key 'qkv' appears twice (lines 2 and 3)"),
        ("dup.json", '{"roles": {}, "roles": {}}', "has the key 'roles' twice"),
    ],
)
def test_mapping_file_refuses_a_duplicate_key(tmp_path, name, text, needle):
    """Plain YAML / json.loads kept the last value silently; config.json and grid files refuse
    a key given twice, and so does a mapping file (the same loaders)."""
    path, _, _ = tinynet(tmp_path)
    ckpt = load_checkpoint(str(path))
    bad = tmp_path / name
    bad.write_text(text)
    with pytest.raises(ConfigError) as e:
        MappingAdapter.from_spec(ckpt, bad)
    assert needle in str(e.value) and str(bad) in str(e.value)
    assert "\n" not in str(e.value)


def test_per_head_split_with_grouped_kv():
    h, kv, d, n = 6, 2, 3, 5
    g = h // kv
    rng = np.random.default_rng(1)
    wq, wk, wv = (
        rng.standard_normal((h * d, n)),
        rng.standard_normal((kv * d, n)),
        rng.standard_normal((kv * d, n)),
    )
    rows = []
    for j in range(kv):
        rows += [wq[j * g * d : (j + 1) * g * d], wk[j * d : (j + 1) * d], wv[j * d : (j + 1) * d]]
    q2, k2, v2 = split_interleaved(np.concatenate(rows), kv, (g * d, d, d))
    assert (q2 == wq).all() and (k2 == wk).all() and (v2 == wv).all()


# ---- the same spectra as the built-in adapters, from a mapping -------------------------------
transformers = pytest.importorskip("transformers")


def _same_spectra(path: Path, mapping: dict) -> None:
    built_in = analyze(str(path), cache=False)
    mapped = analyze(str(path), mapping=mapping, cache=False)
    a, b = built_in.spectra, mapped.spectra
    assert (a.layer == b.layer).all() and (a.matrix_type == b.matrix_type).all()
    assert_spectra_sv_match(b, a)
    np.testing.assert_allclose(b.frobenius_norm, a.frobenius_norm, rtol=1e-12)
    np.testing.assert_allclose(b.norm_21, a.norm_21, rtol=1e-12)


def test_mapping_matches_gpt2(tmp_path):
    model = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(
            n_embd=32,
            n_head=4,
            n_layer=2,
            vocab_size=50,
            n_positions=16,
            bos_token_id=0,
            eos_token_id=0,
        )
    )
    model.save_pretrained(tmp_path)
    p = "transformer.h.{layer}."
    _same_spectra(
        tmp_path,
        {
            "num_layers": "n_layer",
            "hidden_size": "n_embd",
            "num_heads": "n_head",
            "intermediate_size": 128,
            "activation": "activation_function",
            "orientation": "in_out",
            "roles": {
                "output": p + "attn.c_proj.weight",
                "ffn_in": p + "mlp.c_fc.weight",
                "ffn_out": p + "mlp.c_proj.weight",
            },
            "fused": [{"tensor": p + "attn.c_attn.weight", "roles": ["query", "key", "value"]}],
        },
    )


def test_mapping_matches_gpt_neox_per_head(tmp_path):
    model = transformers.GPTNeoXForCausalLM(
        transformers.GPTNeoXConfig(
            hidden_size=32,
            num_attention_heads=4,
            num_hidden_layers=2,
            intermediate_size=48,
            vocab_size=50,
            bos_token_id=0,
            eos_token_id=0,
        )
    )
    model.save_pretrained(tmp_path)
    p = "gpt_neox.layers.{layer}."
    _same_spectra(
        tmp_path,
        {
            "num_layers": 2,
            "hidden_size": 32,
            "num_heads": 4,
            "intermediate_size": 48,
            "roles": {
                "output": p + "attention.dense.weight",
                "ffn_in": p + "mlp.dense_h_to_4h.weight",
                "ffn_out": p + "mlp.dense_4h_to_h.weight",
            },
            "fused": [
                {
                    "tensor": p + "attention.query_key_value.weight",
                    "roles": ["query", "key", "value"],
                    "layout": "per_head",
                }
            ],
        },
    )


def test_mapping_matches_llama_gqa(tmp_path):
    model = transformers.LlamaForCausalLM(
        transformers.LlamaConfig(
            hidden_size=32,
            num_attention_heads=4,
            num_key_value_heads=2,
            num_hidden_layers=2,
            intermediate_size=40,
            vocab_size=50,
        )
    )
    model.save_pretrained(tmp_path)
    p = "model.layers.{layer}."
    mapping = {
        "num_layers": 2,
        "hidden_size": 32,
        "num_heads": 4,
        "num_kv_heads": 2,
        "intermediate_size": 40,
        "activation": "silu",
        "roles": {
            r: p + t
            for r, t in [
                ("query", "self_attn.q_proj.weight"),
                ("key", "self_attn.k_proj.weight"),
                ("value", "self_attn.v_proj.weight"),
                ("output", "self_attn.o_proj.weight"),
                ("ffn_gate", "mlp.gate_proj.weight"),
                ("ffn_in", "mlp.up_proj.weight"),
                ("ffn_out", "mlp.down_proj.weight"),
            ]
        },
    }
    _same_spectra(tmp_path, mapping)
    notes = MappingAdapter.from_spec(load_checkpoint(str(tmp_path)), mapping).spec().adaptations
    assert any(n.startswith("grouped-query") for n in notes)
    assert any(n.startswith("gated MLP") for n in notes)


def test_mapping_shared_layer_like_albert(tmp_path):
    model = transformers.AlbertModel(
        transformers.AlbertConfig(
            hidden_size=32,
            num_attention_heads=4,
            num_hidden_layers=3,
            intermediate_size=48,
            embedding_size=16,
            vocab_size=50,
        )
    )
    model.save_pretrained(tmp_path)
    p = "encoder.albert_layer_groups.0.albert_layers.0."
    mapping = {
        "num_layers": 3,
        "hidden_size": 32,
        "num_heads": 4,
        "intermediate_size": 48,
        "activation": "hidden_act",
        "roles": {
            r: p + t
            for r, t in [
                ("query", "attention.query.weight"),
                ("key", "attention.key.weight"),
                ("value", "attention.value.weight"),
                ("output", "attention.dense.weight"),
                ("ffn_in", "ffn.weight"),
                ("ffn_out", "ffn_output.weight"),
            ]
        },
    }
    _same_spectra(tmp_path, mapping)
    adapter = MappingAdapter.from_spec(load_checkpoint(str(tmp_path)), mapping)
    assert adapter.share_key(0) == adapter.share_key(2) is not None
    assert any(n.startswith("shared weights") for n in adapter.spec().adaptations)


def test_builtin_adapter_missing_tensor_is_named(tmp_path):
    from tests.support.safetensors_np import load_file, save_file

    model = transformers.OPTModel(
        transformers.OPTConfig(
            hidden_size=32,
            num_attention_heads=4,
            num_hidden_layers=2,
            ffn_dim=48,
            vocab_size=50,
            word_embed_proj_dim=32,
        )
    )
    model.save_pretrained(tmp_path)
    st = load_file(str(tmp_path / "model.safetensors"))
    del st["decoder.layers.1.fc2.weight"]
    save_file(st, str(tmp_path / "model.safetensors"))
    adapter = get_adapter(load_checkpoint(str(tmp_path)))
    adapter.layer(0)
    with pytest.raises(CheckpointError, match=r"'decoder\.layers\.1\.fc2\.weight' not found"):
        adapter.layer(1)

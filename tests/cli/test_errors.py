"""Every bad input: one 'error:' line naming the file/tensor, exit 2, no traceback, no --out."""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from tests.support.checkpoints import write_tiny_bert
from tests.support.cli_runner import run_cli_process


def assert_clean_failure(tmp_path: Path, model: str, *needles: str, env: dict | None = None):
    out = tmp_path / "out"
    r = run_cli_process("analyze", model, "--out", str(out), env=env)
    assert r.code == 2, r.err
    line = r.one_error_line()
    for n in needles:
        assert n in line, line
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]
    return line


def test_missing_path(tmp_path):
    assert_clean_failure(tmp_path, str(tmp_path / "nope"), "does not exist")


def test_no_config(tmp_path):
    d = write_tiny_bert(tmp_path / "m")
    (d / "config.json").unlink()
    assert_clean_failure(tmp_path, str(d), "config.json", str(d))


def test_unsupported_model_type(tmp_path):
    d = write_tiny_bert(tmp_path / "m", config_extra={"model_type": "mamba"})
    line = assert_clean_failure(tmp_path, str(d), "mamba", "bert", "gpt2", "mapping")
    assert "supported" in line


def test_truncated_safetensors(tmp_path):
    d = write_tiny_bert(tmp_path / "m")
    f = d / "model.safetensors"
    f.write_bytes(f.read_bytes()[:-100])
    assert_clean_failure(tmp_path, str(d), "model.safetensors", "truncated")


def test_garbage_safetensors(tmp_path):
    d = write_tiny_bert(tmp_path / "m")
    (d / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!")
    assert_clean_failure(tmp_path, str(d), "model.safetensors", "not a valid safetensors")


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_inf_tensor(tmp_path, bad):
    from tests.support.safetensors_np import load_file, save_file

    d = write_tiny_bert(tmp_path / "m")
    sd = load_file(str(d / "model.safetensors"))
    name = "encoder.layer.1.intermediate.dense.weight"
    sd[name][3, 2] = bad
    save_file(sd, str(d / "model.safetensors"))
    assert_clean_failure(tmp_path, str(d), name, "NaN" if np.isnan(bad) else "Inf")


def test_hidden_not_divisible(tmp_path):
    d = write_tiny_bert(tmp_path / "m", config_extra={"num_attention_heads": 3})
    assert_clean_failure(tmp_path, str(d), "not divisible", "8", "3")


def test_shape_disagrees_with_config(tmp_path):
    d = write_tiny_bert(tmp_path / "m", config_extra={"intermediate_size": 32})
    assert_clean_failure(tmp_path, str(d), "encoder.layer.0.intermediate.dense.weight", "shape")


def test_hub_id_offline_not_cached(tmp_path, monkeypatch):
    pytest.importorskip("huggingface_hub")
    env = {
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf"),
        "HF_HUB_CACHE": str(tmp_path / "hf" / "hub"),
    }
    monkeypatch.chdir(tmp_path)  # no ./google/... directory can shadow the hub id
    assert_clean_failure(
        tmp_path,
        "google/bert_uncased_L-2_H-128_A-2",
        "google/bert_uncased_L-2_H-128_A-2",
        "offline",
        env=env,
    )


def test_hub_id_without_the_hub_extra_names_it(tmp_path, monkeypatch):
    """Core-only environment: a hub id is refused in one line naming the hub extra."""
    if importlib.util.find_spec("huggingface_hub") is not None:
        pytest.skip("huggingface_hub is installed (this checks the core-only environment)")
    monkeypatch.chdir(tmp_path)  # no ./google/... directory can shadow the hub id
    assert_clean_failure(
        tmp_path,
        "google/bert_uncased_L-2_H-128_A-2",
        "google/bert_uncased_L-2_H-128_A-2",
        "specbound[hub]",
    )


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /tmp/specbound_pwned",))


def test_pickle_needing_code_execution_refused(tmp_path):
    torch = pytest.importorskip("torch")

    d = write_tiny_bert(tmp_path / "m")
    (d / "model.safetensors").unlink()
    torch.save(
        {"x": torch.zeros(2), "evil": _Evil()},
        d / "pytorch_model.bin",
        pickle_protocol=pickle.HIGHEST_PROTOCOL,
    )
    Path("/tmp/specbound_pwned").unlink(missing_ok=True)
    assert_clean_failure(tmp_path, str(d), "pytorch_model.bin", "code execution")
    assert not Path("/tmp/specbound_pwned").exists()


def test_good_bin_loads_with_weights_only(tmp_path):
    torch = pytest.importorskip("torch")

    from tests.support.safetensors_np import load_file

    d = write_tiny_bert(tmp_path / "m")
    sd = {k: torch.from_numpy(v) for k, v in load_file(str(d / "model.safetensors")).items()}
    import specbound

    ref = specbound.analyze(str(d), cache=False)
    (d / "model.safetensors").unlink()
    torch.save({"bert." + k: v for k, v in sd.items()}, d / "pytorch_model.bin")
    a = specbound.analyze(str(d), cache=False)
    assert a.bounds.spectrum_adaptive.ln == pytest.approx(
        ref.bounds.spectrum_adaptive.ln, rel=1e-12
    )


def test_out_and_json(tmp_path):
    d = write_tiny_bert(tmp_path / "m")
    r = run_cli_process("analyze", str(d), "--out", str(tmp_path / "o"), "--json", "--quiet")
    assert r.code == 0, r.err
    s = json.loads(r.out)
    assert set(s) >= {
        "model",
        "architecture",
        "num_layers",
        "hidden_size",
        "num_heads",
        "intermediate_size",
        "grid_m",
        "L_phi",
        "bounds",
        "adaptations",
        "specbound_version",
    }
    assert s == json.loads((tmp_path / "o" / "summary.json").read_text())
    import pandas as pd

    m = pd.read_csv(tmp_path / "o" / "matrices.csv")
    assert len(m) == 2 * (2 * 2 + 2) and set(m.matrix_type) == {"QK", "OV", "M_in", "M_out"}
    assert (m["head"][m.matrix_type.isin(["M_in", "M_out"])] == -1).all()
    assert len(pd.read_csv(tmp_path / "o" / "layers.csv")) == 2
    assert (tmp_path / "o" / "spectra.npz").is_file()

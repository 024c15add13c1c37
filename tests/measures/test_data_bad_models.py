"""Issue 35 item 16: a model on the meta device gets one line, not a raw RuntimeError."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from specbound import data_measures  # noqa: E402
from specbound.errors import SpecboundError  # noqa: E402
from specbound.track import Tracker  # noqa: E402

LINE = "the model's parameters are on the meta device; load real weights first"


def _meta_model():
    with torch.device("meta"):
        return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 3))


def test_data_measures_refuse_a_meta_model():
    x, y = torch.zeros(4, 4), torch.zeros(4, dtype=torch.long)
    with pytest.raises(SpecboundError, match="meta device") as e:
        data_measures(_meta_model(), [(x, y)])
    assert str(e.value) == LINE


def test_tracker_refuses_a_meta_model(tmp_path):
    with pytest.raises(SpecboundError) as e:
        Tracker(_meta_model(), out=tmp_path / "run")
    assert str(e.value) == LINE
    assert not (tmp_path / "run").exists()


def _tiny():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


def test_data_measures_refuse_non_finite_inputs_naming_the_batch():
    x = torch.randn(8, 4)
    y = torch.arange(8) % 3
    bad = x.clone()
    bad[3, 1] = float("nan")
    with pytest.raises(SpecboundError, match=r"batches\[1\]: inputs hold NaN or inf"):
        data_measures(_tiny(), [(x, y), (bad, y)], measures="sharpness")
    inf = x.clone()
    inf[0, 0] = float("inf")
    with pytest.raises(SpecboundError, match=r"batches\[0\]"):
        data_measures(_tiny(), [(inf, y)], measures="sharpness")


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
@pytest.mark.parametrize("measure", ["pacbayes_flatness", "inverse_margin"])
def test_data_measures_refuse_non_finite_logits_naming_the_batch(bad, measure):
    """A logits function returning NaN gave numbers (flatness 0.25): refused, naming the batch
    (batches[0] holds no examples, so the chunks' batch is 2, not their index 1)."""
    x, y = torch.randn(8, 4), torch.arange(8) % 3

    def logits_fn(model, inputs):
        out = model(inputs)
        if inputs[0, 0] == x2[0, 0]:
            out = out.clone()
            out[1, 0] = bad
        return out

    x2 = x + 1.0
    empty = (torch.zeros(0, 4), torch.zeros(0, dtype=torch.long))
    batches = [empty, (x, y), (x2, y)]
    with pytest.raises(SpecboundError) as e:
        data_measures(_tiny(), batches, measures=measure, logits_fn=logits_fn)
    assert str(e.value).startswith("batches[2]: the model's logits hold NaN or inf")
    assert "\n" not in str(e.value)


def test_data_measures_refuse_non_finite_weights_naming_the_tensor():
    m = _tiny()
    with torch.no_grad():
        m[2].weight[0, 0] = float("nan")
    x, y = torch.randn(8, 4), torch.arange(8) % 3
    with pytest.raises(SpecboundError, match=r"parameter '2.weight' holds NaN or inf"):
        data_measures(m, [(x, y)], measures="sharpness")


def test_a_forged_data_measure_record_holding_inf_is_recomputed(tmp_path, monkeypatch, caplog):
    """Issue 35 item 2: a record written through the cache's own writer (valid checksum) but
    holding inf is not trusted: it reads as absent, with one warning."""
    from specbound.studies.correlate import data as D

    monkeypatch.setenv("SPECBOUND_CACHE_DIR", str(tmp_path))
    key = "ef" * 16
    assert D.store(key, {"sharpness": 4660.0, "inverse_margin": None}, {})
    assert D.load_cached(key, ["sharpness", "inverse_margin"])[0]["sharpness"] == 4660.0
    assert D.store(key, {"sharpness": float("inf"), "inverse_margin": None}, {})
    with caplog.at_level("WARNING", logger="specbound"):
        values, notes = D.load_cached(key, ["sharpness", "inverse_margin"])
    assert values == {} and notes == {}
    assert sum("non-finite" in r.getMessage() for r in caplog.records) == 1


def test_data_measures_refuse_a_non_finite_buffer_naming_it():
    """Buffers (batch-norm running statistics) enter the forward pass like weights: NaN there
    gives numbers of no meaning, so it is refused with the buffer's name."""
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 3))
    m[1].running_var[2] = float("inf")
    x, y = torch.randn(8, 4), torch.arange(8) % 3
    with pytest.raises(SpecboundError, match=r"buffer '1.running_var' holds NaN or inf"):
        data_measures(m, [(x, y)], measures="sharpness")


def test_a_forward_pass_that_fails_is_one_line_naming_the_cause():
    """Half-precision inputs to a float32 model: one SpecboundError line with torch's reason,
    not a raw RuntimeError."""
    x, y = torch.randn(8, 4).half(), torch.arange(8) % 3
    with pytest.raises(SpecboundError, match=r"forward pass failed .*dtype") as info:
        data_measures(_tiny(), [(x, y)], measures="sharpness")
    assert "\n" not in str(info.value)

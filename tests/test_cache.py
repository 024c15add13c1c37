"""The on-disk spectra cache: hits, never stale, bounds recomputed, --no-cache, info/clear."""

from __future__ import annotations

import json
import os
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from conftest import write_tiny_bert

import specbound.analysis as analysis_mod
from specbound import cache
from specbound.analysis import analyze
from specbound.spectra import Spectra

L, N, H, F = 2, 32, 4, 64


#: A tiny random BERT checkpoint (config.json + model.safetensors): write_bert(dir, seed=0).
write_bert = partial(write_tiny_bert, layers=L, hidden=N, heads=H, ffn=F, scale=0.1)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("SPECBOUND_CACHE_DIR", str(d))
    return d


def no_compute(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*a, **k):
        raise AssertionError("spectra recomputed although the cache should hit")

    monkeypatch.setattr(analysis_mod, "compute_spectra", fail)


def assert_spectra_equal(a: Spectra, b: Spectra) -> None:
    for f in Spectra._FIELDS:
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


def test_hit_and_other_bound_options(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ck = write_bert(tmp_path / "m")
    first = analyze(ck)
    assert not first.from_cache and cache.info()["entries"] == 1
    fresh = analyze(ck, cache=False, l_phi=1.0, grid_m=7)
    no_compute(monkeypatch)
    again = analyze(ck)
    assert again.from_cache
    assert_spectra_equal(again.spectra, first.spectra)
    other = analyze(ck, l_phi=1.0, grid_m=7)  # only the bounds are recomputed
    assert other.from_cache and other.grid_m == 7 and other.l_phi == 1.0
    for x, y in [
        (other.bounds.spectrum_adaptive.log, fresh.bounds.spectrum_adaptive.log),
        (other.bounds.norm_based.log, fresh.bounds.norm_based.log),
    ]:
        assert x == pytest.approx(y, rel=1e-12)
    np.testing.assert_array_equal(other.details.p_star, fresh.details.p_star)


def test_changed_file_is_never_stale(tmp_path: Path, cache_dir: Path) -> None:
    ck = write_bert(tmp_path / "m", seed=0)
    a = analyze(ck)
    st = (ck / "model.safetensors").stat()
    write_bert(ck, seed=1)  # same size, new weights
    os.utime(ck / "model.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime restored
    assert (ck / "model.safetensors").stat().st_size == st.st_size
    b = analyze(ck)
    assert not b.from_cache
    want = analyze(ck, cache=False)
    assert_spectra_equal(b.spectra, want.spectra)
    assert not np.array_equal(a.spectra.sv_values, b.spectra.sv_values)


def test_changed_config_or_copy(tmp_path: Path, cache_dir: Path) -> None:
    ck = write_bert(tmp_path / "m")
    analyze(ck)
    cfg = json.loads((ck / "config.json").read_text())
    cfg["hidden_act"] = "relu"
    (ck / "config.json").write_text(json.dumps(cfg))
    assert not analyze(ck).from_cache  # config is part of the key
    assert analyze(ck).from_cache


def test_no_cache_neither_reads_nor_writes(tmp_path: Path, cache_dir: Path) -> None:
    ck = write_bert(tmp_path / "m")
    assert not analyze(ck, cache=False).from_cache
    assert cache.info()["entries"] == 0
    analyze(ck)
    assert not analyze(ck, cache=False).from_cache


def test_corrupt_or_foreign_entry_is_recomputed(tmp_path: Path, cache_dir: Path) -> None:
    ck = write_bert(tmp_path / "m")
    a = analyze(ck)
    (entry,) = (cache_dir / "spectra").glob("*.npz")
    entry.write_bytes(b"not an npz")
    b = analyze(ck)
    assert not b.from_cache
    assert_spectra_equal(a.spectra, b.spectra)
    # a readable entry of the wrong shape (another model's spectra) is not served either
    Spectra.concat([a.spectra, a.spectra]).save(entry)
    c = analyze(ck)
    assert not c.from_cache and len(c.spectra) == len(a.spectra)


def test_state_dict_is_not_cached(cache_dir: Path) -> None:
    rng = np.random.default_rng(0)
    sd = {}
    for l in range(L):
        p = f"encoder.layer.{l}."
        for r in ("query", "key", "value"):
            sd[p + f"attention.self.{r}.weight"] = rng.standard_normal((N, N))
        sd[p + "attention.output.dense.weight"] = rng.standard_normal((N, N))
        sd[p + "intermediate.dense.weight"] = rng.standard_normal((F, N))
        sd[p + "output.dense.weight"] = rng.standard_normal((N, F))
    cfg = {
        "model_type": "bert",
        "num_hidden_layers": L,
        "hidden_size": N,
        "num_attention_heads": H,
        "intermediate_size": F,
    }
    analyze(sd, config=cfg)
    assert not analyze(sd, config=cfg).from_cache
    assert cache.info()["entries"] == 0


def test_unwritable_cache_dir_does_not_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("SPECBOUND_CACHE_DIR", str(blocker / "sub"))  # cannot be created
    ck = write_bert(tmp_path / "m")
    assert not analyze(ck).from_cache
    assert not analyze(ck).from_cache


def test_default_location_is_user_cache_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    monkeypatch.delenv("SPECBOUND_CACHE_DIR", raising=False)
    assert cache.cache_dir() == Path(platformdirs.user_cache_dir("specbound"))


def test_cli_cache_info_clear_and_flags(tmp_path: Path, cache_dir: Path) -> None:
    from typer.testing import CliRunner

    from specbound.cli import app

    ck = write_bert(tmp_path / "m")
    run = CliRunner().invoke
    r = run(app, ["analyze", str(ck), "--json"])
    assert r.exit_code == 0, r.output
    base = json.loads(r.output)
    r = run(app, ["analyze", str(ck), "--json", "--l-phi", "1.0"])
    warm = json.loads(r.output)
    r = run(app, ["analyze", str(ck), "--json", "--l-phi", "1.0", "--no-cache"])
    cold = json.loads(r.output)
    assert warm["L_phi"] == 1.0 and base["L_phi"] == pytest.approx(1.13)
    for k in ("spectrum_adaptive", "norm_based"):
        assert warm["bounds"][k]["log10"] == pytest.approx(cold["bounds"][k]["log10"], rel=1e-12)
    r = run(app, ["cache", "info"])
    assert r.exit_code == 0 and "1 entries" in r.output and str(cache_dir) in r.output
    r = run(app, ["cache", "clear"])
    assert r.exit_code == 0 and "removed 1" in r.output
    assert cache.info()["entries"] == 0

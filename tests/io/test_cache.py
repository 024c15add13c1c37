"""The on-disk spectra cache: hits, never stale, bounds recomputed, --no-cache, info/clear."""

from __future__ import annotations

import json
import os
from functools import partial
from pathlib import Path

import numpy as np
import pytest

import specbound.analysis as analysis_mod
from specbound.analysis import analyze
from specbound.linalg import cache
from specbound.linalg.spectra import Spectra
from tests.support.checkpoints import write_tiny_bert

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

    monkeypatch.setattr(analysis_mod, "compute_all_spectra", fail)


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
        (other.bounds.spectrum_adaptive.ln, fresh.bounds.spectrum_adaptive.ln),
        (other.bounds.norm_based.ln, fresh.bounds.norm_based.ln),
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


def _poison(cache_dir: Path, value: float) -> None:
    """Rewrite the one entry with ``value`` in its singular values, sealed with valid checksums
    (damage the checksums cannot see: a bug or a forger)."""
    from specbound.io.codec import read_record, write_record

    (entry,) = (cache_dir / "spectra").glob("*.json")
    stem = entry.with_suffix("")
    meta, arrays = read_record(stem)
    arrays["sv_values"] = arrays["sv_values"].copy()
    arrays["sv_values"][0] = value
    write_record(stem, meta, arrays, kind="spectra")


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_entry_is_invalid_and_recomputed(
    tmp_path: Path, cache_dir: Path, value: float, caplog: pytest.LogCaptureFixture
) -> None:
    ck = write_bert(tmp_path / "m")
    a = analyze(ck)
    _poison(cache_dir, value)
    with caplog.at_level("WARNING", logger="specbound"):
        b = analyze(ck)
    assert not b.from_cache
    assert_spectra_equal(a.spectra, b.spectra)
    assert np.isfinite(b.spectra.sv_values).all()
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith("warning: cache entry ") and "NaN or infinite" in line
    assert analyze(ck).from_cache  # the recomputed entry replaced the bad one


CLI = "from specbound.cli import main; main()"


def test_non_finite_entry_one_warning_line_in_cli(tmp_path: Path, cache_dir: Path) -> None:
    import subprocess
    import sys

    ck = write_bert(tmp_path / "m")
    analyze(ck)
    _poison(cache_dir, np.nan)
    r = subprocess.run(
        [sys.executable, "-c", CLI, "analyze", str(ck), "--json", "-q"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SPECBOUND_CACHE_DIR": str(cache_dir)},
    )
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: cache entry "), r.stderr
    assert "nan" not in r.stdout.lower().replace("nan_", "")  # strict JSON, no NaN printed


def test_stores_no_non_finite_entry(cache_dir: Path) -> None:
    from specbound.io.cache import store_arrays

    assert not store_arrays("0" * 32, {"x": np.array([1.0, np.nan])})
    assert cache.info()["entries"] == 0
    assert store_arrays("0" * 32, {"x": np.array([1.0, 2.0])})
    assert cache.info()["entries"] == 1


def test_pre_codec_entry_is_ignored(tmp_path: Path, cache_dir: Path) -> None:
    """An entry of the former format (a bare npz, no checksummed JSON) is not served."""
    ck = write_bert(tmp_path / "m")
    a = analyze(ck)
    (entry,) = (cache_dir / "spectra").glob("*.json")
    entry.unlink()
    bad = Spectra(**{f: getattr(a.spectra, f) for f in Spectra._FIELDS})
    bad.sv_values = bad.sv_values * 2
    bad.save(entry.with_suffix(".npz"))
    b = analyze(ck)
    assert not b.from_cache
    assert_spectra_equal(a.spectra, b.spectra)


def _read_only_unlink(monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> None:
    """Simulate a read-only cache folder (root ignores chmod): unlinking inside it fails."""
    import errno

    real = Path.unlink

    def unlink(self: Path, missing_ok: bool = False) -> None:
        if cache_dir in self.parents:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        real(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink)


def test_clear_read_only_cache_is_one_line(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from specbound.cli import app
    from specbound.errors import CacheError

    analyze(write_bert(tmp_path / "m"))
    _read_only_unlink(monkeypatch, cache_dir)
    with pytest.raises(CacheError) as e:
        cache.clear()
    msg = str(e.value)
    assert str(cache_dir / "spectra") in msg and "Permission denied" in msg and "\n" not in msg
    r = CliRunner().invoke(app, ["cache", "clear"])
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot clear the spectra cache")
    assert "Traceback" not in r.output
    assert cache.info()["entries"] == 1  # nothing was deleted


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_clear_chmod_555_cache(tmp_path: Path, cache_dir: Path) -> None:
    from specbound.errors import CacheError

    analyze(write_bert(tmp_path / "m"))
    d = cache_dir / "spectra"
    d.chmod(0o555)
    try:
        with pytest.raises(CacheError, match="cannot clear the spectra cache"):
            cache.clear()
    finally:
        d.chmod(0o755)


def test_clear_leaves_foreign_files(tmp_path: Path, cache_dir: Path) -> None:
    analyze(write_bert(tmp_path / "m"))
    mine = cache_dir / "spectra" / "notes.txt"
    mine.write_text("user file")
    assert cache.clear() == 1
    assert mine.read_text() == "user file"
    assert cache.info()["entries"] == 0


def test_clear_removes_every_record_kind_and_no_hex_named_user_file(
    tmp_path: Path, cache_dir: Path
) -> None:
    """Issue 35 item 12: records are recognised by their content (spectra and data measures
    alike); a user's file whose name happens to be hex is left; the bytes freed are reported."""
    import shutil

    from typer.testing import CliRunner

    from specbound.cli import app

    analyze(write_bert(tmp_path / "m"))
    spectra = cache_dir / "spectra"
    (json_file,) = [f for f in spectra.iterdir() if f.suffix == ".json"]
    data = cache_dir / "data_measures"
    data.mkdir(exist_ok=True)
    key = "ab" * 16
    shutil.copy(json_file, data / f"{key}.json")  # a record of the codec format
    user = spectra / ("cd" * 16 + ".json")
    user.write_text('{"my": "notes"}')
    size = sum(f.stat().st_size for d in (spectra, data) for f in d.iterdir() if f != user)
    r = CliRunner().invoke(app, ["cache", "clear", "--json"])
    assert r.exit_code == 0, r.output
    done = json.loads(r.output)
    assert done["removed"] == 2 and done["bytes"] == size
    assert user.read_text() == '{"my": "notes"}'
    assert not any(data.iterdir())


def test_clear_removes_dead_writers_temps_only(tmp_path: Path, cache_dir: Path) -> None:
    """Issue 44: record temps are owner-marked (``io.files.temp_name``): clear removes those
    whose writer is gone, never a live writer's (it is about to be renamed into place)."""
    import subprocess
    import sys

    from specbound.io.files import host_tag, temp_name

    analyze(write_bert(tmp_path / "m"))
    spectra = cache_dir / "spectra"
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    dead = spectra / f".specbound-{p.pid}-{host_tag()}-0123456789ab.tmp"
    dead.write_bytes(b"half a record")
    live = spectra / temp_name()
    live.write_bytes(b"being written")
    assert cache.clear() == 1
    assert not dead.exists() and live.read_bytes() == b"being written"

"""Issue 8, input side: a malformed checkpoint never gives numbers.

Every case goes through the real CLI (one ``error:`` line on stderr, exit 2, no traceback, no
--out) and the Python API (a SpecboundError subclass, never a bare KeyError/OverflowError/...).
Safetensors files are written by hand (struct + json) and, where the safetensors library has an
opinion, its verdict is checked too, so "as strict as the library" is tested, not assumed.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from checkpoints import write_tiny_bert
from typer.testing import CliRunner

from specbound.errors import SpecboundError

runner = CliRunner()


# ---- helpers ---------------------------------------------------------------------------------
def cli(*args: str):
    from specbound.cli import app

    return runner.invoke(app, list(args))


def assert_clean(r, *needles: str) -> str:
    """Exit 2, exactly one 'error:' line on stderr naming every needle, no traceback."""
    assert r.exit_code == 2, (r.exit_code, r.output, r.exception)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.output
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def fails(tmp_path: Path, model: str, *needles: str, extra: tuple[str, ...] = ()) -> str:
    """analyze via the CLI (no --out left behind) and via Python (SpecboundError), same text."""
    out = tmp_path / "out"
    line = assert_clean(cli("analyze", model, "--out", str(out), "--quiet", *extra), *needles)
    assert not out.exists()
    import specbound

    with pytest.raises(SpecboundError) as exc:
        specbound.analyze(model, cache=False)
    for n in needles:
        assert n in str(exc.value), str(exc.value)
    assert "\n" not in str(exc.value)
    return line


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None, timeout: float = 60):
    return subprocess.run(
        [sys.executable, "-m", "specbound.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=timeout,
    )


def assert_clean_proc(r: subprocess.CompletedProcess, *needles: str) -> str:
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def read_st(path: Path) -> tuple[dict, bytes]:
    """Header dict and data bytes of a safetensors file (our own parse, for mutation)."""
    b = path.read_bytes()
    n = struct.unpack("<Q", b[:8])[0]
    return json.loads(b[8 : 8 + n]), b[8 + n :]


def write_raw(path: Path, header: dict | str | bytes, data: bytes) -> Path:
    h = (
        header
        if isinstance(header, bytes)
        else (header if isinstance(header, str) else json.dumps(header)).encode()
    )
    path.write_bytes(struct.pack("<Q", len(h)) + h + data)
    return path


def write_st(path: Path, tensors: dict[str, tuple[str, list[int], bytes]]) -> Path:
    """A valid safetensors file from (dtype, shape, raw bytes), laid out in name order."""
    header, data, pos = {}, b"", 0
    for name in sorted(tensors):
        dtype, shape, raw = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [pos, pos + len(raw)]}
        data += raw
        pos += len(raw)
    return write_raw(path, header, data)


def library_accepts(path: Path) -> bool:
    from safetensors import safe_open

    try:
        with safe_open(str(path), "np") as f:
            list(f.keys())
        return True
    except Exception:
        return False


def tiny_tensors(path: Path) -> dict[str, tuple[str, list[int], bytes]]:
    header, data = read_st(path / "model.safetensors")
    header.pop("__metadata__", None)
    return {
        k: (v["dtype"], v["shape"], data[v["data_offsets"][0] : v["data_offsets"][1]])
        for k, v in header.items()
    }


def bounds_of(model: str, **kw) -> tuple[float, float]:
    """(log B_spectrum_adaptive, log B_norm_based): the second depends on every weight."""
    import specbound

    b = specbound.analyze(model, cache=False, **kw).bounds
    return b.spectrum_adaptive.ln, b.norm_based.ln


Q0 = "encoder.layer.0.attention.self.query.weight"
K0 = "encoder.layer.0.attention.self.key.weight"


# ---- 1. safetensors headers as strict as the library ----------------------------------------
def _mutations():
    """name -> (mutate(header, data) -> (header or raw text, data), message needle)."""

    def overlap(h, d):  # the key reads the query's bytes: today a different bound, exit 0
        h[K0]["data_offsets"] = list(h[Q0]["data_offsets"])
        return h, d

    def gap(h, d):  # 4 stray bytes after the first tensor
        first = min(h.values(), key=lambda e: e["data_offsets"][0])
        cut = first["data_offsets"][1]
        for e in h.values():
            if e["data_offsets"][0] >= cut:
                e["data_offsets"] = [x + 4 for x in e["data_offsets"]]
        return h, d[:cut] + b"\0" * 4 + d[cut:]

    def trailing(h, d):
        return h, d + b"\0" * 4

    def duplicate(h, d):
        text = json.dumps(h)
        entry = json.dumps(h[Q0])
        return text[:-1] + f', "{Q0}": {entry}}}', d

    def shape_float(h, d):
        h[Q0]["shape"] = [8.0, 8]
        return h, d

    def shape_bool(h, d):
        h[Q0]["shape"] = [True, 64]
        return h, d

    def shape_negative(h, d):
        h[Q0]["shape"] = [-8, -8]
        return h, d

    def shape_wrong_size(h, d):
        h[Q0]["shape"] = [8, 4]
        return h, d

    def shape_huge(h, d):  # today: OverflowError from np.prod(int64)
        h[Q0]["shape"] = [2**70, 2**70]
        return h, d

    def offsets_strings(h, d):
        h[Q0]["data_offsets"] = [str(x) for x in h[Q0]["data_offsets"]]
        return h, d

    def offsets_three(h, d):
        h[Q0]["data_offsets"] = [*h[Q0]["data_offsets"], 0]
        return h, d

    def offsets_reversed(h, d):
        h[Q0]["data_offsets"] = h[Q0]["data_offsets"][::-1]
        return h, d

    def dtype_unknown(h, d):
        h[Q0]["dtype"] = "F33"
        return h, d

    def metadata_not_strings(h, d):
        h["__metadata__"] = {"format": 1}
        return h, d

    def not_an_object(h, d):
        return json.dumps(list(h)), d

    def deeply_nested(h, d):  # today: RecursionError traceback
        return '{"__metadata__": ' + "[" * 100_000 + "]" * 100_000 + "}", d

    return {
        "overlap": (overlap, "overlaps"),
        "gap": (gap, "belong to no tensor"),
        "trailing": (trailing, "trailing bytes"),
        "duplicate": (duplicate, "twice"),
        "shape_float": (shape_float, "shape"),
        "shape_bool": (shape_bool, "shape"),
        "shape_negative": (shape_negative, "shape"),
        "shape_wrong_size": (shape_wrong_size, "disagree"),
        "shape_huge": (shape_huge, Q0),
        "offsets_strings": (offsets_strings, "data_offsets"),
        "offsets_three": (offsets_three, "data_offsets"),
        "offsets_reversed": (offsets_reversed, "data_offsets"),
        "dtype_unknown": (dtype_unknown, "F33"),
        "metadata_not_strings": (metadata_not_strings, "__metadata__"),
        "not_an_object": (not_an_object, "not a JSON object"),
        "deeply_nested": (deeply_nested, "nested too deeply"),
    }


@pytest.mark.parametrize("case", sorted(_mutations()))
def test_malformed_safetensors_header(tmp_path, case):
    mutate, needle = _mutations()[case]
    d = write_tiny_bert(tmp_path / "m")
    f = d / "model.safetensors"
    header, data = read_st(f)
    header.pop("__metadata__", None)
    new_header, new_data = mutate(header, data)
    write_raw(f, new_header, new_data)
    if case != "duplicate":  # the library keeps the last duplicate; we refuse (ambiguous)
        assert not library_accepts(f)
    fails(tmp_path, str(d), "model.safetensors", "not a valid safetensors file", needle)


def test_valid_layout_variants_match_library(tmp_path):
    """Zero-size tensors, sub-byte dtypes, padded headers: accepted by both readers."""
    from specbound.io.checkpoint import SafetensorsFile

    f = write_st(
        tmp_path / "a.safetensors",
        {
            "empty": ("F32", [0, 3], b""),
            "scalar": ("F64", [], struct.pack("<d", 2.5)),
            "f4": ("F4", [4], b"\0\0"),
            "f6": ("F6_E2M3", [4], b"\0\0\0"),
        },
    )
    assert library_accepts(f)
    st = SafetensorsFile(f)
    assert st.get("scalar") == 2.5 and st.get("empty").shape == (0, 3)
    header, data = read_st(f)
    write_raw(f, json.dumps(header) + "   ", data)  # trailing spaces pad the header
    assert library_accepts(f)
    assert SafetensorsFile(f).get("scalar") == 2.5
    write_raw(f, {"x": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}, b"\0\0")
    assert not library_accepts(f)  # 12 bits: not whole bytes
    with pytest.raises(SpecboundError, match="whole bytes"):
        SafetensorsFile(f)


# ---- 2. dtypes specbound does not read: fine until such a tensor is read ---------------------
UNREAD = {
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "U16": 2,
    "U32": 4,
    "U64": 8,
    "C64": 8,
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "I16": 2,
    "I32": 4,
    "I64": 8,
}


def test_unused_tensors_of_unread_dtypes_are_fine(tmp_path):
    ref_dir = write_tiny_bert(tmp_path / "ref")
    d = write_tiny_bert(tmp_path / "m")
    tensors = tiny_tensors(d)
    for dt, size in UNREAD.items():
        tensors[f"extra.{dt.lower()}"] = (dt, [2, 3], b"\1" * (6 * size))
    write_st(d / "model.safetensors", tensors)
    assert library_accepts(d / "model.safetensors")
    assert bounds_of(str(d)) == pytest.approx(bounds_of(str(ref_dir)), rel=1e-12)
    r = cli("inspect", str(d))
    assert r.exit_code == 0, r.output
    assert "F8_E4M3" in r.stdout and "C64" in r.stdout


@pytest.mark.parametrize("dtype", ["I32", "F8_E4M3", "C64", "U8"])
def test_used_tensor_of_unread_dtype_is_named(tmp_path, dtype):
    d = write_tiny_bert(tmp_path / "m")
    tensors = tiny_tensors(d)
    _, shape, raw = tensors[Q0]
    size = {"I32": 4, "F8_E4M3": 1, "C64": 8, "U8": 1}[dtype]
    tensors[Q0] = (dtype, shape, b"\0" * (int(np.prod(shape)) * size))
    del raw
    write_st(d / "model.safetensors", tensors)
    line = fails(tmp_path, str(d), Q0, dtype)
    assert "not a valid safetensors" not in line and "re-download" not in line


# ---- 3. .bin tensors that are not dense real floats ------------------------------------------
def _bin_variant(kind: str):
    """(tensor of that kind, needle of the message naming it)."""
    import warnings

    import torch

    w = torch.randn(8, 8, generator=torch.Generator().manual_seed(0))
    make = {
        "int32": lambda: (w.to(torch.int32), "int32"),
        "bool": lambda: (w > 0, "bool"),
        "complex": lambda: (w.to(torch.complex64), "complex64"),
        "quantized": lambda: (torch.quantize_per_tensor(w, 0.1, 0, torch.qint8), "quantized"),
        "sparse": lambda: (w.to_sparse(), "sparse"),
        "meta": lambda: (torch.empty(8, 8, device="meta"), "meta"),
        "float8": lambda: (w.to(torch.float8_e4m3fn), "float8"),
    }[kind]
    with warnings.catch_warnings():  # torch deprecates quantize_per_tensor
        warnings.simplefilter("ignore")
        return make()


@pytest.mark.parametrize(
    "kind", ["int32", "bool", "complex", "quantized", "sparse", "meta", "float8"]
)
def test_bin_tensor_that_is_not_a_dense_float(tmp_path, kind):
    import torch
    from safetensors.numpy import load_file

    d = write_tiny_bert(tmp_path / "m")
    sd = {k: torch.from_numpy(v) for k, v in load_file(str(d / "model.safetensors")).items()}
    (d / "model.safetensors").unlink()
    bad, needle = _bin_variant(kind)
    sd[Q0] = bad
    torch.save(sd, d / "pytorch_model.bin")
    fails(tmp_path, str(d), Q0, needle)
    # an in-memory state dict: the same refusal, never a silent cast
    import specbound

    cfg = json.loads((d / "config.json").read_text())
    with pytest.raises(SpecboundError, match=Q0):
        specbound.analyze(sd, config=cfg, cache=False)


def test_numpy_state_dict_with_integer_tensor(tmp_path):
    from safetensors.numpy import load_file

    import specbound

    d = write_tiny_bert(tmp_path / "m")
    sd = load_file(str(d / "model.safetensors"))
    cfg = json.loads((d / "config.json").read_text())
    ref = specbound.analyze(sd, config=cfg, cache=False).bounds.norm_based.ln
    assert ref == pytest.approx(bounds_of(str(d))[1], rel=1e-12)
    sd[Q0] = (sd[Q0] * 100).astype(np.int64)
    with pytest.raises(SpecboundError, match=f"{Q0}.*int64"):
        specbound.analyze(sd, config=cfg, cache=False)


# ---- 4. sizes in config.json: positive integers matching the stored blocks --------------------
@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("num_hidden_layers", "1.7"),
        ("num_hidden_layers", "true"),
        ("num_hidden_layers", "0"),
        ("num_hidden_layers", "-2"),
        ("num_hidden_layers", "1e9"),
        ("num_hidden_layers", "Infinity"),
        ("num_hidden_layers", '"2"'),
        ("hidden_size", "true"),
        ("hidden_size", "8.0"),
        ("num_attention_heads", "0"),
        ("intermediate_size", "-16"),
        ("head_dim", "1.5"),
        ("head_dim", "false"),
    ],
)
def test_size_keys_must_be_positive_integers(tmp_path, key, text):
    d = write_tiny_bert(tmp_path / "m")
    cfg = (d / "config.json").read_text().rstrip("}")
    (d / "config.json").write_text(cfg.replace(f'"{key}": ', '"_old": ') + f', "{key}": {text}}}')
    fails(tmp_path, str(d), "config.json", f"'{key}'", "positive integer")


@pytest.mark.parametrize(
    ("layers", "needle"),
    [(1, "also hold block 1"), (3, "no block 2"), (10**9, "no block 999999999")],
)
def test_layer_count_must_match_stored_blocks(tmp_path, layers, needle):
    d = write_tiny_bert(tmp_path / "m", layers=2, config_extra={"num_hidden_layers": layers})
    fails(tmp_path, str(d), "config.json", "num_hidden_layers", needle)
    assert_clean(cli("inspect", str(d)), "num_hidden_layers", needle)


def test_huge_layer_count_fails_fast_in_a_subprocess(tmp_path):
    """Today 1e9 layers make analyze/inspect loop and grow memory without bound."""
    d = write_tiny_bert(tmp_path / "m", config_extra={"num_hidden_layers": 10**9})
    for cmd in ("analyze", "inspect"):
        assert_clean_proc(run_cli(cmd, str(d), timeout=60), "num_hidden_layers", "no block")


def test_mapping_num_layers_checked(tmp_path):
    d = write_tiny_bert(tmp_path / "m")
    p = "encoder.layer.{layer}."
    mapping = {
        "num_layers": 3,
        "hidden_size": 8,
        "num_heads": 2,
        "intermediate_size": 16,
        "roles": {
            "query": p + "attention.self.query.weight",
            "key": p + "attention.self.key.weight",
            "value": p + "attention.self.value.weight",
            "output": p + "attention.output.dense.weight",
            "ffn_in": p + "intermediate.dense.weight",
            "ffn_out": p + "output.dense.weight",
        },
    }
    import specbound

    for value, needle in [
        (3, "no block 2"),
        (1, "also holds block 1"),
        (1.7, "positive"),
        (True, "positive"),
        (10**9, "no block 999999999"),
    ]:
        f = tmp_path / "map.json"
        f.write_text(json.dumps({**mapping, "num_layers": value}))
        assert_clean(cli("analyze", str(d), "--mapping", str(f), "-q"), "num_layers", needle)
        with pytest.raises(SpecboundError, match="num_layers"):
            specbound.analyze(str(d), mapping=str(f), cache=False)
    f.write_text(json.dumps({**mapping, "num_layers": 2}))
    assert specbound.analyze(
        str(d), mapping=str(f), cache=False
    ).bounds.norm_based.ln == pytest.approx(bounds_of(str(d))[1], rel=1e-12)


def test_other_adapters_check_their_layer_key(tmp_path):
    """GPT-2 (n_layer) via an in-memory state dict: the adapter's own key is named."""
    import specbound

    rng = np.random.default_rng(0)
    n, L = 8, 2
    sd = {}
    for l in range(L):
        sd[f"h.{l}.attn.c_attn.weight"] = rng.standard_normal((n, 3 * n))
        sd[f"h.{l}.attn.c_proj.weight"] = rng.standard_normal((n, n))
        sd[f"h.{l}.mlp.c_fc.weight"] = rng.standard_normal((n, 4 * n))
        sd[f"h.{l}.mlp.c_proj.weight"] = rng.standard_normal((4 * n, n))
    cfg = {"model_type": "gpt2", "n_embd": n, "n_head": 2, "n_layer": 3}
    with pytest.raises(SpecboundError, match=r"n_layer = 3.*no block 2"):
        specbound.analyze(sd, config=cfg, cache=False)
    with pytest.raises(SpecboundError, match=r"'n_head'.*positive integer"):
        specbound.analyze(sd, config={**cfg, "n_layer": 2, "n_head": 2.0}, cache=False)
    assert specbound.analyze(sd, config={**cfg, "n_layer": 2}, cache=False).spec.num_layers == 2


# ---- 5. several candidate prefixes: refuse to guess, --prefix chooses --------------------------
def _two_models(tmp_path: Path) -> tuple[Path, Path, Path]:
    s = write_tiny_bert(tmp_path / "student", seed=1)
    t = write_tiny_bert(tmp_path / "teacher", seed=2)
    both = tmp_path / "both"
    both.mkdir()
    tensors = {f"student.{k}": v for k, v in tiny_tensors(s).items()}
    tensors.update({f"teacher.{k}": v for k, v in tiny_tensors(t).items()})
    write_st(both / "model.safetensors", tensors)
    (both / "config.json").write_text((s / "config.json").read_text())
    return s, t, both


def test_several_prefixes_refused_then_chosen(tmp_path):
    s, t, both = _two_models(tmp_path)
    line = fails(tmp_path, str(both), "'student.', 'teacher.'", "--prefix")
    assert_clean(cli("inspect", str(both)), "'student.', 'teacher.'", "--prefix")
    assert bounds_of(str(both), prefix="student.") == pytest.approx(bounds_of(str(s)), rel=1e-12)
    assert bounds_of(str(both), prefix="teacher.") == pytest.approx(bounds_of(str(t)), rel=1e-12)
    assert bounds_of(str(s))[1] != pytest.approx(bounds_of(str(t))[1], rel=1e-6)
    r = cli("analyze", str(both), "--prefix", "teacher.", "--json", "-q", "--no-cache")
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)["bounds"]["norm_based"]["log10"]
    assert got == pytest.approx(bounds_of(str(t))[1] / np.log(10), rel=1e-12)
    r = cli("inspect", str(both), "--prefix", "student.", "--json")
    assert r.exit_code == 0, r.output
    info = json.loads(r.stdout)
    assert all(n.startswith("teacher.") for n in info["ignored"])
    assert_clean(cli("analyze", str(both), "--prefix", "pupil.", "-q"), "pupil.", "student.")
    from specbound.inspection import inspect_model

    assert inspect_model(str(both), prefix="teacher.")["ignored"][0].startswith("student.")
    with pytest.raises(SpecboundError, match="--prefix"):
        inspect_model(str(both))
    assert "student." in line


def test_scale_takes_prefix(tmp_path):
    _, t, both = _two_models(tmp_path)
    from specbound.studies.scale import scale

    study = scale([str(both)], prefix="teacher.", cache=False)
    assert study.analyses[0].bounds.norm_based.ln == pytest.approx(bounds_of(str(t))[1], rel=1e-12)


def test_prefix_choice_does_not_depend_on_hash_seed(tmp_path):
    _, _, both = _two_models(tmp_path)
    lines = set()
    for seed in ("0", "1", "2"):
        r = run_cli("analyze", str(both), "-q", "--no-cache", env={"PYTHONHASHSEED": seed})
        lines.add(assert_clean_proc(r, "'student.', 'teacher.'", "--prefix"))
    assert len(lines) == 1


# ---- 6. shard indexes -------------------------------------------------------------------------
def _sharded(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    d = write_tiny_bert(tmp_path / "m")
    tensors = tiny_tensors(d)
    (d / "model.safetensors").unlink()
    names = sorted(tensors)
    half = len(names) // 2
    weight_map = {}
    for i, part in enumerate((names[:half], names[half:])):
        fname = f"model-0000{i + 1}-of-00002.safetensors"
        write_st(d / fname, {k: tensors[k] for k in part})
        weight_map.update(dict.fromkeys(part, fname))
    return d, weight_map


def _write_index(d: Path, text: str) -> None:
    (d / "model.safetensors.index.json").write_text(text)


def test_valid_shards_match_single_file(tmp_path):
    ref = write_tiny_bert(tmp_path / "ref")
    d, wm = _sharded(tmp_path)
    _write_index(d, json.dumps({"metadata": {}, "weight_map": wm}))
    assert bounds_of(str(d)) == pytest.approx(bounds_of(str(ref)), rel=1e-12)


def test_shard_index_malformed(tmp_path):
    d, wm = _sharded(tmp_path)
    other = "model-00002-of-00002.safetensors"
    text = json.dumps({"weight_map": wm})
    _write_index(d, text[:-2] + f', "{Q0}": "{other}"}}}}')  # Q0 mapped to two shards
    fails(tmp_path, str(d), "model.safetensors.index.json", Q0, "twice")
    for bad, needle in [
        ("../outside.safetensors", "outside"),
        (str(tmp_path / "abs.safetensors"), "outside"),
        (7, "not a shard file name"),
    ]:
        _write_index(d, json.dumps({"weight_map": {**wm, Q0: bad}}))
        fails(tmp_path, str(d), Q0, needle)
    for wmap in ([list(wm)], "model-00001-of-00002.safetensors", None):
        _write_index(d, json.dumps({"weight_map": wmap}))
        fails(tmp_path, str(d), "weight_map")
    _write_index(d, '{"weight_map": ' + "[" * 100_000 + "]" * 100_000 + "}")
    fails(tmp_path, str(d), "model.safetensors.index.json", "nested too deeply")


def test_stale_shard_index_found_at_open_time(tmp_path):
    from specbound.io.checkpoint import load_checkpoint

    d, wm = _sharded(tmp_path)
    wrong = next(k for k, v in wm.items() if v.startswith("model-00002"))
    _write_index(d, json.dumps({"weight_map": {**wm, wrong: "model-00001-of-00002.safetensors"}}))
    with pytest.raises(SpecboundError, match=f"{wrong}.*does not hold it"):
        load_checkpoint(str(d))  # before any adapter or spectral work
    fails(tmp_path, str(d), wrong, "model-00001-of-00002.safetensors", "stale")


# ---- 7. other input hazards -------------------------------------------------------------------
def test_deeply_nested_and_non_utf8_config(tmp_path):
    d = write_tiny_bert(tmp_path / "m")
    (d / "config.json").write_text('{"x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    fails(tmp_path, str(d), "config.json", "nested too deeply")
    (d / "config.json").write_bytes(b'{"model_type": "\xff\xfe"}')
    fails(tmp_path, str(d), "config.json", "UTF-8")
    (d / "config.json").write_text('{"model_type": "bert", "model_type": "gpt2"}')
    fails(tmp_path, str(d), "config.json", "'model_type' twice")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("which", ["config.json", "model.safetensors"])
def test_fifo_is_refused_not_opened(tmp_path, which):
    d = write_tiny_bert(tmp_path / "m")
    (d / which).unlink()
    os.mkfifo(d / which)
    for cmd in ("analyze", "inspect"):
        assert_clean_proc(run_cli(cmd, str(d), timeout=60), which, "FIFO")


def test_local_path_typo_is_not_a_hub_id(tmp_path, monkeypatch):
    write_tiny_bert(tmp_path / "tiny")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    fails(tmp_path, "tiny/typo", "tiny/typo", "does not exist")
    r = run_cli("inspect", "tiny/typo", cwd=tmp_path, env={"HF_HUB_OFFLINE": "0"}, timeout=20)
    assert_clean_proc(r, "tiny/typo", "does not exist")


# ---- 9. non-converging SVDs: retried with gesvd, then named -----------------------------------
def _layer():
    from specbound.core import LayerWeights, ModelSpec

    rng = np.random.default_rng(3)
    n, h, f = 8, 2, 16
    spec = ModelSpec("bert", 1, n, h, n // h, f, "gelu")
    w = LayerWeights(
        0, *(rng.standard_normal(s) for s in [(n, n), (n, n), (n, n), (n, n), (f, n), (n, f)])
    )
    return w, spec


def _spectra_rows(s):
    return [s.singular_values(i) for i in range(len(s.layer))]


def test_svd_non_convergence_retried_with_gesvd(monkeypatch):
    import scipy.linalg

    from specbound.linalg import lapack, spectra

    w, spec = _layer()
    ref = _spectra_rows(spectra.block_spectra(w, spec, ffn_method="svd"))
    gesvd_calls = []
    real_svd = scipy.linalg.svd

    def failing(*a, **k):
        raise np.linalg.LinAlgError("SVD did not converge")

    def counting_svd(*a, **k):
        gesvd_calls.append(k.get("lapack_driver"))
        return real_svd(*a, **k)

    monkeypatch.setattr(np.linalg, "svd", failing)
    monkeypatch.setattr(scipy.linalg, "svdvals", failing)
    monkeypatch.setattr(np.linalg, "eigvalsh", failing)
    monkeypatch.setattr(lapack, "svdvals", failing)  # the GIL-free gesdd, where it is used
    monkeypatch.setattr(lapack, "eigvalsh", failing)
    monkeypatch.setattr(scipy.linalg, "svd", counting_svd)
    got = _spectra_rows(spectra.block_spectra(w, spec, ffn_method="auto"))
    assert gesvd_calls and set(gesvd_calls) == {"gesvd"}
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_svd_that_never_converges_names_the_matrix(monkeypatch):
    import scipy.linalg

    from specbound.linalg import lapack, spectra

    w, spec = _layer()

    def failing(*a, **k):
        raise np.linalg.LinAlgError("SVD did not converge")

    monkeypatch.setattr(np.linalg, "svd", failing)
    monkeypatch.setattr(lapack, "svdvals", failing)
    monkeypatch.setattr(scipy.linalg, "svd", failing)
    monkeypatch.setattr(spectra, "run_jobs", lambda jobs: [j() for j in jobs])
    with pytest.raises(SpecboundError, match=r"QK of layer 0.*gesvd"):
        spectra.block_spectra(w, spec)


# ---- 10. manifests, --init, the hub: found by the whole-CLI sweep ------------------------------
def test_binary_scale_manifest_is_bad_input_not_a_bug(tmp_path):
    (tmp_path / "m.txt").write_bytes(bytes(range(128, 256)) * 4)
    out = tmp_path / "out"
    assert_clean(
        cli("scale", "--manifest", str(tmp_path / "m.txt"), "--out", str(out), "-q"),
        "m.txt",
        "not UTF-8",
    )
    assert not out.exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("cmd", ["scale", "correlate"])
def test_fifo_manifest_is_refused_not_read(tmp_path, cmd):
    os.mkfifo(tmp_path / "m.csv")
    r = run_cli(
        cmd, "--manifest", str(tmp_path / "m.csv"), "--out", str(tmp_path / "o"), "-q", timeout=60
    )
    assert_clean_proc(r, "m.csv", "FIFO", "manifest")
    assert not (tmp_path / "o").exists()


def test_scale_refuses_a_model_listed_twice(tmp_path):
    d = write_tiny_bert(tmp_path / "tiny")
    (tmp_path / "m.txt").write_text(f"{d}\n# again\n{d}\n")
    out = tmp_path / "out"
    assert_clean(
        cli("scale", "--manifest", str(tmp_path / "m.txt"), "--out", str(out), "-q"),
        str(d),
        "twice",
    )
    assert_clean(cli("scale", str(d), str(d), "--out", str(out), "-q"), "twice")
    assert_clean(cli("scale", str(d), f"{tmp_path}/./tiny/", "--out", str(out), "-q"), "twice")
    assert not out.exists()
    from specbound.studies.scale import scale

    with pytest.raises(SpecboundError, match="twice"):
        scale([d, d])


def test_mapping_that_is_a_directory_says_mapping_file(tmp_path):
    d = write_tiny_bert(tmp_path / "tiny")
    (tmp_path / "map").mkdir()
    line = assert_clean(
        cli("analyze", str(d), "--mapping", str(tmp_path / "map"), "-q"),
        "is a directory",
        "mapping file",
    )
    assert "checkpoint directory" not in line


def test_broken_init_is_named_as_init(tmp_path):
    d = write_tiny_bert(tmp_path / "tiny")
    (tmp_path / "noweights").mkdir()
    (tmp_path / "noweights" / "config.json").write_text((d / "config.json").read_text())
    assert_clean(
        cli("analyze", str(d), "--init", str(tmp_path / "missing"), "-q"),
        "--init",
        "missing",
        "does not exist",
    )
    assert_clean(
        cli("analyze", str(d), "--init", str(tmp_path / "noweights"), "-q"),
        "--init",
        "noweights",
        "no weights",
    )


def test_offline_hub_id_fails_at_once_in_one_line(monkeypatch):
    """No network: one line naming the id, without huggingface_hub's ~30 s of retries."""
    import socket

    import huggingface_hub as hf
    from huggingface_hub import constants
    from huggingface_hub.errors import LocalEntryNotFoundError

    from specbound.errors import CheckpointError
    from specbound.io.hub import resolve_hub_id

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(v, raising=False)

    def no_dns(*a, **k):
        raise socket.gaierror(-2, "Name or service not known")

    def never(*a, **k):
        raise AssertionError("went to the network although the host does not resolve")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    monkeypatch.setattr(hf, "list_repo_files", never)
    monkeypatch.setattr(
        hf,
        "snapshot_download",
        lambda *a, **k: (
            (_ for _ in ()).throw(LocalEntryNotFoundError("not cached"))
            if k.get("local_files_only")
            else never()
        ),
    )
    with pytest.raises(CheckpointError, match="cannot resolve") as exc:
        resolve_hub_id("someorg/somemodel")
    assert "someorg/somemodel" in str(exc.value) and "\n" not in str(exc.value)


def test_hub_retry_warnings_stay_off_stderr(monkeypatch, capfd):
    """huggingface_hub logs each HTTP retry; the CLI still prints exactly one error line."""
    import logging
    import socket

    import huggingface_hub as hf
    from huggingface_hub import constants
    from huggingface_hub.errors import LocalEntryNotFoundError

    from specbound.cli import main

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [])

    def retrying(*a, **k):
        log = logging.getLogger("huggingface_hub.utils._http")
        for i in range(3):
            log.warning(f"Retrying in 1s [Retry {i + 1}/5].")
        raise ConnectionError("connection refused")

    monkeypatch.setattr(hf, "list_repo_files", retrying)
    monkeypatch.setattr(
        hf,
        "snapshot_download",
        lambda *a, **k: (_ for _ in ()).throw(LocalEntryNotFoundError("not cached")),
    )
    with pytest.raises(SystemExit) as exc:
        main(["inspect", "someorg/somemodel"])
    err = capfd.readouterr().err
    assert exc.value.code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "someorg/somemodel" in lines[0], err


def test_distance_from_init_asked_for_without_init(tmp_path):
    """Chosen by name without --init: an error, not an empty cell that looks like an answer."""
    d = write_tiny_bert(tmp_path / "tiny")
    out = tmp_path / "out"
    assert_clean(
        cli("analyze", str(d), "--measures", "distance_from_init", "--out", str(out), "-q"),
        "distance_from_init",
        "--init",
    )
    assert not out.exists()
    import specbound

    with pytest.raises(SpecboundError, match="distance_from_init"):
        specbound.analyze(d, measures="norm_based,distance_from_init", cache=False)
    # by default (every measure) it stays an empty cell with a note
    a = specbound.analyze(d, cache=False)
    assert a.measures["distance_from_init"] is None
    assert specbound.analyze(d, init=d, measures="distance_from_init", cache=False).measures == {
        "distance_from_init": 0.0
    }


@pytest.mark.parametrize("which", ["config.json", "model.safetensors.index.json"])
def test_huge_json_refused_before_reading(tmp_path, which):
    """A multi-gigabyte config/index is refused by size, not read into memory and parsed."""
    from specbound.io.checkpoint import MAX_JSON_BYTES

    d = write_tiny_bert(tmp_path / "m", shards=2 if "index" in which else 1)
    with open(d / which, "r+b") as fh:  # sparse: no disk used
        fh.truncate(MAX_JSON_BYTES + 1)
    fails(tmp_path, str(d), which, "larger than 64 MiB")


def test_correlate_refuses_a_model_spelled_twice(tmp_path):
    write_tiny_bert(tmp_path / "m0")
    write_tiny_bert(tmp_path / "m1", seed=1)
    man = tmp_path / "zoo.csv"
    man.write_text("model,lr,train_acc,test_acc\nm0,1,1,0.5\n./m0/,2,1,0.4\nm1,1,1,0.3\n")
    out = tmp_path / "out"
    assert_clean(
        cli("correlate", "--manifest", str(man), "--out", str(out), "-q"),
        "zoo.csv",
        "'./m0/' twice",
        "'m0'",
    )
    assert not out.exists()

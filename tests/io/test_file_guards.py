"""The file guards of io.files against hostile inputs (issue 54, items 2, 9 and 10): a mapping
YAML is size-bounded and cannot expand through aliases, a symlink loop / dangling link / link to
a device is named as such, and an mmap that fails for lack of memory names the file and says
memory (not disk space)."""

from __future__ import annotations

import errno
import mmap
import os
from pathlib import Path

import pytest
import yaml

from specbound.adapters.mapping import load_mapping
from specbound.errors import ConfigError, SpecboundError, os_error_line
from specbound.io import files as F
from specbound.io import yamlfiles as Y
from tests.support.checkpoints import write_tiny_bert
from tests.support.cli_runner import run_cli


def _laughs(levels: int, width: int = 9) -> str:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_alias_expansion_beyond_the_bound_is_refused():
    text = _laughs(9)  # 9^9 = 387 million values from 400 bytes
    assert len(text) < 1000
    with pytest.raises(yaml.YAMLError, match="aliases expand it to more than 1,000,000 values"):
        Y.load_yaml(text)


def test_a_few_aliases_still_read():
    doc = Y.load_yaml(_laughs(3))  # 9^3 = 729 values
    assert doc["a2"][0][0] == ["lol"] * 9
    assert Y.load_yaml("x: &o in_out\ny: *o\n") == {"x": "in_out", "y": "in_out"}


def test_an_anchor_holding_its_own_alias_is_refused():
    with pytest.raises(yaml.YAMLError, match="an anchor contains its own alias"):
        Y.load_yaml("roles: &r\n  x: *r\n")


def test_deep_nesting_is_a_yaml_error():
    with pytest.raises(yaml.YAMLError, match="nested too deeply"):
        Y.load_yaml("[" * 20000 + "]" * 20000 + "\n")


def test_mapping_file_over_the_size_limit_is_refused_before_parsing(tmp_path):
    p = tmp_path / "map.yaml"
    line = "  k{}: blocks.{{layer}}.w\n"
    with open(p, "w") as fh:
        fh.write("roles:\n")
        i = 0
        while fh.tell() <= Y.MAX_YAML_BYTES:
            fh.write(line.format(i))
            i += 1
    with pytest.raises(ConfigError, match=rf"{p} is larger than 1 MiB, too large for a mapping"):
        load_mapping(p)


def test_mapping_file_of_laughs_is_one_config_error(tmp_path):
    p = tmp_path / "map.yaml"
    p.write_text(_laughs(9))
    with pytest.raises(ConfigError, match=rf"mapping file {p} is not valid YAML.*aliases"):
        load_mapping(p)


def test_mapping_file_under_the_limit_reads(tmp_path):
    p = tmp_path / "map.yaml"
    p.write_text("architecture: tinynet\nnum_layers: 2\n")
    assert load_mapping(p)[0] == {"architecture": "tinynet", "num_layers": 2}


def test_grid_file_uses_the_same_size_guard(tmp_path):
    from specbound.studies.zoo.plan import load_grid

    p = tmp_path / "grid.yaml"
    p.write_bytes(b"axes:\n  seed: [0]\n" + b"#" * Y.MAX_YAML_BYTES + b"\n")
    with pytest.raises(SpecboundError, match=rf"{p} is larger than 1 MiB"):
        load_grid(p)


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda p: os.symlink(p.name, p), "is a symlink loop, not a regular"),
        (lambda p: os.symlink("nowhere.json", p), "is a symlink to nowhere.json, which does not"),
        (lambda p: os.symlink("/dev/zero", p), "is a device or special file (a link to /dev/zero)"),
        (lambda p: p.mkdir(), "is a directory, not a regular"),
    ],
)
def test_check_regular_file_names_what_the_path_is(tmp_path, make, words):
    p = tmp_path / "x.json"
    make(p)
    with pytest.raises(
        SpecboundError, match="x.json " + words.replace("(", r"\(").replace(")", r"\)")
    ):
        F.read_small_file(p, "JSON file")


def test_map_file_names_the_file_when_memory_runs_out(tmp_path, monkeypatch):
    p = tmp_path / "w.bin"
    p.write_bytes(b"\0" * 64)

    def no_memory(*args, **kwargs):
        raise OSError(errno.ENOMEM, "Cannot allocate memory")

    monkeypatch.setattr(mmap, "mmap", no_memory)
    with pytest.raises(OSError, match="Cannot allocate memory") as info:
        F.map_file(p)
    assert info.value.filename == str(p) and info.value.errno == errno.ENOMEM
    line = os_error_line(info.value, "use")
    assert str(p) in line and "not enough memory" in line and "free space" not in line


def test_cli_mmap_out_of_memory_names_the_weights_file(tmp_path, monkeypatch):
    """Before: "cannot use a file: Cannot allocate memory; free space, shorten the path"."""
    model = write_tiny_bert(tmp_path / "m")
    weights = next(model.glob("*.safetensors"))

    def no_memory(*args, **kwargs):
        raise OSError(errno.ENOMEM, "Cannot allocate memory")

    monkeypatch.setattr(mmap, "mmap", no_memory)
    r = run_cli("analyze", model, "--no-cache", "-q")
    assert r.code == 1  # the machine's limit, not bad input (as for MemoryError)
    line = r.one_error_line()
    assert str(weights) in line and "not enough memory" in line and "free space" not in line


def test_os_error_line_keeps_disk_words_for_disk_errors():
    line = os_error_line(OSError(errno.ENOSPC, "No space left", "/x/y"), "write")
    assert line == (
        "cannot write /x/y: no space left on device; free space, shorten the path or choose "
        "another one"
    )


def test_readback_json_of_a_fifo_keeps_its_reader_words(tmp_path):
    from specbound.io.readback import ReadbackError, read_json_object

    p = tmp_path / "zoo.json"
    os.mkfifo(p)
    with pytest.raises(
        ReadbackError, match=r"is a FIFO, not a regular zoo\.json; pass the zoo\.json"
    ):
        read_json_object(p, "zoo.json")


def test_read_small_file_limit_in_words(tmp_path):
    p = tmp_path / "c.json"
    p.write_bytes(b"{}" + b" " * 2048)
    with pytest.raises(SpecboundError, match="larger than 1 KiB"):
        F.read_small_file(Path(p), "config.json", limit=1024)

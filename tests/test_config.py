"""specbound.config: every environment variable read in one module, at call time."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from specbound import config

SRC = Path(__file__).resolve().parents[1] / "src" / "specbound"


def test_read_at_call_time(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SPECBOUND_CACHE_DIR", raising=False)
    assert config.cache_dir_override() is None
    monkeypatch.setenv("SPECBOUND_CACHE_DIR", str(tmp_path))
    assert config.cache_dir_override() == tmp_path
    monkeypatch.setenv("SPECBOUND_CACHE_DIR", "")  # empty counts as unset
    assert config.cache_dir_override() is None
    monkeypatch.delenv("SPECBOUND_DEBUG", raising=False)
    assert not config.debug()
    monkeypatch.setenv("SPECBOUND_DEBUG", "1")
    assert config.debug()
    monkeypatch.delenv("SPECBOUND_PARALLEL", raising=False)
    assert config.parallel_mode("pool") == "pool"
    monkeypatch.setenv("SPECBOUND_PARALLEL", "blas")
    assert config.parallel_mode("pool") == "blas"
    monkeypatch.delenv("SPECBOUND_LAPACK", raising=False)
    assert config.lapack_backend() == "auto"
    monkeypatch.setenv("SPECBOUND_LAPACK", "numpy")
    assert config.lapack_backend() == "numpy"
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert config.ray_address() is None
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert config.ray_address() == "10.0.0.1:6379"


def test_proxy_and_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("huggingface_hub")  # needs the extra
    for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(v, raising=False)
    assert config.https_proxy() is None
    monkeypatch.setenv("all_proxy", "socks5://p:1")
    assert config.https_proxy() == "socks5://p:1"
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # what huggingface_hub obeys
    assert config.hf_hub_offline()
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    assert not config.hf_hub_offline()


def test_every_variable_is_documented() -> None:
    doc = config.__doc__ or ""
    for name in config.VARIABLES:
        assert f"``{name}``" in doc or f"``{name}`` /" in doc or name in doc, name


def test_io_layer_reads_no_environment() -> None:
    """The modules of this layer go through specbound.config (static check of the source)."""
    pattern = re.compile(r"os\.environ|getenv\(")
    files = [SRC / "validation.py", SRC / "errors.py", SRC / "demo.py"]
    files += sorted((SRC / "io").glob("*.py"))
    offenders = [f.name for f in files if pattern.search(f.read_text())]
    assert not offenders

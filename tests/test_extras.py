"""specbound.extras: the one place each heavy optional package is imported.

A missing package is simulated with ``sys.modules[name] = None`` (any import of it then raises
ImportError), so these checks need none of the packages removed from the environment.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from specbound import extras
from specbound.errors import CheckpointError, SpecboundError

FUNCTIONS = {
    "torch": extras.torch,
    "transformers": extras.transformers,
    "matplotlib": extras.matplotlib,
    "ray": extras.ray,
}


@pytest.mark.parametrize("root", sorted(FUNCTIONS))
def test_missing_package_is_one_line_naming_the_extra(
    root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, root, None)
    with pytest.raises(SpecboundError) as info:
        FUNCTIONS[root]()
    msg = str(info.value)
    assert "\n" not in msg
    extra = extras.PACKAGES[root][1]
    assert f"pip install '.[{extra}]' in a clone of specbound" in msg  # works today
    assert f"pip install 'specbound[{extra}]' once it is published" in msg
    assert extras.available(root) is False


def test_install_lines_are_made_in_one_place() -> None:
    """specbound is not on the package index: every install line of an extra comes from
    ``extras.install_hint`` (both forms), none is written out by hand elsewhere in src/."""
    src = Path(extras.__file__).resolve().parent
    by_hand = [
        f"{p.relative_to(src)}:{i}"
        for p in sorted(src.rglob("*.py"))
        if p.name != "extras.py"
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"pip install '?specbound\[", line)
    ]
    assert by_hand == []
    assert extras.install_hint("gguf") == (
        "pip install '.[gguf]' in a clone of specbound, or pip install 'specbound[gguf]' once "
        "it is published"
    )


def test_zoo_train_without_torch_names_the_zoo_extra(monkeypatch: pytest.MonkeyPatch, tmp_path):
    from tests.support.cli_runner import run_cli

    monkeypatch.setitem(sys.modules, "torch", None)
    r = run_cli("zoo", "train", "modular-addition", "--preset", "tiny", "--out", tmp_path / "z")
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert "install the zoo extra: pip install '.[zoo]'" in r.err and "[torch]" not in r.err
    assert not (tmp_path / "z").exists()


def test_ray_engine_without_ray_exits_2_cached_or_not(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The same line and exit 2 before any work, whether the spectra are cached or not."""
    from tests.support.checkpoints import write_tiny_bert
    from tests.support.cli_runner import run_cli

    model = write_tiny_bert(tmp_path / "m")
    assert run_cli("analyze", model, "-q").code == 0  # the spectra are in the cache now
    monkeypatch.setitem(sys.modules, "ray", None)
    errs = set()
    for extra in ([], ["--no-cache"]):
        r = run_cli("analyze", model, "--engine", "ray", "-q", *extra)
        assert r.code == 2 and r.out == "", (extra, r.err)
        errs.add(r.err)
    (line,) = errs
    assert line.startswith("error: the ray engine needs Ray") and "pip install '.[ray]'" in line


@pytest.mark.parametrize("root", sorted(FUNCTIONS))
def test_message_and_error_class_are_the_callers(
    root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, root, None)
    with pytest.raises(CheckpointError, match=r"^no luck here$"):
        FUNCTIONS[root]("no luck here", CheckpointError)
    with pytest.raises(CheckpointError, match=r"^no luck here$"):
        extras.load(f"{root}.anything", "no luck here", CheckpointError)


def test_submodule_missing_reads_as_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The package imports but the submodule does not (an optional dependency of it absent)."""
    pytest.importorskip("torch")
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    with pytest.raises(SpecboundError, match=r"specbound\[torch\]"):
        extras.load("torch.utils.tensorboard")


def test_load_refuses_other_packages() -> None:
    with pytest.raises(ValueError, match="heavy packages"):
        extras.load("numpy")


def test_load_returns_the_module_python_has() -> None:
    torch = pytest.importorskip("torch")
    assert extras.torch() is torch
    assert extras.load("torch.func") is sys.modules["torch.func"]
    assert extras.available("torch") is True


def test_pyplot_is_on_agg() -> None:
    pytest.importorskip("matplotlib")
    plt = extras.pyplot()
    assert plt is sys.modules["matplotlib.pyplot"]
    assert sys.modules["matplotlib"].get_backend().lower() == "agg"


def test_pyplot_missing_keeps_the_plot_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(SpecboundError, match=r"^figures and reports need matplotlib; .*\[plot\]"):
        extras.pyplot()


def test_available_does_not_import() -> None:
    """A package never imported stays out of ``sys.modules`` after the probe."""
    assert extras.available("specbound_no_such_package_xyz") is False
    assert "specbound_no_such_package_xyz" not in sys.modules

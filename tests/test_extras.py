"""specbound.extras: the one place each heavy optional package is imported.

A missing package is simulated with ``sys.modules[name] = None`` (any import of it then raises
ImportError), so these checks need none of the packages removed from the environment.
"""

from __future__ import annotations

import sys

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
    assert f"pip install 'specbound[{extras.PACKAGES[root][1]}]'" in msg
    assert extras.available(root) is False


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

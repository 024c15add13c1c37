"""PyTorch pickle checkpoints (``pytorch_model.bin``), read only through
``torch.load(weights_only=True)``: anything that needs arbitrary unpickling is refused."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import extras
from ..errors import CheckpointError
from .files import check_regular_file, file_stamp
from .sources import DictSource


class TorchBinFile(DictSource):
    """A pickle checkpoint loaded with ``torch.load(weights_only=True)`` (memory-mapped)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        check_regular_file(self.path, "PyTorch checkpoint")
        torch = extras.torch(
            f"{self.path} is a PyTorch pickle; convert it to safetensors, or install the torch "
            f"extra: {extras.install_hint('torch')}",
            CheckpointError,
        )
        import pickle
        import warnings
        import zipfile

        try:
            with warnings.catch_warnings():  # torch warns about pickle protocols on stderr
                warnings.simplefilter("ignore")
                state = self._load(torch)
        except pickle.UnpicklingError:
            raise CheckpointError(
                f"{self.path} needs arbitrary code execution to unpickle, which specbound refuses; "
                "convert it to safetensors from a trusted environment"
            ) from None
        except (
            RuntimeError,
            EOFError,
            zipfile.BadZipFile,
            OSError,
            ValueError,
            RecursionError,
            OverflowError,
            TypeError,
            KeyError,
        ) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CheckpointError(
                f"{self.path} could not be read as a PyTorch checkpoint ({first}); re-download it"
            ) from None
        if isinstance(state, Mapping) and "state_dict" in state and len(state) <= 4:
            state = state["state_dict"]
        if not isinstance(state, Mapping):
            raise CheckpointError(f"{self.path} does not hold a state dict of tensors")
        state = {k: v for k, v in state.items() if hasattr(v, "shape")}
        super().__init__(state, where=str(self.path))

    def _load(self, torch: Any) -> Any:
        try:
            return torch.load(self.path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as exc:
            if "mmap" not in str(exc):
                raise
            return torch.load(self.path, map_location="cpu", weights_only=True)

    def fingerprint(self) -> str:
        return file_stamp(self.path)

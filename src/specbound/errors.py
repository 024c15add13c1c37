"""Errors specbound raises for bad input. Each message is one line naming the file or tensor."""

from __future__ import annotations


class SpecboundError(ValueError):
    """A user-facing error: the message says what is wrong and what to do.

    The CLI prints ``error: <message>`` and exits with code 2, without a traceback.
    """

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class CheckpointError(SpecboundError):
    """The checkpoint (file, directory, hub id, tensor) cannot be used."""


class ConfigError(SpecboundError):
    """config.json is missing, unsupported or inconsistent with the weights."""

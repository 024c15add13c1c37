"""Everything specbound reads from or writes to disk, one job per module.

- ``files``: file and JSON guards (regular files only, bounded reads, duplicate keys refused),
  strict JSON out (no NaN/Infinity), atomic single-file writes (a page report/ rendered:
  ``write_report_page``).
- ``safetensors``: the safetensors reader (whole header validated before any offset is used).
- ``torch_files``: ``pytorch_model.bin`` without torch, tensors memory-mapped and read lazily;
  ``torch_layout``: where its storages lie (zip format, legacy format); ``torch_pickle``: its
  restricted unpickler, as strict as ``torch.load(weights_only=True)``.
- ``sources``: the tensor-source protocol, shards, in-memory state dicts.
- ``checkpoint``: what the user passed (directory, ``demo:minilm``, hub id, module, state dict)
  -> a ``Checkpoint``.
- ``hub``: hub ids -> a snapshot in huggingface_hub's cache; revision ranges.
- ``codec``: the one record format (JSON + npz, checksummed, no pickles) for stored results.
- ``cache``: the spectra cache (keys, records, info, clear).
- ``outdir``: output folders written atomically with their manifest.

This package imports nothing above it (no adapters, linalg, measures, analysis, studies,
report, cli, engines). The names below are those the former ``specbound/io.py`` exported.
"""

from __future__ import annotations

from .codec import RecordError, read_record, write_record
from .files import (
    atomic_file,
    atomic_write_text,
    dumps_json,
    json_safe,
    write_json,
    write_report_page,
)
from .outdir import MANIFEST, TMP_MARKER, atomic_dir, check_output_dir, output_dir, sweep_stale

__all__ = [
    "MANIFEST",
    "TMP_MARKER",
    "RecordError",
    "atomic_dir",
    "atomic_file",
    "atomic_write_text",
    "check_output_dir",
    "dumps_json",
    "json_safe",
    "output_dir",
    "read_record",
    "sweep_stale",
    "write_json",
    "write_record",
    "write_report_page",
]

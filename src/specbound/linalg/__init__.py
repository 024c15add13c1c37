"""Linear algebra of the canonical and raw weight matrices (SPEC 2-3), float64.

- ``spectra``: singular values and norms of QK, OV, M_in, M_out (the ``Spectra`` table);
- ``weights``: the raw projection matrices of SPEC 9 (``WeightSpectra``);
- ``lapack``: direct LAPACK drivers that release the GIL;
- ``torch_backend``: the same spectra on a torch device (optional);
- ``pool``: the explicit parallel setting (``parallelism``) and the block job pool.
"""

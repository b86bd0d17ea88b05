"""Dtype spellings for the measured tables: a private stand-in for explorer.base.dtypes.

The project's one dtype vocabulary is being written in explorer/base/dtypes.py. Until it lands,
this small map keeps the same contract (`normalize_dtype(name) -> canonical name`, unknown names
come back stripped and lower-cased) so that `catalog.py` can re-point its single import there.

One difference on purpose: fp8_block stays its own dtype. Block-scaled FP8 GEMMs are separate
kernels with separate tables (DeepGEMM / CUTLASS block-scaled), up to 2x off per-tensor FP8 at
the same shape, so folding the two would read the wrong table.
"""

from __future__ import annotations

_SPELLINGS: dict[str, str] = {
    "bf16": "bf16", "bfloat16": "bf16", "torch.bfloat16": "bf16",
    "fp8": "fp8", "float8": "fp8", "fp8_e4m3": "fp8", "e4m3": "fp8", "float8_e4m3fn": "fp8",
    "fp8_block": "fp8_block", "fp8-block": "fp8_block", "fp8_blockwise": "fp8_block",
    "fp4": "fp4", "nvfp4": "fp4",
}


def normalize_dtype(name: str) -> str:
    """Canonical dtype for a spelling (bfloat16 → bf16, nvfp4 → fp4, fp8-block → fp8_block)."""
    key = name.strip().lower()
    return _SPELLINGS.get(key, key)

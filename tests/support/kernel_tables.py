"""A kernel-timings CSV that changes the explorer's numbers, with its dtype spelled any way.

Its GEMM rows are the attention projections of Llama-3.1-8B at TP 1 (QKV n=6144, O n=4096, both
k=4096), slower than the roofline by a factor that differs by shape and token count, so that no
calibration of the roofline's efficiencies can stand in for them: where the explorer uses the
table, T_verif differs from the calibrated roofline's.
"""

from __future__ import annotations

import numpy as np

from explorer.base.dtypes import WeightDtype, spellings_of
from explorer.model.kernels import gemm_time
from explorer.presets import hardware_presets

MODEL = "llama-3.1-8b"
TP = 1
SHAPES = ((6144, 4096), (4096, 4096))  # (n, k) of the QKV and O projections
TOKENS = (1, 8, 32, 128, 512)
SLOWDOWN = {6144: (2.0, 1.4), 4096: (1.1, 1.6)}  # by n: at even / odd positions in TOKENS
# A GPU with a peak for each dtype (the roofline falls back to a wider dtype otherwise).
HARDWARE_FOR: dict[WeightDtype, str] = {"bf16": "h100", "fp8": "h100", "fp8_block": "h100",
                                        "fp4": "b200"}


def kernel_timings_csv(spelling: str, dtype: WeightDtype) -> bytes:
    """Rows timed as `dtype` on its hardware, with the dtype column written as `spelling`."""
    hw = hardware_presets()[HARDWARE_FOR[dtype]]
    lines = ["kind,m,n,k,dtype,time_s"]
    for n, k in SHAPES:
        even, odd = SLOWDOWN[n]
        factor = np.where(np.arange(len(TOKENS)) % 2 == 0, even, odd)
        t = factor * gemm_time(hw, np.asarray(TOKENS, dtype=np.float64), n, k, dtype).time_s
        lines += [f"gemm,{m},{n},{k},{spelling},{x!r}" for m, x in zip(TOKENS, t.tolist(),
                                                                      strict=True)]
    return ("\n".join(lines) + "\n").encode()


def spellings(dtype: WeightDtype) -> list[str]:
    """Every accepted spelling of `dtype`, and each in capitals (files differ in case too)."""
    return [*spellings_of(dtype), *(s.upper() for s in spellings_of(dtype)[1:])]

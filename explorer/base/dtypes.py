"""The one dtype vocabulary: the model's dtypes, their sizes and every spelling files use.

Measurement files (aiconfigurator, torch, engine logs) spell dtypes many ways; every reader maps
them here, once, so a table written `torch.bfloat16` means exactly what one written `bf16` does.
"""

from __future__ import annotations

from typing import Literal, get_args

# Weights / GEMM inputs (block-scaled FP8 among them: see FP8_BLOCK), and the KV cache: the
# dtypes the roofline has peaks and sizes for.
WeightDtype = Literal["bf16", "fp8", "fp8_block", "fp4"]
KvDtype = Literal["bf16", "fp8"]
WEIGHT_DTYPES: tuple[WeightDtype, ...] = get_args(WeightDtype)
KV_DTYPES: tuple[KvDtype, ...] = get_args(KvDtype)

# The logits GEMM (lm_head) and the embedding table stay BF16 in a quantized checkpoint: ModelOpt
# exports list lm_head in hf_quant_config.json's exclude_modules, llm-compressor recipes ignore
# it, and aiconfigurator prices every model's logits GEMM as GEMMQuantMode.bfloat16
# (aiconfigurator-core 0.12.0 sdk/models/llama.py and deepseek.py, generation_logits_gemm).
LOGITS_DTYPE: WeightDtype = "bf16"

# Block-scaled FP8 (DeepGEMM-style 1x128 / 128x128 scales) runs other kernels than per-tensor
# FP8, measured in tables of their own and up to 2x apart at one shape: it is a dtype of its
# own (weights, MoE experts, measurements), which the roofline prices at the FP8 peak and size.
FP8_BLOCK: WeightDtype = "fp8_block"
BYTES_PER_ELEMENT: dict[str, float] = {"bf16": 2.0, "fp8": 1.0, FP8_BLOCK: 1.0, "fp4": 0.5}
FP8_LIKE: tuple[str, ...] = ("fp8", FP8_BLOCK)

# Bytes one GEMM moves per element, as the kernels store them: (activations in, weights with
# their block scales, output). Outputs are bf16; FP8 block scales are one fp32 per 128×128
# weight block; NVFP4 carries one fp8 scale per 16 values. The fitted roofline
# (data/roofline_fit.csv, scripts/fit_roofline_from_tables.py) prices bytes with these.
GEMM_OPERAND_BYTES: dict[str, tuple[float, float, float]] = {
    "bf16": (2.0, 2.0, 2.0),
    "fp8": (1.0, 1.0, 2.0),
    FP8_BLOCK: (1.0, 1.0 + 4.0 / (128 * 128), 2.0),
    "fp4": (0.5 + 1.0 / 16, 0.5 + 1.0 / 16, 2.0),
}
# Activation bytes per element where the op quantizes its bf16 input on every call (vLLM's and
# TRT-LLM's fp8/fp4 linears): read bf16, write and re-read the quantized copy with its scales.
ACT_QUANT_BYTES: dict[str, float] = {
    "fp8": 2.0 + 1.0 + 1.0, FP8_BLOCK: 2.0 + 2.0 * (1.0 + 4.0 / 128),
    "fp4": 2.0 + 2.0 * (0.5 + 1.0 / 16)}

# Accepted spelling (lower case) → canonical dtype. FP16 runs at the BF16 peak with the same
# size, so the model treats it as bf16.
DTYPE_SPELLINGS: dict[str, str] = {
    "bf16": "bf16", "bfloat16": "bf16", "fp16": "bf16", "float16": "bf16", "half": "bf16",
    "torch.bfloat16": "bf16", "torch.float16": "bf16",
    "fp8": "fp8", "float8": "fp8", "fp8_e4m3": "fp8", "e4m3": "fp8",
    "float8_e4m3fn": "fp8", "torch.float8_e4m3fn": "fp8",
    FP8_BLOCK: FP8_BLOCK, "fp8-block": FP8_BLOCK, "fp8_blockwise": FP8_BLOCK,
    "fp4": "fp4", "nvfp4": "fp4", "mxfp4": "fp4",
}


def normalize_dtype(name: str) -> str:
    """The canonical dtype for a spelling (bfloat16 → bf16, nvfp4 → fp4); unknown names
    (int4_wo, sq, …) come back stripped and lower-cased, so readers can skip them by name."""
    key = name.strip().lower()
    return DTYPE_SPELLINGS.get(key, key)


def spellings_of(dtype: str) -> tuple[str, ...]:
    """Every accepted spelling of one canonical dtype (the canonical one first)."""
    return (dtype, *sorted(k for k, v in DTYPE_SPELLINGS.items() if v == dtype and k != dtype))

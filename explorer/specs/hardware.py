"""Hardware specification: spec-sheet peaks plus efficiencies fitted to measured kernels."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from explorer.base.dtypes import BYTES_PER_ELEMENT, FP8_LIKE

Vendor = Literal["nvidia", "amd"]


class HardwareSpec(BaseModel):
    """One accelerator. SI units inside: FLOP/s, bytes, bytes/s, seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    slug: str = Field(description="short lowercase preset name, e.g. h200")
    name: str = Field(description="human name")
    vendor: Vendor = Field(description="GPU vendor: which serving engines and kernels run on it")
    bf16_flops_per_s: float = Field(gt=0, description="dense BF16 peak, FLOP/s")
    fp8_flops_per_s: float | None = Field(default=None, gt=0, description="dense FP8 peak, FLOP/s")
    fp4_flops_per_s: float | None = Field(default=None, gt=0, description="dense FP4 peak, FLOP/s")
    hbm_bytes: float = Field(gt=0, description="HBM capacity, bytes")
    hbm_bw_bytes_per_s: float = Field(gt=0, description="HBM bandwidth, bytes/s")
    link_bw_bytes_per_s: float = Field(gt=0, description="per-GPU one-way link bandwidth, bytes/s")
    gemm_compute_efficiency: float = Field(gt=0, le=1, description="achievable fraction of peak")
    gemm_memory_efficiency: float = Field(gt=0, le=1, description="achievable fraction of HBM BW")
    attention_compute_efficiency: float = Field(gt=0, le=1)
    attention_memory_efficiency: float = Field(gt=0, le=1)
    kernel_floor_s: float = Field(ge=0, le=1e-3, description="shortest kernel time, s")
    launch_latency_s: float = Field(ge=0, le=1e-3, description="unhidden launch cost per kernel, s")
    step_overhead_s: float = Field(ge=0, le=0.1, description="CPU/scheduler/sampling per step, s")
    allreduce_latency_s: float = Field(ge=0, le=1e-3, description="fixed latency of one all-reduce")
    spec_source: str = ""
    fit_source: str = ""
    assumptions: str = ""

    def peak_flops_per_s(self, dtype: str) -> float:
        """Dense peak for a dtype; falls back to the next wider dtype the GPU has."""
        if dtype == "fp4" and self.fp4_flops_per_s:
            return self.fp4_flops_per_s
        if (dtype == "fp4" or dtype in FP8_LIKE) and self.fp8_flops_per_s:
            return self.fp8_flops_per_s
        return self.bf16_flops_per_s

    def gemm_ridge_tokens(self, dtype: str = "bf16") -> float:
        """GEMM ridge M* = F·b_w / (2·BW): tokens where a weight-streaming GEMM turns
        compute-bound."""
        peak = self.peak_flops_per_s(dtype)
        return peak * BYTES_PER_ELEMENT[dtype] / (2.0 * self.hbm_bw_bytes_per_s)


class HardwareOverrides(BaseModel):
    """Calibrated or hand-set replacements for a preset's efficiencies and fixed costs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gemm_compute_efficiency: float | None = Field(default=None, gt=0, le=1)
    gemm_memory_efficiency: float | None = Field(default=None, gt=0, le=1)
    attention_compute_efficiency: float | None = Field(default=None, gt=0, le=1)
    attention_memory_efficiency: float | None = Field(default=None, gt=0, le=1)
    kernel_floor_s: float | None = Field(default=None, ge=0, le=1e-3)
    launch_latency_s: float | None = Field(default=None, ge=0, le=1e-3)
    step_overhead_s: float | None = Field(default=None, ge=0, le=0.1)
    label: str = Field(default="", max_length=200, description="where these numbers come from")

    def apply(self, spec: HardwareSpec) -> HardwareSpec:
        changes = {
            k: v for k, v in self.model_dump(exclude={"label"}).items() if v is not None
        }
        if not changes:
            return spec
        note = f"{spec.fit_source}; overridden: {', '.join(sorted(changes))} ({self.label})"
        return spec.model_copy(update={**changes, "fit_source": note})

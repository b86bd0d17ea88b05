"""Hardware specification: spec-sheet peaks plus efficiencies fitted to measured kernels."""

from __future__ import annotations

from typing import Literal, TypeVar

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from explorer.base.dtypes import BYTES_PER_ELEMENT, FP8_LIKE
from explorer.base.engines import SERVING_ENGINES, ServingEngine
from explorer.specs.engine import engine_name

Vendor = Literal["nvidia", "amd", "intel"]
# How the hardware selector and the presets listing group the GPUs, in this order
# (data/hardware.csv `group`).
HARDWARE_GROUPS: tuple[str, ...] = (
    "NVIDIA datacenter", "NVIDIA workstation/inference", "AMD", "Intel")
VENDOR_NAMES: dict[str, str] = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel"}


class GemmRooflineFit(BaseModel):
    """The roofline of one dtype's GEMMs, fitted leave-one-GPU-out on measured tables
    (data/roofline_fit.csv): t = floor + (C^p + M^p)^(1/p), C = 2·m·n·(k+k0)/(F_dtype·η_c),
    M = bytes/(BW·η_m)·(1 + (n_half/n)^n_q). It carries to a GPU from its spec-sheet peak and
    bandwidth."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dtype: str
    vendor: Vendor
    engine: str = Field(description="whose measured tables it was fitted on")
    best: bool = Field(default=False, description="the engine with the lowest leave-one-GPU-"
                       "out error at this dtype: the fit of engines that have none")
    eta_c: float = Field(gt=0, le=1.5, description="fraction of the dtype's dense peak")
    eta_m: float = Field(gt=0, le=1.5, description="fraction of the HBM bandwidth")
    floor_s: float = Field(ge=0, le=1e-3, description="fixed cost added to every call, s")
    p: float = Field(ge=1, description="memory→compute transition (1 = sum; large = max)")
    act_quant: bool = Field(description="activations read bf16 and quantized in the op")
    k0: float = Field(default=0.0, ge=0, description="K elements charged per output element: "
                      "a per-tile prologue/epilogue cost, efficiency k/(k+k0) in compute")
    n_half: float = Field(default=0.0, ge=0, description="output width (columns) at which "
                          "weight streaming takes twice as long (0: no width term): memory "
                          "time × (1 + (n_half/n)^n_q), few output tiles have few loads in "
                          "flight")
    n_q: float = Field(default=1.0, gt=0, le=4)
    loo_mape: float = Field(ge=0, description="leave-one-GPU-out MAPE, serving shapes")
    loo_bias: float
    loo_mape_all: float = Field(ge=0, description="leave-one-GPU-out MAPE, every shape")
    own_fit_mape: float = Field(ge=0, description="the form fitted on each GPU itself")
    gpus: str
    source: str


class AttentionRooflineFit(BaseModel):
    """Decode attention for what no table covers (data/roofline_fit.csv): a fixed cost (plus,
    for the `units` form, a cost per sequence × query head) and the KV bytes over a
    size-dependent bandwidth efficiency η(x) = η_max / (1 + (x_half/x)^q), where x is the KV
    bytes read (`bytes`: small reads do not stream at full bandwidth) or the work units B·n_kv
    (`units`: few units leave SMs idle), and a cost per (sequence, KV head) ∝ head dim."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kv_dtype: str
    vendor: Vendor
    engine: str
    best: bool = False
    size: Literal["bytes", "units"]
    floor_s: float = Field(ge=0, le=1e-3)
    per_row_s: float = Field(ge=0, le=1e-4, description="per sequence × query head, s")
    per_unit_s: float = Field(default=0.0, ge=0, le=1e-4,
                              description="per sequence × KV head × 128 of head dim, s: the "
                              "fixed work of one CTA (queries in, softmax epilogue, output out)")
    eta_max: float = Field(gt=0, le=1.5)
    half: float = Field(gt=0, description="x at which η is half of η_max")
    q: float = Field(gt=0, le=4)
    loo_mape: float = Field(ge=0)
    loo_bias: float
    own_fit_mape: float = Field(ge=0)
    gpus: str
    source: str

    def efficiency(self, nbytes: npt.ArrayLike, units: npt.ArrayLike
                   ) -> npt.NDArray[np.float64]:
        x = np.asarray(nbytes if self.size == "bytes" else units, dtype=np.float64)
        return np.asarray(self.eta_max / (1.0 + (self.half / np.maximum(x, 1e-9)) ** self.q))


_Fit = TypeVar("_Fit", GemmRooflineFit, AttentionRooflineFit)


def _pick_fit(fits: list[_Fit], engine: str | None, gpu: str) -> _Fit | None:
    """The engine's own fit where it was fitted on this GPU's own table, else the one marked
    best, else the first (one engine recorded). A GPU with no table of the dtype (FP4 on
    Hopper, FP8 on Ampere) gets the lowest-LOO fit whatever the engine: every engine's fit is
    then carried past its evidence, and their differences there are not evidence of anything."""
    own = next((f for f in fits if f.engine == engine), None)
    if own is not None and gpu in own.gpus.split():
        return own
    return next((f for f in fits if f.best), None) or own or next(iter(fits), None)


def roofline_fit_origin(fit: GemmRooflineFit | AttentionRooflineFit, engine: str | None,
                        gpu: str | None = None) -> str:
    """Whose tables a fit comes from, as the source texts show it: the engine's own, or the
    lowest-LOO engine's standing in (`_pick_fit`: `engine` has no fit at that dtype, or `gpu`
    has no table of it to fit one on)."""
    dtype = fit.dtype if isinstance(fit, GemmRooflineFit) else fit.kv_dtype
    if engine is None or fit.engine == engine:
        return f"{fit.engine} tables"
    if gpu is not None and gpu not in fit.gpus.split():
        return (f"{fit.engine} tables (the lowest-LOO engine's, for every engine: {gpu} has no "
                f"{dtype} table, so the fit is carried from {fit.gpus.replace(' ', ', ')})")
    return f"{fit.engine} tables (lowest-LOO engine; {engine} has no {dtype} fit)"


class HardwareSpec(BaseModel):
    """One accelerator. SI units inside: FLOP/s, bytes, bytes/s, seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    slug: str = Field(description="short lowercase preset name, e.g. h200")
    name: str = Field(description="human name")
    vendor: Vendor = Field(description="GPU vendor: which serving engines and kernels run on it")
    bf16_flops_per_s: float = Field(gt=0, description="dense BF16 peak, FLOP/s")
    fp8_flops_per_s: float | None = Field(default=None, gt=0, description="dense FP8 peak, FLOP/s")
    fp4_flops_per_s: float | None = Field(default=None, gt=0, description="dense FP4 peak, FLOP/s")
    fp6_flops_per_s: float | None = Field(default=None, gt=0, description="dense FP6 peak, "
                                          "FLOP/s (shown; no FP6 dtype is modelled)")
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
    architecture: str = Field(default="", description="kernel generation (hopper, blackwell, "
                              "cdna4, …): a GPU uses the roofline fitted on its architecture's "
                              "GPUs where one was, else the one fitted on all")
    group: str = Field(default="", description="selector group (HARDWARE_GROUPS)")
    engines: tuple[ServingEngine, ...] = Field(
        default=SERVING_ENGINES, description="the serving engines that run on this GPU")
    engines_source: str = ""
    # The per-dtype roofline fitted across GPUs (data/roofline_fit.csv), for the calls no
    # measured table covers, one per engine whose tables it was fitted on; empty: the single-η
    # hard-max roofline above. A resolved scenario's hardware keeps only its engine's
    # (for_engine).
    gemm_fits: tuple[GemmRooflineFit, ...] = ()
    attention_fits: tuple[AttentionRooflineFit, ...] = ()

    def engine_problem(self, engine: str) -> str | None:
        """Why `engine` cannot serve on this GPU (None: it can), naming both and what does."""
        if engine in self.engines:
            return None
        offered = ", ".join(engine_name(e) for e in self.engines)
        return (f"{engine_name(engine)} does not run on {self.name} "
                f"({VENDOR_NAMES[self.vendor]}); engines that do: {offered}")

    def roofline_error_note(self, dtype: str, kv_dtype: str) -> str:
        """For a GPU without measured tables: the roofline that prices its kernels at the
        scenario's dtypes and that roofline's cross-validated (leave-one-GPU-out) error."""
        gemm, att = self.gemm_fit(dtype), self.attention_fit(kv_dtype)
        parts = []
        if gemm is not None:
            parts.append(f"GEMM {dtype} {gemm.loo_mape:.1%} ({gemm.engine} tables)")
        if att is not None:
            parts.append(f"decode attention {kv_dtype} KV {att.loo_mape:.1%} "
                         f"({att.engine} tables)")
        fit = gemm or att
        if fit is None:
            return ("no measured tables: single-η roofline from spec sheet (no cross-validated "
                    "error)")
        other_vendor = (f"; no {VENDOR_NAMES[self.vendor]} GPU has tables to check it"
                        if fit.vendor != self.vendor else "")
        return (f"no measured tables: roofline from spec sheet (fitted on "
                f"{VENDOR_NAMES[fit.vendor]} GPUs {fit.gpus.replace(' ', ', ')}, carried here "
                f"by this GPU's spec-sheet peaks and bandwidth{other_vendor}); its "
                f"leave-one-GPU-out error: {', '.join(parts)}")

    def gemm_fit(self, dtype: str, engine: str | None = None) -> GemmRooflineFit | None:
        """The engine's own fit at a dtype, else the lowest-LOO engine's (`best`)."""
        return _pick_fit([f for f in self.gemm_fits if f.dtype == dtype], engine, self.slug)

    def attention_fit(self, kv_dtype: str, engine: str | None = None
                      ) -> AttentionRooflineFit | None:
        return _pick_fit([f for f in self.attention_fits if f.kv_dtype == kv_dtype], engine,
                         self.slug)

    def for_engine(self, engine: str) -> HardwareSpec:
        """This hardware as a scenario on `engine` prices uncovered calls: per dtype only the
        engine's own fit, or the lowest-LOO engine's where the engine has none (its `engine`
        then names whose tables it is)."""
        gemm = tuple(f for f in (self.gemm_fit(d, engine)
                                 for d in dict.fromkeys(f.dtype for f in self.gemm_fits))
                     if f is not None)
        att = tuple(f for f in (self.attention_fit(d, engine)
                                for d in dict.fromkeys(f.kv_dtype for f in self.attention_fits))
                    if f is not None)
        if gemm == self.gemm_fits and att == self.attention_fits:
            return self
        return self.model_copy(update={"gemm_fits": gemm, "attention_fits": att})

    def gemm_compute_efficiency_for(self, dtype: str) -> float:
        """η_c the roofline uses at a dtype: its cross-GPU fit's, else the preset's one η."""
        fit = self.gemm_fit(dtype)
        return fit.eta_c if fit is not None else self.gemm_compute_efficiency

    def peak_flops_per_s(self, dtype: str) -> float:
        """Dense peak for a dtype; falls back to the next wider dtype the GPU has."""
        if dtype == "fp4" and self.fp4_flops_per_s:
            return self.fp4_flops_per_s
        if (dtype == "fp4" or dtype in FP8_LIKE) and self.fp8_flops_per_s:
            return self.fp8_flops_per_s
        return self.bf16_flops_per_s

    def no_native_peak(self, dtype: str) -> str | None:
        """Why a dtype runs at a wider dtype's peak here (FP4 on Hopper, FP8 on Ampere), as the
        sources show it; None where the GPU has that dtype's tensor cores."""
        native = {"fp4": self.fp4_flops_per_s, "fp8": self.fp8_flops_per_s,
                  "fp8_block": self.fp8_flops_per_s}.get(dtype, self.bf16_flops_per_s)
        if native:
            return None
        wider = "fp8" if dtype == "fp4" and self.fp8_flops_per_s else "bf16"
        return (f"{self.name} has no {dtype} tensor cores: {dtype} weights are priced at its "
                f"{wider} peak with {dtype} bytes (assumption: a kernel that dequantizes them "
                "on the fly; no table measures it)")

    def gemm_ridge_tokens(self, dtype: str = "bf16") -> float:
        """GEMM ridge M* = F·b_w / (2·BW): tokens where a weight-streaming GEMM turns
        compute-bound."""
        peak = self.peak_flops_per_s(dtype)
        return peak * BYTES_PER_ELEMENT[dtype] / (2.0 * self.hbm_bw_bytes_per_s)


# HardwareOverrides fields that change kernel times, and those the cost model charges per step.
KERNEL_OVERRIDES = ("gemm_compute_efficiency", "gemm_memory_efficiency",
                    "attention_compute_efficiency", "attention_memory_efficiency",
                    "kernel_floor_s", "launch_latency_s")
STEP_TERM_OVERRIDES = ("step_cost_per_token_s", "verify_growth_scale", "draft_cost_scale")


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
    # Step-cost terms backed out of benchmark runs (explorer/calibration/bench_backout.py): the
    # serving engine's cost per scheduled token beyond the model, a scale on what verifying 1+D
    # tokens adds over one (T_verif(B·W) − T_verif(B)) and a scale on the drafter's round. They
    # are charged by the cost model (explorer/model/grid.py), not by the hardware spec.
    step_cost_per_token_s: float | None = Field(default=None, ge=0, le=1e-4)
    verify_growth_scale: float | None = Field(default=None, gt=0, le=10)
    draft_cost_scale: float | None = Field(default=None, gt=0, le=10)
    label: str = Field(default="", max_length=200, description="where these numbers come from")

    @property
    def touches_kernels(self) -> bool:
        """Whether a kernel-side figure (an efficiency, the floor, the launch latency) is set:
        then no measured kernel table describes the hardware any more."""
        return any(getattr(self, k) is not None for k in KERNEL_OVERRIDES)

    def apply(self, spec: HardwareSpec) -> HardwareSpec:
        changes = {
            k: v for k, v in self.model_dump(exclude={"label", *STEP_TERM_OVERRIDES}).items()
            if v is not None
        }
        if not changes:
            return spec
        note = f"{spec.fit_source}; overridden: {', '.join(sorted(changes))} ({self.label})"
        # Calibrated numbers belong to the single-η roofline they were fitted for: they replace
        # the cross-GPU fit of the kernels they touch (the floor touches both).
        update: dict[str, object] = {**changes, "fit_source": note}
        if changes.keys() & {"gemm_compute_efficiency", "gemm_memory_efficiency",
                             "kernel_floor_s"}:
            update["gemm_fits"] = ()
        if changes.keys() & {"attention_compute_efficiency", "attention_memory_efficiency",
                             "kernel_floor_s"}:
            update["attention_fits"] = ()
        return spec.model_copy(update=update)

"""A serving engine's profile (data/engines.csv): the costs an engine adds around the kernels.

Per-step scheduling/sampling overhead, a per-sequence cost, the share of the GEMMs' compute
that a served step does not hide behind its weight reads, a fixed overhead per draft forward
(these four are fitted per engine on published step times where the file says `fit`: data/
step_cost_fit.csv, scripts/fit_step_costs.py), the CUDA-graph capture
sizes (a step pads up to the next captured size — a staircase — and past the largest, or off the
list when the engine does not pad, runs eager with a per-kernel launch cost), the sampler's bytes
per logit of a sampled row and the rejection sampler's per logit of a draft-position row, which
tokens the first draft forward of a round runs on, and what an n-gram request without a match
verifies.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from explorer.base.engines import ServingEngine

CaptureUnit = Literal["tokens", "requests"]
NgramNoMatch = Literal["one", "full"]
# The first draft forward of a round runs on every scheduled token of the verify step, B·(1+D)
# ("scheduled": the rejected ones are padding), or on one token per request ("batch").
DraftFirstForward = Literal["scheduled", "batch"]
# The parameters a profile has, in data/engines.csv's `parameter` column.
ENGINE_PARAMETERS: tuple[str, ...] = (
    "step_overhead_us", "draft_forward_overhead_us", "cuda_graph_sizes", "cuda_graph_padding",
    "eager_launch_us", "sampler_bytes_per_logit", "rejection_sampler_bytes_per_logit",
    "draft_first_forward", "ngram_no_match", "per_sequence_us", "compute_overlap_loss",
)
# The whole-step terms calibrated on published step times (explorer/calibration/step_costs.py):
# parameter → (EngineProfile field, scale from the CSV's unit to the field's).
FITTED_STEP_TERMS: dict[str, tuple[str, float]] = {
    "step_overhead_us": ("step_overhead_s", 1e-6),
    "per_sequence_us": ("per_sequence_s", 1e-6),
    "compute_overlap_loss": ("compute_overlap_loss", 1.0),
    "draft_forward_overhead_us": ("draft_forward_overhead_s", 1e-6),
}


class EngineProfile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: ServingEngine
    step_overhead_s: float = Field(ge=0, le=0.1, description="scheduling/sampling per step, s")
    draft_forward_overhead_s: float = Field(ge=0, le=0.1,
                                            description="fixed cost of one draft forward, s")
    per_sequence_s: float = Field(
        default=0.0, ge=0, le=1e-3, description="per request in a step (input preparation, "
        "block tables, attention metadata), s")
    compute_overlap_loss: float = Field(
        default=0.0, ge=0, le=1, description="κ: the share of a target step's GEMM compute "
        "time (at the dtype's peak) that a served step does not overlap with its weight reads; "
        "it pays κ·min(compute, weight read) on top of the isolated kernel times (0: the "
        "measured tables' own overlap; 1: none, the summed roofline)")
    fitted: dict[str, str] = Field(default_factory=dict, description="fitted parameter → what "
                                   "it was fitted on and its leave-one-source-out error")
    capture_sizes: tuple[int, ...] = Field(min_length=1,
                                           description="captured CUDA-graph sizes, ascending")
    capture_unit: CaptureUnit
    pads_to_capture: bool
    eager_launch_s: float = Field(ge=0, le=1e-3, description="per-kernel launch without a graph")
    sampler_bytes_per_logit: float = Field(
        ge=0, le=64, description="HBM bytes per logit of a row the sampler samples (one per "
        "request: a plain decode token or the bonus token)")
    rejection_sampler_bytes_per_logit: float = Field(
        ge=0, le=128, description="HBM bytes per logit of a draft-position row (B·D per step) "
        "the rejection sampler passes over")
    draft_first_forward: DraftFirstForward
    ngram_no_match: NgramNoMatch
    sources: dict[str, str] = Field(default_factory=dict, description="parameter → source")
    assumptions: tuple[str, ...] = Field(default=(), description="parameters without a source")

    @model_validator(mode="after")
    def _check(self) -> EngineProfile:
        sizes = self.capture_sizes
        if any(s < 1 for s in sizes) or any(b <= a for a, b in pairwise(sizes)):
            raise ValueError("capture_sizes must be positive and strictly ascending")
        unknown = set(self.assumptions) - set(ENGINE_PARAMETERS)
        if unknown:
            raise ValueError(f"assumptions name unknown parameters: {sorted(unknown)}")
        return self

    @property
    def max_capture(self) -> int:
        return self.capture_sizes[-1]

    def value_text(self, parameter: str) -> str:
        """One parameter's value as the Presets & sources page shows it ('' if unknown)."""
        first = ("all B·(1+D) scheduled tokens" if self.draft_first_forward == "scheduled"
                 else "B tokens")
        values = {
            "step_overhead_us": f"{self.step_overhead_s * 1e6:.0f} µs",
            "per_sequence_us": f"{self.per_sequence_s * 1e6:.1f} µs per request",
            "compute_overlap_loss": f"κ = {self.compute_overlap_loss:.2f}",
            "draft_forward_overhead_us": f"{self.draft_forward_overhead_s * 1e6:.0f} µs",
            "cuda_graph_sizes": f"{len(self.capture_sizes)} sizes by {self.capture_unit}, "
                                f"{self.capture_sizes[0]}…{self.max_capture}",
            "cuda_graph_padding": "pads up" if self.pads_to_capture else "no padding",
            "eager_launch_us": f"{self.eager_launch_s * 1e6:g} µs per kernel",
            "sampler_bytes_per_logit": f"{self.sampler_bytes_per_logit:g} B",
            "rejection_sampler_bytes_per_logit": f"{self.rejection_sampler_bytes_per_logit:g} B",
            "draft_first_forward": first,
            "ngram_no_match": "verifies 1 token" if self.ngram_no_match == "one"
            else "full width",
        }
        return values.get(parameter, "")

    def describe(self) -> str:
        """One line for the Sources tab: the numbers, each assumption labelled as such."""
        def tag(p: str) -> str:
            if p in self.fitted:
                return (" (fitted)" if self.sources.get(p, "").startswith("fit:")
                        else " (another engine's fit, carried)")
            return " (assumption)" if p in self.assumptions else ""
        pad = "pads to the next captured size" if self.pads_to_capture else "no padding"
        first = ("all B·(1+D) scheduled tokens" if self.draft_first_forward == "scheduled"
                 else "B tokens")
        return (
            f"{self.engine}: step overhead {self.step_overhead_s * 1e6:.0f} µs"
            f"{tag('step_overhead_us')}; {self.per_sequence_s * 1e6:.1f} µs per request"
            f"{tag('per_sequence_us')}; κ = {self.compute_overlap_loss:.2f} of the GEMM compute "
            f"not overlapped with weight reads{tag('compute_overlap_loss')}; "
            f"{self.draft_forward_overhead_s * 1e6:.0f} µs per draft "
            f"forward{tag('draft_forward_overhead_us')}; CUDA graphs by {self.capture_unit} up to "
            f"{self.max_capture} ({len(self.capture_sizes)} sizes, {pad}){tag('cuda_graph_sizes')}"
            f"; eager past that at {self.eager_launch_s * 1e6:g} µs per kernel"
            f"{tag('eager_launch_us')}; sampler {self.sampler_bytes_per_logit:g} B per sampled "
            f"logit{tag('sampler_bytes_per_logit')}, rejection sampler "
            f"{self.rejection_sampler_bytes_per_logit:g} B per draft-position logit"
            f"{tag('rejection_sampler_bytes_per_logit')}; the first draft forward runs on "
            f"{first}"
            f"{tag('draft_first_forward')}; n-gram without a match verifies "
            f"{'1 token' if self.ngram_no_match == 'one' else 'the full width'}"
            f"{tag('ngram_no_match')}"
        )

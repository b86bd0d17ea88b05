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

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from explorer.base.engines import SERVING_ENGINES, ServingEngine

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


# --- the engine registry ------------------------------------------------------------------------
# One declaration per serving engine: what is not a number of data/engines.csv (the profile
# above). The Scenario carries the engine's slug; the model resolves it once to an `Engine`
# (explorer.presets.serving_engine: this declaration + its profile). Nothing else writes an
# engine's slug (tests/unit/test_registries.py counts the files). Recipe: README.md, Layout.


@dataclass(frozen=True)
class NotAsServed:
    """A shipped table whose collector did not time the calls as a serving step runs them, so it
    does not price that engine's steps; the first stand-in engine with a table does."""

    stand_ins: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class OverheadNotServed:
    """A shipped GEMM table whose calls include an activation-quantization step a served
    deployment does not run: its serving time is the table's time less that step's own measured
    table (quantize/<engine>/<version>/<op>_perf.parquet of the same version), floored at the
    GEMM's speed of light, as aiconfigurator's own query does."""

    overhead_op: str  # the quantize table's op name: computescale
    label: str  # what the provenance and the evaluation's sources say
    reason: str


# aiconfigurator's fp8_static rule (aic-core/rust/aiconfigurator-core/src/operators/gemm.rs
# @90f7fc0fc, `GemmOp::query`): fp8_static = fp8 table − compute_scale(m, k), floored at the
# GEMM's speed of light, not at 0; scale_matrix is subtracted too only for a low-precision input,
# and ours is bf16.
_FP8_STATIC_RULE = "aiconfigurator's fp8_static rule, gemm.rs @90f7fc0fc"

TableKey = tuple[str, str]  # (op, dtype in the aiconfigurator package's spelling)


@dataclass(frozen=True)
class EngineKind:
    """One serving engine's declaration."""

    slug: ServingEngine  # also its folder name in the aiconfigurator package's tables
    name: str  # as people write it: the one spelling in pages, notes and exports
    config_key: str  # its key in an exported EngineConfigs (JSON)
    vendors: frozenset[str] | None = None  # GPU vendors it runs on; None: any
    # Shipped tables not timed as a serving step runs them: the stand-in engines that price it.
    not_as_served: tuple[tuple[TableKey, NotAsServed], ...] = ()
    # Shipped GEMM tables whose calls include a quantization step a served step does not run.
    overhead_not_served: tuple[tuple[TableKey, OverheadNotServed], ...] = ()
    # The kernel a table version runs by default per SM, where several kernels measured the
    # same configuration (the package's systems/attention_lane_defaults.yaml; a test checks it).
    attention_default_lanes: Mapping[str, Mapping[int, str]] = field(default_factory=dict)

    def runs_on(self, vendor: str) -> bool:
        return self.vendors is None or vendor in self.vendors


ENGINE_KINDS: Final[dict[str, EngineKind]] = {e.slug: e for e in (
    EngineKind(
        "vllm", "vLLM", "vllm",
        # (engine, op, dtype in the package's spelling) → why its table is not a serving
        # step's time.
        not_as_served=((("gemm", "fp8_block"), NotAsServed(
            ("sglang", "trtllm"),
            "vLLM's collector times fp8_block GEMMs without CUDA graphs (ai-dynamo/aiconfigurator "
            "collector/vllm/collect_gemm.py @d5bad971c, the vLLM 0.24.0 data: use_cuda_graph="
            "gemm_type != 'fp8_block'), so each call carries host launch time a CUDA-graph step "
            "does not pay: at m ≤ 64 its times are 4x SGLang's on Hopper and 14-27x on Blackwell "
            "(60-290 µs for any shape)")),)),
    EngineKind(
        "sglang", "SGLang", "sglang",
        attention_default_lanes={
            "0.5.14": {90: "fa3", 100: "triton", 103: "triton", 120: "flashinfer"}}),
    EngineKind(
        "trtllm", "TensorRT-LLM", "tensorrt_llm", vendors=frozenset({"nvidia"}),
        # Only TRT-LLM's fp8: its collector builds the fp8 weights without an input_scale, so
        # FP8QDQ takes the dynamic-quantization path (collector/trtllm/collect_gemm.py
        # @dec5f4cd2, the 1.3.0rc20 data), while the FP8 checkpoints TRT-LLM serves (ModelOpt)
        # carry static input scales and take the static path.
        # Not SGLang: its compute_scale tables are all zeros (1625 of 1628 points on h100_sxm
        # 0.5.14), so there is nothing to subtract. Not vLLM either, by decision: its fp8
        # collector also times the dynamic scheme (Fp8Config(activation_scheme="dynamic"),
        # collector/vllm/collect_gemm.py @d5bad971c, the 0.24.0 data) and its compute_scale
        # table is not zero (median 0.7 µs a call at m ≤ 64 on h100_sxm, against TRT-LLM's
        # 7.3 µs).
        overhead_not_served=((("gemm", "fp8"), OverheadNotServed(
            "computescale",
            f"fp8 static: the measured dynamic-quant fp8 time less TRT-LLM's measured "
            f"compute-scale time ({_FP8_STATIC_RULE})",
            "TRT-LLM's collector builds its fp8 weights without an input_scale, so FP8QDQ runs "
            "the dynamic-quantization path and each timed GEMM includes computing the "
            "activation's scale (ai-dynamo/aiconfigurator collector/trtllm/collect_gemm.py "
            "@dec5f4cd2); the ModelOpt FP8 checkpoints TRT-LLM serves carry static input "
            "scales")),)),
)}
assert tuple(ENGINE_KINDS) == SERVING_ENGINES, "declare every serving engine, in order"
# Handles for code that means one engine by what it is (its config writer, a reference measured
# on it), never by comparing a slug.
VLLM, SGLANG, TRTLLM = ENGINE_KINDS.values()


def engine_kind(slug: str) -> EngineKind:
    """The declaration of a serving engine (KeyError for an unknown slug)."""
    return ENGINE_KINDS[slug]


@dataclass(frozen=True)
class Engine:
    """A serving engine as the model uses it: its declaration and its cost profile
    (data/engines.csv), composed; resolved once per scenario (explorer.presets.serving_engine)."""

    kind: EngineKind
    profile: EngineProfile

    @property
    def slug(self) -> str:
        return self.kind.slug

    @property
    def name(self) -> str:
        return self.kind.name

    @property
    def capture_sizes(self) -> tuple[int, ...]:
        return self.profile.capture_sizes

    @property
    def pads_to_capture(self) -> bool:
        return self.profile.pads_to_capture

    def runs_on(self, vendor: str) -> bool:
        return self.kind.runs_on(vendor)

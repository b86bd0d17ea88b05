"""Speedup, throughput and memory over grids: the article's formula, vectorized.

    speedup = T_verif(B)·AL / (T_verif(B·(1+D)) + T_draft(B, D))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from explorer.base.dtypes import BYTES_PER_ELEMENT, LOGITS_DTYPE
from explorer.base.errors import ScenarioError
from explorer.kernel_tables.catalog import Missing, resolve_system
from explorer.model.acceptance_source import ALResult, acceptance_length
from explorer.model.corrections import (
    AttentionCorrection,
    GemmCorrection,
    KernelCorrections,
    StepCorrection,
)
from explorer.model.draft import draft_time, native_draft_layers
from explorer.model.engine_costs import apply_engine_profile, graph_shape
from explorer.model.layers import KERNELS_PER_LAYER, Breakdown, LayerModel, total
from explorer.model.measured_kernels import MeasuredKernels, measured_kernels
from explorer.model.resolve import Resolved, resolve
from explorer.presets import serving_engine
from explorer.specs.architecture import ModelSpec
from explorer.specs.engine import EngineProfile
from explorer.specs.hardware import STEP_TERM_OVERRIDES, HardwareOverrides
from explorer.specs.scenario import Scenario

FloatArray = npt.NDArray[np.float64]
T = TypeVar("T")
# Prompt tokens a step carries beside its decode tokens when prefill is chunked into decode steps
# (the marginal cost of a prompt token is priced on a chunk this size): vLLM serve's
# max_num_batched_tokens on GPUs with ≥ 70 GiB (vllm/engine/arg_utils.py
# EngineArgs.get_batch_defaults: OPENAI_API_SERVER 8192); other engines and GPUs: an assumption.
PREFILL_CHUNK_TOKENS = 8192


@dataclass
class GridResult:
    """Arrays broadcast over the grid axes (batch, draft_len, context, group)."""

    acceptance_length: FloatArray
    al_extrapolated: npt.NDArray[np.bool_]
    al_provenance: str
    t_verif_base_s: FloatArray
    t_verif_spec_s: FloatArray
    t_draft_s: FloatArray
    speedup: FloatArray
    speedup_launch_bound: FloatArray
    draft_overhead_launch_bound: FloatArray
    tokens_per_s_per_user: FloatArray
    tokens_per_s_per_gpu: FloatArray
    baseline_tokens_per_s_per_user: FloatArray
    baseline_tokens_per_s_per_gpu: FloatArray
    attention_fraction: FloatArray
    memory_bytes: FloatArray
    fits_in_memory: npt.NDArray[np.bool_]
    # Whole requests (Scenario.output_tokens N): p, the prompt prefill a plain step carries in
    # steady state (B·S/N prompt tokens at their marginal cost), and f, the factor a speculative
    # step's prompt tokens cost more by (the drafter prefills them too). A speculative step
    # finishes AL times as many requests, so it carries AL·p·f (f = 1 at D = 0: no drafter
    # runs). Zero p: decode steps only.
    t_prefill_s: FloatArray = field(default_factory=lambda: np.zeros(()))
    prefill_draft_factor: FloatArray = field(default_factory=lambda: np.ones(()))
    verify_base: Breakdown = field(default_factory=dict)
    verify_spec: Breakdown = field(default_factory=dict)
    draft: Breakdown = field(default_factory=dict)


def speedup_at(g: GridResult, al: npt.ArrayLike) -> FloatArray:
    """The speedup at AL (broadcast against the grid; e.g. draws on a leading axis), with each
    step's prompt prefill (`t_prefill_s`, 0 for decode steps only):
    AL·(T_verif(B) + p) / (T_verif(B·W) + T_draft + AL·p·f)."""
    a = np.asarray(al, dtype=np.float64)
    p = g.t_prefill_s
    step = g.t_verif_spec_s + g.t_draft_s + a * p * g.prefill_draft_factor
    return np.asarray(a * (g.t_verif_base_s + p) / step, dtype=np.float64)


def al_for_speedup(g: GridResult, speedup: float) -> FloatArray:
    """The AL at which the grid's steps give `speedup` (the inverse of `speedup_at`); inf where
    no AL does (the prefill a speculative step adds outgrows what it saves)."""
    p, f = g.t_prefill_s, g.prefill_draft_factor
    den = g.t_verif_base_s + p - speedup * p * f
    return np.asarray(np.where(den > 0, speedup * (g.t_verif_spec_s + g.t_draft_s)
                               / np.where(den > 0, den, 1.0), np.inf), dtype=np.float64)


def _weight_bytes(model: ModelSpec, dtype: str, expert_dtype: str) -> float:
    """A model's weight bytes: routed experts in their dtype, the embedding table and lm_head
    in LOGITS_DTYPE (quantized checkpoints keep them), the rest in the weights' dtype."""
    experts = model.routed_expert_param_count()
    embeddings = model.embedding_param_count()
    return float((model.param_count() - experts - embeddings) * BYTES_PER_ELEMENT[dtype]
                 + experts * BYTES_PER_ELEMENT[expert_dtype]
                 + embeddings * BYTES_PER_ELEMENT[LOGITS_DTYPE])


class ScenarioModel:
    """A resolved scenario's cost model, evaluated over arrays of B, D, S and G."""

    def __init__(self, resolved: Resolved, engine: EngineProfile | None = None) -> None:
        """`engine`: another profile than the scenario engine's default (the step-cost fit
        evaluates the kernels-only step with its terms at 0)."""
        self.r = resolved
        sc = resolved.scenario
        hw = resolved.hardware
        # The scenario's engine, resolved once: its declaration and its cost profile (or the
        # profile given, e.g. the step-cost fit's with its terms at 0).
        self.serving_engine = serving_engine(sc.engine)
        self.engine = engine if engine is not None else self.serving_engine.profile
        self.kernel_corrections: KernelCorrections | None = None
        if sc.measured_kernels is not None:
            mk = sc.measured_kernels
            self.kernel_corrections = KernelCorrections(
                GemmCorrection(hw, mk.gemm) if mk.gemm is not None else None,
                AttentionCorrection(hw, mk.attention) if mk.attention is not None else None,
            )
        # The package's measured tables for (hardware, engine, dtype); none for overridden specs.
        # A step overhead or step-cost terms backed out of benchmarks leave the kernels as
        # measured; only kernel-side overrides make the hardware hypothetical.
        ov = sc.hardware_overrides
        self.tables: MeasuredKernels = measured_kernels(
            hw, sc.engine, sc.dtype, sc.kv_dtype,
            hypothetical=ov is not None and (ov.touches_kernels or _legacy_hypothetical(ov)))
        self.target = LayerModel(hw, resolved.model, sc.tp, sc.dtype, sc.kv_dtype,
                                 self.kernel_corrections, self.tables, sc.moe_dtype)
        self.draft_layer_model = (
            LayerModel(hw, resolved.draft_model, sc.tp, sc.dtype, sc.kv_dtype,
                       self.kernel_corrections, self.tables, sc.moe_dtype)
            if resolved.draft_model is not None
            else None
        )
        # A drafter head with its own shapes (config.json) runs as its own dense model (with
        # its own G); a head at a hybrid target's dims is made of attention + MLP layers.
        self.head_own_shape = resolved.head is not None
        head_spec = resolved.head or resolved.model.uniform_layers()
        self.head = (LayerModel(hw, head_spec, sc.tp, sc.dtype, sc.kv_dtype,
                                self.kernel_corrections, self.tables, sc.moe_dtype)
                     if head_spec is not resolved.model else self.target)
        # What the overlap loss κ applies to (EngineProfile.compute_overlap_loss): a target
        # step's GEMM compute per token at the dtype's peak (2 FLOP per active parameter: routed
        # experts at top-k of n, the lm_head, no embedding lookup) and its weight read.
        model, scale = resolved.model, resolved.layers / resolved.model.layers
        experts = model.routed_expert_param_count()
        # from the shapes (not a sourced total): a config.json or a reshaped design prices alike
        shaped = model.model_copy(update={"total_params_b": None})
        active = (shaped.param_count() - model.embedding_param_count() - experts
                  + (experts * model.experts_per_tok / model.n_routed_experts
                     if model.n_routed_experts else 0.0)) * scale + model.vocab * model.hidden
        self.compute_s_per_token = 2.0 * active / sc.tp / hw.peak_flops_per_s(sc.dtype)
        self.weight_read_s = (_weight_bytes(shaped, sc.dtype, sc.expert_dtype) * scale / sc.tp
                              / hw.hbm_bw_bytes_per_s)
        self.step_correction: StepCorrection | None = None
        if sc.measured_steps is not None:
            self.step_correction = StepCorrection(sc.measured_steps, self._model_step)

    def _model_step(self, batch: FloatArray, draft_len: FloatArray) -> FloatArray:
        """The model's step at the scenario's S and G, as the step-time table measures it."""
        sc, g = self.r.scenario, self.r.group
        width = self.verify_width(draft_len)
        verify = total(self.verify(batch, width, sc.context, g))
        if sc.measured_steps is not None and not sc.measured_steps.includes_draft:
            return verify
        return verify + total(self.draft(batch, draft_len, sc.context, g))

    def verify_width(self, draft_len: npt.ArrayLike) -> FloatArray:
        """W per sequence: 1 + D for a chain; a tree verifies its W ≥ 1+D tokens; 1 at D = 0.
        An n-gram request without a match verifies one token where the engine schedules it as
        a plain decode (ngram_no_match = one): the mean is 1 + m·D, m the share with a match."""
        d = np.asarray(draft_len, dtype=np.float64)
        width = 1.0 + d
        if self.r.mechanism.draft_style == "lookup" and self.engine.ngram_no_match == "one":
            width = 1.0 + self.ngram_match_share * d
        tree = self.r.scenario.verify_width
        if tree is not None:
            width = np.where(d > 0, np.maximum(width, float(tree)), 1.0)
        return np.asarray(width, dtype=np.float64)

    @cached_property
    def ngram_match_share(self) -> float:
        """m, the share of n-gram requests whose lookup finds a match, read off the AL curve.

        Only a request with a match can accept a token. If a match's tokens are accepted at a
        rate a that does not depend on the position (the mixture assumption), P(≥1 accepted) =
        m·a and P(≥2) = m·a², so m = (AL(1) − 1)² / (AL(2) − AL(1)), at least AL(1) − 1 and at
        most 1. A curve whose conditional rate is the same at every position (the preset
        prior's shape, i.i.d.) gives m = 1: every request verifies the full width. A fixed AL
        has no shape: m = 1 (an assumption, shown with the engine's sources)."""
        al = self.acceptance(np.array([1.0, 2.0])).acceptance_length
        p1, p2 = float(al[0]) - 1.0, float(al[1]) - float(al[0])
        if not (np.isfinite(p1) and np.isfinite(p2)) or p1 <= 0.0 or p2 <= 0.0:
            return 1.0
        return float(np.clip(p1 * p1 / p2, p1, 1.0))

    def measured_sources(self) -> str:
        """Which measured timings replace the model here, for the provenance of each number."""
        sc = self.r.scenario
        parts = []
        if self.kernel_corrections is not None and sc.measured_kernels is not None:
            parts.append(f"{self.kernel_corrections.describe()} "
                         f"({sc.measured_kernels.source_text})")
        if self.step_correction is not None and sc.measured_steps is not None:
            ds = ", ".join(f"{d:g}" for d in sorted(self.step_correction.by_draft_len))
            what = "step" if sc.measured_steps.includes_draft else "verify step"
            parts.append(f"measured {what} times at D ∈ {{{ds}}} replace the model's {what} "
                         f"(assumed at S={sc.context}) ({sc.measured_steps.source_text})")
        return "; ".join(parts)

    def kernel_sources(self) -> str:
        """Where this scenario's kernel times come from, counted at its own (B, D, S, G)."""
        sc = self.r.scenario
        self.tables.tally.reset()
        self.grid(sc.batch, sc.draft_len)
        text = self.tables.describe()
        if self.tables.no_tables is None and isinstance(resolve_system(self.r.hardware.slug),
                                                         Missing):
            # A preset the package never measured: the roofline prices it all; say which and
            # how well that roofline predicts GPUs it was not fitted on.
            text += "; " + self.r.hardware.roofline_error_note(sc.dtype, sc.kv_dtype)
        tally = self.tables.tally
        uploads = [name for kind, name in (("upload_gemm", "GEMM"),
                                           ("upload_attention", "attention"))
                   if tally.total.get(kind)]
        if uploads:
            text = f"your upload for {' and '.join(uploads)} where it matches; then {text}"
        return text

    def engine_sources(self) -> str:
        """The engine profile's numbers as used here, each assumption labelled, with sources."""
        e = self.engine
        text = e.describe()
        ov = self.r.scenario.hardware_overrides
        if ov is not None and ov.step_overhead_s is not None:
            text += f"; the step overhead is overridden: {ov.step_overhead_s * 1e6:.0f} µs"
        if ov is not None and ov.step_cost_per_token_s is not None:
            text += (f"; step terms from benchmark runs ({ov.label}): "
                     f"{ov.step_cost_per_token_s * 1e6:.2f} µs per scheduled token, verify "
                     f"growth × {ov.verify_growth_scale or 1.0:.2f}, draft cost × "
                     f"{ov.draft_cost_scale or 1.0:.2f}")
        if self.r.mechanism.draft_style == "lookup" and e.ngram_no_match == "one":
            text += (f"; n-gram requests with a match: {self.ngram_match_share:.0%} (read off the"
                     " AL curve's first two positions, assuming a match's tokens are accepted at"
                     " one rate; 100% where the curve gives no sign of unmatched requests), so "
                     "a step verifies 1 + m·D tokens per request on average")
        cited = "; ".join(f"{k}: {v}" for k, v in e.sources.items()
                          if k not in e.assumptions and v)
        return f"{text} — sources: {cited} (data/engines.csv)"

    # -- pieces -----------------------------------------------------------------------
    @property
    def group_per_gpu(self) -> float:
        """G as one GPU's attention kernel sees it: query heads per KV head on one TP rank
        (KV heads replicate when TP > n_kv; MLA's one latent head takes all the rank's query
        heads). The cost model and every text that explains it read this one number."""
        return float(np.ravel(self.target.heads_per_rank(np.asarray([self.r.group]))[2])[0])

    @property
    def rho_native(self) -> float:
        r = self.r
        return native_draft_layers(r.mechanism, r.model, r.draft_model) / r.layers

    @property
    def rho(self) -> float:
        sc = self.r.scenario
        return sc.rho if sc.rho is not None else self.rho_native

    def draft_overhead_launch_bound(self, draft_len: npt.ArrayLike) -> FloatArray:
        """O_d: ρ·D for chain drafters, ρ once for a block pass (plus a serial head), 0 lookup."""
        d = np.asarray(draft_len, dtype=np.float64)
        mech = self.r.mechanism
        if mech.draft_style == "lookup":
            return np.zeros_like(d)
        if mech.draft_style == "chain":
            return self.rho * d
        serial = d * mech.serial_head_layer_fraction / self.r.layers
        return np.where(d > 0, self.rho + serial, 0.0)

    @property
    def step_overhead_s(self) -> float:
        """Per target step: the engine profile's, unless the hardware overrides set one (a
        step-time calibration or a hand-set value)."""
        ov = self.r.scenario.hardware_overrides
        if ov is not None and ov.step_overhead_s is not None:
            return ov.step_overhead_s
        return self.engine.step_overhead_s

    def verify(self, batch: npt.ArrayLike, width: npt.ArrayLike, context: npt.ArrayLike,
               group: npt.ArrayLike) -> Breakdown:
        """One target step: the forward on the engine's padded graph shape, plus its costs, and
        the step-cost terms backed out of benchmark runs where the scenario applies them."""
        out = self._verify(batch, width, context, group)
        ov = self.r.scenario.hardware_overrides
        if ov is None or (ov.step_cost_per_token_s is None and ov.verify_growth_scale is None):
            return out
        w = np.asarray(width, dtype=np.float64)
        b = np.asarray(batch, dtype=np.float64)
        if ov.verify_growth_scale is not None and ov.verify_growth_scale != 1.0:
            # T(B, W) = T(B, 1) + g·(T(B, W) − T(B, 1)), term by term
            one = self._verify(batch, 1.0, context, group)
            g = ov.verify_growth_scale
            out = {k: one[k] + g * (out[k] - one[k]) for k in out}
        if ov.step_cost_per_token_s is not None:
            out = dict(out)
            out["overhead"] = out["overhead"] + ov.step_cost_per_token_s * b * w
        return out

    def _verify(self, batch: npt.ArrayLike, width: npt.ArrayLike, context: npt.ArrayLike,
                group: npt.ArrayLike) -> Breakdown:
        tokens, eager = graph_shape(self.engine, batch, width)
        forward = self.target.forward(batch, width, context, group, layers=self.r.layers,
                                      include_step_overhead=False, tokens=tokens)
        model = self.r.model
        if self.engine.recurrent_state_copies and model.mamba_layers:
            # After a verify the engine copies the accepted position's recurrent state into the
            # running one (SGLang's update_mamba_state_after_mtp_verify): priced with the scan.
            copy = (model.mamba_layers * self.r.layers / model.layers
                    * self.target.recurrent_state_copy(np.asarray(batch, dtype=np.float64),
                                                       self.engine.recurrent_state_copies))
            forward = {**forward, "attention": forward["attention"] + np.where(
                np.asarray(width, dtype=np.float64) > 1.0, copy, 0.0)}
        return apply_engine_profile(
            self.engine, forward, self.r.hardware,
            eager_kernels=np.where(
                eager, self.r.layers * self.r.model.blocks_per_layer * KERNELS_PER_LAYER, 0.0),
            sampled_tokens=np.asarray(batch, dtype=np.float64),
            rejection_rows=np.asarray(batch, dtype=np.float64)
            * (np.asarray(width, dtype=np.float64) - 1.0),
            vocab=self.r.model.vocab, step_overhead_s=self.step_overhead_s,
            sequences=np.asarray(batch, dtype=np.float64),
            overlappable_s=self.overlappable_s(tokens))

    def overlappable_s(self, tokens: npt.ArrayLike) -> FloatArray:
        """min(GEMM compute at the dtype's peak, weight read) of a target step on `tokens`: what
        the engine's overlap loss κ is a share of."""
        return np.asarray(np.minimum(np.asarray(tokens, dtype=np.float64)
                                     * self.compute_s_per_token, self.weight_read_s),
                          dtype=np.float64)

    def _draft_engine_costs(self, batch: FloatArray,
                            draft_len: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(draft forwards, kernels launched eager) of one round: EAGLE/MTP D forwards, the
        first on the engine's first-forward width; external D forwards of width 1; DFlash one
        block pass of width D; DSpark one forward too (the block pass, its D serial head steps
        launched within it); n-gram none (a lookup)."""
        mech, d = self.r.mechanism, draft_len
        zero: FloatArray = np.zeros(np.broadcast_shapes(batch.shape, d.shape))
        if mech.draft_style == "lookup":
            return zero, zero
        _, eager1 = graph_shape(self.engine, batch, np.ones_like(batch))
        if mech.draft_style == "chain":
            layers = native_draft_layers(mech, self.r.model, self.r.draft_model)
            per_forward = max(layers, 1.0) * KERNELS_PER_LAYER
            if mech.draft_layers is None:  # a draft model: D forwards of one token each
                return zero + d, zero + np.where(eager1, d * per_forward, 0.0)
            _, eager_first = graph_shape(self.engine, batch, self._first_draft_width(d))
            later = np.maximum(d - 1.0, 0.0)
            kernels = (np.where(eager_first & (d > 0), per_forward, 0.0)
                       + np.where(eager1, later * per_forward, 0.0))
            return zero + d, zero + kernels
        _, eager_block = graph_shape(self.engine, batch, np.maximum(d, 1.0))
        block_kernels = max(float(mech.draft_layers or 0), 1.0) * KERNELS_PER_LAYER
        forwards: FloatArray = zero + np.where(d > 0, 1.0, 0.0)
        eager: FloatArray = zero + np.where(eager_block, forwards * block_kernels, 0.0)
        if mech.draft_style == "block_serial" and mech.serial_head_layer_fraction > 0:
            # The serial head's D steps run inside the one proposer call of the round: they pay
            # their kernels (GPU time in draft_time, launches here when eager), not another
            # forward's bookkeeping (scheduling, metadata, sampling set-up).
            eager = eager + np.where(eager1, d * KERNELS_PER_LAYER, 0.0)
        return forwards, eager

    def draft_forwards(self, batch: FloatArray, draft_len: FloatArray) -> FloatArray:
        """Draft forwards of one round (what the engine's per-draft-forward cost multiplies)."""
        return self._draft_engine_costs(batch, draft_len)[0]

    def _first_draft_width(self, draft_len: FloatArray) -> FloatArray:
        """Tokens per request of a draft head's first forward: every token the verify step
        scheduled (the engine profile's draft_first_forward = scheduled), else one."""
        if self.engine.draft_first_forward == "scheduled":
            return self.verify_width(draft_len)
        return np.ones_like(draft_len)

    def draft(self, batch: npt.ArrayLike, draft_len: npt.ArrayLike, context: npt.ArrayLike,
              group: npt.ArrayLike) -> Breakdown:
        mech = self.r.mechanism
        if mech.needs_draft_model and self.draft_layer_model is None:  # resolve() checks it
            raise ScenarioError(
                "draft_model",
                f"the {mech.name} needs a draft model that shares {self.r.model.name}'s tokenizer",
            )
        scale = 1.0
        if self.r.scenario.rho is not None and self.rho_native > 0:
            scale = self.r.scenario.rho / self.rho_native
        # a head of its own shape has its own G (a G override reshapes the target)
        head_group = self.head.model.group_size if self.head_own_shape else group
        out = draft_time(
            self.head, self.draft_layer_model, self.r.mechanism, batch, draft_len, context,
            head_group, layer_scale=scale,
            tokens_of=lambda bb, ww: graph_shape(self.engine, bb, ww)[0],
            first_forward_width=self._first_draft_width(np.asarray(draft_len, np.float64)),
            target_hidden=float(self.r.model.hidden),
        )
        b = np.asarray(batch, dtype=np.float64)
        d = np.asarray(draft_len, dtype=np.float64)
        forwards, eager_kernels = self._draft_engine_costs(b, d)
        drafted = apply_engine_profile(self.engine, out, self.r.hardware,
                                       eager_kernels=eager_kernels, draft_forwards=forwards)
        ov = self.r.scenario.hardware_overrides
        if ov is not None and ov.draft_cost_scale is not None:  # backed out of benchmarks
            drafted = {k: v * ov.draft_cost_scale for k, v in drafted.items()}
        return drafted

    def memory_bytes(self, batch: npt.ArrayLike, context: npt.ArrayLike,
                     group: npt.ArrayLike) -> FloatArray:
        """Per-GPU bytes: target + draft weights, target + draft KV cache."""
        r, sc = self.r, self.r.scenario
        b, s, g = (np.asarray(x, dtype=np.float64) for x in (batch, context, group))
        weights = (_weight_bytes(r.model, sc.dtype, sc.expert_dtype)
                   * (r.layers / r.model.layers) / sc.tp)
        kv = self._kv_bytes(self.target, b, s, g, r.layers)
        return np.asarray(weights + kv + self.draft_memory_bytes(b, s, g), dtype=np.float64)

    def largest_batches(self, context: int, upto: int) -> tuple[int | None, int | None]:
        """The largest B ≤ `upto` whose point fits in memory (the drafter's weights and KV
        included), and whose plain decoding does: exact, every B counted, not a grid's."""
        b = np.arange(1, upto + 1, dtype=np.float64)
        total = self.memory_bytes(b, context, self.r.group)
        plain = total - self.draft_memory_bytes(b, context, self.r.group)
        hbm = self.r.hardware.hbm_bytes
        fits, plain_fits = np.nonzero(total <= hbm)[0], np.nonzero(plain <= hbm)[0]
        return (int(b[fits[-1]]) if fits.size else None,
                int(b[plain_fits[-1]]) if plain_fits.size else None)

    def draft_memory_bytes(self, batch: npt.ArrayLike, context: npt.ArrayLike,
                           group: npt.ArrayLike) -> FloatArray:
        """Per-GPU bytes the drafter adds: its weights and its own KV cache (0 for a lookup)."""
        r, sc = self.r, self.r.scenario
        b, s, g = (np.asarray(x, dtype=np.float64) for x in (batch, context, group))
        bw = BYTES_PER_ELEMENT[sc.dtype]
        mech = r.mechanism
        draft_w = np.zeros(1)
        draft_kv = np.zeros(1)
        if mech.draft_style != "lookup":
            if mech.draft_layers is None and self.draft_layer_model is not None:
                dm = self.draft_layer_model.model
                draft_w = np.asarray(_weight_bytes(dm, sc.dtype, sc.dtype) / sc.tp)
                draft_kv = self._kv_bytes(self.draft_layer_model, b, s, dm.group_size, dm.layers)
            elif mech.draft_layers:
                m = self.head.model
                if mech.uses_target_mtp_layers and m.mtp_params_b is not None:
                    # the checkpoint's MTP modules (embedding and head shared with the target)
                    draft_w = np.asarray(m.mtp_params_b * 1e9 * bw / sc.tp)
                else:
                    ffn = m.ffn_intermediate or m.moe_intermediate * (
                        m.experts_per_tok + m.n_shared_experts
                    )
                    per_layer = m.attention_params_per_layer() + m.mlp_matrices * m.hidden * ffn
                    vocab = mech.draft_vocab or 0  # heads with their own vocab carry an lm_head
                    draft_w = np.asarray(
                        (mech.draft_layers * per_layer * bw
                         + vocab * m.hidden * BYTES_PER_ELEMENT[LOGITS_DTYPE]) / sc.tp
                    )
                head_g = m.group_size if self.head_own_shape else g
                draft_kv = self._kv_bytes(self.head, b, s, head_g, float(mech.draft_layers))
        return np.asarray(draft_w + draft_kv, dtype=np.float64)

    @staticmethod
    def _kv_bytes(lm: LayerModel, b: FloatArray, s: FloatArray, g: npt.ArrayLike,
                  layers: float) -> FloatArray:
        m = lm.model
        b_kv = BYTES_PER_ELEMENT[lm.kv_dtype]
        _, kv_rank, _ = lm.heads_per_rank(np.asarray(g, dtype=np.float64))
        per_token_layer = (
            m.head_dim * b_kv if m.attention_kind == "mla" else 2.0 * kv_rank * m.head_dim * b_kv
        )
        scale = layers / m.layers
        sliding = min(m.sliding_layers, m.n_attention_layers) * scale if m.sliding_window else 0.0
        full = m.n_attention_layers * scale - sliding
        s_slide = np.minimum(s, m.sliding_window) if sliding else s
        kv = b * per_token_layer * (full * s + sliding * s_slide)
        if m.mamba is not None:  # Mamba-2 layers: one recurrent state per sequence, any context
            kv = kv + b * m.mamba_layers * scale * m.mamba.state_bytes_per_seq() / lm.tp
        return np.asarray(kv, dtype=np.float64)

    def prefill_per_step(self, batch: FloatArray, context: FloatArray, group: FloatArray,
                         output_tokens: npt.ArrayLike | None = None
                         ) -> tuple[FloatArray, float]:
        """(p, f) of `GridResult`: with N output tokens a request, B·S/N prompt tokens enter a
        plain step in steady state; each costs what a chunk of PREFILL_CHUNK_TOKENS (at most
        the prompt) adds to a decode step of B tokens, its attention over half the prompt (the
        mean prefix). f = 1 + ρ: the drafter's layers prefill the prompt too (1 for a lookup).
        (0, 1) without N: decode steps only. `output_tokens`: N per element instead of the
        scenario's (a benchmark run's own lengths, `context` then its prompt); ≤ 0 there:
        decode steps only."""
        n = self.r.scenario.output_tokens if output_tokens is None else output_tokens
        if n is None or not np.any(np.asarray(n) > 0):
            return np.zeros(()), 1.0
        n_arr = np.asarray(n, dtype=np.float64)
        chunk = np.minimum(context, float(PREFILL_CHUNK_TOKENS))
        half = np.maximum(context / 2.0, 1.0)
        with_chunk = total(self.verify(batch, 1.0 + chunk / batch, half, group))
        alone = total(self.verify(batch, 1.0, half, group))
        per_token = np.maximum(with_chunk - alone, 0.0) / chunk
        f = 1.0 if self.r.mechanism.draft_style == "lookup" else 1.0 + self.rho
        per_step = batch * context / np.maximum(n_arr, 1.0) * per_token
        return np.asarray(np.where(n_arr > 0, per_step, 0.0), dtype=np.float64), f

    def acceptance(self, draft_len: npt.ArrayLike) -> ALResult:
        sc = self.r.scenario
        return acceptance_length(sc.acceptance, self.r.mechanism, draft_len, sc.draft_len,
                                 self.r.model)

    # -- the grid ---------------------------------------------------------------------
    def grid(
        self,
        batch: npt.ArrayLike,
        draft_len: npt.ArrayLike,
        context: npt.ArrayLike | None = None,
        group: npt.ArrayLike | None = None,
        al: ALResult | None = None,
        with_breakdowns: bool = False,
    ) -> GridResult:
        sc = self.r.scenario
        b = np.asarray(batch, dtype=np.float64)
        d = np.asarray(draft_len, dtype=np.float64)
        s = np.asarray(context if context is not None else sc.context, dtype=np.float64)
        g = np.asarray(group if group is not None else self.r.group, dtype=np.float64)
        width = self.verify_width(d)
        al_res = al if al is not None else self.acceptance(d)
        base = self.verify(b, 1.0, s, g)
        spec = self.verify(b, width, s, g)
        drafted = self.draft(b, d, s, g)
        if self.step_correction is not None:  # measured steps replace the model's, scaled
            f0 = self.step_correction.factor(b, np.zeros_like(d))
            fd = self.step_correction.factor(b, d)
            base = {k: v * f0 for k, v in base.items()}
            spec = {k: v * fd for k, v in spec.items()}
            if self.step_correction.includes_draft:
                drafted = {k: v * fd for k, v in drafted.items()}
        t_base, t_spec, t_draft = total(base), total(spec), total(drafted)
        al_arr = al_res.acceptance_length
        p, f_draft = self.prefill_per_step(b, s, g)
        f = np.where(d > 0, f_draft, 1.0)  # at D = 0 no drafter prefills
        step = t_spec + t_draft + al_arr * p * f
        speedup = (t_base + p) * al_arr / step
        o_d = self.draft_overhead_launch_bound(d)
        mem = self.memory_bytes(b, s, g)
        shape = np.broadcast_shapes(speedup.shape, mem.shape)
        per_user = al_arr / step
        base_user = 1.0 / (t_base + p)
        return GridResult(
            acceptance_length=np.broadcast_to(al_arr, shape),
            al_extrapolated=np.broadcast_to(al_res.extrapolated, shape),
            al_provenance=al_res.provenance,
            t_verif_base_s=np.broadcast_to(t_base, shape),
            t_verif_spec_s=np.broadcast_to(t_spec, shape),
            t_draft_s=np.broadcast_to(t_draft, shape),
            speedup=np.broadcast_to(speedup, shape),
            speedup_launch_bound=np.broadcast_to(al_arr / (1.0 + o_d), shape),
            draft_overhead_launch_bound=np.broadcast_to(o_d, shape),
            tokens_per_s_per_user=np.broadcast_to(per_user, shape),
            tokens_per_s_per_gpu=np.broadcast_to(per_user * b / sc.tp, shape),
            baseline_tokens_per_s_per_user=np.broadcast_to(base_user, shape),
            baseline_tokens_per_s_per_gpu=np.broadcast_to(base_user * b / sc.tp, shape),
            attention_fraction=np.broadcast_to(base["attention"] / t_base, shape),
            memory_bytes=np.broadcast_to(mem, shape),
            fits_in_memory=np.broadcast_to(mem <= self.r.hardware.hbm_bytes, shape),
            t_prefill_s=np.broadcast_to(p, shape),
            prefill_draft_factor=np.broadcast_to(f, shape),
            verify_base=base if with_breakdowns else {},
            verify_spec=spec if with_breakdowns else {},
            draft=drafted if with_breakdowns else {},
        )


def _legacy_hypothetical(ov: HardwareOverrides) -> bool:
    """Overrides without the benchmark step terms read as hypothetical hardware, as every
    override did before those terms existed (a step overhead alone from --timings-file keeps its
    numbers); with them, the step terms were fitted on the measured tables and keep them."""
    return not any(getattr(ov, k) is not None for k in STEP_TERM_OVERRIDES)


@lru_cache(maxsize=256)
def scenario_model(scenario: Scenario) -> ScenarioModel:
    """Cached: the UI re-evaluates the same scenario on every rerun."""
    return ScenarioModel(resolve(scenario))

"""This deployment's step-cost terms backed out of benchmark runs with forced acceptance.

From runs at several batches with D = 0 and D > 0 (explorer/export/bench_plan.py), each step
time is TPOT·AL (TPOT at D = 0). The model's step splits into what the terms act on:

    T(B, W) = T_model(B, 1) − overhead_model + step_overhead + c_tok·B·W
              + g·(T_model(B, W) − T_model(B, 1)) + s·T_draft_model(B, D)

- the per-step overhead and the per-token cost c_tok come from the D = 0 runs (two unknowns,
  linear least squares on relative residuals, as `fit_step_overheads` fits its overhead and
  scale); both are ≥ 0 (costs the model lacks), c_tok at most 100 µs per token;
- the verify growth scale g and the draft cost scale s from the D > 0 runs, on what is left once
  the fitted plain step is taken off (as `back_out_draft_cost` backs T_draft out of a step);
  bounded to [0.2, 5] and [0.1, 10], and where the runs cannot tell them apart (one batch, or
  T_draft and the verify growth moving alike) g stays 1 and s alone is fitted.

The result carries them as HardwareOverrides (step_overhead_s, step_cost_per_token_s,
verify_growth_scale, draft_cost_scale): applied to a scenario they price every step the same way
(explorer/model/grid.py), travel in saved scenarios and their share links, and `predicted_after_s`
is exactly the model's step with them applied.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from explorer.calibration._shared import FloatArray, FrozenResult, flat, mape, ro_float
from explorer.model.grid import ScenarioModel
from explorer.model.layers import total
from explorer.specs.hardware import HardwareOverrides

MAX_TOKEN_COST_S = 1e-4  # HardwareOverrides.step_cost_per_token_s's bound
GROWTH_BOUNDS = (0.2, 5.0)
DRAFT_BOUNDS = (0.1, 10.0)


class BenchBackOut(FrozenResult):
    """The fitted terms, the model before and after at every run, and what could not be fitted."""

    overrides: HardwareOverrides
    step_overhead_before_s: float
    step_overhead_s: float
    step_cost_per_token_s: float
    verify_growth_scale: float
    draft_cost_scale: float
    batch: FloatArray
    draft_len: FloatArray
    acceptance_length: FloatArray
    context: FloatArray
    measured_s: FloatArray
    predicted_before_s: FloatArray
    predicted_after_s: FloatArray
    mape_before: float
    mape_after: float
    notes: tuple[str, ...]
    summary: str


def _lstsq(cols: list[FloatArray], t: FloatArray) -> tuple[FloatArray, int]:
    a = np.stack([c / t for c in cols], axis=1)
    rhs = np.ones_like(t)
    rank = int(np.linalg.matrix_rank(a))
    sol, *_ = np.linalg.lstsq(a, rhs, rcond=None)
    return np.asarray(sol, dtype=np.float64), rank


def back_out_step_terms(
    scenario_model: ScenarioModel,
    batch: npt.ArrayLike,
    draft_len: npt.ArrayLike,
    acceptance_length: npt.ArrayLike,
    tpot_s: npt.ArrayLike,
    context: npt.ArrayLike | None = None,
    label: str = "benchmark runs",
) -> BenchBackOut:
    """Fit the step terms to runs (B, D, forced AL, measured TPOT), each at its context (mean
    KV length while decoding; the scenario's by default).

    `scenario_model` is the scenario without step terms of its own (the fit replaces them)."""
    ctx = scenario_model.r.scenario.context if context is None else context
    b, d, al, tpot, s_ctx = flat(batch, draft_len, acceptance_length, tpot_s, ctx)
    if tpot.size == 0:
        raise ValueError("back_out_step_terms needs at least one run")
    if not np.isfinite(tpot).all() or tpot.min() <= 0:
        raise ValueError("tpot_s must be finite and > 0")
    al = np.where(d > 0, al, 1.0)
    if not np.isfinite(al).all() or (al < 1).any() or (al > 1 + d + 1e-9).any():
        raise ValueError("acceptance_length must lie in [1, 1+D]")
    sm = scenario_model
    g_ = sm.r.group
    t = tpot * al  # one step: AL tokens per request
    w = sm.verify_width(d)
    one = total(sm.verify(b, 1.0, s_ctx, g_))
    full = total(sm.verify(b, w, s_ctx, g_))
    drafted = np.where(d > 0, total(sm.draft(b, d, s_ctx, g_)), 0.0)
    before = np.where(d > 0, full + drafted, one)
    ovh0 = sm.step_overhead_s
    x0 = one - ovh0  # the plain step without the engine's per-step overhead
    growth = full - one
    notes: list[str] = []

    plain = d == 0
    ovh, c_tok = ovh0, 0.0
    if not plain.any():
        notes.append("no D = 0 run: the step overhead and per-token cost keep the model's")
    else:
        tp, xp, bp = t[plain], x0[plain], b[plain]
        if np.unique(bp).size >= 2:
            (ovh, c_tok), _ = _lstsq([np.ones_like(tp), bp], tp - xp)
        else:
            notes.append("D = 0 runs at one batch only: the per-token cost is not separable "
                         "from the step overhead (fitted the overhead alone)")
            ovh = float(np.sum((tp - xp) / tp) / np.sum(1.0 / tp))
        if c_tok < 0:
            notes.append(f"the free fit gave a negative per-token cost ({c_tok * 1e6:.2f} µs): "
                         "refitted at 0")
            c_tok = 0.0
            ovh = float(np.sum((tp - xp) / tp) / np.sum(1.0 / tp))
        if ovh < 0:
            notes.append(f"the free fit gave a negative step overhead ({ovh * 1e3:.3f} ms): "
                         "refitted at 0")
            ovh = 0.0
            if np.unique(bp).size >= 2:
                c_tok = max(0.0, float(np.sum((tp - xp) * bp / tp ** 2)
                                       / np.sum((bp / tp) ** 2)))
        if c_tok > MAX_TOKEN_COST_S:
            notes.append(f"per-token cost {c_tok * 1e6:.1f} µs clipped at "
                         f"{MAX_TOKEN_COST_S * 1e6:.0f} µs")
            c_tok = MAX_TOKEN_COST_S
        ovh = float(min(max(ovh, 0.0), 0.1))
    base = x0 + ovh + c_tok * b * w  # the fitted plain part at W tokens per sequence

    g, s = 1.0, 1.0
    spec = d > 0
    if spec.any():
        rest = t[spec] - base[spec]
        gr, dr, ts = growth[spec], drafted[spec], t[spec]
        fitted_both = False
        if np.unique(b[spec]).size >= 2 and dr.max() > 0:
            sol, rank = _lstsq([gr, dr], rest)
            if rank >= 2 and GROWTH_BOUNDS[0] <= sol[0] <= GROWTH_BOUNDS[1] and \
                    DRAFT_BOUNDS[0] <= sol[1] <= DRAFT_BOUNDS[1]:
                g, s = float(sol[0]), float(sol[1])
                fitted_both = True
        if not fitted_both:
            if dr.max() > 0:
                notes.append("the runs cannot tell verify growth from draft cost apart (one "
                             "batch, or a fit outside the bounds): verify growth kept at 1, the "
                             "draft cost scale fitted alone")
                s = float(np.sum((rest - gr) * dr / ts ** 2) / np.sum((dr / ts) ** 2))
                s = float(np.clip(s, *DRAFT_BOUNDS))
            else:
                g = float(np.sum(rest * gr / ts ** 2) / np.sum((gr / ts) ** 2))
                g = float(np.clip(g, *GROWTH_BOUNDS))
    else:
        notes.append("no D > 0 run: verify growth and draft cost keep the model's")

    after = np.where(d > 0, base + g * growth + s * drafted, base)
    overrides = HardwareOverrides(
        step_overhead_s=ovh, step_cost_per_token_s=c_tok, verify_growth_scale=g,
        draft_cost_scale=s, label=f"step terms backed out of {t.size} {label}"[:200])
    m_before, m_after = mape(before, t), mape(after, t)
    summary = (f"step overhead {ovh0 * 1e3:.3f}→{ovh * 1e3:.3f} ms, {c_tok * 1e6:.2f} µs per "
               f"scheduled token, verify growth × {g:.2f}, draft cost × {s:.2f}; step-time MAPE "
               f"{m_before:.1f}% → {m_after:.1f}% on {t.size} runs")
    return BenchBackOut(
        overrides=overrides, step_overhead_before_s=ovh0, step_overhead_s=ovh,
        step_cost_per_token_s=c_tok, verify_growth_scale=g, draft_cost_scale=s,
        batch=ro_float(b), draft_len=ro_float(d), acceptance_length=ro_float(al),
        context=ro_float(s_ctx), measured_s=ro_float(t), predicted_before_s=ro_float(before),
        predicted_after_s=ro_float(after), mape_before=m_before, mape_after=m_after,
        notes=tuple(notes), summary=summary)

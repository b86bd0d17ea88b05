"""This deployment's step-cost terms backed out of benchmark runs with forced acceptance.

From runs at several batches with D = 0 and D > 0 (explorer/export/bench_plan.py), each step
time is TPOT·AL (TPOT at D = 0). The model's step splits into what the terms act on:

    T(B, W) = T_model(B, 1) − overhead_model + step_overhead + c_tok·B·W
              + g·(T_model(B, W) − T_model(B, 1)) + s·T_draft_model(B, D)
              + AL·f·(g·p_model + c_tok·B·input/output)

The last line is the prompt prefill a step of a whole-request run carried (the runs' mean input
and output tokens per request given): p_model, the model's prefill per plain step
(explorer/model/grid.py `prefill_per_step`), is a wider verify step, so the terms scale it as
the model does once they are applied; AL times it with speculation, f = 1 + ρ where the drafter
prefills too. Left out, the prefill would read as step overhead and draft cost.

- the per-step overhead and the per-token cost c_tok come from the D = 0 runs (two unknowns,
  linear least squares on relative residuals, as `fit_step_overheads` fits its overhead and
  scale); both are ≥ 0 (costs the model lacks), c_tok at most 100 µs per token;
- the verify growth scale g and the draft cost scale s from the D > 0 runs, on what is left once
  the fitted plain step is taken off (as `back_out_draft_cost` backs T_draft out of a step);
  bounded to [0.2, 5] and [0.1, 10], and where the runs cannot tell them apart (one batch, or
  T_draft and the verify growth moving alike) g stays 1 and s alone is fitted. The prefill
  ties the two fits through g: where the runs tell all four terms apart (D = 0 and D > 0 at two
  batches or more) they are fitted at once (bounded linear least squares on the same relative
  residuals); otherwise the two fits alternate until they settle.

The result carries them as HardwareOverrides (step_overhead_s, step_cost_per_token_s,
verify_growth_scale, draft_cost_scale): applied to a scenario they price every step the same way
(explorer/model/grid.py), travel in saved scenarios and their share links, and `predicted_after_s`
is exactly the model's step with them applied.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.optimize import lsq_linear

from explorer.calibration._shared import FloatArray, FrozenResult, flat, mape, ro_float
from explorer.model.grid import ScenarioModel
from explorer.model.layers import total
from explorer.specs.hardware import HardwareOverrides

MAX_TOKEN_COST_S = 1e-4  # HardwareOverrides.step_cost_per_token_s's bound
GROWTH_BOUNDS = (0.2, 5.0)
DRAFT_BOUNDS = (0.1, 10.0)
# Alternations of the plain and speculative fits (they share g through the prefill); a handful
# settle them, the bound only stops a pathological case.
MAX_PASSES = 50


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
    # the prompt prefill each step carried (whole requests), before and after: 0 without lengths
    prefill_before_s: FloatArray
    prefill_after_s: FloatArray
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
    input_len: npt.ArrayLike | None = None,
    output_len: npt.ArrayLike | None = None,
) -> BenchBackOut:
    """Fit the step terms to runs (B, D, forced AL, measured TPOT), each at its context (mean
    KV length while decoding; the scenario's by default, input + output/2 with the lengths).

    With the runs' mean input and output tokens per request, each measured step also carried
    the prefill of the requests that replaced finished ones, as the model prices whole requests
    (`ScenarioModel.prefill_per_step` with N = the run's output): that prefill is part of the
    fit, scaled by the terms as the model scales it (verify growth × g on the chunk's kernels,
    c_tok per prompt token), so the per-step and per-draft terms are not inflated by it.
    Without the lengths, decode steps only.

    `scenario_model` is the scenario without step terms of its own (the fit replaces them)."""
    if (input_len is None) != (output_len is None):
        raise ValueError("give both input_len and output_len, or neither")
    whole = input_len is not None and output_len is not None
    ctx = scenario_model.r.scenario.context if context is None else context
    if context is None and whole:
        ctx = np.asarray(input_len, dtype=np.float64) + np.asarray(output_len,
                                                                   dtype=np.float64) / 2.0
    isl_in = input_len if input_len is not None else 1.0
    osl_in = output_len if output_len is not None else 1.0
    b, d, al, tpot, s_ctx, isl, osl = flat(batch, draft_len, acceptance_length, tpot_s, ctx,
                                           isl_in, osl_in)
    if tpot.size == 0:
        raise ValueError("back_out_step_terms needs at least one run")
    if not np.isfinite(tpot).all() or tpot.min() <= 0:
        raise ValueError("tpot_s must be finite and > 0")
    if whole and (not (np.isfinite(isl).all() and np.isfinite(osl).all())
                  or (isl < 1).any() or (osl < 1).any()):
        raise ValueError("input_len and output_len must be ≥ 1 token per request")
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
    # The prefill a step carried: AL·f·p, p = p0 at the model's terms; with the terms applied
    # p = g·p0 + c_tok·(B·input/output prompt tokens): the chunk is a wider verify.
    if whole:
        p0, f = sm.prefill_per_step(b, isl, np.full(b.shape, float(g_)), output_tokens=osl)
        carried = al * np.where(d > 0, f, 1.0)
        prompt_tokens = carried * b * isl / osl
        prefill0 = carried * p0
    else:
        prompt_tokens = prefill0 = np.zeros_like(t)
    before = np.where(d > 0, full + drafted, one) + prefill0
    ovh0 = sm.step_overhead_s
    x0 = one - ovh0  # the plain step without the engine's per-step overhead
    growth = full - one
    tok_col = b * w + prompt_tokens  # what c_tok multiplies: every token a step schedules
    grow_col = growth + prefill0  # what g multiplies: the verify growth and the prefill chunk

    plain, spec = d == 0, d > 0
    g, s = 1.0, 1.0
    ovh, c_tok = ovh0, 0.0
    notes: list[str] = []
    joint = _fit_joint(t, x0, tok_col, grow_col, drafted, b, plain, spec) if whole else None
    if joint is not None:
        (ovh, c_tok, g, s), notes = joint
    else:
        # The plain step's terms depend on g through the prefill it carried, g on them:
        # alternate until they settle (one pass without prefill).
        for _ in range(MAX_PASSES):
            prev = (ovh, c_tok, g, s)
            ovh, c_tok, plain_notes = _fit_plain(t[plain], x0[plain] + g * prefill0[plain],
                                                 b[plain], tok_col[plain], ovh0)
            g, s, spec_notes = _fit_spec(t[spec], x0[spec] + ovh + c_tok * tok_col[spec],
                                         grow_col[spec], drafted[spec], b[spec])
            if np.allclose(prev, (ovh, c_tok, g, s), rtol=1e-9, atol=0.0):
                break
        else:
            notes.append(f"the plain and speculative fits had not settled after {MAX_PASSES} "
                         "passes: the terms are the last pass's")
        notes += plain_notes + spec_notes

    prefill_after = g * prefill0 + c_tok * prompt_tokens
    after = x0 + ovh + c_tok * b * w + g * growth + s * drafted + prefill_after
    overrides = HardwareOverrides(
        step_overhead_s=ovh, step_cost_per_token_s=c_tok, verify_growth_scale=g,
        draft_cost_scale=s, label=f"step terms backed out of {t.size} {label}"[:200])
    m_before, m_after = mape(before, t), mape(after, t)
    summary = (f"step overhead {ovh0 * 1e3:.3f}→{ovh * 1e3:.3f} ms, {c_tok * 1e6:.2f} µs per "
               f"scheduled token, verify growth × {g:.2f}, draft cost × {s:.2f}; step-time MAPE "
               f"{m_before:.1f}% → {m_after:.1f}% on {t.size} runs")
    if whole:
        summary += (f" (whole requests: the prompt prefill each step carried, "
                    f"{float(np.mean(prefill_after / t)):.0%} of a measured step on average, "
                    "is part of the fit)")
    return BenchBackOut(
        overrides=overrides, step_overhead_before_s=ovh0, step_overhead_s=ovh,
        step_cost_per_token_s=c_tok, verify_growth_scale=g, draft_cost_scale=s,
        batch=ro_float(b), draft_len=ro_float(d), acceptance_length=ro_float(al),
        context=ro_float(s_ctx), measured_s=ro_float(t), predicted_before_s=ro_float(before),
        predicted_after_s=ro_float(after), prefill_before_s=ro_float(prefill0),
        prefill_after_s=ro_float(prefill_after), mape_before=m_before, mape_after=m_after,
        notes=tuple(notes), summary=summary)


def _fit_joint(t: FloatArray, x0: FloatArray, tok_col: FloatArray, grow_col: FloatArray,
               drafted: FloatArray, b: FloatArray, plain: npt.NDArray[np.bool_],
               spec: npt.NDArray[np.bool_]
               ) -> tuple[tuple[float, float, float, float], list[str]] | None:
    """(step overhead, c_tok, g, s) in one least-squares fit over every run on relative
    residuals, each term within its bounds, where the prefill ties them (whole requests) and
    the runs tell all four apart: D = 0 and D > 0 runs, each at two batches or more, a drafter
    that costs something. None otherwise (the fits then alternate, with their fallbacks)."""
    if (np.unique(b[plain]).size < 2 or np.unique(b[spec]).size < 2
            or not drafted[spec].size or drafted[spec].max() <= 0):
        return None
    # unknowns in units of their size (ms, 10 µs, 1, 1) so the columns are comparable
    unit = np.array([1e-3, 1e-5, 1.0, 1.0])
    cols = [np.ones_like(t), tok_col, grow_col, drafted]
    a = np.stack([c / t for c in cols], axis=1) * unit
    if int(np.linalg.matrix_rank(a)) < 4:
        return None
    names = ("step overhead", "per-token cost", "verify growth", "draft cost")
    lo = np.array([0.0, 0.0, GROWTH_BOUNDS[0], DRAFT_BOUNDS[0]])
    hi = np.array([0.1, MAX_TOKEN_COST_S, GROWTH_BOUNDS[1], DRAFT_BOUNDS[1]])
    fit = lsq_linear(a, (t - x0) / t, bounds=(lo / unit, hi / unit), method="bvls")
    x = np.clip(fit.x * unit, lo, hi)
    at = [n for n, v, low, high in zip(names, x, lo, hi, strict=True)
          if np.isclose(v, low, rtol=1e-9, atol=1e-15) or np.isclose(v, high, rtol=1e-9)]
    notes = [f"fitted at once with the prefill; at a bound: {', '.join(at)}"] if at else []
    ovh, c_tok, g, s = (float(v) for v in x)
    return (ovh, c_tok, g, s), notes


def _fit_plain(tp: FloatArray, xp: FloatArray, bp: FloatArray, cp: FloatArray,
               ovh0: float) -> tuple[float, float, list[str]]:
    """(step overhead, c_tok) from the D = 0 steps `tp`, the model's part without them `xp` (its
    prefill at the current g included) and the tokens each step scheduled `cp` (B, plus the
    prompt tokens it prefilled)."""
    notes: list[str] = []
    if tp.size == 0:
        notes.append("no D = 0 run: the step overhead and per-token cost keep the model's")
        return ovh0, 0.0, notes
    c_tok = 0.0
    if np.unique(bp).size >= 2:
        (ovh, c_tok), _ = _lstsq([np.ones_like(tp), cp], tp - xp)
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
            c_tok = max(0.0, float(np.sum((tp - xp) * cp / tp ** 2) / np.sum((cp / tp) ** 2)))
    if c_tok > MAX_TOKEN_COST_S:
        notes.append(f"per-token cost {c_tok * 1e6:.1f} µs clipped at "
                     f"{MAX_TOKEN_COST_S * 1e6:.0f} µs")
        c_tok = MAX_TOKEN_COST_S
    return float(min(max(ovh, 0.0), 0.1)), float(c_tok), notes


def _fit_spec(ts: FloatArray, base: FloatArray, gr: FloatArray, dr: FloatArray,
              bs: FloatArray) -> tuple[float, float, list[str]]:
    """(verify growth scale g, draft cost scale s) from the D > 0 steps `ts`, what the fitted
    plain terms give of them `base`, what g scales `gr` and what s scales `dr`."""
    if ts.size == 0:
        return 1.0, 1.0, ["no D > 0 run: verify growth and draft cost keep the model's"]
    rest = ts - base
    if np.unique(bs).size >= 2 and dr.max() > 0:
        sol, rank = _lstsq([gr, dr], rest)
        if rank >= 2 and GROWTH_BOUNDS[0] <= sol[0] <= GROWTH_BOUNDS[1] and \
                DRAFT_BOUNDS[0] <= sol[1] <= DRAFT_BOUNDS[1]:
            return float(sol[0]), float(sol[1]), []
    if dr.max() > 0:
        s = float(np.sum((rest - gr) * dr / ts ** 2) / np.sum((dr / ts) ** 2))
        return 1.0, float(np.clip(s, *DRAFT_BOUNDS)), [
            "the runs cannot tell verify growth from draft cost apart (one batch, or a fit "
            "outside the bounds): verify growth kept at 1, the draft cost scale fitted alone"]
    g = float(np.sum(rest * gr / ts ** 2) / np.sum((gr / ts) ** 2))
    return float(np.clip(g, *GROWTH_BOUNDS)), 1.0, []

"""AL(D) for a scenario from its acceptance source, with validity, provenance and uncertainty.

A measured curve holds where it was measured (monotone interpolation between its points). A
block drafter's curve says nothing at other D. A chain curve is extended past its last point
only by an acceptance model anchored on its points — a per-position decay fitted to the curve
(three points or more) or the mechanism's prior shape scaled to it — whose per-position
acceptance is always below 1; a single point fixes the level only. Every such AL is flagged
model-extended.

Uncertainty: each source carries seeded draws of AL at D = 0..MAX_DRAFT_LEN (draws are an array
axis). A prior's level varies log-normally with the spread of the published points it rests on;
a curve's model-extended part varies with its mechanism's spread, within what non-increasing
acceptance allows; measured points without counts, an i.i.d. α and a fixed AL have no spread.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
from scipy.interpolate import PchipInterpolator

from explorer.base.limits import MAX_DRAFT_LEN
from explorer.base.mechanisms import DEFAULT_MECHANISM
from explorer.model.acceptance import (
    al_iid,
    fit_decaying,
    fit_level,
    level_through,
    marginal_from_conditional,
    scaled_al,
)
from explorer.model.acceptance_evidence import (
    MIX_SOURCE,
    Evidence,
    evidence,
    evidence_draft_lens,
    evidence_for,
    other_family_spread,
    prior_marginal,
)
from explorer.specs.architecture import ModelSpec
from explorer.specs.measured import AcceptanceCurve
from explorer.specs.mechanism import MechanismSpec
from explorer.specs.scenario import Acceptance

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
# Curves with at least this many measured points get their own fitted per-position decay;
# fewer points carry the mechanism's prior shape.
MIN_POINTS_FOR_OWN_DECAY = 3
# Uncertainty: this many seeded draws per source; intervals are these quantiles (80 %).
N_DRAWS = 400
DRAW_SEED = 11
INTERVAL = (0.1, 0.9)
POSITIONS = MAX_DRAFT_LEN  # the draw tables cover D = 0..POSITIONS


def standard_normal(key: str, n: int = N_DRAWS) -> FloatArray:
    """Seeded N(0, 1) draws, independent per key (a mechanism's draws do not move another's)."""
    rng = np.random.default_rng([DRAW_SEED, zlib.crc32(key.encode("utf-8"))])
    return np.asarray(rng.standard_normal(n), dtype=np.float64)


@dataclass(frozen=True)
class ALResult:
    """AL at each D (NaN where the source says nothing), which points are model-extended (outside
    the D range of the evidence), where it comes from, and its draws."""

    acceptance_length: FloatArray
    extrapolated: BoolArray  # model-extended: an acceptance model, not the evidence, gives AL
    provenance: str
    # How close the evidence is: measured (a curve), same model / same family / other family
    # (published points behind a prior), none (an assumption), user (α or AL set by hand).
    evidence: str = "measured"
    draw_table: FloatArray | None = None  # (N_DRAWS, POSITIONS + 1): AL draws at D = 0..
    draft_index: IntArray | None = None  # each element's D, an index into draw_table
    uncertainty: str = "no interval"  # what the draws vary
    temperature: str = ""  # greedy / sampled, where the evidence says

    @property
    def model_extended(self) -> BoolArray:
        return self.extrapolated

    def draws(self) -> FloatArray:
        """AL draws, shape (N_DRAWS, *acceptance_length.shape); NaN where AL is NaN. A source
        without spread gives one draw, the value itself."""
        al = self.acceptance_length
        if self.draw_table is None or self.draft_index is None:
            return np.asarray(al[None, ...], dtype=np.float64)
        out = self.draw_table[:, self.draft_index]
        return np.asarray(np.where(np.isfinite(al), out, np.nan), dtype=np.float64)

    def interval(self) -> tuple[FloatArray, FloatArray]:
        """The 80 % interval of AL at each D (NaN where AL is)."""
        return quantiles(self.draws())


def quantiles(draws: FloatArray, q: tuple[float, float] = INTERVAL
              ) -> tuple[FloatArray, FloatArray]:
    """Low and high quantiles over the draw axis (0); NaN columns stay NaN, without warnings."""
    nan = ~np.isfinite(draws).all(axis=0)
    lo, hi = np.quantile(np.where(np.isfinite(draws), draws, 0.0), q, axis=0)
    return (np.asarray(np.where(nan, np.nan, lo), dtype=np.float64),
            np.asarray(np.where(nan, np.nan, hi), dtype=np.float64))


def uniform(key: str, n: int = N_DRAWS) -> FloatArray:
    """Seeded U[0, 1) draws, independent per key."""
    rng = np.random.default_rng([DRAW_SEED, zlib.crc32(key.encode("utf-8"))])
    return np.asarray(rng.random(n), dtype=np.float64)


def _index(d: FloatArray) -> IntArray:
    return np.asarray(np.clip(np.rint(np.nan_to_num(d)), 0, POSITIONS), dtype=np.int64)


def prior_conditional(mech: MechanismSpec, positions: int = MAX_DRAFT_LEN) -> FloatArray:
    """The prior's conditional per-position acceptance c_j = c_1·d^{j−1}, j = 1..positions."""
    j = np.arange(positions, dtype=np.float64)
    return np.asarray(np.clip(mech.first_rate * mech.decay**j, 0.0, 1.0), dtype=np.float64)


def _curve_name(curve: AcceptanceCurve) -> str:
    source = curve.source_text
    return f"measured curve '{curve.label}'" + (f" [{source}]" if source else "")


def _temperature_of(curve: AcceptanceCurve) -> str:
    t = curve.provenance.temperature if curve.provenance is not None else None
    if t is None:
        return "temperature not stated"
    return "greedy (T=0)" if t == 0 else f"sampled (T={t:g})"


NO_COUNTS = "measured points without counts: no interval at measured D"


def _measurement_noise(curve: AcceptanceCurve, xs: FloatArray, dd: FloatArray
                       ) -> tuple[FloatArray | None, str]:
    """Draws of the measurement error of a curve with standard errors, shape (N_DRAWS, dd):
    one standard normal per draw scaled by the SE, interpolated between measured D (0 at D=0,
    the last SE beyond: an extension moves with its anchor). One z for every D because the
    counts are nested (a draft accepted to position j counts at every i < j)."""
    if curve.al_std_errors is None:
        return None, NO_COUNTS
    se = np.asarray(curve.al_std_errors, dtype=np.float64)
    se_dd = np.interp(dd, np.concatenate([[0.0], xs]), np.concatenate([[0.0], se]))
    z = standard_normal(f"counts/{curve.label}")
    text = (f"measured points from counts: AL ± {se.min():.3g}–{se.max():.3g} (standard "
            "error; independent drafts assumed, so a lower bound for a request mix)")
    return se_dd[None, :] * z[:, None], text


def _block_al(curve: AcceptanceCurve, xs: FloatArray, ys: FloatArray, d: FloatArray, name: str,
              temp: str) -> ALResult:
    out = np.where(np.isin(d, xs), np.interp(d, xs, ys), np.nan)
    out = np.where(d == 0, 1.0, out)
    dd = np.arange(POSITIONS + 1, dtype=np.float64)
    noise, uncertainty = _measurement_noise(curve, xs, dd)
    draws = None
    if noise is not None:
        draws = np.clip(np.interp(dd, xs, ys)[None, :] + noise, 1.0, 1.0 + dd)
    return ALResult(np.asarray(out, dtype=np.float64), np.zeros_like(d, dtype=bool), name,
                    draw_table=draws, draft_index=None if draws is None else _index(d),
                    uncertainty=uncertainty, temperature=temp)


def _extension_draws(al: FloatArray, anchor: float, lo: FloatArray, hi: FloatArray,
                     extended: BoolArray, sigma: float, key: str) -> FloatArray:
    """Draws of a model-extended AL: its distance from the anchor point scaled log-normally
    (σ = the mechanism's published spread), kept within [lo, hi], the range non-increasing
    acceptance allows; measured D keep their value."""
    scale = np.exp(sigma * standard_normal(key))[:, None]
    drawn = np.clip(anchor + scale * (al[None, :] - anchor), lo, hi)
    return np.asarray(np.where(extended[None, :], drawn, al[None, :]), dtype=np.float64)


def curve_al(curve: AcceptanceCurve, draft_len: npt.ArrayLike, block: bool,
             shape: MechanismSpec | None = None) -> ALResult:
    """AL(D) of a measured curve; `shape` is the mechanism whose prior shape extends a chain
    curve of fewer than three points (default: the preset of the curve's mechanism)."""
    d = np.asarray(draft_len, dtype=np.float64)
    name = _curve_name(curve)
    temp = _temperature_of(curve)
    xs = np.asarray(curve.draft_lens, dtype=np.float64)
    ys = np.maximum.accumulate(np.asarray(curve.acceptance_lengths, dtype=np.float64))
    if block:
        return _block_al(curve, xs, ys, d, name, temp)
    if shape is None:
        from explorer.presets import mechanism_presets

        shape = mechanism_presets()[curve.mechanism or DEFAULT_MECHANISM]
    positions = max(POSITIONS, int(xs[-1]))
    dd = np.arange(positions + 1, dtype=np.float64)  # the whole table, D = 0..positions
    prior_m = marginal_from_conditional(prior_conditional(shape, positions))
    last = int(xs[-1])
    if len(xs) == 1:
        level = float(level_through(prior_m, last, ys[0] - 1.0))
        table = scaled_al(prior_m, level)
        extended = (dd != xs[0]) & (dd != 0)
        slope = (ys[0] - 1.0) / last
        # concave AL: at least the chord from (0, 1) below the point, at most its line above
        lo = np.where(dd < last, 1.0 + dd * slope, ys[0])
        hi = np.where(dd < last, ys[0], ys[0] + (dd - last) * slope)
        how = (f"a single point fixes the level only: the {shape.name} prior's shape scaled "
               f"(×{level:.3g}) to AL {ys[0]:g} at D={last}")
    else:
        x0 = np.concatenate([[0.0], xs])
        y0 = np.concatenate([[1.0], ys])
        inside = PchipInterpolator(x0, y0)(np.clip(dd, 0.0, xs[-1]))
        if len(xs) >= MIN_POINTS_FOR_OWN_DECAY:
            c1, decay = fit_decaying(xs, ys)
            cond = np.clip(c1 * decay ** np.arange(positions, dtype=np.float64), 0.0, 1.0)
            model_m_last = float(np.prod(cond[:last]))
            how = (f"a per-position decay fitted to the curve's {len(xs)} points, "
                   f"c_j = {c1:.3g}·{decay:.3g}^(j−1)")
        else:
            level = fit_level(prior_m, xs, ys)
            cond = prior_conditional(shape, positions)
            model_m_last = min(1.0, level * float(prior_m[last - 1]))
            how = f"the {shape.name} prior's shape scaled (×{level:.3g}) to the curve's points"
        # Non-increasing marginals: no position past the data beats the last segment's mean.
        slope = min(1.0, float((ys[-1] - ys[-2]) / (xs[-1] - xs[-2])))
        anchor = min(model_m_last, slope)
        tail = anchor * np.cumprod(cond[last:positions])  # marginals of positions last+1 …
        beyond = ys[-1] + np.concatenate([[0.0], np.cumsum(tail)])
        extended = dd > xs[-1]
        table = np.where(extended, beyond[np.clip(dd.astype(np.int64) - last, 0, None)], inside)
        lo = np.full_like(dd, ys[-1])
        hi = ys[-1] + np.maximum(dd - last, 0.0) * slope
    table = np.clip(table, 1.0, 1.0 + dd)
    hi = np.minimum(hi, 1.0 + dd)
    sigma = other_family_spread(shape.slug)
    draws = _extension_draws(table, float(ys[-1]), lo, hi, extended, sigma,
                             f"curve/{shape.slug}")
    noise, uncertainty = _measurement_noise(curve, xs, dd)
    if noise is not None:
        draws = np.clip(draws + noise, 1.0, 1.0 + dd)
    idx = _index(d)
    note = name
    if bool(np.any(extended[idx])):
        measured = ", ".join(f"{x:g}" for x in xs)
        note += f" — measured at D ∈ {{{measured}}}; model-extended elsewhere ({how})"
        uncertainty += (f"; the model-extended part varies with the {shape.name}'s published "
                        f"spread σ = {sigma:.2f}, within what non-increasing acceptance allows")
    return ALResult(np.asarray(table[idx], dtype=np.float64), np.asarray(extended[idx]), note,
                    draw_table=draws, draft_index=idx, uncertainty=uncertainty,
                    temperature=temp)


def acceptance_length(
    acceptance: Acceptance,
    mech: MechanismSpec,
    draft_len: npt.ArrayLike,
    scenario_draft_len: int,
    target: ModelSpec | None = None,
) -> ALResult:
    d = np.asarray(draft_len, dtype=np.float64)
    none = np.zeros_like(d, dtype=bool)
    if acceptance.kind == "iid" and acceptance.alpha is not None:
        return ALResult(al_iid(acceptance.alpha, d), none, f"i.i.d. α = {acceptance.alpha:g}",
                        evidence="user", uncertainty="set by hand: no interval")
    if acceptance.kind == "fixed" and acceptance.fixed_al is not None:
        al = np.where(d == scenario_draft_len, acceptance.fixed_al, np.nan)
        al = np.where(d == 0, 1.0, al)
        return ALResult(al, none, f"fixed AL = {acceptance.fixed_al:g} at D = {scenario_draft_len}",
                        evidence="user", uncertainty="set by hand: no interval")
    if acceptance.kind == "curve" and acceptance.curve is not None:
        result = curve_al(acceptance.curve, d, mech.is_block, mech)
        measured_on = curve_model(acceptance.curve)
        if target is not None and measured_on and not same_model(measured_on, target):
            return as_other_model(result, d, measured_on, target, mech)
        return result
    return prior_al(mech, d, target)


def curve_model(curve: AcceptanceCurve) -> str:
    """The model a curve says it was measured on ('' when it does not say)."""
    return (curve.provenance.model or "") if curve.provenance is not None else ""


def _model_key(name: str) -> str:
    """'meta-llama/Llama-3.1-8B-Instruct', 'Llama-3.1-8B(-Instruct)' → 'llama318binstruct',
    'llama318b': the name without organisation, brackets or punctuation."""
    last = name.strip().split("/")[-1].lower().replace("(", "").replace(")", "")
    return re.sub(r"[^a-z0-9]", "", last)


def same_model(measured_on: str, target: ModelSpec) -> bool:
    """Whether a curve's model names the target: the preset's slug or name, or one of them with
    a suffix (-Instruct, a quantization: the same weights served another way)."""
    got = _model_key(measured_on)
    keys = {k for k in (_model_key(target.slug), _model_key(target.name)) if k}
    return any(got.startswith(k) or k.startswith(got) for k in keys) if got else True


def as_other_model(result: ALResult, draft_len: FloatArray, measured_on: str,
                   target: ModelSpec, mech: MechanismSpec) -> ALResult:
    """A curve measured on another model, applied to `target`: 'other model' evidence, named,
    whose level varies log-normally with the spread of the mechanism's published points across
    models (how far one model's AL says another's) — also at the measured D."""
    sigma = other_family_spread(mech.slug)
    if result.draw_table is not None and result.draft_index is not None:
        base = result.draw_table
        idx = result.draft_index
    else:
        idx = _index(draft_len)
        base = np.full((1, POSITIONS + 1), np.nan)
        base[0, idx] = result.acceptance_length
        base[0, 0] = 1.0
    scale = np.exp(sigma * standard_normal(f"other-model/{mech.slug}"))[:, None]
    # AL ≤ 1 + D at every D the table holds (a measured curve may run past POSITIONS)
    dd = np.arange(base.shape[1], dtype=np.float64)
    draws = np.clip(1.0 + scale * (base - 1.0), 1.0, 1.0 + dd)
    note = (f"{result.provenance} — measured on {measured_on}, not on {target.name}: other-model "
            "evidence")
    return replace(
        result, provenance=note, evidence=f"other model ({measured_on})", draw_table=draws,
        draft_index=idx,
        uncertainty=f"{result.uncertainty.replace(NO_COUNTS, 'measured points without counts')}"
        f"; measured on another model ({measured_on}): the level "
        f"varies log-normally with σ = {sigma:.2f}, the spread of the {mech.name}'s published "
        "points across models")


def prior_al(mech: MechanismSpec, draft_len: npt.ArrayLike,
             target: ModelSpec | None = None, exclude_source: str = "",
             spread_factor: float | None = None) -> ALResult:
    """The mechanism's prior for `target`: its shape at the level of the closest published points
    (same model, same family, else the preset prior fitted on other families), where they hold
    it: a block prior only at the published block sizes, a chain prior flagged model-extended
    past the largest published D. Its draws vary the level log-normally with the points' spread."""
    d = np.asarray(draft_len, dtype=np.float64)
    ev = (evidence_for(mech, target) if not exclude_source and spread_factor is None else
          evidence(mech.slug, target.slug if target else None,
                   target.family if target else "", exclude_source, spread_factor))
    measured = evidence_draft_lens(mech.slug)
    valid = d <= mech.max_draft_len
    if mech.is_block:
        valid &= np.isin(d, measured) | (d == 0)
        extended = np.zeros_like(d, dtype=bool)
        where = (f"published only at D ∈ {{{', '.join(map(str, measured))}}}, so valid there "
                 "only")
    elif measured:
        extended = d > max(measured)
        where = f"published points at D ≤ {max(measured)}; model-extended beyond"
    else:
        extended = d > 0
        where = "no published points: an assumption at every D"
    if mech.needs_draft_model:
        where += ("; the same AL for any draft size: no published AL says how it grows with the "
                  "draft model's size")
    idx = _index(d)
    shape_m = prior_marginal(mech, POSITIONS)
    table = scaled_al(shape_m, ev.level)
    levels = ev.level_draws(standard_normal(f"prior/{mech.slug}"),
                            uniform(f"prior-workload/{mech.slug}"))
    draws = scaled_al(shape_m, levels)  # (N_DRAWS, POSITIONS + 1)
    al = np.where(valid, table[idx], np.nan)
    note = (
        f"{mech.name} prior, shape c_j = {mech.first_rate:.3g}·{mech.decay:.3g}^(j−1) "
        f"({mech.prior_source}); for this target — {ev.describe(target)}; {where}"
    )
    return ALResult(np.asarray(al, dtype=np.float64), np.asarray(extended & valid, dtype=bool),
                    note, evidence=ev.closeness, draw_table=draws, draft_index=idx,
                    uncertainty=f"the level varies log-normally with σ = {ev.log_sd:.2f} "
                    f"({ev.spread_from}; {MIX_SOURCE})", temperature=ev.temperatures)


# Factors on the prior's σ a covering factor is first looked up on (steps of 6 %), then refined
# by bisection to a relative step below 0.01 %.
FACTOR_GRID = np.geomspace(0.05, 20.0, 100)
FACTOR_BISECTIONS = 10


def covering_factor(mech: MechanismSpec, ev: Evidence, draft_len: int, al: float) -> float:
    """The smallest factor on the prior's uncalibrated σ at which its 80 % interval at
    `draft_len` holds `al` (inf where no factor up to 20 does), with the very draws prior_al
    makes. A wider σ widens the interval, so the share of points whose covering factor is ≤ k
    is the coverage at factor k: what the σ calibration is fitted on."""
    z = standard_normal(f"prior/{mech.slug}")
    u = uniform(f"prior-workload/{mech.slug}")
    raw = ev.log_sd / ev.spread_factor
    base = ev.level_draws(np.zeros_like(z), u)  # the level with each draw's workload offset
    m = prior_marginal(mech, POSITIONS)[:draft_len]

    def inside(factors: FloatArray) -> BoolArray:
        levels = base[None, :] * np.exp(factors[:, None] * raw * z[None, :])
        draws = 1.0 + np.minimum(1.0, levels[..., None] * m).sum(axis=-1)  # (factors, draws)
        lo, hi = np.quantile(draws, INTERVAL, axis=1)
        return np.asarray((lo <= al) & (al <= hi), dtype=bool)

    hits = inside(FACTOR_GRID)
    if not hits.any():
        return float("inf")
    i = int(np.argmax(hits))
    if i == 0:
        return float(FACTOR_GRID[0])
    lo_k, hi_k = float(FACTOR_GRID[i - 1]), float(FACTOR_GRID[i])
    for _ in range(FACTOR_BISECTIONS):
        mid = float(np.sqrt(lo_k * hi_k))
        if inside(np.asarray([mid]))[0]:
            hi_k = mid
        else:
            lo_k = mid
    return hi_k

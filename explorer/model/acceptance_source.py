"""AL(D) for a scenario from its acceptance source, with validity and provenance.

A measured curve holds where it was measured (monotone interpolation between its points). A
block drafter's curve says nothing at other D. A chain curve is extended past its last point
only by an acceptance model anchored on its points — a per-position decay fitted to the curve
(three points or more) or the mechanism's prior shape scaled to it — whose per-position
acceptance is always below 1; a single point fixes the level only. Every such AL is flagged
model-extended.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.interpolate import PchipInterpolator

from explorer.base.limits import MAX_DRAFT_LEN
from explorer.model.acceptance import (
    al_iid,
    fit_decaying,
    fit_level,
    level_through,
    marginal_from_conditional,
    scaled_al,
)
from explorer.model.acceptance_evidence import evidence_draft_lens, evidence_for, prior_marginal
from explorer.specs.architecture import ModelSpec
from explorer.specs.measured import AcceptanceCurve
from explorer.specs.mechanism import MechanismSpec
from explorer.specs.scenario import Acceptance

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
# Curves with at least this many measured points get their own fitted per-position decay;
# fewer points carry the mechanism's prior shape.
MIN_POINTS_FOR_OWN_DECAY = 3


@dataclass(frozen=True)
class ALResult:
    """AL at each D (NaN where the source says nothing), which points are model-extended (outside
    the D range of the evidence), and where it comes from."""

    acceptance_length: FloatArray
    extrapolated: BoolArray  # model-extended: an acceptance model, not the evidence, gives AL
    provenance: str
    # How close the evidence is: measured (a curve), same model / same family / other family
    # (published points behind a prior), none (an assumption), user (α or AL set by hand).
    evidence: str = "measured"

    @property
    def model_extended(self) -> BoolArray:
        return self.extrapolated


def prior_conditional(mech: MechanismSpec, positions: int = MAX_DRAFT_LEN) -> FloatArray:
    """The prior's conditional per-position acceptance c_j = c_1·d^{j−1}, j = 1..positions."""
    j = np.arange(positions, dtype=np.float64)
    return np.asarray(np.clip(mech.first_rate * mech.decay**j, 0.0, 1.0), dtype=np.float64)


def _curve_name(curve: AcceptanceCurve) -> str:
    source = curve.source_text
    return f"measured curve '{curve.label}'" + (f" [{source}]" if source else "")


def _block_al(xs: FloatArray, ys: FloatArray, d: FloatArray, name: str) -> ALResult:
    out = np.where(np.isin(d, xs), np.interp(d, xs, ys), np.nan)
    out = np.where(d == 0, 1.0, out)
    return ALResult(np.asarray(out, dtype=np.float64), np.zeros_like(d, dtype=bool), name)


def curve_al(curve: AcceptanceCurve, draft_len: npt.ArrayLike, block: bool,
             shape: MechanismSpec | None = None) -> ALResult:
    """AL(D) of a measured curve; `shape` is the mechanism whose prior shape extends a chain
    curve of fewer than three points (default: the preset of the curve's mechanism)."""
    d = np.asarray(draft_len, dtype=np.float64)
    name = _curve_name(curve)
    xs = np.asarray(curve.draft_lens, dtype=np.float64)
    ys = np.maximum.accumulate(np.asarray(curve.acceptance_lengths, dtype=np.float64))
    if block:
        return _block_al(xs, ys, d, name)
    if shape is None:
        from explorer.presets import mechanism_presets

        shape = mechanism_presets()[curve.mechanism or "eagle3"]
    positions = max(MAX_DRAFT_LEN, int(xs[-1]))
    d_int = np.clip(np.nan_to_num(d), 0, positions).astype(np.int64)
    prior_m = marginal_from_conditional(prior_conditional(shape, positions))
    last = int(xs[-1])
    if len(xs) == 1:
        level = float(level_through(prior_m, last, ys[0] - 1.0))
        al = scaled_al(prior_m, level)[d_int]
        extended = (d != xs[0]) & (d != 0)
        how = (f"a single point fixes the level only: the {shape.name} prior's shape scaled "
               f"(×{level:.3g}) to AL {ys[0]:g} at D={last}")
    else:
        x0 = np.concatenate([[0.0], xs])
        y0 = np.concatenate([[1.0], ys])
        inside = PchipInterpolator(x0, y0)(np.clip(d, 0.0, xs[-1]))
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
        table = ys[-1] + np.concatenate([[0.0], np.cumsum(tail)])
        beyond = table[np.clip(d_int - last, 0, len(table) - 1)]
        extended = d > xs[-1]
        al = np.where(extended, beyond, inside)
    al = np.clip(al, 1.0, 1.0 + d)
    note = name
    if bool(np.any(extended)):
        measured = ", ".join(f"{x:g}" for x in xs)
        note += f" — measured at D ∈ {{{measured}}}; model-extended elsewhere ({how})"
    return ALResult(np.asarray(al, dtype=np.float64), np.asarray(extended, dtype=bool), note)


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
                        evidence="user")
    if acceptance.kind == "fixed" and acceptance.fixed_al is not None:
        al = np.where(d == scenario_draft_len, acceptance.fixed_al, np.nan)
        al = np.where(d == 0, 1.0, al)
        return ALResult(al, none, f"fixed AL = {acceptance.fixed_al:g} at D = {scenario_draft_len}",
                        evidence="user")
    if acceptance.kind == "curve" and acceptance.curve is not None:
        return curve_al(acceptance.curve, d, mech.is_block, mech)
    return prior_al(mech, d, target)


def prior_al(mech: MechanismSpec, draft_len: npt.ArrayLike,
             target: ModelSpec | None = None) -> ALResult:
    """The mechanism's prior for `target`: its shape at the level of the closest published points
    (same model, same family, else the preset prior fitted on other families), where they hold
    it: a block prior only at the published block sizes, a chain prior flagged model-extended
    past the largest published D."""
    d = np.asarray(draft_len, dtype=np.float64)
    ev = evidence_for(mech, target)
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
    d_int = np.clip(np.nan_to_num(d), 0, MAX_DRAFT_LEN).astype(np.int64)
    table = scaled_al(prior_marginal(mech), ev.level)
    al = np.where(valid, table[d_int], np.nan)
    note = (
        f"{mech.name} prior, shape c_j = {mech.first_rate:.3g}·{mech.decay:.3g}^(j−1) "
        f"({mech.prior_source}); for this target — {ev.describe(target)}; {where}"
    )
    return ALResult(np.asarray(al, dtype=np.float64), np.asarray(extended & valid, dtype=bool),
                    note, evidence=ev.closeness)

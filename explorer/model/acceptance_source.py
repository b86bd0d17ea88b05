"""AL(D) for a scenario from its acceptance source, with validity and provenance."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.interpolate import PchipInterpolator

from explorer.base.limits import MAX_DRAFT_LEN
from explorer.model.acceptance import al_decaying, al_iid
from explorer.specs.measured import AcceptanceCurve
from explorer.specs.mechanism import MechanismSpec
from explorer.specs.scenario import Acceptance

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class ALResult:
    """AL at each D (NaN where the source says nothing), which points are extrapolated, and why."""

    acceptance_length: FloatArray
    extrapolated: BoolArray
    provenance: str


def curve_al(curve: AcceptanceCurve, draft_len: npt.ArrayLike, block: bool) -> ALResult:
    """Monotone (PCHIP) interpolation through (0, 1) and the measured points.

    Block drafters are valid only at measured D. Chain curves past the last measured D continue
    with the last marginal's geometric decay, flagged as extrapolated — never silently.
    """
    d = np.asarray(draft_len, dtype=np.float64)
    source = curve.source_text
    name = f"measured curve '{curve.label}'" + (f" [{source}]" if source else "")
    xs = np.concatenate([[0.0], np.asarray(curve.draft_lens, dtype=np.float64)])
    ys = np.concatenate([[1.0], np.asarray(curve.acceptance_lengths, dtype=np.float64)])
    ys = np.maximum.accumulate(ys)  # a non-monotone measurement is flattened, not followed down
    d_max = xs[-1]
    extrapolated = d > d_max
    if block:
        measured = np.isin(d, xs)
        out = np.where(measured, np.interp(d, xs, ys), np.nan)
        out = np.where(d == 0, 1.0, out)
        return ALResult(out, np.zeros_like(d, dtype=bool), name)
    inside = PchipInterpolator(xs, ys)(np.clip(d, 0.0, d_max)) if len(xs) > 2 else np.interp(
        np.clip(d, 0.0, d_max), xs, ys
    )
    last_m = ys[-1] - ys[-2]
    prev_m = ys[-2] - ys[-3] if len(ys) > 2 else 1.0
    ratio = float(np.clip(last_m / prev_m, 0.0, 0.999)) if prev_m > 0 else 0.0
    k = np.maximum(d - d_max, 0.0)
    tail = last_m * ratio * (1.0 - ratio**k) / (1.0 - ratio) if ratio > 0 else np.zeros_like(k)
    al = np.where(extrapolated, ys[-1] + tail, inside)
    al = np.clip(al, 1.0, 1.0 + d)
    note = name
    if bool(extrapolated.any()):
        note += f" (extrapolated past D={int(d_max)})"
    return ALResult(np.asarray(al, dtype=np.float64), extrapolated, note)


def acceptance_length(
    acceptance: Acceptance,
    mech: MechanismSpec,
    draft_len: npt.ArrayLike,
    scenario_draft_len: int,
) -> ALResult:
    d = np.asarray(draft_len, dtype=np.float64)
    none = np.zeros_like(d, dtype=bool)
    if acceptance.kind == "iid" and acceptance.alpha is not None:
        return ALResult(al_iid(acceptance.alpha, d), none, f"i.i.d. α = {acceptance.alpha:g}")
    if acceptance.kind == "fixed" and acceptance.fixed_al is not None:
        al = np.where(d == scenario_draft_len, acceptance.fixed_al, np.nan)
        al = np.where(d == 0, 1.0, al)
        return ALResult(al, none, f"fixed AL = {acceptance.fixed_al:g} at D = {scenario_draft_len}")
    if acceptance.kind == "curve" and acceptance.curve is not None:
        return curve_al(acceptance.curve, d, mech.is_block)
    return prior_al(mech, d)


def prior_al(mech: MechanismSpec, draft_len: npt.ArrayLike) -> ALResult:
    d = np.asarray(draft_len, dtype=np.float64)
    valid = d <= mech.max_draft_len
    d_int = np.clip(np.nan_to_num(d), 0, MAX_DRAFT_LEN).astype(np.int64)
    al = np.where(valid, al_decaying(mech.first_rate, mech.decay, d_int), np.nan)
    note = (
        f"{mech.name} prior c_j = {mech.first_rate:.3g}·{mech.decay:.3g}^(j−1)"
        f" ({mech.prior_source})"
    )
    return ALResult(np.asarray(al, dtype=np.float64), np.zeros_like(d, dtype=bool), note)

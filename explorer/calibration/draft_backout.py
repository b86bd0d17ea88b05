"""Draft cost backed out of speculative step times: measured step − model T_verif(B, W)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from explorer.calibration._shared import (
    BoolArray,
    FloatArray,
    FrozenResult,
    flat,
    group_or_preset,
    ro_bool,
    ro_float,
    sample_note,
    sample_rows,
)
from explorer.model.grid import ScenarioModel
from explorer.model.layers import total


class DraftBackOut(FrozenResult):
    """T_draft backed out of speculative step times: measured step − model T_verif(B, W)."""

    batch: FloatArray
    draft_len: FloatArray
    context: FloatArray
    width: FloatArray
    t_step_measured_s: FloatArray
    t_verif_model_s: FloatArray
    t_draft_measured_s: FloatArray
    t_draft_model_s: FloatArray
    ratio: FloatArray  # measured / model T_draft (nan where the model's T_draft is 0)
    negative: BoolArray
    n_negative: int
    message: str
    summary: str


def back_out_draft_cost(
    scenario_model: ScenarioModel,
    batch: npt.ArrayLike,
    draft_len: npt.ArrayLike,
    context: npt.ArrayLike,
    step_time_spec_s: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
) -> DraftBackOut:
    """T_draft(measured) = T_step(measured) − T_verif(B, W)(model), beside the model's T_draft.

    W = 1 + D, or the scenario's tree width where it is wider (as the grid does). A negative
    back-out means the measured step is faster than the model's verify alone: the verify model
    is too slow there (calibrate kernels and step overheads first).
    """
    b, d, s, t = flat(batch, draft_len, context, step_time_spec_s)
    if t.size == 0:
        raise ValueError("back_out_draft_cost needs at least one step time")
    n_rows = t.size
    sample = sample_rows(n_rows)
    if sample is not None:
        b, d, s, t = b[sample], d[sample], s[sample], t[sample]
    if not np.isfinite(t).all() or t.min() <= 0:
        raise ValueError("step_time_spec_s must be finite and > 0")
    if b.min() < 1 or d.min() < 0 or s.min() < 1:
        raise ValueError("batch and context must be >= 1, draft_len >= 0")
    g = group_or_preset(scenario_model, group)
    width = scenario_model.verify_width(d)
    t_verif = total(scenario_model.verify(b, width, s, g))
    t_draft_model = total(scenario_model.draft(b, d, s, g))
    measured = t - t_verif
    negative = measured < 0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(t_draft_model > 0, measured / t_draft_model, np.nan)
    n_neg = int(negative.sum())
    if n_neg:
        rows = ", ".join(
            f"B={b[i]:g} D={d[i]:g}" for i in np.flatnonzero(negative)[:5]
        ) + (", …" if n_neg > 5 else "")
        message = (
            f"{n_neg} of {t.size} rows: the measured step is faster than the model's verify "
            f"alone ({rows}) — the verify model is too slow there; calibrate kernel "
            "efficiencies and step overheads before reading draft costs"
        )
    else:
        message = ""
    finite = np.isfinite(ratio) & ~negative
    med = float(np.median(ratio[finite])) if finite.any() else float("nan")
    summary = (
        f"T_draft backed out of {t.size} step times: median measured/model {med:.2f}"
        + (f"; {n_neg} negative" if n_neg else "")
        + (f" ({sample_note('draft back-out', t.size, n_rows)})" if sample is not None else "")
    )
    return DraftBackOut(
        batch=ro_float(b), draft_len=ro_float(d), context=ro_float(s),
        width=ro_float(width),
        t_step_measured_s=ro_float(t),
        t_verif_model_s=ro_float(t_verif),
        t_draft_measured_s=ro_float(measured),
        t_draft_model_s=ro_float(t_draft_model),
        ratio=ro_float(ratio),
        negative=ro_bool(negative),
        n_negative=n_neg,
        message=message,
        summary=summary,
    )

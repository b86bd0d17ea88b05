"""Step overheads: a fixed per-step cost and a scale on the analytic per-layer part, fitted to
measured whole-step times."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from explorer.calibration._shared import (
    FloatArray,
    FrozenResult,
    flat,
    group_or_preset,
    mape,
    ro_float,
    sample_note,
    sample_rows,
)
from explorer.model.grid import ScenarioModel
from explorer.model.layers import total
from explorer.specs.hardware import HardwareOverrides


class StepCalibration(FrozenResult):
    """Fixed per-step cost and a scale on the analytic per-layer part, fitted to step times.

    predicted_after = efficiency_scale·(T_model − step_overhead_model) + step_overhead_s.
    `overrides` carries step_overhead_s only; the scale has no HardwareOverrides field (it says
    how much faster/slower the kernels run than modelled: calibrate kernels to absorb it).
    `mape_overhead_only` is the model with the overrides alone applied (scale 1).
    """

    overrides: HardwareOverrides
    step_overhead_s: float
    step_overhead_before_s: float
    efficiency_scale: float
    mape_before: float
    mape_after: float
    mape_overhead_only: float
    batch: FloatArray
    width: FloatArray
    context: FloatArray
    measured_s: FloatArray
    predicted_before_s: FloatArray
    predicted_after_s: FloatArray
    notes: tuple[str, ...]
    summary: str


def fit_step_overheads(
    scenario_model: ScenarioModel,
    batch: npt.ArrayLike,
    width: npt.ArrayLike,
    context: npt.ArrayLike,
    step_time_s: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
) -> StepCalibration:
    """Fit t = scale·(T_model(B, W) − overhead_model) + step_overhead to measured step times.

    W is the verify width per sequence (1 + D for chains, 1 for plain decode). Linear least
    squares on relative residuals (each row divided by its measured time, so every row counts
    by its percentage error, as MAPE does). A negative overhead is refitted at 0; the scale must
    come out positive and the design must have two distinct model times, else only the overhead
    is fitted (scale 1).
    """
    b, w, s, t = flat(batch, width, context, step_time_s)
    if t.size == 0:
        raise ValueError("fit_step_overheads needs at least one step time")
    notes: list[str] = []
    sample = sample_rows(t.size)
    if sample is not None:
        notes.append(sample_note("step overheads", sample.size, t.size))
        b, w, s, t = b[sample], w[sample], s[sample], t[sample]
    if not np.isfinite(t).all() or t.min() <= 0:
        raise ValueError("step_time_s must be finite and > 0")
    if b.min() < 1 or w.min() < 1 or s.min() < 1:
        raise ValueError("batch, width and context must be >= 1")
    ovh0 = scenario_model.step_overhead_s  # the engine profile's, or an override
    t_model = total(scenario_model.verify(b, w, s, group_or_preset(scenario_model, group)))
    x = t_model - ovh0  # the analytic per-layer part (kernels, launches, comms)

    a = np.stack([x / t, 1.0 / t], axis=1)
    rank = int(np.linalg.matrix_rank(a))
    scale, ovh = 1.0, float(np.mean(t - x))
    if rank >= 2:
        (scale, ovh), *_ = np.linalg.lstsq(a, np.ones_like(t), rcond=None)
        scale, ovh = float(scale), float(ovh)
        if ovh < 0:
            notes.append(
                f"the free fit gave a negative step overhead ({ovh * 1e3:.3f} ms): refitted at 0"
            )
            ovh = 0.0
            scale = float(np.sum(x / t) / np.sum((x / t) ** 2))
        if scale <= 0:
            notes.append("the free fit gave a non-positive scale: fitted the overhead only")
            scale, ovh = 1.0, float(np.mean(t - x))
    else:
        notes.append(
            "every row has the same model time: scale and overhead are not separable; "
            "fitted the overhead only (scale 1)"
        )
    if ovh < 0:
        notes.append(f"the measured steps are faster than the model's per-layer part: "
                     f"overhead {ovh * 1e3:.3f} ms clipped at 0")
        ovh = 0.0
    if ovh > 0.1:
        notes.append(f"step overhead {ovh * 1e3:.1f} ms clipped at 100 ms")
        ovh = 0.1

    after = scale * x + ovh
    only = x + ovh
    m_before, m_after = mape(t_model, t), mape(after, t)
    overrides = HardwareOverrides(
        step_overhead_s=ovh, label=f"step overhead fitted on {t.size} step times"
    )
    summary = (
        f"step overhead {ovh0 * 1e3:.3f}→{ovh * 1e3:.3f} ms, efficiency scale {scale:.3f} "
        f"(per-layer model time × {scale:.3f}); MAPE {m_before:.1f}% → {m_after:.1f}% on "
        f"{t.size} step times ({mape(only, t):.1f}% with the overhead alone)"
    )
    return StepCalibration(
        overrides=overrides,
        step_overhead_s=ovh,
        step_overhead_before_s=ovh0,
        efficiency_scale=scale,
        mape_before=m_before,
        mape_after=m_after,
        mape_overhead_only=mape(only, t),
        batch=ro_float(b), width=ro_float(w), context=ro_float(s),
        measured_s=ro_float(t),
        predicted_before_s=ro_float(t_model),
        predicted_after_s=ro_float(after),
        notes=tuple(notes),
        summary=summary,
    )

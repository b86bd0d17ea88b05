"""What a measured file does to a scenario: the one decision behind the CLI's `--al-file` /
`--timings-file` and the Measured-data page's buttons.

- An AL file gives the scenario the curve of its mechanism (else one that names no mechanism) as
  the acceptance source.
- Kernel timings calibrate the hardware (the efficiencies fitted to them, on the preset without
  earlier overrides) and are used as measured where a kernel's shape matches.
- Step timings calibrate the step overhead the same way and replace the model's step where
  (B, D) matches.

`uses` picks the parts (the page offers each as its own button); the CLI takes them all.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal

import numpy as np

from explorer.calibration._shared import CalibrationError
from explorer.calibration.kernel_efficiencies import Calibration, fit_kernel_efficiencies
from explorer.calibration.step_overheads import fit_step_overheads
from explorer.model.grid import scenario_model
from explorer.specs.measured import AcceptanceCurve, ParseResult
from explorer.specs.scenario import Acceptance, Scenario

MeasuredUse = Literal["curve", "calibrate", "times"]
TIMING_USES: frozenset[MeasuredUse] = frozenset({"calibrate", "times"})
MAX_LABEL = 200  # characters of the calibrated hardware's label


class MeasuredFileError(ValueError):
    """The file cannot do what was asked of it; the message names the file (`source`)."""


def measured_curve(scenario: Scenario, result: ParseResult) -> AcceptanceCurve | None:
    """The file's curve for the scenario's mechanism, else one that names no mechanism; of
    several (a multi-category file), its overall/mean row, named in the curve's label."""
    curves = [c for c in result.curves if c.mechanism == scenario.mechanism] or [
        c for c in result.curves if c.mechanism is None]
    if not curves:
        return None
    index = result.default_curve_index(scenario.mechanism)
    return result.curves[index] if index is not None else curves[0]


def calibration_helps(cal: Calibration) -> bool:
    """A kernel calibration is applied only where it predicts the measured timings better
    (lower MAPE) than the preset it replaces (the page offers no Apply otherwise)."""
    return cal.mape_after < cal.mape_before


def apply_measured_file(scenario: Scenario, result: ParseResult, source: str,
                        uses: Collection[MeasuredUse] = TIMING_USES) -> Scenario:
    """`scenario` with what the (valid) parsed file `result`, read from `source`, gives it.

    Raises MeasuredFileError where the file has no part that was asked for, or its timings
    cannot be calibrated on (CalibrationError's message)."""
    if "curve" in uses:
        curve = measured_curve(scenario, result)
        if curve is None:
            have = sorted({c.mechanism or "?" for c in result.curves})
            raise MeasuredFileError(f"no curve for mechanism '{scenario.mechanism}' in "
                                    f"'{source}' (it has: {', '.join(have) or 'no curves'})")
        scenario = scenario.model_copy(
            update={"acceptance": Acceptance(kind="curve", curve=curve)})
    if not TIMING_USES & set(uses):
        return scenario
    update: dict[str, object] = {}
    # A calibration replaces earlier overrides: it is fitted on the preset.
    model = scenario_model(scenario.model_copy(update={"hardware_overrides": None}))
    if result.kernel_timings is not None:
        t = result.kernel_timings
        if "calibrate" in uses:
            try:
                cal = fit_kernel_efficiencies(model.r.hardware, t.gemm, t.attention)
            except CalibrationError as exc:
                raise MeasuredFileError(f"'{source}': {exc}") from None
            if calibration_helps(cal):  # a fit that predicts worse than the preset: not used
                label = (f"{cal.overrides.label} from {source}; MAPE {cal.mape_before:.1f}% → "
                         f"{cal.mape_after:.1f}%")
                update["hardware_overrides"] = cal.overrides.model_copy(
                    update={"label": label[:MAX_LABEL]})
        if "times" in uses:  # calibrated efficiencies cover every kernel; measured shapes
            update["measured_kernels"] = t  # are used as measured
    elif result.step_timings is not None:
        s = result.step_timings
        if "calibrate" in uses:
            d = np.asarray(s.draft_len)
            width = np.asarray(s.verify_tokens) if s.verify_tokens else 1 + d
            step = fit_step_overheads(model, np.asarray(s.batch), width, scenario.context,
                                      np.asarray(s.step_time_s))
            label = (f"step overhead fitted to {len(d)} step times from {source}; MAPE "
                     f"{step.mape_before:.1f}% → {step.mape_after:.1f}%")
            update["hardware_overrides"] = step.overrides.model_copy(
                update={"label": label[:MAX_LABEL]})
        if "times" in uses:
            update["measured_steps"] = s
    else:
        raise MeasuredFileError(f"'{source}' holds no timings ({result.format})")
    return scenario.model_copy(update=update)

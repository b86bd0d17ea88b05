"""The timing model's error: per engine, the leave-one-source-out error of the whole-step model
on the published steps and speed-ups it was calibrated on (explorer/calibration/step_costs.py,
data/step_cost_fit.csv), carried into the speedup intervals (explorer/analysis/uncertainty.py);
and the verify-cost ratio T_verif(B(1+D)) / T_verif(B) against the SpecDecodeBench vLLM step fit
for Llama-3.1-8B on one H100 (data/samples/step_times.csv), which `make validate` prints."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import numpy.typing as npt
import pandas as pd

from explorer.base.engines import DEFAULT_ENGINE, ServingEngine
from explorer.model.grid import GridResult, scenario_model
from explorer.presets import DATA_DIR, step_cost_fit
from explorer.specs.engine import VLLM  # the reference steps were measured on vLLM
from explorer.specs.scenario import Scenario

FloatArray = npt.NDArray[np.float64]
STEP_REFERENCE = DATA_DIR / "samples" / "step_times.csv"
# The same predictor's per-step scheduler overhead (reference/kernels.csv,
# overhead_constant_per_step): step_times.csv is its forward only, while the model's T_verif
# also holds the engine's per-step overhead, so the reference step gets it too (like for like).
FIT_STEP_OVERHEAD_MS = 1.20683946
CHECKED_DRAFT_LENS = (3, 7)
CHECKED_BATCHES_UP_TO = 64


@dataclass(frozen=True)
class VerifyRatioCheck:
    """Model vs reference verify-cost ratio at one D over the reference's batches."""

    draft_len: int
    batch: FloatArray
    model_ratio: FloatArray
    reference_ratio: FloatArray
    grid: GridResult  # the model's grid at these points (with breakdowns)
    reference_extra_ms: FloatArray  # what the reference adds for the 1+D tokens

    @property
    def relative_error(self) -> FloatArray:
        return np.asarray(self.model_ratio / self.reference_ratio - 1.0, dtype=np.float64)


def verify_ratio_checks(engine: ServingEngine = VLLM.slug) -> list[VerifyRatioCheck]:
    steps = pd.read_csv(STEP_REFERENCE)
    base = steps[steps.draft_len == 0].set_index("batch").step_time_ms
    m = scenario_model(Scenario(hardware="h100", model="llama-3.1-8b", tp=1, context=1024,
                                engine=engine))
    out = []
    for d in CHECKED_DRAFT_LENS:
        rows = steps[(steps.draft_len == d) & (steps.batch <= CHECKED_BATCHES_UP_TO)]
        b = rows.batch.to_numpy(dtype=np.float64)
        spec_ms = rows.step_time_ms.to_numpy(dtype=np.float64) + FIT_STEP_OVERHEAD_MS
        base_ms = base.loc[rows.batch].to_numpy(dtype=np.float64) + FIT_STEP_OVERHEAD_MS
        g = m.grid(b, float(d), with_breakdowns=True)
        out.append(VerifyRatioCheck(
            draft_len=d, batch=b,
            model_ratio=np.asarray(g.t_verif_spec_s / g.t_verif_base_s, dtype=np.float64),
            reference_ratio=spec_ms / base_ms, grid=g, reference_extra_ms=spec_ms - base_ms))
    return out


@dataclass(frozen=True)
class TimingError:
    """An engine's step-model error carried into the speedup intervals: the log-RMS of its
    leave-one-source-out predictions (data/step_cost_fit.csv, scripts/fit_step_costs.py), each
    published step or speed-up predicted by the whole-step terms fitted without its source."""

    engine: str
    log_rms: float
    mape: float
    fitted_on: str

    def sigma(self, draft_len: npt.ArrayLike) -> FloatArray:
        """σ of log speedup at D: 0 at D = 0 (no speculation, speedup 1 by construction), the
        leave-one-source-out log-RMS at every D ≥ 1."""
        d = np.asarray(draft_len, dtype=np.float64)
        return np.asarray(np.where(d > 0, self.log_rms, 0.0), dtype=np.float64)

    @property
    def note(self) -> str:
        return (f"the timing model's error, the {self.engine} step model's leave-one-source-out "
                f"error — {self.log_rms:.0%}"
                f" log-RMS ({self.mape:.0%} MAPE) on {self.fitted_on}, each source predicted by "
                "the whole-step terms fitted without it (data/step_cost_fit.csv) — is carried "
                "to every scenario on this engine")


@cache
def timing_error(engine: str = DEFAULT_ENGINE) -> TimingError:
    fit = step_cost_fit()
    row = fit.get((engine, "step_overhead_us"))
    if row is None or not row["loo_log_rms"]:
        raise ValueError(f"data/step_cost_fit.csv has no leave-one-source-out error for "
                         f"{engine} (run scripts/fit_step_costs.py --write)")
    own = row["fitted_on"]
    return TimingError(engine=engine, log_rms=float(row["loo_log_rms"]),
                       mape=float(row["loo_mape"]), fitted_on=own)

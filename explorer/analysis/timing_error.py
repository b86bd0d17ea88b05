"""The timing model's error on what the speedup depends on: the verify-cost ratio
T_verif(B(1+D)) / T_verif(B), against the one measured step-time reference that names its batch
and draft length — the SpecDecodeBench vLLM step fit for Llama-3.1-8B on one H100
(data/samples/step_times.csv; reference/kernels.csv). `make validate` prints it; the speedup
intervals carry it (explorer/analysis/uncertainty.py)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import numpy.typing as npt
import pandas as pd

from explorer.base.engines import ServingEngine
from explorer.model.grid import GridResult, scenario_model
from explorer.presets import DATA_DIR
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
    """Log-scale error of the verify-cost ratio at the checked D (RMS, bias included), and
    the words that say what it is."""

    draft_lens: tuple[int, ...]
    log_rms: tuple[float, ...]
    bias: tuple[float, ...]  # mean relative error (model/reference − 1)

    def sigma(self, draft_len: npt.ArrayLike) -> FloatArray:
        """σ of log speedup at D: 0 at D = 0 (no verify growth), linear to the checked D, held
        at the last checked value beyond it."""
        return np.asarray(np.interp(np.asarray(draft_len, dtype=np.float64),
                                    [0.0, *map(float, self.draft_lens)], [0.0, *self.log_rms]),
                          dtype=np.float64)

    @property
    def note(self) -> str:
        parts = ", ".join(f"{s:.0%} at D={d} (bias {b:+.0%})"
                          for d, s, b in zip(self.draft_lens, self.log_rms, self.bias,
                                             strict=True))
        return (f"the timing model's error on the verify-cost ratio — {parts} against the "
                "SpecDecodeBench vLLM step fit (Llama-3.1-8B, 1×H100) — is carried to every "
                "scenario as an assumption (no other step reference names B and D); a negative "
                "bias means the speedup leans optimistic")


@cache
def timing_error() -> TimingError:
    checks = verify_ratio_checks()
    return TimingError(
        draft_lens=tuple(c.draft_len for c in checks),
        log_rms=tuple(float(np.sqrt(np.mean(np.log1p(c.relative_error) ** 2)))
                      for c in checks),
        bias=tuple(float(np.mean(c.relative_error)) for c in checks))

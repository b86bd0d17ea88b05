"""Calibrate the cost model against measurements (DESIGN.md §2.1: efficiencies and fixed costs
"should come from measurements, not guesses").

Three fits, all vectorized, one module each:

* `fit_kernel_efficiencies` (kernel_efficiencies.py) — per-kernel timings → GEMM η_c, η_m and
  the kernel floor, attention η_c, η_m. Least squares on log-time residuals of the roofline
  t = max(flops/(F·η_c), bytes/(BW·η_m), floor); parameters are fitted in log space, where the
  model is piecewise linear and its Jacobian is an exact indicator of the binding term.
* `fit_step_overheads` (step_overheads.py) — whole-step times T(B, W) → step_overhead_s plus
  one multiplicative "efficiency scale" on the analytic per-layer part (launch latency and step
  overhead are collinear for one model, so only their sum is identifiable: it is reported as
  step overhead).
* `back_out_draft_cost` (draft_backout.py) — speculative step times → T_draft = T_step −
  T_verif(B, 1+D) (model), next to the model's own T_draft(B, D).

Beside them, the engines' default whole-step terms are fitted once on the published evidence
(step_costs.py, scripts/fit_step_costs.py → data/step_cost_fit.csv), with leave-one-source-out.

Every fit is bounded: above MAX_CALIBRATION_ROWS rows (explorer/base/limits.py) it uses an evenly
spaced sample and says so in its notes or summary. Measurements no fit can use (every dtype
unknown to the roofline) raise CalibrationError, whose message is for the user.

A parameter that no measurement row constrains (e.g. η_c when every GEMM is memory-bound) keeps
its starting value and the result says so in `notes`: only a bound is known.
"""

from explorer.calibration._shared import CalibrationError, mape
from explorer.calibration.draft_backout import DraftBackOut, back_out_draft_cost
from explorer.calibration.kernel_efficiencies import Calibration, fit_kernel_efficiencies
from explorer.calibration.step_overheads import StepCalibration, fit_step_overheads

__all__ = [
    "Calibration", "CalibrationError", "DraftBackOut", "StepCalibration", "back_out_draft_cost",
    "fit_kernel_efficiencies", "fit_step_overheads", "mape",
]

"""SpecDec Explorer core: a pure, vectorized cost model for speculative decoding.

The same operations as the CLI and the UI, as functions on the `Scenario` model:

    from explorer import Scenario, evaluate, recommend, sweep, gemm_time, attention_time
    evaluate(Scenario(hardware="h200", model="llama-3.1-70b", batch=8, draft_len=3))
"""

from explorer.analysis import Evaluation, best_draft_len, evaluate, pareto
from explorer.guidelines import Recommendation, guidelines, recommend
from explorer.kernels import attention_time, gemm_time
from explorer.scenario import Acceptance, MeasuredCurve, Scenario
from explorer.speedup import resolve, scenario_model
from explorer.sweep import sweep

__all__ = [
    "Acceptance", "Evaluation", "MeasuredCurve", "Recommendation", "Scenario", "attention_time",
    "best_draft_len", "evaluate", "gemm_time", "guidelines", "pareto", "recommend", "resolve",
    "scenario_model", "sweep",
]

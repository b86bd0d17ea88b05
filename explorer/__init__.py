"""SpecDec Explorer core: a pure, vectorized cost model for speculative decoding.

The same operations as the CLI and the UI, as functions on the `Scenario` model:

    from explorer import Scenario, evaluate, recommend, gemm_time, attention_time
    from explorer import best_draft_len, pareto, sweep
    evaluate(Scenario(hardware="h200", model="llama-3.1-70b", batch=8, draft_len=3))
"""

from explorer.analysis.evaluate import Evaluation, evaluate
from explorer.analysis.frontier import best_draft_len, pareto
from explorer.analysis.guidelines import guidelines
from explorer.analysis.recommend import Recommendation, recommend
from explorer.analysis.sweep import sweep
from explorer.model.grid import scenario_model
from explorer.model.kernels import attention_time, gemm_time
from explorer.model.resolve import resolve
from explorer.specs.scenario import Acceptance, MeasuredCurve, Scenario

__all__ = [
    "Acceptance", "Evaluation", "MeasuredCurve", "Recommendation", "Scenario", "attention_time",
    "best_draft_len", "evaluate", "gemm_time", "guidelines", "pareto", "recommend", "resolve",
    "scenario_model", "sweep",
]

"""Table sanity: a measured kernel table far off its siblings is flagged where a scenario uses it.

A table is a measurement of one engine's kernels under its collector's conditions; now and then
one is far off what the same op costs on the same GPU under another engine, or under a wider
dtype of the same engine (a narrower dtype reads fewer bytes: it should not be slower). vLLM's
FP8 MoE table on Hopper (ModelOpt FP8 through FlashInfer CUTLASS) is the case in point: it reads
at a fifth of its BF16 table's speed, so Qwen3-235B-A22B FP8 on 8×H200 is priced at a third of
every other engine's tokens/s, and verification looks free beside it. The default keeps the
measurement; the flag says so, with the sibling to switch to.

A component of the plain step (GEMMs, routed experts, attention) is flagged when it costs more
than FLAG_RATIO × the cheapest sibling's and at least MIN_STEP_SHARE of the step.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from explorer.base.engines import SERVING_ENGINES
from explorer.base.errors import ScenarioError
from explorer.model.grid import scenario_model
from explorer.model.layers import total
from explorer.specs.scenario import Scenario

# A sibling 2.5× faster is beyond what kernel choice explains between engines on one GPU
# (the engines' own tables for the same op and dtype sit within ~1.5× of each other elsewhere:
# Qwen3-235B-A22B's routed experts on H200, 11.4–15.0 ms a step at B=64 across engines and
# dtypes, against vLLM FP8's 62.9 ms).
FLAG_RATIO = 2.5
MIN_STEP_SHARE = 0.10
CHECKED = {"gemm": "GEMM", "moe": "routed-expert (MoE)", "attention": "attention"}
WIDER = "bf16"


class TableFlag(BaseModel):
    """One component whose measured time is far off a sibling's (`evaluate --json` table_flags)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    component: str  # gemm, moe, attention
    engine: str
    dtype: str
    time_s: float  # the component's time in one plain step at the scenario's B
    sibling: str  # "sglang fp8"
    sibling_time_s: float
    ratio: float
    alternative: dict[str, str]  # the scenario settings that price it with the sibling
    message: str


def _components(sc: Scenario) -> dict[str, float] | None:
    try:
        m = scenario_model(sc)
        v = m.verify(float(sc.batch), 1.0, float(sc.context), m.r.group)
    except (ScenarioError, ValueError):
        return None
    out = {c: float(v[c].reshape(-1)[0]) for c in CHECKED}
    out["step"] = float(total(v).reshape(-1)[0])
    return out


@lru_cache(maxsize=128)
def table_flags(scenario: Scenario) -> tuple[TableFlag, ...]:
    """The components of this scenario's step that a sibling table prices far lower."""
    if scenario.hardware_overrides is not None or scenario.measured_kernels is not None:
        return ()  # hypothetical hardware or the user's own tables: no package table in use
    own = _components(scenario)
    if own is None:
        return ()
    siblings: dict[str, tuple[dict[str, str], dict[str, float]]] = {}
    for engine in SERVING_ENGINES:
        if engine != scenario.engine:
            got = _components(scenario.model_copy(update={"engine": engine}))
            if got is not None:
                siblings[f"{engine} {scenario.dtype}"] = ({"engine": str(engine)}, got)
    if scenario.dtype != WIDER:
        got = _components(scenario.model_copy(update={"dtype": WIDER, "moe_dtype": None}))
        if got is not None:
            siblings[f"{scenario.engine} {WIDER}"] = ({"dtype": WIDER}, got)
    flags: list[TableFlag] = []
    for comp, words in CHECKED.items():
        t = own[comp]
        if t < MIN_STEP_SHARE * own["step"] or not siblings:
            continue
        name, (alt, best) = min(siblings.items(), key=lambda kv: kv[1][1][comp])
        if best[comp] <= 0 or t <= FLAG_RATIO * best[comp]:
            continue
        ratio = t / best[comp]
        switch = ", ".join(f"{k}={v}" for k, v in alt.items())
        flags.append(TableFlag(
            component=comp, engine=scenario.engine, dtype=scenario.dtype, time_s=t,
            sibling=name, sibling_time_s=best[comp], ratio=ratio, alternative=alt,
            message=(f"{scenario.engine}'s {scenario.dtype} {words} time on "
                     f"{scenario.hardware} is {ratio:.1f}× {name}'s ({t * 1e3:.1f} vs "
                     f"{best[comp] * 1e3:.1f} ms a step at B={scenario.batch}): the measured "
                     f"table is far off its siblings and makes verification look cheap beside "
                     f"it; the answer keeps it, {switch} prices it with {name}'s")))
    return tuple(flags)

"""The article's five guidelines evaluated on a scenario."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from explorer.base.limits import MAX_DRAFT_LEN
from explorer.model.grid import scenario_model
from explorer.model.kernels import ATTENTION_TILE_ROWS
from explorer.model.layers import unique_experts
from explorer.specs.scenario import Scenario

FloatArray = npt.NDArray[np.float64]

# Guideline 2 applies "when attention dominates decode time": we read that as ≥ half of T_verif.
ATTENTION_DOMINANT_FRACTION = 0.5


class Guideline(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: int
    title: str
    value: float | None
    text: str
    applies: bool


def attention_start_draft_len(group: float) -> int:
    """Guideline 2: D = 128/G − 1 (at least 0)."""
    return max(0, math.floor(ATTENTION_TILE_ROWS / group) - 1)


def tile_aligned_draft_lens(group: float, d_max: int) -> list[int]:
    """Guideline 3: D with G·(1+D) a multiple of 128."""
    return [d for d in range(1, d_max + 1) if (group * (1 + d)) % ATTENTION_TILE_ROWS == 0]


GUIDELINE_1_TITLE = "Raise D until GEMMs are compute-bound"


def tokens_per_expert(tokens: npt.ArrayLike, n_experts: int, top_k: int) -> FloatArray:
    """Tokens each touched expert computes when n tokens route top-k of E uniformly:
    n·k / E_active, E_active = E·(1 − (1 − k/E)^n) (DESIGN.md §2.1)."""
    n = np.asarray(tokens, dtype=np.float64)
    return np.asarray(n * top_k / np.maximum(unique_experts(n, n_experts, top_k), 1e-12),
                      dtype=np.float64)


def _moe_guideline(b: int, d: int, d_max: int, n_experts: int, top_k: int, ridge: float,
                   mech_name: str) -> Guideline:
    """Guideline 1 on a MoE target: the routed experts hold most weights, and each sees only
    its share of B·(1+D); the dense-GEMM ridge is reached per expert, not per batch."""
    tokens = b * (1 + d)
    ds = np.arange(0, max(d_max, d) + 1)
    per = tokens_per_expert(b * (1 + ds), n_experts, top_k)
    here = float(per[d])
    reach = np.nonzero(per >= ridge)[0]
    head = (f"MoE layers: B·(1+D) = {b}·{1 + d} = {tokens} tokens over {n_experts} experts "
            f"(top-{top_k}) ≈ {here:.1f} tokens per active expert")
    if here >= ridge:
        text = (f"{head} ≥ GEMM ridge M* ≈ {ridge:.0f}: the experts are already compute-bound; "
                "more D adds verify cost.")
        d_ridge = int(reach[0])
    elif reach.size and reach[0] <= d_max:
        d_ridge = int(reach[0])
        text = (f"{head} < ridge M* ≈ {ridge:.0f}: D ≈ {d_ridge} brings each expert to the "
                "ridge with no extra KV cache.")
    else:
        d_ridge = max(0, math.ceil(ridge * n_experts / (top_k * b)) - 1)  # all experts active
        text = (f"{head} < ridge M* ≈ {ridge:.0f}: the experts stay memory-bound up to "
                f"{mech_name}'s D ≤ {d_max}, so their verify cost barely grows with D here.")
    return Guideline(id=1, title=GUIDELINE_1_TITLE, value=float(d_ridge), text=text,
                     applies=here < ridge)


def _group_text(per_gpu: float, total: float, tp: int) -> str:
    """G as the text names it: per GPU, with the model's own G beside it where TP changes it."""
    if per_gpu == total:
        return f"G={per_gpu:g}"
    return f"G={per_gpu:g} per GPU (the model's {total:g} at TP={tp})"


def guidelines(scenario: Scenario, attention_fraction: float | None = None) -> list[Guideline]:
    """The five guidelines at this scenario. `attention_fraction`: the scenario's attention share
    of T_verif where the caller has it already (Evaluation.attention_fraction), else computed."""
    m = scenario_model(scenario)
    r = m.r
    # G per GPU: what one rank's attention kernel tiles (the cost model's own number).
    b, d, g = scenario.batch, scenario.draft_len, m.group_per_gpu
    out: list[Guideline] = []

    # 1. GEMMs: push B·(1+D) to the ridge M* without more KV. A MoE layer's experts each see
    # only their share of the tokens (≈ n·k / E_active), so they are judged on that share.
    ridge = r.hardware.gemm_ridge_tokens(scenario.dtype)
    tokens = b * (1 + d)
    d_max = r.mechanism.max_draft_len
    model = r.model
    if model.is_moe:
        out.append(_moe_guideline(b, d, d_max, model.n_routed_experts, model.experts_per_tok,
                                  r.hardware.gemm_ridge_tokens(scenario.expert_dtype),
                                  r.mechanism.name))
    else:
        d_ridge = max(0, math.ceil(ridge / b) - 1)
        if tokens >= ridge:
            t1 = (f"B·(1+D) = {b}·{1 + d} = {tokens} tokens ≥ GEMM ridge M* ≈ {ridge:.0f}: "
                  "GEMMs are already compute-bound; more D adds verify cost.")
        elif d_ridge <= d_max:
            t1 = (f"B·(1+D) = {b}·{1 + d} = {tokens} tokens < ridge M* ≈ {ridge:.0f}: "
                  f"D ≈ {d_ridge} reaches compute-bound GEMMs with no extra KV cache.")
        else:
            t1 = (f"B·(1+D) = {b}·{1 + d} = {tokens} tokens < ridge M* ≈ {ridge:.0f}: it would "
                  f"take D ≈ {d_ridge}, past {r.mechanism.name}'s D ≤ {d_max}; "
                  "GEMMs stay memory-bound, so verify cost barely grows with D here.")
        out.append(Guideline(id=1, title=GUIDELINE_1_TITLE, value=float(d_ridge),
                             text=t1, applies=tokens < ridge))

    # 2. Attention-dominated: start at D = 128/G − 1.
    frac = attention_fraction if attention_fraction is not None else float(np.asarray(
        m.grid(scenario.batch, scenario.draft_len).attention_fraction).reshape(-1)[0])
    d_start = attention_start_draft_len(g)
    dominant = frac >= ATTENTION_DOMINANT_FRACTION
    g_text = _group_text(g, r.group, scenario.tp)
    t2 = (f"attention is {frac:.0%} of T_verif; {g_text} → start at D = 128/G − 1 = {d_start}"
          if dominant else
          f"attention is {frac:.0%} of T_verif (not dominant); if it were, {g_text} → "
          f"D = {d_start}")
    out.append(Guideline(id=2, title="Attention-bound: start at D = 128/G − 1",
                         value=float(d_start), text=t2, applies=dominant))

    # 3. Past that, prefer tile-aligned G·(1+D).
    rows = g * (1 + d)
    tiles = math.ceil(rows / ATTENTION_TILE_ROWS - 1e-9)
    util = rows / (tiles * ATTENTION_TILE_ROWS)
    aligned = tile_aligned_draft_lens(g, MAX_DRAFT_LEN)
    below = [x for x in aligned if x <= d]
    above = [x for x in aligned if x >= d]
    near = below[-1] if below else (above[0] if above else d)
    if d > d_start:
        t3 = (f"G·(1+D) = {g:g}·{1 + d} = {rows:g} rows per GPU fills {tiles} tile(s) of 128 "
              f"at {util:.0%}; tile-aligned D nearby: {near}")
    else:
        t3 = (f"D = {d} ≤ 128/G − 1 = {d_start} at {g_text}: one tile of 128 rows, no padding "
              "penalty yet")
    out.append(Guideline(id=3, title="Prefer G·(1+D) a multiple of 128", value=float(near),
                         text=t3, applies=d > d_start))

    # 4. Launch-bound: grow D only while AL pays for O_d.
    ds = np.arange(0, r.mechanism.max_draft_len + 1)
    al = m.acceptance(ds).acceptance_length
    lb = al / (1.0 + m.draft_overhead_launch_bound(ds))
    lb = np.where(np.isfinite(lb), lb, -np.inf)
    d_lb = int(ds[int(np.argmax(lb))])
    o_d = float(m.draft_overhead_launch_bound(d))
    t4 = (f"at the lowest latency O_d = {o_d:.3g} (ρ = {m.rho:.3g}); AL/(1+O_d) peaks at "
          f"D = {d_lb} ({float(lb.max()):.2f}×)")
    out.append(Guideline(id=4, title="Low latency: more D only while AL pays for the draft",
                         value=float(d_lb), text=t4, applies=b <= 4))

    # 5. Mechanism choice: filled by recommend(); here the current mechanism's standing.
    return out

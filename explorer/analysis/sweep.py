"""Grids over B, D, G, S and mechanism → one row per point (vectorized per mechanism)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from explorer.analysis.candidate import candidate
from explorer.analysis.frontier import DEFAULT_BATCHES, draft_len_range
from explorer.base.errors import ScenarioError
from explorer.model.grid import scenario_model
from explorer.model.layers import COMPONENTS
from explorer.specs.scenario import Scenario

FIGURES = (
    "speedup", "acceptance_length", "t_verif_base_s", "t_verif_spec_s", "t_draft_s",
    "speedup_launch_bound", "tokens_per_s_per_user", "tokens_per_s_per_gpu",
    "attention_fraction", "fits_in_memory",
)


def sweep(
    scenario: Scenario,
    batch: Sequence[int] | None = None,
    draft_len: Sequence[int] | None = None,
    group: Sequence[float] | None = None,
    context: Sequence[int] | None = None,
    mechanism: Sequence[str] | None = None,
    output_tokens: Sequence[int | None] | None = None,
    with_breakdown: bool = True,
) -> pd.DataFrame:
    """Evaluate the cartesian grid; axes left out stay at the scenario's value. Output tokens
    N (None: decode steps only) is an axis of scenarios, the others of one grid each."""
    if output_tokens is not None:
        return pd.concat([sweep(scenario.model_copy(update={"output_tokens": n}), batch,
                                draft_len, group, context, mechanism, None, with_breakdown)
                          for n in output_tokens], ignore_index=True)
    b = np.asarray(batch or [scenario.batch], dtype=np.float64)
    d = np.asarray(draft_len or [scenario.draft_len], dtype=np.float64)
    s = np.asarray(context or [scenario.context], dtype=np.float64)
    frames = []
    for slug in mechanism or [scenario.mechanism]:
        m = scenario_model(candidate(scenario, slug))
        g = np.asarray(group or [m.r.group], dtype=np.float64)
        for gv in g:
            if m.r.model.attention_kind == "gqa" and m.r.model.q_heads % gv:
                raise ScenarioError("group", f"G={gv:g} must divide {m.r.model.q_heads} q heads")
        bb, dd, ss, gg = np.meshgrid(b, d, s, g, indexing="ij")
        res = m.grid(bb, dd, ss, gg, with_breakdowns=with_breakdown)
        cols: dict[str, object] = {
            "mechanism": slug, "batch": bb.ravel().astype(int), "draft_len": dd.ravel().astype(int),
            "group": gg.ravel(), "context": ss.ravel().astype(int),
            "output_tokens": scenario.output_tokens or 0,  # 0: decode steps only
        }
        for f in FIGURES:
            cols[f] = np.broadcast_to(getattr(res, f), bb.shape).ravel()
        # AL from an acceptance model past the evidence (not a measurement): flagged per row.
        cols["acceptance_model_extended"] = np.broadcast_to(res.al_extrapolated, bb.shape).ravel()
        if with_breakdown:
            for part, bd in (("verify_spec", res.verify_spec), ("draft", res.draft)):
                for c in COMPONENTS:
                    cols[f"{part}_{c}_s"] = np.broadcast_to(bd[c], bb.shape).ravel()
        frames.append(pd.DataFrame(cols))
    return pd.concat(frames, ignore_index=True)


# The sweep the Export tab offers: B = 1, 2, 4 … the page's largest batch (4096) × every D.
DEFAULT_SWEEP_BATCHES: tuple[int, ...] = tuple(
    2**i for i in range(int(DEFAULT_BATCHES[-1]).bit_length()))


def default_sweep(scenario: Scenario) -> pd.DataFrame:
    """B = 1, 2, 4 … 4096 × D = 0 … the mechanism's maximum, at the scenario's other values."""
    d = [int(x) for x in draft_len_range(scenario)]
    return sweep(scenario, batch=list(DEFAULT_SWEEP_BATCHES), draft_len=d)

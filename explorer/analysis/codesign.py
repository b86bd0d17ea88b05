"""Co-design sweeps (the article's point): vary the target's architecture — G at fixed KV bytes or
at fixed parameters (with MLA, one latent KV head, G is the query heads, at fixed KV bytes),
layers, KV heads, head dim, MoE experts and top-k — and the drafter's depth or ρ, and report
for each design the best speedup and its D at the scenario's operating point, with the D up to
which verification stays in the same attention tile (G·(1+D) ≤ 128).

A design is the scenario's target with those shapes changed (a custom model in the scenario, so
every number comes from the same cost model); the acceptance source stays the scenario's (an
architecture change is not assumed to change AL — said in `ACCEPTANCE_NOTE`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import ValidationError

from explorer.analysis.frontier import best_draft_len
from explorer.base.dtypes import BYTES_PER_ELEMENT
from explorer.base.errors import ScenarioError
from explorer.base.mechanisms import head_kinds
from explorer.model.grid import scenario_model
from explorer.model.resolve import resolve
from explorer.specs.architecture import DrafterSpec, ModelSpec
from explorer.specs.scenario import Scenario

GroupAt = Literal["fixed_kv", "fixed_params"]
# Axes of a design, in output order: the target's shapes, then the drafter's.
TARGET_AXES: tuple[str, ...] = ("group", "layers", "kv_heads", "head_dim", "experts", "top_k")
DRAFTER_AXES: tuple[str, ...] = ("draft_layers", "rho")
DESIGN_AXES: tuple[str, ...] = TARGET_AXES + DRAFTER_AXES
MAX_DESIGNS = 5_000
# Query rows of one attention tile (model/kernels.py prices 128-row tiles).
TILE_ROWS = 128
ACCEPTANCE_NOTE = ("AL is the scenario's acceptance source for every design: the architecture "
                   "is not assumed to change acceptance")


def design_model(base: ModelSpec, values: Mapping[str, Any],
                 group_at: GroupAt = "fixed_kv") -> ModelSpec:
    """The target with a design's shapes; a shape that cannot be is a ScenarioError naming its
    axis. G at fixed KV bytes keeps the KV heads and sets q heads = G·KV heads; at fixed
    parameters it keeps the q heads and sets KV heads = q heads / G (the KV projections shrink
    with them, a small change to the parameter count)."""
    upd: dict[str, Any] = {}
    mla = base.attention_kind == "mla"
    for axis in ("kv_heads", "head_dim"):
        if axis in values and mla:
            raise ScenarioError(axis, f"{base.name} uses MLA (one latent KV head): {axis} is a "
                                "GQA shape")
    # MLA's one latent KV head serves every query head: G is the query heads, and a design
    # with another G keeps the latent (its KV bytes) and changes the query projections.
    if mla and "group" in values and group_at == "fixed_params" \
            and int(values["group"]) != base.q_heads:
        raise ScenarioError("group", f"{base.name} uses MLA (one latent KV head), so G is its "
                            f"{base.q_heads} query heads: at fixed parameters it stays "
                            f"{base.q_heads}; vary G at fixed KV bytes")
    kv = int(values.get("kv_heads", base.kv_heads))
    q = base.q_heads
    if "group" in values:
        g = int(values["group"])
        if group_at == "fixed_kv":
            q = g * kv
        else:
            if q % g:
                raise ScenarioError("group", f"G={g} must divide the {q} query heads "
                                    "(G at fixed parameters keeps them)")
            kv = q // g
    elif "kv_heads" in values and q % kv:
        raise ScenarioError("kv_heads", f"{kv} KV heads must divide the {q} query heads")
    upd.update(q_heads=q, kv_heads=kv)
    if "head_dim" in values:
        upd["head_dim"] = int(values["head_dim"])
    if "layers" in values:
        upd.update(base.with_layers(int(values["layers"])))
    for axis, field in (("experts", "n_routed_experts"), ("top_k", "experts_per_tok")):
        if axis in values:
            if not base.is_moe:
                raise ScenarioError(axis, f"{base.name} is dense: {axis} needs an MoE target")
            upd[field] = int(values[axis])
    if upd.get("experts_per_tok", base.experts_per_tok) > upd.get("n_routed_experts",
                                                                   base.n_routed_experts):
        raise ScenarioError("top_k", "top-k must not exceed the number of experts")
    tag = ",".join(f"{k}={values[k]}" for k in TARGET_AXES if k in values)
    try:
        # The base's slug: the design is that model reshaped, so its AL evidence (by slug) is
        # the base's, as ACCEPTANCE_NOTE says.
        return ModelSpec.model_validate({
            **base.model_dump(), **upd, "slug": base.slug,
            "name": f"{base.name} [{tag}]" if tag else base.name,
            "total_params_b": None, "active_params_b": None,  # computed from the new shapes
        })
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ScenarioError(str(err["loc"][0]) if err["loc"] else "design",
                            str(err["msg"])) from None


def design_scenario(scenario: Scenario, values: Mapping[str, Any],
                    group_at: GroupAt = "fixed_kv") -> Scenario:
    """The scenario with a design's target and drafter."""
    base = resolve(scenario)
    update: dict[str, Any] = {"group": None, "layers": None}
    if any(k in values for k in TARGET_AXES):
        model = design_model(base.model, values, group_at)
        if "group" in values and model.q_heads < scenario.tp:  # said by its axis, not by TP
            raise ScenarioError("group", f"G={values['group']} gives {model.q_heads} query "
                                f"heads, fewer than the TP={scenario.tp} ranks that split them")
        update.update(custom_model=model, model=model.slug)
    if "draft_layers" in values:
        mech = base.mechanism
        if mech.slug not in head_kinds():
            raise ScenarioError("draft_layers", f"the drafter's depth varies for "
                                f"{', '.join(head_kinds())}, not {mech.slug} (use rho)")
        update["custom_drafter"] = DrafterSpec(
            kind=mech.slug, name=f"{mech.name}, {values['draft_layers']} layers",
            draft_layers=int(values["draft_layers"]), draft_vocab=mech.draft_vocab)
    if "rho" in values:
        update["rho"] = float(values["rho"])
    return Scenario.model_validate({**scenario.model_dump(), **update})


def codesign(scenario: Scenario, axes: Mapping[str, Sequence[float]],
             group_at: GroupAt = "fixed_kv") -> pd.DataFrame:
    """One row per design (the cartesian product of `axes`): its shapes, parameters, the best D
    and speedup at the scenario's batch and context (memory included), and the D up to which
    verification stays in one attention tile."""
    unknown = [k for k in axes if k not in DESIGN_AXES]
    if unknown:
        raise ScenarioError(unknown[0], f"not a design axis; axes: {', '.join(DESIGN_AXES)}")
    names = [k for k in DESIGN_AXES if k in axes and len(axes[k])]
    n = int(np.prod([len(axes[k]) for k in names])) if names else 1
    if n > MAX_DESIGNS:
        raise ScenarioError(names[0], f"{n} designs; the limit is {MAX_DESIGNS}")
    rows = []
    for combo in itertools.product(*(axes[k] for k in names)):
        values = dict(zip(names, combo, strict=True))
        sc = design_scenario(scenario, values, group_at)
        m = scenario_model(sc)
        best = best_draft_len(sc, batches=[sc.batch])
        model = m.r.model
        g_rank = float(m.target.heads_per_rank(np.asarray([m.r.group]))[2][0])
        rows.append({
            **values,
            "q_heads": model.q_heads, "kv_heads_total": model.kv_heads,
            "group_G": model.group_size, "target_layers": model.layers,
            "params_b": model.param_count() / 1e9,
            "kv_bytes_per_token": _kv_bytes_per_token(model, sc.kv_dtype),
            "fits_in_memory": best.max_batch_in_memory is not None
            and best.max_batch_in_memory >= sc.batch,
            # among points that fit in memory (D = 0, speedup 1 when none does) …
            "best_draft_len": best.best_draft_len[0], "best_speedup": best.best_speedup[0],
            "acceptance_length": best.acceptance_length[0],
            # … and by speed alone (as the break-even batch and the engines' schedules)
            "speed_best_draft_len": best.speed_best_draft_len[0],
            "speed_best_speedup": best.speed_best_speedup[0],
            "tile_free_draft_len": max(0, int(TILE_ROWS // g_rank) - 1),
        })
    return pd.DataFrame(rows)


def _kv_bytes_per_token(model: ModelSpec, kv_dtype: str) -> float:
    per_layer = (model.head_dim if model.attention_kind == "mla"
                 else 2 * model.kv_heads * model.head_dim)
    return float(per_layer * model.n_attention_layers * BYTES_PER_ELEMENT[kv_dtype])

"""The Explorer page's data and charts, computed per scenario and cached.

Every chart of the page has a name; `chart(js, name, options)` builds it from the scenario's JSON
(the cache key) and the view's chart options, once per process: the same scenario in another
session, or a view switched back to, costs a dictionary lookup. Only the charts of the view on
screen are asked for; the Export view asks for them all (same cache)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from explorer.analysis.evaluate import Evaluation, evaluate
from explorer.analysis.frontier import BestDraftLen, best_draft_len, pareto
from explorer.analysis.recommend import Recommendation, recommend
from explorer.analysis.targets import operating_point
from explorer.analysis.views import (
    al_curves,
    gemm_efficiency,
    group_surface,
    speedup_surface,
    tile_steps,
    time_breakdown,
)
from explorer.specs.scenario import Scenario
from explorer.ui import figures

Options = tuple[tuple[str, Any], ...]  # hashable chart options, e.g. (("normalized", True),)


@st.cache_data(max_entries=64, show_spinner=False)
def evaluation(js: str) -> tuple[Evaluation, Recommendation]:
    sc = Scenario.model_validate_json(js)
    return evaluate(sc), recommend(sc)


@st.cache_data(max_entries=64, show_spinner=False)
def best(js: str) -> BestDraftLen:
    return best_draft_len(Scenario.model_validate_json(js))


@st.cache_data(max_entries=256, show_spinner=False)
def data(js: str, name: str) -> Any:
    """One analysis result behind a view, computed when a view first needs it."""
    sc = Scenario.model_validate_json(js)
    make: dict[str, Callable[[], Any]] = {
        "surface": lambda: speedup_surface(sc), "group": lambda: group_surface(sc),
        "pareto": lambda: pareto(sc), "tiles_current": lambda: tile_steps(sc),
        "tiles_article": lambda: tile_steps(sc, groups=(8, 32), contexts=(32768, 131072)),
        "gemm": lambda: gemm_efficiency(sc), "al": lambda: al_curves(sc),
        "time": lambda: time_breakdown(sc),
    }
    return make[name]()


def _model_hw(sc: Scenario) -> tuple[float, str]:
    from explorer.model.grid import scenario_model

    hw = scenario_model(sc).r.hardware
    return hw.peak_flops_per_s(sc.dtype) * hw.gemm_compute_efficiency_for(sc.dtype) / 1e12, hw.name


def best_per_mechanism(rec: Recommendation) -> list[Any]:
    seen: dict[str, Any] = {}
    for o in rec.ranking:
        seen.setdefault(o.mechanism, o)
    return list(seen.values())


def band_series(rec: Recommendation) -> list[Any]:
    """Per ranked mechanism: D, speedup and its 80 % band, in D order."""
    by_mech: dict[str, list[Any]] = {}
    for o in rec.ranking:
        by_mech.setdefault(o.mechanism, []).append(o)
    out = []
    for slug, opts in by_mech.items():
        opts.sort(key=lambda o: o.draft_len)
        out.append((slug, opts[0].mechanism_name, [o.draft_len for o in opts],
                    [o.speedup for o in opts],
                    [o.speedup_low if o.speedup_low is not None else o.speedup for o in opts],
                    [o.speedup_high if o.speedup_high is not None else o.speedup for o in opts]))
    return out


def _build(js: str, name: str, opt: dict[str, Any]) -> go.Figure | None:
    sc = Scenario.model_validate_json(js)
    ev, rec = evaluation(js)
    cur = (float(sc.batch), float(sc.draft_len))
    if name == "speedup_heatmap":
        return figures.speedup_heatmap(data(js, "surface"), cur,
                                       f"Speedup over (B, D): {sc.mechanism} on {sc.hardware}")
    if name == "speedup_surface_3d":
        return figures.speedup_surface_3d(data(js, "surface"), cur, ev.speedup,
                                          "Speedup surface (3D)")
    if name == "group_heatmap":
        return figures.group_heatmap(data(js, "group"), (ev.group, float(sc.draft_len)),
                                     f"Speedup over (G, D) at B={sc.batch}, "
                                     f"S={sc.context // 1024}K")
    if name in ("tile_steps_current", "tile_steps_article"):
        return figures.tile_steps_figure(data(js, name.replace("tile_steps", "tiles")),
                                         sc.draft_len, bool(opt.get("normalized", True)))
    if name == "gemm_efficiency":
        curves, ridge = data(js, "gemm")
        peak, hw = _model_hw(sc)
        return figures.gemm_figure(curves, ridge, peak, hw)
    if name == "al_vs_d":
        return figures.al_figure(data(js, "al"), sc.mechanism)
    if name == "pareto":
        with_spec, without = data(js, "pareto")
        return figures.pareto_figure(
            with_spec, without, operating_point(ev),
            (ev.baseline_tokens_per_s_per_user, ev.baseline_tokens_per_s_per_gpu),
            float(opt.get("slo") or 0))
    if name == "time_breakdown":
        return figures.breakdown_figure(data(js, "time"))
    if name == "speedup_bands":
        return figures.speedup_band_figure(band_series(rec), sc.batch) if rec.ranking else None
    if name == "speedup_split":
        each = best_per_mechanism(rec)
        if not each:
            return None
        return figures.speedup_split_figure(
            [o.mechanism_name for o in each], [o.acceptance_length for o in each],
            [o.verify_cost_factor for o in each], [o.draft_cost_factor for o in each])
    raise KeyError(name)


# Figures are not copied out of this cache: st.plotly_chart serialises a copy (to_dict) and
# nothing here mutates a figure after it is built.
@st.cache_resource(max_entries=512, show_spinner=False)
def chart(js: str, name: str, options: Options = ()) -> go.Figure | None:
    return _build(js, name, dict(options))


# name → the view it is drawn in; the Export view offers them all.
CHARTS: dict[str, str] = {
    "speedup_heatmap": "surface", "group_heatmap": "surface", "speedup_surface_3d": "surface",
    "tile_steps_current": "tiles", "tile_steps_article": "tiles", "gemm_efficiency": "gemm",
    "al_vs_d": "al", "pareto": "pareto", "time_breakdown": "time",
    "speedup_bands": "mechanisms", "speedup_split": "mechanisms",
}


def all_charts(js: str, options: dict[str, Options]) -> dict[str, go.Figure]:
    """Every chart of the page, for the Export view (each with its view's options)."""
    out = {}
    for name in CHARTS:
        fig = chart(js, name, options.get(name, ()))
        if fig is not None:
            out[name] = fig
    return out

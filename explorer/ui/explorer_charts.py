"""The Explorer page's data and charts, computed per scenario and cached.

Every chart of the page has a name; `chart(js, name, options)` builds it from the scenario's JSON
(the cache key) and the view's chart options, once per process: the same scenario in another
session, or a view switched back to, costs a dictionary lookup. Only the charts of the view on
screen are asked for; the Export view asks for them all (same cache).

The caches are bounded in-process LRU maps (functools.lru_cache), not st.cache_data: a hit costs
a dictionary lookup, where st.cache_data hashes the key and unpickles a copy of the value on
every call (~1 ms each, a dozen calls a rerun). The values are frozen results and finished
figure specs shared read-only by every session."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from explorer.analysis.evaluate import Evaluation, evaluate
from explorer.analysis.frontier import BestDraftLen, best_draft_len, pareto
from explorer.analysis.guidelines import Guideline, guidelines
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
Spec = dict[str, Any]  # a figure as plotly's to_dict() gives it (arrays base64)


# --- what each result depends on -------------------------------------------------------------
# The views over (B, D) do not depend on the scenario's own B and D, and the ranking and the
# (G, D) and tile views not on its D: a slider move then reuses them (tests/app/test_app_views.py
# checks each against a direct computation). A fixed AL is AL *at the scenario's D*, so such a
# scenario keeps its point.

def _without(js: str, *fields: str) -> str:
    sc = Scenario.model_validate_json(js)
    if sc.acceptance.kind == "fixed":
        return js
    reset = {"batch": 1, "draft_len": 0}
    return sc.model_copy(update={f: reset[f] for f in fields}).model_dump_json()


@lru_cache(maxsize=512)
def point_free(js: str) -> str:
    return _without(js, "batch", "draft_len")


@lru_cache(maxsize=512)
def d_free(js: str) -> str:
    return _without(js, "draft_len")


DATA_KEY: dict[str, Callable[[str], str]] = {
    "surface": point_free, "pareto": point_free, "gemm": point_free, "al": point_free,
    "best": point_free, "group": d_free, "tiles_current": d_free, "tiles_article": d_free,
}


@lru_cache(maxsize=128)
def evaluation(js: str) -> Evaluation:
    return evaluate(Scenario.model_validate_json(js))


@lru_cache(maxsize=64)
def _ranking(js: str) -> Recommendation:
    return recommend(Scenario.model_validate_json(js))


@lru_cache(maxsize=128)
def _guidelines(js: str) -> list[Guideline]:
    return guidelines(Scenario.model_validate_json(js), evaluation(js).attention_fraction)


def recommendation(js: str) -> Recommendation:
    """recommend(scenario): the ranking (at the scenario's B, over every D) from the D-free
    cache; guidelines 1–4 read the scenario's own D, so they are this scenario's. When nothing
    fits, the fit hints may read D too: then the scenario itself is ranked."""
    rec = _ranking(d_free(js))
    if rec.best is None:
        return _ranking(js)
    own = _guidelines(js)
    ids = {g.id for g in own}
    return rec.model_copy(update={"guidelines": [*own, *(g for g in rec.guidelines
                                                          if g.id not in ids)]})


def best(js: str) -> BestDraftLen:
    return data(js, "best")  # type: ignore[no-any-return]


def data(js: str, name: str) -> Any:
    """One analysis result behind a view, computed when a view first needs it."""
    key = DATA_KEY.get(name)
    return _data(key(js) if key is not None else js, name)


@lru_cache(maxsize=256)
def _data(js: str, name: str) -> Any:
    sc = Scenario.model_validate_json(js)
    make: dict[str, Callable[[], Any]] = {
        "surface": lambda: speedup_surface(sc), "group": lambda: group_surface(sc),
        "pareto": lambda: pareto(sc), "tiles_current": lambda: tile_steps(sc),
        "tiles_article": lambda: tile_steps(sc, groups=(8, 32), contexts=(32768, 131072)),
        "gemm": lambda: gemm_efficiency(sc), "al": lambda: al_curves(sc),
        "time": lambda: time_breakdown(sc), "best": lambda: best_draft_len(sc),
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


# --- charts ----------------------------------------------------------------------------------

def _figure(js: str, name: str, opt: dict[str, Any], with_point: bool) -> go.Figure | None:
    """The chart of this scenario; without its current point (marker, D line) when asked, so
    the same base serves every point (the point is added by `_point`)."""
    sc = Scenario.model_validate_json(js)
    cur = (float(sc.batch), float(sc.draft_len)) if with_point else None
    if name == "speedup_heatmap":
        return figures.speedup_heatmap(data(js, "surface"), cur,
                                       f"Speedup over (B, D): {sc.mechanism} on {sc.hardware}")
    if name == "speedup_surface_3d":
        return figures.speedup_surface_3d(data(js, "surface"), cur,
                                          evaluation(js).speedup if with_point else None,
                                          "Speedup surface (3D)")
    if name == "group_heatmap":
        group = (evaluation(js).group, float(sc.draft_len)) if with_point else None
        return figures.group_heatmap(data(js, "group"), group,
                                     f"Speedup over (G, D) at B={sc.batch}, "
                                     f"S={sc.context // 1024}K")
    if name in ("tile_steps_current", "tile_steps_article"):
        return figures.tile_steps_figure(data(js, name.replace("tile_steps", "tiles")),
                                         sc.draft_len if with_point else None,
                                         bool(opt.get("normalized", True)))
    if name == "gemm_efficiency":
        curves, ridge = data(js, "gemm")
        peak, hw = _model_hw(sc)
        return figures.gemm_figure(curves, ridge, peak, hw)
    if name == "al_vs_d":
        return figures.al_figure(data(js, "al"), sc.mechanism)
    if name == "pareto":
        with_spec, without = data(js, "pareto")
        ev = evaluation(js) if with_point else None
        return figures.pareto_figure(
            with_spec, without, operating_point(ev) if ev is not None else None,
            (ev.baseline_tokens_per_s_per_user, ev.baseline_tokens_per_s_per_gpu)
            if ev is not None else None, float(opt.get("slo") or 0))
    if name == "time_breakdown":
        return figures.breakdown_figure(data(js, "time"))
    rec = recommendation(js)
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


# Charts whose base does not depend on the point: built once per point-free (or D-free)
# scenario, the point added to a copy of the spec (a dict: no figure is built or validated).
POINT_BASE: dict[str, Callable[[str], str]] = {
    "speedup_heatmap": point_free, "speedup_surface_3d": point_free, "pareto": point_free,
    "group_heatmap": d_free, "tile_steps_current": d_free, "tile_steps_article": d_free,
    "gemm_efficiency": point_free, "al_vs_d": point_free,
}


def _point(js: str, name: str) -> tuple[list[Spec], list[Spec], list[Spec]]:
    """(traces, shapes, annotations) that show the scenario's own point on a chart."""
    sc = Scenario.model_validate_json(js)
    cur = (float(sc.batch), float(sc.draft_len))
    if name == "speedup_heatmap":
        return figures.heatmap_marker(data(js, "surface"), cur), [], []
    if name == "speedup_surface_3d":
        return figures.surface_3d_marker(cur, evaluation(js).speedup), [], []
    if name == "group_heatmap":
        return figures.group_marker((evaluation(js).group, cur[1])), [], []
    if name.startswith("tile_steps"):
        line, note = figures.tile_current_line(sc.draft_len)
        return [], [line], [note]
    if name == "pareto":
        ev = evaluation(js)
        return figures.pareto_markers(operating_point(ev), (
            ev.baseline_tokens_per_s_per_user, ev.baseline_tokens_per_s_per_gpu)), [], []
    return [], [], []


class FigureSpec(go.Figure):  # type: ignore[misc]
    """A figure already serialised: `to_dict()` returns the spec. st.plotly_chart takes a plotly
    Figure's to_dict() as validated (plotly.tools.return_figure_from_figure_or_data), so a cached
    spec with a new point is sent without building and validating a figure again (30–60 ms a
    chart on this machine)."""

    def __init__(self, spec: Spec) -> None:
        super().__init__()
        self._spec = spec

    def to_dict(self) -> Spec:
        return self._spec


@lru_cache(maxsize=256)
def _base(base_js: str, name: str, options: Options) -> Spec | None:
    fig = _figure(base_js, name, dict(options), with_point=False)
    return None if fig is None else fig.to_dict()


@lru_cache(maxsize=512)
def chart(js: str, name: str, options: Options = ()) -> go.Figure | None:
    """The chart as shown: a cached base and this scenario's point."""
    key = POINT_BASE.get(name)
    if key is None:  # depends on the whole scenario (time breakdown, the ranking's charts)
        fig = _figure(js, name, dict(options), with_point=True)
        return None if fig is None else FigureSpec(fig.to_dict())
    base = _base(key(js), name, options)
    if base is None:
        return None
    traces, shapes, notes = _point(js, name)
    layout = dict(base["layout"])
    if shapes or notes:
        layout["shapes"] = [*layout.get("shapes", []), *shapes]
        layout["annotations"] = [*layout.get("annotations", []), *notes]
    return FigureSpec({**base, "data": [*base["data"], *traces], "layout": layout})


@lru_cache(maxsize=256)
def unmarked(js: str, name: str, options: Options = ()) -> go.Figure | None:
    """The chart without the scenario's own point: one spec for every point it does not depend
    on, so a D (or B) move leaves the drawn chart alone — Streamlit identifies a chart by its
    spec, and a changed spec is drawn anew (remounted, ~0.2–0.4 s a heatmap here)."""
    key = POINT_BASE.get(name)
    if key is None:
        return chart(js, name, options)
    base = _base(key(js), name, options)
    return None if base is None else FigureSpec(base)


# name → the view it is drawn in; the Export view offers them all.
CHARTS: dict[str, str] = {
    "speedup_heatmap": "surface", "group_heatmap": "surface", "speedup_surface_3d": "surface",
    "tile_steps_current": "tiles", "tile_steps_article": "tiles", "gemm_efficiency": "gemm",
    "al_vs_d": "al", "pareto": "pareto", "time_breakdown": "time",
    "speedup_bands": "mechanisms", "speedup_split": "mechanisms",
}


@st.cache_resource(max_entries=64, show_spinner=False)
def _full(js: str, name: str, options: Options) -> go.Figure | None:
    return _figure(js, name, dict(options), with_point=True)


def all_charts(js: str, options: dict[str, Options]) -> dict[str, go.Figure]:
    """Every chart of the page as a plotly Figure, for the Export view (with its view's
    options): HTML, PNG and SVG are made from these."""
    out = {}
    for name in CHARTS:
        fig = _full(js, name, options.get(name, ()))
        if fig is not None:
            out[name] = fig
    return out

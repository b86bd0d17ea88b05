"""The Explorer page's data and charts, computed per scenario and cached.

Every chart of the page is a row of CHART_TABLE; `chart(scenario, name, options)` builds it from
the scenario (the cache key: the frozen model's hash, no JSON round trip) and the view's chart
options, once per process: the same scenario in another session, or a view switched back to,
costs a dictionary lookup. Only the charts of the view on
screen are asked for; the Export view asks for them all (same cache).

The caches are bounded in-process LRU maps (functools.lru_cache), not st.cache_data: a hit costs
a dictionary lookup, where st.cache_data hashes the key and unpickles a copy of the value on
every call (~1 ms each, a dozen calls a rerun). The values are frozen results and finished
figure specs shared read-only by every session."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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
from explorer.specs.scenario import Scenario, tokens_label
from explorer.ui import figures

Options = tuple[tuple[str, Any], ...]  # hashable chart options, e.g. (("normalized", True),)
Spec = dict[str, Any]  # a figure as plotly's to_dict() gives it (arrays base64)
# A scenario, the key of every cache here (its frozen model's hash: no JSON round trip), or its
# JSON, as older callers pass it (read once, then the same scenario).
Key = Scenario | str


@lru_cache(maxsize=64)
def _parsed(js: str) -> Scenario:
    return Scenario.model_validate_json(js)


def scenario_of(key: Key) -> Scenario:
    return key if isinstance(key, Scenario) else _parsed(key)


# --- what each result depends on -------------------------------------------------------------
# The views over (B, D) do not depend on the scenario's own B and D, and the ranking and the
# (G, D) and tile views not on its D: a slider move then reuses them (tests/app/test_app_views.py
# checks each against a direct computation). A fixed AL is AL *at the scenario's D*, so such a
# scenario keeps its point.

def _without(sc: Scenario, *fields: str) -> Scenario:
    if sc.acceptance.kind == "fixed":
        return sc
    reset = {"batch": 1, "draft_len": 0}
    return sc.model_copy(update={f: reset[f] for f in fields})


@lru_cache(maxsize=512)
def _point_free(sc: Scenario) -> Scenario:
    return _without(sc, "batch", "draft_len")


@lru_cache(maxsize=512)
def _d_free(sc: Scenario) -> Scenario:
    return _without(sc, "draft_len")


def point_free(key: Key) -> Scenario:
    return _point_free(scenario_of(key))


def d_free(key: Key) -> Scenario:
    return _d_free(scenario_of(key))


Base = Callable[[Key], Scenario]  # the scenario a result depends on (point_free, d_free)


@dataclass(frozen=True)
class Data:
    """One analysis result behind a view: how it is made, and what it depends on (None: the
    whole scenario)."""

    make: Callable[[Scenario], Any]
    base: Base | None = None


DATA: dict[str, Data] = {
    "surface": Data(speedup_surface, point_free),
    "group": Data(group_surface, d_free),
    "pareto": Data(pareto, point_free),
    "tiles_current": Data(tile_steps, d_free),
    "tiles_article": Data(lambda sc: tile_steps(sc, groups=(8, 32), contexts=(32768, 131072)),
                          d_free),
    "gemm": Data(gemm_efficiency, point_free),
    "al": Data(al_curves, point_free),
    "time": Data(time_breakdown),
    "best": Data(best_draft_len, point_free),
}
DATA_KEY: dict[str, Base] = {n: d.base for n, d in DATA.items() if d.base is not None}


@lru_cache(maxsize=128)
def _evaluation(sc: Scenario) -> Evaluation:
    return evaluate(sc)


def evaluation(key: Key) -> Evaluation:
    return _evaluation(scenario_of(key))


@lru_cache(maxsize=64)
def _ranking(sc: Scenario) -> Recommendation:
    return recommend(sc)


@lru_cache(maxsize=128)
def _guidelines(sc: Scenario) -> list[Guideline]:
    return guidelines(sc, _evaluation(sc).attention_fraction)


def recommendation(key: Key) -> Recommendation:
    """recommend(scenario): the ranking (at the scenario's B, over every D) from the D-free
    cache; guidelines 1–4 read the scenario's own D, so they are this scenario's. When nothing
    fits, the fit hints may read D too: then the scenario itself is ranked."""
    sc = scenario_of(key)
    rec = _ranking(d_free(sc))
    if rec.best is None:
        return _ranking(sc)
    own = _guidelines(sc)
    ids = {g.id for g in own}
    return rec.model_copy(update={"guidelines": [*own, *(g for g in rec.guidelines
                                                          if g.id not in ids)]})


def best(key: Key) -> BestDraftLen:
    return data(key, "best")  # type: ignore[no-any-return]


def data(key: Key, name: str) -> Any:
    """One analysis result behind a view, computed when a view first needs it."""
    sc = scenario_of(key)
    base = DATA[name].base
    return _data(base(sc) if base is not None else sc, name)


@lru_cache(maxsize=256)
def _data(sc: Scenario, name: str) -> Any:
    return DATA[name].make(sc)


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
# One table: each chart's name, the view it is drawn in (explorer/interfaces/view_state.py VIEWS,
# whose titles the switcher shows and whose key is the link's `vw`), its figure builder, the
# scenario its base depends on, how the scenario's own point is drawn on that base, and the view
# options its builder reads. The switcher, the caches and the Export view read it.

Points = tuple[list[Spec], list[Spec], list[Spec]]  # (traces, shapes, annotations)


@dataclass(frozen=True)
class Chart:
    name: str
    view: str
    # The chart of this scenario; without its current point when asked (with_point False).
    build: Callable[[Scenario, dict[str, Any], bool], go.Figure | None]
    # Its base (a point-free or D-free scenario) and the point drawn on it; None: the chart
    # depends on the whole scenario (time breakdown, the ranking's charts).
    base: Base | None = None
    point: Callable[[Scenario], Points] | None = None
    options: tuple[str, ...] = ()  # the view options its builder reads (normalized, slo)


def _current(sc: Scenario, with_point: bool) -> tuple[float, float] | None:
    return (float(sc.batch), float(sc.draft_len)) if with_point else None


def _speedup_heatmap(sc: Scenario, opt: dict[str, Any], with_point: bool) -> go.Figure | None:
    return figures.speedup_heatmap(data(sc, "surface"), _current(sc, with_point),
                                   f"Speedup over (B, D): {sc.mechanism} on {sc.hardware}")


def _speedup_surface_3d(sc: Scenario, opt: dict[str, Any], with_point: bool) -> go.Figure | None:
    return figures.speedup_surface_3d(data(sc, "surface"), _current(sc, with_point),
                                      evaluation(sc).speedup if with_point else None,
                                      "Speedup surface (3D)")


def _group_heatmap(sc: Scenario, opt: dict[str, Any], with_point: bool) -> go.Figure | None:
    group = (evaluation(sc).group, float(sc.draft_len)) if with_point else None
    title = f"Speedup over (G, D) at B={sc.batch}, S={tokens_label(sc.context)}"
    return figures.group_heatmap(data(sc, "group"), group, title)


def _tile_steps(which: str) -> Callable[[Scenario, dict[str, Any], bool], go.Figure | None]:
    def build(sc: Scenario, opt: dict[str, Any], with_point: bool) -> go.Figure | None:
        return figures.tile_steps_figure(data(sc, which), sc.draft_len if with_point else None,
                                         bool(opt.get("normalized", True)))
    return build


def _gemm_efficiency(sc: Scenario, opt: dict[str, Any], with_point: bool) -> go.Figure | None:
    curves, ridge = data(sc, "gemm")
    peak, hw = _model_hw(sc)
    return figures.gemm_figure(curves, ridge, peak, hw)


def _al_vs_d(sc: Scenario, opt: dict[str, Any], with_point: bool) -> go.Figure | None:
    return figures.al_figure(data(sc, "al"), sc.mechanism)


def _pareto(sc: Scenario, opt: dict[str, Any], with_point: bool) -> go.Figure | None:
    with_spec, without = data(sc, "pareto")
    ev = evaluation(sc) if with_point else None
    return figures.pareto_figure(
        with_spec, without, operating_point(ev) if ev is not None else None,
        (ev.baseline_tokens_per_s_per_user, ev.baseline_tokens_per_s_per_gpu)
        if ev is not None else None, float(opt.get("slo") or 0))


def _time_breakdown(sc: Scenario, opt: dict[str, Any], with_point: bool) -> go.Figure | None:
    return figures.breakdown_figure(data(sc, "time"))


def _speedup_bands(sc: Scenario, opt: dict[str, Any], with_point: bool) -> go.Figure | None:
    rec = recommendation(sc)
    return figures.speedup_band_figure(band_series(rec), sc.batch) if rec.ranking else None


def _speedup_split(sc: Scenario, opt: dict[str, Any], with_point: bool) -> go.Figure | None:
    each = best_per_mechanism(recommendation(sc))
    if not each:
        return None
    return figures.speedup_split_figure(
        [o.mechanism_name for o in each], [o.acceptance_length for o in each],
        [o.verify_cost_factor for o in each], [o.draft_cost_factor for o in each],
        [o.prefill_factor for o in each])


def _heatmap_point(sc: Scenario) -> Points:
    return figures.heatmap_marker(data(sc, "surface"), (float(sc.batch), float(sc.draft_len))), \
        [], []


def _surface_3d_point(sc: Scenario) -> Points:
    cur = (float(sc.batch), float(sc.draft_len))
    return figures.surface_3d_marker(cur, evaluation(sc).speedup), [], []


def _group_point(sc: Scenario) -> Points:
    return figures.group_marker((evaluation(sc).group, float(sc.draft_len))), [], []


def _tile_point(sc: Scenario) -> Points:
    line, note = figures.tile_current_line(sc.draft_len)
    return [], [line], [note]


def _pareto_point(sc: Scenario) -> Points:
    ev = evaluation(sc)
    return figures.pareto_markers(operating_point(ev), (
        ev.baseline_tokens_per_s_per_user, ev.baseline_tokens_per_s_per_gpu)), [], []


def _no_point(sc: Scenario) -> Points:
    return [], [], []


CHART_TABLE: tuple[Chart, ...] = (
    Chart("speedup_heatmap", "surface", _speedup_heatmap, point_free, _heatmap_point),
    Chart("group_heatmap", "surface", _group_heatmap, d_free, _group_point),
    Chart("speedup_surface_3d", "surface", _speedup_surface_3d, point_free, _surface_3d_point),
    Chart("tile_steps_current", "tiles", _tile_steps("tiles_current"), d_free, _tile_point,
          ("normalized",)),
    Chart("tile_steps_article", "tiles", _tile_steps("tiles_article"), d_free, _tile_point,
          ("normalized",)),
    Chart("gemm_efficiency", "gemm", _gemm_efficiency, point_free, _no_point),
    Chart("al_vs_d", "al", _al_vs_d, point_free, _no_point),
    Chart("pareto", "pareto", _pareto, point_free, _pareto_point, ("slo",)),
    Chart("time_breakdown", "time", _time_breakdown),
    Chart("speedup_bands", "mechanisms", _speedup_bands),
    Chart("speedup_split", "mechanisms", _speedup_split),
)
CHART_BY_NAME: dict[str, Chart] = {c.name: c for c in CHART_TABLE}
# name → the view it is drawn in; the Export view offers them all.
CHARTS: dict[str, str] = {c.name: c.view for c in CHART_TABLE}
# Charts whose base does not depend on the point: built once per point-free (or D-free)
# scenario, the point added to a copy of the spec (a dict: no figure is built or validated).
POINT_BASE: dict[str, Base] = {c.name: c.base for c in CHART_TABLE if c.base is not None}


def chart_options(name: str, current: dict[str, Any]) -> Options:
    """The options a chart's builder reads, from the view's current values of them."""
    return tuple((k, current[k]) for k in CHART_BY_NAME[name].options if k in current)


def _figure(key: Key, name: str, opt: dict[str, Any], with_point: bool) -> go.Figure | None:
    """The chart of this scenario; without its current point (marker, D line) when asked, so
    the same base serves every point (the point is added by `_point`)."""
    return CHART_BY_NAME[name].build(scenario_of(key), opt, with_point)


def _point(key: Key, name: str) -> Points:
    """(traces, shapes, annotations) that show the scenario's own point on a chart."""
    point = CHART_BY_NAME[name].point
    return point(scenario_of(key)) if point is not None else ([], [], [])


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
def _base(base: Scenario, name: str, options: Options) -> Spec | None:
    fig = _figure(base, name, dict(options), with_point=False)
    return None if fig is None else fig.to_dict()


def chart(key: Key, name: str, options: Options = ()) -> go.Figure | None:
    """The chart as shown: a cached base and this scenario's point."""
    return _chart(scenario_of(key), name, options)


@lru_cache(maxsize=512)
def _chart(sc: Scenario, name: str, options: Options) -> go.Figure | None:
    base_of = POINT_BASE.get(name)
    if base_of is None:  # depends on the whole scenario (time breakdown, the ranking's charts)
        fig = _figure(sc, name, dict(options), with_point=True)
        return None if fig is None else FigureSpec(fig.to_dict())
    base = _base(base_of(sc), name, options)
    if base is None:
        return None
    traces, shapes, notes = _point(sc, name)
    layout = dict(base["layout"])
    if shapes or notes:
        layout["shapes"] = [*layout.get("shapes", []), *shapes]
        layout["annotations"] = [*layout.get("annotations", []), *notes]
    return FigureSpec({**base, "data": [*base["data"], *traces], "layout": layout})


def unmarked(key: Key, name: str, options: Options = ()) -> go.Figure | None:
    """The chart without the scenario's own point: one spec for every point it does not depend
    on, so a D (or B) move leaves the drawn chart alone — a changed spec is drawn again (by
    Streamlit's element remounted, ~0.2–0.4 s a heatmap here; by chart_view's bundle in place)."""
    return _unmarked(scenario_of(key), name, options)


@lru_cache(maxsize=256)
def _unmarked(sc: Scenario, name: str, options: Options) -> go.Figure | None:
    base_of = POINT_BASE.get(name)
    if base_of is None:
        return _chart(sc, name, options)
    base = _base(base_of(sc), name, options)
    return None if base is None else FigureSpec(base)


@st.cache_resource(max_entries=64, show_spinner=False)
def _full(js: str, name: str, options: Options) -> go.Figure | None:
    return _figure(js, name, dict(options), with_point=True)


def all_charts(key: Key, options: dict[str, Options]) -> dict[str, go.Figure]:
    """Every chart of the page as a plotly Figure, for the Export view (with its view's
    options): HTML, PNG and SVG are made from these."""
    js = key if isinstance(key, str) else key.model_dump_json()  # st.cache_resource's key
    out = {}
    for name in CHARTS:
        fig = _full(js, name, options.get(name, ()))
        if fig is not None:
            out[name] = fig
    return out

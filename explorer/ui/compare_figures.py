"""Compare-page figures as pure functions: two to four scenarios overlaid (no Streamlit here)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from explorer.analysis.frontier import ParetoFrontier, pareto
from explorer.analysis.views import speedup_surface
from explorer.base.limits import VIEW_MAX_DRAFT_LEN
from explorer.model.grid import scenario_model
from explorer.specs.scenario import Scenario
from explorer.ui.figures import log_ticks, vline
from explorer.ui.text import plotly_text

FloatArray = npt.NDArray[np.float64]
COLORS = ("#E45756", "#4C78A8", "#54A24B", "#B279A2")
_LAYOUT = {"margin": {"l": 60, "r": 20, "t": 50, "b": 60}, "hovermode": "closest",
           "legend": {"orientation": "h", "y": -0.28}}


@dataclass(frozen=True)
class CompareSeries:
    """What the overlays draw for one scenario."""

    label: str
    batch: int
    draft_len: int
    d: FloatArray  # draft lengths 0..d_max
    speedup: FloatArray  # speedup vs D at the scenario's B (NaN where it does not fit)
    acceptance_length: FloatArray  # AL vs D (NaN where the source has no value)
    al_source: str
    with_spec: ParetoFrontier
    without: ParetoFrontier
    current: tuple[float, float] | None  # (tokens/s per user, per GPU) at the scenario's point
    # D where an acceptance model, not the evidence, gives AL (a measured curve ends at D=7).
    model_extended: npt.NDArray[np.bool_] | None = None

    @property
    def fits(self) -> bool:
        """Whether any D ≥ 1 fits in memory at the scenario's batch (else nothing to draw)."""
        return bool(np.isfinite(self.speedup[1:]).any())

    def same_as(self, other: CompareSeries) -> bool:
        """Identical curves (e.g. the same scenario pinned twice): one would hide the other."""
        return (self.batch == other.batch and self.draft_len == other.draft_len
                and np.array_equal(self.speedup, other.speedup, equal_nan=True)
                and np.array_equal(self.acceptance_length, other.acceptance_length,
                                   equal_nan=True)
                and self.with_spec == other.with_spec and self.without == other.without)


def compare_series(label: str, scenario: Scenario, current: tuple[float, float] | None = None,
                   d_max: int = VIEW_MAX_DRAFT_LEN) -> CompareSeries:
    """The arrays behind the overlays for one scenario (pure numpy via the core)."""
    surface = speedup_surface(scenario, batches=[scenario.batch], d_max=d_max)
    al = scenario_model(scenario).acceptance(surface.y)
    with_spec, without = pareto(scenario)
    return CompareSeries(
        label=label, batch=scenario.batch, draft_len=scenario.draft_len, d=surface.y,
        speedup=np.asarray(surface.z[:, 0], dtype=np.float64),
        acceptance_length=np.asarray(al.acceptance_length, dtype=np.float64),
        al_source=al.provenance, with_spec=with_spec, without=without, current=current,
        model_extended=np.asarray(al.extrapolated, dtype=bool))


def _style(series: Sequence[CompareSeries], i: int) -> tuple[str, str, str]:
    """(label, line dash, legend note) of series i: a series identical to an earlier one is
    drawn dashed and named so, one that does not fit is named so (nothing to draw)."""
    s = series[i]
    label = plotly_text(s.label)
    twin = next((j for j in range(i) if series[j].same_as(s)), None)
    if twin is not None:
        return label, "dash", f" (identical to {plotly_text(series[twin].label)})"
    if not s.fits:
        return label, "solid", f" — does not fit in memory at B={s.batch}: not drawn"
    return label, "solid", ""


def _split(y: FloatArray, extended: npt.NDArray[np.bool_] | None
           ) -> tuple[FloatArray, FloatArray | None]:
    """(within the evidence, model-extended) parts of a curve, joined at the last solid point."""
    if extended is None or not extended.any():
        return y, None
    joined = extended | np.concatenate([extended[1:], [False]])
    return np.where(extended, np.nan, y), np.where(joined, y, np.nan)


def _f32(a: npt.ArrayLike) -> npt.NDArray[np.float32]:
    return np.asarray(a, dtype=np.float32)


def _at(x: FloatArray, y: FloatArray, at: float) -> float | None:
    hit = np.nonzero(x == at)[0]
    if not hit.size or not np.isfinite(y[hit[0]]):
        return None
    return float(y[hit[0]])


def speedup_overlay(series: Sequence[CompareSeries]) -> go.Figure:
    """Speedup vs D, each scenario at its own batch; its chosen D marked."""
    fig = go.Figure()
    for i, s in enumerate(series):
        color = COLORS[i % len(COLORS)]
        label, dash, note = _style(series, i)
        solid, extended = _split(s.speedup, s.model_extended)
        fig.add_trace(go.Scatter(
            x=_f32(s.d), y=_f32(solid) if s.fits else [None], mode="lines",
            name=f"{label} (B={s.batch})"[:70] + note,
            line={"color": color, "width": 2, "dash": dash}, legendgroup=str(i),
            hovertemplate="D=%{x}<br>speedup %{y:.3f}×<extra>" + label[:30] + "</extra>"))
        if extended is not None and s.fits:
            fig.add_trace(go.Scatter(
                x=_f32(s.d), y=_f32(extended), mode="lines", showlegend=False,
                legendgroup=str(i), line={"color": color, "width": 1, "dash": "dot"},
                hovertemplate="D=%{x}<br>speedup %{y:.3f}× (AL model-extended)<extra>"
                + label[:30] + "</extra>"))
        y = _at(s.d, s.speedup, s.draft_len)
        if y is not None:
            fig.add_trace(go.Scatter(
                x=[s.draft_len], y=[y], mode="markers", showlegend=False, legendgroup=str(i),
                marker={"symbol": "x", "size": 12, "color": color},
                hovertemplate=f"this scenario: D={s.draft_len}, %{{y:.3f}}×<extra></extra>"))
    x_max = float(max((s.d[-1] for s in series), default=VIEW_MAX_DRAFT_LEN))
    fig.add_trace(go.Scatter(x=[0, x_max],
                             y=[1, 1], mode="lines", name="no speedup",
                             line={"color": "gray", "dash": "dot", "width": 1}, hoverinfo="skip"))
    fig.update_layout(title="Speedup vs draft length D (each at its own batch B; × = its D)",
                      xaxis={"title": "draft length D (tokens)"},
                      yaxis={"title": "speedup over plain decoding (×)"}, **_LAYOUT)
    return fig


def pareto_overlay(series: Sequence[CompareSeries], slo: float | None = None) -> go.Figure:
    """Each scenario's frontier with speculation (solid) and without (dotted)."""
    fig = go.Figure()
    for i, s in enumerate(series):
        color = COLORS[i % len(COLORS)]
        label, dash, note = _style(series, i)
        if not s.with_spec.batch:
            note = " — no point fits in memory: not drawn"
        fig.add_trace(go.Scatter(
            x=_f32(s.with_spec.tokens_per_s_per_user) if s.with_spec.batch else [None],
            y=_f32(s.with_spec.tokens_per_s_per_gpu) if s.with_spec.batch else [None],
            mode="lines+markers", name=f"{label}: with speculation"[:70] + note,
            legendgroup=str(i), line={"color": color, "width": 2, "dash": dash},
            marker={"size": 4},
            customdata=np.stack([s.with_spec.batch, s.with_spec.draft_len], axis=-1)
            if s.with_spec.batch else None,
            hovertemplate="B=%{customdata[0]}, D=%{customdata[1]}<br>%{x:.1f} tok/s/user<br>"
            "%{y:.0f} tok/s/GPU<extra>" + label[:30] + "</extra>"))
        fig.add_trace(go.Scatter(
            x=_f32(s.without.tokens_per_s_per_user), y=_f32(s.without.tokens_per_s_per_gpu),
            mode="lines", name=f"{label}: without"[:70], legendgroup=str(i),
            line={"color": color, "width": 1, "dash": "dot"},
            hovertemplate="%{x:.1f} tok/s/user<br>%{y:.0f} tok/s/GPU<extra>no spec</extra>"))
        if s.current is not None:
            fig.add_trace(go.Scatter(
                x=[s.current[0]], y=[s.current[1]], mode="markers", showlegend=False,
                legendgroup=str(i), marker={"symbol": "x", "size": 12, "color": color},
                hovertemplate=f"this scenario: B={s.batch}, D={s.draft_len}<br>"
                "%{x:.1f} tok/s/user<br>%{y:.0f} tok/s/GPU<extra></extra>"))
    if slo:
        slo_line, slo_note = vline(float(slo), f"SLO {slo:g} tok/s/user", color="orange",
                                   dash="dash", log_x=True)
        fig.update_layout(shapes=[slo_line], annotations=[slo_note])
    xs = [x for s in series for x in (*s.with_spec.tokens_per_s_per_user,
                                      *s.without.tokens_per_s_per_user)] + ([slo] if slo else [])
    ys = [y for s in series for y in (*s.with_spec.tokens_per_s_per_gpu,
                                      *s.without.tokens_per_s_per_gpu)]
    fig.update_layout(title="Pareto frontiers: throughput per GPU vs speed per user",
                      xaxis={"title": "tokens/s per user (interactivity, log)", "type": "log",
                             **log_ticks(xs)},
                      yaxis={"title": "tokens/s per GPU (throughput, log)", "type": "log",
                             **log_ticks(ys)},
                      **_LAYOUT)
    return fig


def al_overlay(series: Sequence[CompareSeries]) -> go.Figure:
    """AL vs D from each scenario's own source; its chosen D marked."""
    fig = go.Figure()
    for i, s in enumerate(series):
        color = COLORS[i % len(COLORS)]
        label, dash, note = _style(series, i)
        note = note if "identical" in note else ""  # AL does not depend on memory
        solid, extended = _split(s.acceptance_length, s.model_extended)
        fig.add_trace(go.Scatter(
            x=_f32(s.d), y=_f32(solid), mode="lines+markers",
            name=label[:70] + note, legendgroup=str(i),
            line={"color": color, "width": 2, "dash": dash},
            marker={"size": 4},
            hovertemplate="D=%{x}<br>AL=%{y:.2f}<br>"
            + plotly_text(s.al_source[:140].replace("%", "%%"))
            + "<extra>" + label[:30] + "</extra>"))
        if extended is not None:
            fig.add_trace(go.Scatter(
                x=_f32(s.d), y=_f32(extended), mode="lines", legendgroup=str(i),
                name=f"{label}: model-extended (beyond the evidence)"[:80],
                line={"color": color, "width": 1, "dash": "dot"},
                hovertemplate="D=%{x}<br>AL=%{y:.2f} (model-extended)<extra>" + label[:30]
                + "</extra>"))
        y = _at(s.d, s.acceptance_length, s.draft_len)
        if y is not None:
            fig.add_trace(go.Scatter(
                x=[s.draft_len], y=[y], mode="markers", showlegend=False, legendgroup=str(i),
                marker={"symbol": "x", "size": 12, "color": color},
                hovertemplate=f"this scenario: D={s.draft_len}, AL=%{{y:.2f}}<extra></extra>"))
    d_max = float(max((s.d[-1] for s in series), default=VIEW_MAX_DRAFT_LEN))
    fig.add_trace(go.Scatter(x=[0, d_max], y=[1, 1 + d_max], mode="lines",
                             name="AL = 1+D bound", line={"color": "gray", "dash": "dot",
                                                          "width": 1}, hoverinfo="skip"))
    top = max((float(np.nanmax(s.acceptance_length)) for s in series
               if np.isfinite(s.acceptance_length).any()), default=8.0)
    fig.update_layout(title="Acceptance length vs draft length D (each scenario's AL source)",
                      xaxis={"title": "draft length D (tokens)"},
                      yaxis={"title": "AL (tokens per target step)", "range": [1, top + 1]},
                      **_LAYOUT)
    return fig

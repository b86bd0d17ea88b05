"""Figures as pure functions: core results in, plotly Figure out (no Streamlit here)."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from explorer.analysis.frontier import ParetoFrontier
from explorer.analysis.views import ALSeries, GemmCurve, Surface, TileCurve
from explorer.base.limits import VIEW_MAX_DRAFT_LEN
from explorer.base.mechanisms import mechanism_colour
from explorer.model.layers import COMPONENTS
from explorer.ui.text import plotly_text

COMPONENT_COLORS = {
    "gemm": "#4C78A8", "attention": "#F58518", "moe": "#54A24B", "communication": "#B279A2",
    "overhead": "#9D755D", "lm_head": "#72B7B2",
}
_LAYOUT = {"margin": {"l": 60, "r": 20, "t": 50, "b": 60}, "hovermode": "closest",
           "legend": {"orientation": "h", "y": -0.28}}


def vline(x: float, text: str, color: str = "gray", dash: str = "dot",
          angle: int = 0, log_x: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """A vertical line and its label as plain layout dicts (Figure.add_vline is ~30 ms each).

    On a log axis plotly.js places shapes in data coordinates but annotations in log10 ones
    (plotly 7 / plotly.js 3 layout reference: `annotations[].x` "If the axis type is log, then
    you must take the log"; `shapes[].x0` has no such rule) — so the label is moved, not the
    line."""
    shape = {"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1,
             "line": {"color": color, "dash": dash, "width": 1}}
    note = {"x": float(np.log10(x)) if log_x else x, "y": 1, "xref": "x", "yref": "paper",
            "text": text, "showarrow": False,
            "textangle": angle, "font": {"size": 9}, "yanchor": "top" if angle else "bottom"}
    return shape, note


def _add_lines(fig: go.Figure, lines: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    fig.update_layout(shapes=[s for s, _ in lines], annotations=[a for _, a in lines])


# The AL chart has a dozen entries: beside the plot, where they cannot cover the axis title.
AL_LEGEND = {"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top",
             "font": {"size": 10}}
SLOWER, EVEN, FASTER = "#b2182b", "#f7f7f7", "#2166ac"


def speedup_colors(z: np.ndarray) -> dict[str, Any]:
    """A colour scale for speedups: 0 red, 1 white (break-even), the top blue. plotly's `zmid`
    mirrors the range around 1, so its colour bar ran into negative speedups; here the bar runs
    from 0 and white sits at 1 (a top below 1 still gets a bar to 2)."""
    finite = np.asarray(z, dtype=np.float64)[np.isfinite(z)]
    top = max(2.0, float(finite.max()) if finite.size else 2.0)
    mid = 1.0 / top
    return {"colorscale": [[0.0, SLOWER], [mid, EVEN], [1.0, FASTER]], "zmin": 0.0, "zmax": top}


def fixed_margins(fig: go.Figure) -> go.Figure:
    """The figure's axes keep the margins its layout gives them. An axis that fits its margin to
    its labels (Streamlit's chart theme turns that on) has plotly draw the chart, measure the
    labels and draw it again: ~50 ms of a first draw in Chromium (cold, the (B, D) heatmap
    240 → 190 ms; benchmarks/bench_floor.py). For figures whose margins hold their labels (short
    ticks: seen in the browser, tests/browser/test_browser_views.py)."""
    return fig.update_xaxes(automargin=False).update_yaxes(automargin=False)


def log_ticks(values: Any) -> dict[str, Any]:
    """Tick values for a log axis over these values: 1-2-5 per decade over at most two decades,
    decades only beyond (plotly's own minor labels crowd on a narrow chart)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        return {}
    lo, hi = int(np.floor(np.log10(v.min()))), int(np.ceil(np.log10(v.max())))
    steps = (1, 2, 5) if hi - lo <= 2 else (1,)
    ticks = [m * 10.0**e for e in range(lo, hi + 1) for m in steps]
    return {"tickvals": ticks, "ticktext": [f"{t:,.{max(0, -e)}f}" for t, e in
                                            ((t, int(np.floor(np.log10(t)))) for t in ticks)]}


def _f32(a: np.ndarray) -> np.ndarray:
    """Compact figure payloads: float32 is plenty for display."""
    return np.asarray(a, dtype=np.float32)


def speedup_heatmap(s: Surface, current: tuple[float, float] | None, title: str) -> go.Figure:
    # Batches where nothing fits in memory are not drawn (at 128K context only B ≤ 9 may fit:
    # an axis to 4096 would be mostly blank); the chart says where it stops.
    fits = np.isfinite(s.z).any(axis=0)
    n = int(np.nonzero(fits)[0][-1]) + 1 if fits.any() else len(s.x)
    bx, z, best_y = s.x[:n], s.z[:, :n], s.best_y[:n]
    x_idx = np.arange(n)
    fig = go.Figure()
    fig.add_trace(go.Heatmap(
        x=x_idx, y=_f32(s.y), z=_f32(z), **speedup_colors(z),
        colorbar={"title": "speedup ×"},
        customdata=np.broadcast_to(bx.astype(np.int32), z.shape),
        hovertemplate="B=%{customdata}<br>D=%{y}<br>speedup %{z:.2f}×<extra></extra>",
    ))
    # Where speculation stops paying: the cells' own edges, computed here (a contour trace is
    # traced and labelled by plotly.js in the browser: a quarter of this chart's first draw).
    ex, ey = break_even_edges(z, s.y)
    fig.add_trace(go.Scatter(
        x=ex, y=ey, mode="lines", line={"color": "black", "width": 2, "dash": "dash"},
        name="speedup = 1", hoverinfo="skip", showlegend=True,
    ))
    fig.add_trace(go.Scatter(
        x=x_idx, y=_f32(best_y), mode="lines", line={"color": "gold", "width": 3},
        name="best D per B", customdata=bx.astype(np.int32),
        hovertemplate="B=%{customdata}: best D=%{y}<extra>ridge</extra>",
    ))
    if current is not None:
        fig.add_traces(heatmap_marker(s, current))
    x_title = s.x_label + " (log scale)"
    if not fits.any():
        fig.add_annotation(x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                           text="no batch fits in memory at this context",
                           font={"size": 12})
    elif n < len(s.x):
        # the grid's first B that does not fit (between its last that fits and this one, the
        # limit itself lies: the break-even line); in the axis title, where the batches are
        # read, and not a note of its own (each text is measured on every draw)
        x_title += f" · B ≥ {int(s.x[n])} does not fit in memory (not drawn)"
    ticks = index_ticks(n)
    fig.update_layout(
        title=title, xaxis={"title": x_title, "tickvals": ticks,
                            "ticktext": [str(int(bx[i])) for i in ticks],
                            "range": [-0.5, n - 0.5]},
        yaxis={"title": s.y_label}, **_LAYOUT,
    )
    return fixed_margins(fig)


def break_even_edges(z: np.ndarray, y: np.ndarray) -> tuple[list[float | None],
                                                             list[float | None]]:
    """The line between the cells where speculation pays (speedup > 1) and those where it does
    not, along the cells' edges: (x, y) with None between runs, x in column indices (the heatmap's
    x), y in D. Only D ≥ 1 is judged (D = 0 is plain decoding, 1× by definition); a cell that
    does not fit in memory (NaN) borders nothing."""
    rows = np.nonzero(y >= 1)[0]
    if len(rows) == 0:
        return [], []
    zz, yy = z[rows], np.asarray(y, dtype=float)[rows]
    pays, known = zz > 1.0, np.isfinite(zz)
    # cell edges in D: halfway between neighbours, half a step beyond the ends
    half = np.diff(yy) / 2 if len(yy) > 1 else np.array([0.5])
    lo = np.concatenate([[yy[0] - half[0]], yy[1:] - half])
    hi = np.concatenate([yy[:-1] + half, [yy[-1] + half[-1]]])
    xs: list[float | None] = []
    ys: list[float | None] = []

    def runs(flags: np.ndarray) -> list[tuple[int, int]]:
        idx = np.nonzero(flags)[0]
        if len(idx) == 0:
            return []
        breaks = np.nonzero(np.diff(idx) > 1)[0]
        starts = np.concatenate([[idx[0]], idx[breaks + 1]])
        ends = np.concatenate([idx[breaks], [idx[-1]]])
        return list(zip(starts.tolist(), ends.tolist(), strict=True))

    # vertical edges, between columns c and c + 1, merged over consecutive rows
    for c in range(zz.shape[1] - 1):
        flip = (pays[:, c] != pays[:, c + 1]) & known[:, c] & known[:, c + 1]
        for a, b in runs(flip):
            xs += [c + 0.5, c + 0.5, None]
            ys += [float(lo[a]), float(hi[b]), None]
    # horizontal edges, between rows r and r + 1, merged over consecutive columns
    for r in range(zz.shape[0] - 1):
        flip = (pays[r] != pays[r + 1]) & known[r] & known[r + 1]
        for a, b in runs(flip):
            xs += [a - 0.5, b + 0.5, None]
            ys += [float(hi[r]), float(hi[r]), None]
    return xs, ys


def index_ticks(n: int, most: int = 9) -> list[int]:
    """Tick positions on an axis of n categories (the drawn batches): at most `most`, evenly
    spaced over the whole axis and always the first and the last, so the labels read the
    data's own values across its range (the grid's batches are rarely powers of two)."""
    if n <= most:
        return list(range(n))
    return sorted({round(float(i)) for i in np.linspace(0, n - 1, most)})


def _fitting_batches(s: Surface) -> np.ndarray:
    fits = np.isfinite(s.z).any(axis=0)
    return s.x[:int(np.nonzero(fits)[0][-1]) + 1] if fits.any() else s.x


def heatmap_marker(s: Surface, current: tuple[float, float]) -> list[dict[str, Any]]:
    """The current point on the (B, D) heatmap (its x is the index of the nearest drawn B);
    none beyond the drawn batches. Separate so a cached heatmap takes a new point cheaply."""
    bx = _fitting_batches(s)
    if current[0] > bx[-1]:
        return []
    cx = float(np.argmin(np.abs(np.log(bx) - np.log(current[0]))))
    return [{"type": "scatter", "x": [cx], "y": [current[1]], "mode": "markers",
             "name": "current point",
             "marker": {"symbol": "x", "size": 14, "color": "lime", "line": {"width": 2}},
             "hovertemplate": f"B={current[0]:g}, D={current[1]:g}<extra>current</extra>"}]


def surface_3d_marker(current: tuple[float, float], current_z: float | None,
                      log_x: bool = True) -> list[dict[str, Any]]:
    if current_z is None:
        return []
    cx = float(np.log2(current[0])) if log_x else current[0]
    return [{"type": "scatter3d", "x": [cx], "y": [current[1]], "z": [current_z],
             "mode": "markers", "marker": {"size": 6, "color": "lime"},
             "name": "current point"}]


def group_marker(current: tuple[float, float]) -> list[dict[str, Any]]:
    return [{"type": "scatter", "x": [f"G={current[0]:g}"], "y": [current[1]],
             "mode": "markers", "name": "current point",
             "marker": {"symbol": "x", "size": 14, "color": "lime"}}]


def pareto_markers(current: tuple[float, float] | None,
                   current_base: tuple[float, float]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if current is not None:
        out.append({"type": "scatter", "x": [current[0]], "y": [current[1]],
                    "mode": "markers", "name": "current point (spec)",
                    "marker": {"symbol": "x", "size": 14, "color": "lime"}})
    out.append({"type": "scatter", "x": [current_base[0]], "y": [current_base[1]],
                "mode": "markers", "name": "current B without spec",
                "marker": {"symbol": "circle-open", "size": 12, "color": "#888"}})
    return out


def tile_current_line(current_d: int) -> tuple[dict[str, Any], dict[str, Any]]:
    line, note = vline(current_d, "current D", color="green", dash="solid")
    note.update({"y": 0, "yanchor": "bottom", "xanchor": "left"})  # apart from the step labels
    return line, note


def speedup_surface_3d(s: Surface, current: tuple[float, float] | None, current_z: float | None,
                       title: str, log_x: bool = True) -> go.Figure:
    x = np.log2(s.x) if log_x else s.x
    colors = speedup_colors(s.z)
    fig = go.Figure(go.Surface(
        x=_f32(x), y=_f32(s.y), z=_f32(s.z), colorscale=colors["colorscale"],
        cmin=colors["zmin"], cmax=colors["zmax"],
        colorbar={"title": "speedup ×"},
        hovertemplate=("log2 B=%{x}" if log_x else "G=%{x}")
        + "<br>D=%{y}<br>speedup %{z:.2f}×<extra></extra>",
    ))
    if current is not None:
        fig.add_traces(surface_3d_marker(current, current_z, log_x))
    fig.update_layout(title=title, scene={
        "xaxis_title": "log2 B" if log_x else s.x_label, "yaxis_title": "D",
        "zaxis_title": "speedup ×"}, margin={"l": 0, "r": 0, "t": 50, "b": 0})
    return fig


def group_heatmap(s: Surface, current: tuple[float, float] | None, title: str) -> go.Figure:
    labels = [f"G={int(g)}" for g in s.x]
    fig = go.Figure(go.Heatmap(
        x=labels, y=_f32(s.y), z=_f32(s.z), **speedup_colors(s.z),
        colorbar={"title": "speedup ×"},
        hovertemplate="%{x}<br>D=%{y}<br>speedup %{z:.2f}×<extra></extra>",
    ))
    # A G where no D ≥ 1 fits in memory has nothing to draw: it is said on the chart, and its
    # best D is not drawn (the surface marks D = 0 as 1× whether or not it fits).
    no_fit = ~np.isfinite(s.z[1:]).any(axis=0) if s.z.shape[0] > 1 else np.zeros(len(labels),
                                                                                  bool)
    best_y = np.where(no_fit, np.nan, s.best_y)
    fig.add_trace(go.Scatter(x=labels, y=_f32(best_y), mode="lines+markers", name="best D",
                             line={"color": "gold", "width": 3}))
    if current is not None:
        fig.add_traces(group_marker(current))
    notes = [{"x": labels[i], "y": 0.5, "xref": "x", "yref": "paper", "showarrow": False,
              "text": "does not fit<br>in memory", "font": {"size": 10}, "textangle": -90}
             for i in np.nonzero(no_fit)[0]]
    fig.update_layout(title=title, xaxis={"title": s.x_label}, yaxis={"title": s.y_label},
                      annotations=notes, **_LAYOUT)
    return fig


MAX_STEP_LABELS = 10


def tile_steps_figure(curves: list[TileCurve], current_d: int | None,
                      normalized: bool) -> go.Figure:
    fig = go.Figure()
    for c in curves:
        y = c.normalized_throughput if normalized else c.time_s * 1e6
        fig.add_trace(go.Scatter(
            x=_f32(c.draft_len), y=_f32(y), mode="lines+markers", name=c.label,
            line={"shape": "hv"},
            hovertemplate="D=%{x}<br>"
            + ("throughput %{y:.2f}× of D=0" if normalized else "attention %{y:.1f} µs")
            + f"<extra>{c.label}</extra>",
        ))
    # Boundaries where a curve steps (a memory-bound kernel hides the others), labelled with
    # the rows that fill whole tiles; with many, every few is labelled (MLA's 16 q heads per
    # GPU step every 8th D; a G of 128 would have put a label at every D).
    at: dict[float, list[str]] = {}  # D → the groups stepping there (G=8 and G=32 share D=15)
    for c in sorted(curves, key=lambda c: c.group):
        for d in c.steps:
            name = f"{c.group * (d + 1):g} (G={c.group:g})"
            if name not in at.setdefault(d, []):
                at[d].append(name)
    every = max(1, int(np.ceil(len(at) / MAX_STEP_LABELS)))
    lines = [vline(d, "G·(1+D)=" + ", ".join(names) if i % every == 0 else "", angle=-90)
             for i, (d, names) in enumerate(sorted(at.items()))]
    shapes = [sh for sh, _ in lines]
    notes = [n for _, n in lines]
    if current_d is not None:
        current, current_note = tile_current_line(current_d)
        shapes, notes = [*shapes, current], [*notes, current_note]
    fig.update_layout(shapes=shapes, annotations=notes)
    fig.update_layout(
        title=("Normalized attention throughput vs D" if normalized
               else "Attention time per layer vs D") + " — steps where G·(1+D) per GPU "
        "crosses 128·k" + ("" if at else " (none here: the kernel stays memory-bound)"),
        xaxis={"title": "draft length D"},
        yaxis={"title": "verified tokens/s relative to D = 0" if normalized
               else "attention time per layer (µs)"}, **_LAYOUT)
    return fig


def gemm_figure(curves: list[GemmCurve], ridge: float, peak_tflops: float,
                hardware: str) -> go.Figure:
    fig = go.Figure()
    for c in curves:
        fig.add_trace(go.Scatter(
            x=_f32(c.batch), y=_f32(c.tflops), mode="lines", name=f"D={c.draft_len}",
            customdata=_f32(c.effective_tokens),
            hovertemplate="B=%{x}<br>B·(1+D)=%{customdata:.0f} tokens<br>%{y:.0f} TFLOP/s"
            f"<extra>D={c.draft_len}</extra>",
        ))
    ridge_line = vline(float(ridge), f"ridge M*≈{ridge:.0f} tokens (D=0)", dash="dash",
                       log_x=True)
    peak = ({"type": "line", "xref": "paper", "yref": "y", "x0": 0, "x1": 1, "y0": peak_tflops,
             "y1": peak_tflops, "line": {"dash": "dot", "color": "gray", "width": 1}},
            {"x": 0, "y": peak_tflops, "xref": "paper", "yref": "y", "showarrow": False,
             "text": "achievable peak (η_c × dense peak)", "yanchor": "bottom",
             "xanchor": "left", "font": {"size": 9}})
    _add_lines(fig, [ridge_line, peak])
    fig.update_layout(title=f"6144×6144 GEMM on {hardware}: achieved TFLOP/s vs batch",
                      xaxis={"title": "batch B (sequences, log scale)", "type": "log",
                             **log_ticks(np.concatenate([c.batch for c in curves]))},
                      yaxis={"title": "achieved TFLOP/s"}, **_LAYOUT)
    return fig


def al_figure(curves: list[ALSeries], selected: str) -> go.Figure:
    fig = go.Figure()
    priors = [c for c in curves if c.kind != "sample"]
    samples: dict[str, list[ALSeries]] = {}
    for c in curves:
        if c.kind == "sample":
            samples.setdefault(c.mechanism, []).append(c)
    for mech, group in samples.items():  # one trace per mechanism: NaN-separated curves
        xs = np.concatenate([np.append(c.draft_len, np.nan) for c in group])
        ys = np.concatenate([np.append(c.acceptance_length, np.nan) for c in group])
        text = [f"{plotly_text(c.label[:70])}<br>{plotly_text(c.provenance[:110])}" for c in group
                for _ in range(len(c.draft_len) + 1)]
        fig.add_trace(go.Scatter(
            x=_f32(xs), y=_f32(ys), mode="lines+markers", text=text,
            name=f"{mech}: {len(group)} published curve(s)",
            visible=True if mech == selected else "legendonly",
            line={"color": mechanism_colour(mech), "width": 1},
            marker={"size": 5},
            hovertemplate="D=%{x}<br>AL=%{y:.2f}<br>%{text}<extra>" + mech + "</extra>"))
    for c in priors:
        color = mechanism_colour(c.mechanism)
        is_prior = c.kind == "prior"
        visible: bool | str = True if (c.mechanism == selected or is_prior) else "legendonly"
        width = 3 if c.mechanism == selected else 1.5
        x, y = _f32(c.draft_len), _f32(c.acceptance_length)
        extended = c.model_extended
        # Solid within the evidence, dashed where an acceptance model extends it; the dashed
        # part starts at the last solid point so the line stays connected.
        joined = extended | np.concatenate([extended[1:], [False]])
        hover = ("D=%{x}<br>AL=%{y:.2f}<br>"
                 + plotly_text(c.provenance[:160].replace("%", "%%"))
                 + "<extra>" + plotly_text(c.label[:40]) + "</extra>")
        name = plotly_text(c.label[:60])
        same_as_prior = c.kind == "scenario" and any(
            p.kind == "prior" and p.mechanism == c.mechanism
            and np.array_equal(p.acceptance_length, c.acceptance_length, equal_nan=True)
            for p in priors)
        band = c.interval() if c.mechanism == selected and not same_as_prior else None
        if band is not None and np.any(band[1] > band[0]):
            _add_band(fig, x, band, color, name, visible)
        solid = np.where(extended, np.nan, y).astype(np.float32)
        # A block drafter's AL exists only at measured D (NaN between): a line would draw
        # nothing, so such points are markers, never joined across the gaps.
        sparse = bool(isolated_points(solid).any())
        fig.add_trace(go.Scatter(
            x=x, y=solid,
            mode="lines+markers" if (sparse or not is_prior) else "lines", name=name,
            legendgroup=name, visible=visible, line={"color": color, "width": width},
            marker={"size": 9 if sparse else 6, "symbol": "diamond" if sparse else "circle"},
            hovertemplate=hover,
            # the scenario's own series first, then the selected mechanism: a long legend
            # scrolls, and these two must never scroll out of sight
            legendrank=1 if c.kind == "scenario" else (2 if c.mechanism == selected else 1000),
        ))
        if extended.any():
            fig.add_trace(go.Scatter(
                x=x, y=np.where(joined, y, np.nan).astype(np.float32), mode="lines",
                name=f"{name} — model-extended", legendgroup=name, showlegend=False,
                visible=visible, line={"color": color, "width": width, "dash": "dash"},
                hovertemplate="D=%{x}<br>AL=%{y:.2f} (model-extended)<extra>"
                + plotly_text(c.label[:40]) + "</extra>",
            ))
    d_max = VIEW_MAX_DRAFT_LEN
    fig.add_trace(go.Scatter(x=[0, d_max], y=[1, 1 + d_max], mode="lines", name="AL = 1+D bound",
                             line={"color": "gray", "dash": "dot", "width": 1},
                             hoverinfo="skip"))
    fig.update_layout(title="Acceptance length vs draft length (solid: within the evidence; "
                      "dashed: model-extended; markers: published curves)",
                      xaxis={"title": "draft length D"},
                      yaxis={"title": "AL (tokens per target step)", "range": [1, 9]},
                      **{**_LAYOUT, "legend": AL_LEGEND})
    return fig


def isolated_points(y: np.ndarray) -> np.ndarray:
    """Finite values with no finite neighbour: a line through them draws nothing."""
    ok = np.isfinite(np.asarray(y, dtype=np.float64))
    left = np.concatenate([[False], ok[:-1]])
    right = np.concatenate([ok[1:], [False]])
    return np.asarray(ok & ~left & ~right)


def _add_band(fig: go.Figure, x: np.ndarray, band: tuple[np.ndarray, np.ndarray], color: str,
              group: str, visible: bool | str) -> None:
    """An 80 % band as one closed polygon (high forwards, low backwards; gaps where NaN)."""
    lo, hi = (np.asarray(b, dtype=np.float64) for b in band)
    ok = np.isfinite(lo) & np.isfinite(hi)
    xs, lo, hi = np.asarray(x, dtype=np.float64)[ok], lo[ok], hi[ok]
    fig.add_trace(go.Scatter(
        x=_f32(np.concatenate([xs, xs[::-1]])), y=_f32(np.concatenate([hi, lo[::-1]])),
        fill="toself", fillcolor=color, opacity=0.18, line={"width": 0}, mode="lines",
        name=f"{group} — 80% band", legendgroup=group, showlegend=False, visible=visible,
        hoverinfo="skip"))


def speedup_band_figure(series: list[tuple[str, str, list[int], list[float], list[float],
                                           list[float]]], batch: int) -> go.Figure:
    """Speedup vs D at this B per available mechanism, with its 80 % band from the AL draws.
    `series`: (slug, name, D, speedup, low, high)."""
    fig = go.Figure()
    for slug, name, d, sp, lo, hi in series:
        color = mechanism_colour(slug)
        x = np.asarray(d, dtype=np.float64)
        label = plotly_text(name[:60])
        _add_band(fig, x, (np.asarray(lo), np.asarray(hi)), color, label, True)
        fig.add_trace(go.Scatter(
            x=_f32(x), y=_f32(np.asarray(sp)), mode="lines+markers", name=label,
            legendgroup=label, line={"color": color},
            customdata=np.stack([np.asarray(lo), np.asarray(hi)], axis=-1).astype(np.float32),
            hovertemplate="D=%{x}<br>speedup %{y:.2f}× [%{customdata[0]:.2f}–"
            "%{customdata[1]:.2f}]<extra>" + label + "</extra>"))
    _add_lines(fig, [({"type": "line", "xref": "paper", "yref": "y", "x0": 0, "x1": 1, "y0": 1,
                       "y1": 1, "line": {"dash": "dot", "color": "gray", "width": 1}},
                      {"x": 0, "y": 1, "xref": "paper", "yref": "y", "showarrow": False,
                       "text": "no speculation", "yanchor": "bottom", "xanchor": "left",
                       "font": {"size": 9}})])
    fig.update_layout(title=f"Speedup vs D at B={batch} with 80% bands (AL uncertainty)",
                      xaxis={"title": "draft length D"}, yaxis={"title": "speedup ×"}, **_LAYOUT)
    return fig


def pareto_figure(with_spec: ParetoFrontier, without: ParetoFrontier,
                  current: tuple[float, float] | None,
                  current_base: tuple[float, float] | None, slo: float | None) -> go.Figure:
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=_f32(np.asarray(without.tokens_per_s_per_user)),
        y=_f32(np.asarray(without.tokens_per_s_per_gpu)), mode="lines+markers",
        name="without speculation", line={"color": "#888"},
        customdata=np.asarray(without.batch),
        hovertemplate="B=%{customdata}<br>%{x:.1f} tok/s/user<br>%{y:.0f} tok/s/GPU"
        "<extra>no spec</extra>"))
    fig.add_trace(go.Scatter(
        x=_f32(np.asarray(with_spec.tokens_per_s_per_user)),
        y=_f32(np.asarray(with_spec.tokens_per_s_per_gpu)), mode="lines+markers+text",
        name="with speculation (best D)", line={"color": "#E45756"},
        text=[f"D={d}" if i % 3 == 0 else "" for i, d in enumerate(with_spec.draft_len)],
        textposition="top center", textfont={"size": 9},
        customdata=np.stack([with_spec.batch, with_spec.draft_len], axis=-1),
        hovertemplate="B=%{customdata[0]}, D=%{customdata[1]}<br>%{x:.1f} tok/s/user<br>"
        "%{y:.0f} tok/s/GPU<extra>spec</extra>"))
    if current_base is not None:
        fig.add_traces(pareto_markers(current, current_base))
    if slo:
        _add_lines(fig, [vline(float(slo), f"SLO {slo:g} tok/s/user", color="orange",
                               dash="dash", log_x=True)])
    xs = [*with_spec.tokens_per_s_per_user, *without.tokens_per_s_per_user, *([slo] if slo else [])]
    ys = [*with_spec.tokens_per_s_per_gpu, *without.tokens_per_s_per_gpu]
    fig.update_layout(title="Pareto frontier: throughput per GPU vs speed per user",
                      xaxis={"title": "tokens/s per user (interactivity, log)", "type": "log",
                             **log_ticks(xs)},
                      yaxis={"title": "tokens/s per GPU (throughput, log)", "type": "log",
                             **log_ticks(ys)},
                      **_LAYOUT)
    return fig


def breakdown_figure(parts: dict[str, dict[str, float]]) -> go.Figure:
    fig = go.Figure()
    names = list(parts)
    for c in COMPONENTS:
        fig.add_trace(go.Bar(
            y=names, x=[parts[n][c] * 1e3 for n in names], name=c, orientation="h",
            marker_color=COMPONENT_COLORS[c],
            hovertemplate="%{y}<br>" + c + ": %{x:.3f} ms<extra></extra>"))
    fig.update_layout(barmode="stack", title="Where the time goes (one speculation round)",
                      xaxis={"title": "time (ms)"}, yaxis={"autorange": "reversed"}, **_LAYOUT)
    return fig


SPLIT_TERMS = (("AL gain", "#54A24B"), ("verify-cost factor", "#F58518"),
               ("draft-cost factor", "#4C78A8"), ("speedup", "#E45756"))
PREFILL_TERM = ("prompt-prefill factor", "#B279A2")


def speedup_split_figure(names: list[str], al: list[float], verify: list[float],
                         draft: list[float], prefill: list[float] | None = None) -> go.Figure:
    """speedup = AL × T_verif(B)/T_verif(B(1+D)) × T_verif(B(1+D))/(T_verif(B(1+D)) + T_draft),
    per mechanism (its best D), on a log axis so the three factors multiply visibly; with whole
    requests priced, a fourth factor: the prompt prefill's dilution (`prefill`)."""
    pre = prefill if prefill is not None and any(abs(x - 1.0) > 1e-9 for x in prefill) else None
    terms = [*SPLIT_TERMS[:3], *([PREFILL_TERM] if pre else []), SPLIT_TERMS[3]]
    product = [a * v * d * (pre[i] if pre else 1.0)
               for i, (a, v, d) in enumerate(zip(al, verify, draft, strict=True))]
    values = [al, verify, draft, *([pre] if pre else []), product]
    fig = go.Figure()
    for (term, color), ys in zip(terms, values, strict=True):
        fig.add_trace(go.Bar(x=[plotly_text(n) for n in names], y=ys, name=term,
                             marker_color=color, text=[f"{y:.2f}×" for y in ys],
                             textposition="outside",
                             hovertemplate="%{x}<br>" + term + " %{y:.3f}×<extra></extra>"))
    fig.update_layout(barmode="group", title="Why: speedup = AL gain × verify-cost factor × "
                      "draft-cost factor" + (" × prompt-prefill factor" if pre else "")
                      + " (each mechanism at its best D)",
                      yaxis={"title": "factor (×, log)", "type": "log",
                             **log_ticks([v for ys in values for v in ys])}, **_LAYOUT)
    return fig

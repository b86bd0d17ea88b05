"""The arrays behind each explorer view (pure numpy; the figures only draw them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from explorer.analysis.frontier import DEFAULT_BATCHES
from explorer.base.limits import VIEW_MAX_DRAFT_LEN
from explorer.model.acceptance_source import ALResult, prior_al
from explorer.model.grid import scenario_model
from explorer.model.kernels import ATTENTION_TILE_ROWS, attention_time, gemm_time
from explorer.model.layers import COMPONENTS
from explorer.presets import mechanism_presets, sample_curves
from explorer.specs.measured import AcceptanceCurve
from explorer.specs.scenario import Acceptance, Scenario, tokens_label

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Surface:
    x: FloatArray  # e.g. batch
    y: FloatArray  # draft length
    z: FloatArray  # speedup, shape (len(y), len(x)); NaN where invalid or not fitting
    best_y: FloatArray  # best D per x (ridge)
    x_label: str
    y_label: str


def speedup_surface(scenario: Scenario, batches: npt.ArrayLike | None = None,
                    d_max: int = VIEW_MAX_DRAFT_LEN) -> Surface:
    m = scenario_model(scenario)
    b = np.asarray(DEFAULT_BATCHES if batches is None else batches, dtype=np.float64)
    d = np.arange(0, d_max + 1, dtype=np.float64)
    g = m.grid(b[None, :], d[:, None])
    z = np.where(g.fits_in_memory, g.speedup, np.nan)
    z[0, :] = np.where(g.fits_in_memory[0, :], 1.0, np.nan)
    filled = np.where(np.isfinite(z), z, -np.inf)
    best = np.where(np.isfinite(z).any(axis=0), d[np.argmax(filled, axis=0)], np.nan)
    return Surface(b, d, z, best, "batch B", "draft length D")


def group_surface(scenario: Scenario, d_max: int = VIEW_MAX_DRAFT_LEN) -> Surface:
    """Speedup over (G, D) at the scenario's B and S; G values that divide the q heads."""
    m = scenario_model(scenario)
    q = m.r.model.q_heads
    gs = np.asarray([g for g in (1, 2, 4, 8, 16, 32, 64, 128) if q % g == 0 and g <= q],
                    dtype=np.float64)
    if m.r.model.attention_kind == "mla":
        gs = np.asarray([m.r.group])
    d = np.arange(0, d_max + 1, dtype=np.float64)
    g = m.grid(scenario.batch, d[:, None], group=gs[None, :])
    z = np.where(g.fits_in_memory, g.speedup, np.nan)
    z[0, :] = 1.0
    filled = np.where(np.isfinite(z), z, -np.inf)
    return Surface(gs, d, z, d[np.argmax(filled, axis=0)], "group G (q heads per KV head)",
                   "draft length D")


@dataclass(frozen=True)
class TileCurve:
    label: str
    group: float  # G per GPU: query rows per KV head that one rank's kernel tiles
    context: int
    draft_len: FloatArray
    time_s: FloatArray
    normalized_throughput: FloatArray  # verified tokens/s relative to D = 0

    @property
    def steps(self) -> list[float]:
        """The tile boundaries this curve actually steps at: D where G·(1+D) = 128·k and the
        time of D+1 exceeds D's (while memory-bound a padded tile costs nothing, so only
        some boundaries show; the chart marks those, not every 128·k)."""
        t = self.time_s
        out: list[float] = []
        for d in tile_boundaries(self.group, int(self.draft_len[-1])):
            i = round(d)
            if float(d).is_integer() and i + 1 < len(t) and t[i + 1] > t[i] * (1 + STEP_RISE):
                out.append(d)
        return out


# A rise smaller than this between D and D+1 is not a step a reader sees on the chart.
STEP_RISE = 0.005


def tile_steps(scenario: Scenario, groups: tuple[float, ...] | None = None,
               contexts: tuple[int, ...] | None = None,
               d_max: int = VIEW_MAX_DRAFT_LEN) -> list[TileCurve]:
    """One attention layer's time vs D (the article's Fig. 4/5): flat, then 128-row steps.
    Without `groups`: the scenario's own attention layer as the cost model times it (its
    engine's measured table where one covers it, MLA included) at its G per GPU; with them,
    the article's hypothetical G per GPU on the roofline kernel."""
    m = scenario_model(scenario)
    hw, model = m.r.hardware, m.r.model
    d = np.arange(0, d_max + 1, dtype=np.float64)
    out: list[TileCurve] = []
    for s in contexts or (scenario.context,):
        if groups is None:
            g = m.group_per_gpu
            t = np.asarray(m.target.attention(np.asarray(float(scenario.batch)), 1.0 + d,
                                              np.asarray(float(s)), np.asarray(m.r.group)),
                           dtype=np.float64)
            out.append(_tile_curve(g, s, d, t))
            continue
        for g in groups:
            kv = max(1.0, model.q_heads / g / scenario.tp)
            t = attention_time(hw, scenario.batch, s, kv, g, 1.0 + d, model.head_dim,
                               kv_dtype=scenario.kv_dtype).time_s
            out.append(_tile_curve(g, s, d, t))
    return out


def _tile_curve(g: float, s: int, d: FloatArray, t: FloatArray) -> TileCurve:
    thr = (1.0 + d) / t
    return TileCurve(f"G={g:g} per GPU, S={tokens_label(int(s))}", g, s, d, t, thr / thr[0])


def tile_boundaries(group: float, d_max: int = VIEW_MAX_DRAFT_LEN) -> list[float]:
    """D values where G·(1+D) crosses 128·k (drawn as vertical lines)."""
    out: list[float] = []
    k = 1
    while True:
        d = ATTENTION_TILE_ROWS * k / group - 1
        if d > d_max:
            return out
        if d >= 0:
            out.append(d)
        k += 1


@dataclass(frozen=True)
class GemmCurve:
    draft_len: int
    effective_tokens: FloatArray
    batch: FloatArray
    tflops: FloatArray


def gemm_efficiency(
    scenario: Scenario, n: int = 6144, k: int = 6144,
    draft_lens: tuple[int, ...] = (0, 1, 3, 7, 15),
) -> tuple[list[GemmCurve], float]:
    """Achieved TFLOP/s of an n×k GEMM vs batch for several D (article Fig. 3) and the ridge."""
    m = scenario_model(scenario)
    hw = m.r.hardware
    b = np.unique(np.round(np.logspace(0, 12, 97, base=2.0)))
    out = []
    for d in draft_lens:
        tokens = b * (1 + d)
        kt = gemm_time(hw, tokens, n, k, scenario.dtype)
        out.append(GemmCurve(d, tokens, b, kt.flops / kt.time_s / 1e12))
    return out, hw.gemm_ridge_tokens(scenario.dtype)


ALSeriesKind = Literal["prior", "scenario", "sample"]


@dataclass(frozen=True)
class ALSeries:
    """One line of the AL chart. It holds its data — a measured AcceptanceCurve, or the model's
    ALResult over the draft lengths `axis` — and reads the points from it."""

    kind: ALSeriesKind
    mechanism: str
    label: str
    data: AcceptanceCurve | ALResult
    axis: FloatArray | None = None  # D of an ALResult (a curve carries its own)

    @property
    def draft_len(self) -> FloatArray:
        if isinstance(self.data, AcceptanceCurve):
            return np.asarray(self.data.draft_lens, dtype=np.float64)
        assert self.axis is not None, "an ALResult series needs its D axis"
        return self.axis

    @property
    def acceptance_length(self) -> FloatArray:
        if isinstance(self.data, AcceptanceCurve):
            return np.asarray(self.data.acceptance_lengths, dtype=np.float64)
        return self.data.acceptance_length

    @property
    def provenance(self) -> str:
        if isinstance(self.data, AcceptanceCurve):
            return self.data.source_text
        return self.data.provenance

    def interval(self) -> tuple[FloatArray, FloatArray] | None:
        """The 80 % band of a model result with spread (a measured curve: none)."""
        if isinstance(self.data, AcceptanceCurve) or self.data.draw_table is None:
            return None
        return self.data.interval()

    @property
    def model_extended(self) -> npt.NDArray[np.bool_]:
        """Points an acceptance model gives past the evidence (a measured curve: none)."""
        if isinstance(self.data, AcceptanceCurve):
            return np.zeros(len(self.data.draft_lens), dtype=bool)
        return np.asarray(self.data.extrapolated, dtype=bool)


def al_curves(scenario: Scenario, d_max: int = VIEW_MAX_DRAFT_LEN) -> list[ALSeries]:
    """Each mechanism's prior, the scenario's own source, and the shipped measured curves."""
    d = np.arange(0, d_max + 1, dtype=np.float64)
    out: list[ALSeries] = []
    m = scenario_model(scenario)
    for slug, mech in mechanism_presets().items():
        out.append(ALSeries("prior", slug, f"{mech.name} (prior)", prior_al(mech, d, m.r.model),
                            d))
    # Always: the legend's first entry is the AL this scenario computes with (its prior too).
    out.append(ALSeries("scenario", scenario.mechanism,
                        f"{m.r.mechanism.name} (this scenario)", m.acceptance(d), d))
    for c in sample_curves().values():
        out.append(ALSeries("sample", c.mechanism or "", c.label, c))
    return out


def time_breakdown(scenario: Scenario) -> dict[str, dict[str, float]]:
    m = scenario_model(scenario)
    g = m.grid(scenario.batch, scenario.draft_len, with_breakdowns=True)
    return {
        "verify (no spec)": {c: float(np.ravel(g.verify_base[c])[0]) for c in COMPONENTS},
        f"verify (D={scenario.draft_len})": {
            c: float(np.ravel(g.verify_spec[c])[0]) for c in COMPONENTS},
        "draft": {c: float(np.ravel(g.draft[c])[0]) for c in COMPONENTS},
    }


def with_prior(scenario: Scenario) -> Scenario:
    return scenario.model_copy(update={"acceptance": Acceptance()})

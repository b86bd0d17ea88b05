"""Operations on a scenario: evaluate one point, best D per B, break-even batch, Pareto frontier."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from explorer.cost_model import COMPONENTS, Breakdown
from explorer.scenario import Scenario
from explorer.speedup import ScenarioModel, scenario_model

FloatArray = npt.NDArray[np.float64]
DEFAULT_BATCHES = np.unique(np.round(np.logspace(0, 12, 64, base=2.0))).astype(np.int64)


class Evaluation(BaseModel):
    """One scenario's figures (seconds, tokens/s, bytes). JSON keys are an interface: keep them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    speedup: float | None
    acceptance_length: float | None
    acceptance_source: str
    acceptance_extrapolated: bool
    t_verif_base_s: float
    t_verif_spec_s: float
    t_draft_s: float
    speedup_launch_bound: float | None
    draft_overhead_launch_bound: float
    rho: float
    tokens_per_s_per_user: float | None
    tokens_per_s_per_gpu: float | None
    baseline_tokens_per_s_per_user: float
    baseline_tokens_per_s_per_gpu: float
    attention_fraction: float
    memory_bytes: float
    hbm_bytes: float
    fits_in_memory: bool
    group: float
    layers: int
    verify_width: int
    breakdown: dict[str, dict[str, float]]
    sources: dict[str, str]


def _scalar(x: npt.ArrayLike) -> float | None:
    v = float(np.asarray(x).reshape(-1)[0])
    return None if math.isnan(v) else v


def _bd(b: Breakdown) -> dict[str, float]:
    return {c: float(np.asarray(b[c]).reshape(-1)[0]) for c in COMPONENTS}


def sources_of(model: ScenarioModel, al_source: str) -> dict[str, str]:
    r = model.r
    return {
        "hardware": f"{r.hardware.name}: {r.hardware.spec_source}",
        "efficiencies": r.hardware.fit_source,
        "model": f"{r.model.name}: {r.model.source}",
        "mechanism": f"{r.mechanism.name}: {r.mechanism.source}",
        "acceptance_length": al_source,
        "measured_timings": model.measured_sources(),
        "assumptions": "; ".join(
            a for a in (r.hardware.assumptions, r.model.assumptions, r.mechanism.assumptions) if a
        ),
    }


def evaluate(scenario: Scenario) -> Evaluation:
    m = scenario_model(scenario)
    g = m.grid(scenario.batch, scenario.draft_len, with_breakdowns=True)
    return Evaluation(
        speedup=_scalar(g.speedup),
        acceptance_length=_scalar(g.acceptance_length),
        acceptance_source=g.al_provenance,
        acceptance_extrapolated=bool(np.asarray(g.al_extrapolated).reshape(-1)[0]),
        t_verif_base_s=float(g.t_verif_base_s.reshape(-1)[0]),
        t_verif_spec_s=float(g.t_verif_spec_s.reshape(-1)[0]),
        t_draft_s=float(g.t_draft_s.reshape(-1)[0]),
        speedup_launch_bound=_scalar(g.speedup_launch_bound),
        draft_overhead_launch_bound=float(g.draft_overhead_launch_bound.reshape(-1)[0]),
        rho=m.rho,
        tokens_per_s_per_user=_scalar(g.tokens_per_s_per_user),
        tokens_per_s_per_gpu=_scalar(g.tokens_per_s_per_gpu),
        baseline_tokens_per_s_per_user=float(g.baseline_tokens_per_s_per_user.reshape(-1)[0]),
        baseline_tokens_per_s_per_gpu=float(g.baseline_tokens_per_s_per_gpu.reshape(-1)[0]),
        attention_fraction=float(g.attention_fraction.reshape(-1)[0]),
        memory_bytes=float(g.memory_bytes.reshape(-1)[0]),
        hbm_bytes=m.r.hardware.hbm_bytes,
        fits_in_memory=bool(g.fits_in_memory.reshape(-1)[0]),
        group=m.r.group,
        layers=m.r.layers,
        verify_width=scenario.width,
        breakdown={
            "verify_base": _bd(g.verify_base),
            "verify_spec": _bd(g.verify_spec),
            "draft": _bd(g.draft),
        },
        sources=sources_of(m, g.al_provenance),
    )


def draft_len_range(scenario: Scenario, d_max: int | None = None) -> npt.NDArray[np.int64]:
    m = scenario_model(scenario)
    top = m.r.mechanism.max_draft_len if d_max is None else d_max
    return np.arange(0, top + 1, dtype=np.int64)


class BestDraftLen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    batch: list[int]
    best_draft_len: list[int]
    best_speedup: list[float]
    acceptance_length: list[float]
    break_even_batch: int | None  # smallest B from which no D ≥ 1 beats plain decoding
    max_batch_in_memory: int | None  # largest B of the grid whose plain decoding fits


def best_draft_len(
    scenario: Scenario, batches: npt.ArrayLike | None = None, d_max: int | None = None
) -> BestDraftLen:
    """For each B, the D (0 = no speculation) that maximises speedup among points that fit."""
    m = scenario_model(scenario)
    b = np.asarray(DEFAULT_BATCHES if batches is None else batches, dtype=np.int64)
    d = draft_len_range(scenario, d_max)
    g = m.grid(b[:, None], d[None, :])
    sp = np.where(np.isfinite(g.speedup) & g.fits_in_memory, g.speedup, -np.inf)
    sp[:, 0] = 1.0  # D = 0 is plain decoding
    idx = np.argmax(sp, axis=1)
    best = sp[np.arange(len(b)), idx]
    # Break-even is a question of speed alone: memory limits are reported on their own.
    speed = np.where(np.isfinite(g.speedup), g.speedup, -np.inf)
    spec_best = speed[:, 1:].max(axis=1) if sp.shape[1] > 1 else np.full(len(b), -np.inf)
    losing = np.nonzero(spec_best <= 1.0)[0]
    # Break-even: first B from which speculation no longer pays at any larger B in the grid.
    paying = spec_best > 1.0
    break_even: int | None = None
    if losing.size and not paying[losing[0]:].any():
        break_even = int(b[losing[0]])
    al = g.acceptance_length[np.arange(len(b)), idx]
    fitting = np.nonzero(g.fits_in_memory[:, 0])[0]
    return BestDraftLen(
        batch=[int(x) for x in b],
        best_draft_len=[int(d[i]) for i in idx],
        best_speedup=[float(x) for x in best],
        acceptance_length=[float(x) for x in al],
        break_even_batch=break_even,
        max_batch_in_memory=int(b[fitting[-1]]) if fitting.size else None,
    )


class ParetoFrontier(BaseModel):
    """Non-dominated (tokens/s per user, tokens/s per GPU) points, sorted by per-user speed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tokens_per_s_per_user: list[float]
    tokens_per_s_per_gpu: list[float]
    batch: list[int]
    draft_len: list[int]


def _frontier(user: FloatArray, gpu: FloatArray, b: FloatArray, d: FloatArray) -> ParetoFrontier:
    ok = np.isfinite(user) & np.isfinite(gpu)
    user, gpu, b, d = user[ok], gpu[ok], b[ok], d[ok]
    order = np.lexsort((-gpu, -user))  # fastest per user first; ties: best per GPU first
    keep = []
    best_gpu = -np.inf
    for i in order:  # one pass over sorted points (≤ a few thousand), not over the grid
        if gpu[i] > best_gpu:
            keep.append(i)
            best_gpu = gpu[i]
    k = np.asarray(keep[::-1], dtype=np.int64)
    return ParetoFrontier(
        tokens_per_s_per_user=[float(x) for x in user[k]],
        tokens_per_s_per_gpu=[float(x) for x in gpu[k]],
        batch=[int(x) for x in b[k]],
        draft_len=[int(x) for x in d[k]],
    )


def pareto(
    scenario: Scenario, batches: npt.ArrayLike | None = None, d_max: int | None = None
) -> tuple[ParetoFrontier, ParetoFrontier]:
    """(with speculation, without) frontiers over B × D among points that fit in memory."""
    m = scenario_model(scenario)
    b = np.asarray(DEFAULT_BATCHES if batches is None else batches, dtype=np.float64)
    d = draft_len_range(scenario, d_max).astype(np.float64)
    g = m.grid(b[:, None], d[None, :])
    bb, dd = np.broadcast_arrays(b[:, None], d[None, :])
    fits = g.fits_in_memory
    user = np.where(fits, g.tokens_per_s_per_user, np.nan)
    gpu = np.where(fits, g.tokens_per_s_per_gpu, np.nan)
    with_spec = _frontier(user.ravel(), gpu.ravel(), bb.ravel(), dd.ravel())
    base_user = np.where(fits[:, 0], g.baseline_tokens_per_s_per_user[:, 0], np.nan)
    base_gpu = np.where(fits[:, 0], g.baseline_tokens_per_s_per_gpu[:, 0], np.nan)
    without = _frontier(base_user, base_gpu, b, np.zeros_like(b))
    return with_spec, without

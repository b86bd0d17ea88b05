"""The frontier of a scenario: best D per B, the break-even batch, the Pareto frontier."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from explorer.analysis.uncertainty import MARGINAL, PAYS, speedup_draws, verdict
from explorer.model.acceptance_source import quantiles
from explorer.model.grid import scenario_model
from explorer.specs.scenario import Scenario

FloatArray = npt.NDArray[np.float64]
DEFAULT_BATCHES = np.unique(np.round(np.logspace(0, 12, 64, base=2.0))).astype(np.int64)


def draft_len_range(scenario: Scenario, d_max: int | None = None) -> npt.NDArray[np.int64]:
    m = scenario_model(scenario)
    top = m.r.mechanism.max_draft_len if d_max is None else d_max
    return np.arange(0, top + 1, dtype=np.int64)


class BestDraftLen(BaseModel):
    """Best D per B, two ways, and the batches where speculation and memory stop.

    `best_*` is the point to run (among those that fit in memory); `speed_best_*` ignores memory,
    as the break-even batch and the engines' batch → D schedules do (memory is reported on its
    own, in `max_batch_in_memory`). The Explorer page and the exported schedule both read this.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    batch: list[int]
    best_draft_len: list[int]  # among points that fit (0 = plain decoding, also when none fits)
    best_speedup: list[float]
    acceptance_length: list[float]  # at best_draft_len
    speed_best_draft_len: list[int]  # by speed alone
    speed_best_speedup: list[float]
    break_even_batch: int | None  # smallest B from which no D ≥ 1 beats plain decoding
    # The largest B (every B up to the grid's last, not only the grid's) whose point fits in
    # memory, the drafter's weights and KV included; and whose plain decoding fits (None in
    # records made before it existed).
    max_batch_in_memory: int | None
    max_batch_plain: int | None = None
    # 80 % interval of the speed-best speedup per B (AL draws and timing error): where it
    # spans 1 the B is "marginal", not "pays". Empty in records made before it existed.
    speed_best_low: list[float] = []
    speed_best_high: list[float] = []


def _argmax_d(speedup: FloatArray) -> tuple[npt.NDArray[np.intp], FloatArray]:
    """Per row, the column of the largest speedup (ties: smallest D) and its value."""
    idx = np.argmax(speedup, axis=1)
    return idx, speedup[np.arange(speedup.shape[0]), idx]


def best_draft_len(
    scenario: Scenario, batches: npt.ArrayLike | None = None, d_max: int | None = None
) -> BestDraftLen:
    """For each B, the D (0 = no speculation) that maximises speedup: among points that fit in
    memory, and by speed alone; the break-even batch; the largest batch that fits."""
    m = scenario_model(scenario)
    b = np.asarray(DEFAULT_BATCHES if batches is None else batches, dtype=np.int64)
    d = draft_len_range(scenario, d_max)
    g = m.grid(b[:, None], d[None, :])
    speed = np.where(np.isfinite(g.speedup), g.speedup, -np.inf)
    speed[:, 0] = 1.0  # D = 0 is plain decoding
    fitting_speed = np.where(g.fits_in_memory, speed, -np.inf)
    fitting_speed[:, 0] = 1.0
    idx, best = _argmax_d(fitting_speed)
    speed_idx, speed_best = _argmax_d(speed)
    # Break-even: the first B from which no D ≥ 1 pays at this or any larger B of the grid —
    # the B after the last that pays (the engine's CUDA-graph staircase can make speculation
    # pay again just above a capture size after a B where it did not).
    paying = np.nonzero(speed_best > 1.0)[0]
    break_even: int | None = None
    if not paying.size:
        break_even = int(b[0])
    elif paying[-1] < len(b) - 1:
        break_even = int(b[paying[-1] + 1])
    al = g.acceptance_length[np.arange(len(b)), idx]
    max_fit, max_plain = m.largest_batches(scenario.context, int(b.max()))
    rows = np.arange(len(b))
    draws = speedup_draws(g, m.acceptance(d[None, :]), d[None, :],
                          scenario.engine)[:, rows, speed_idx]
    low, high = quantiles(draws)
    low, high = np.where(speed_idx == 0, 1.0, low), np.where(speed_idx == 0, 1.0, high)
    return BestDraftLen(
        batch=[int(x) for x in b],
        best_draft_len=[int(d[i]) for i in idx],
        best_speedup=[float(x) for x in best],
        acceptance_length=[float(x) for x in al],
        speed_best_draft_len=[int(d[i]) for i in speed_idx],
        speed_best_speedup=[float(x) for x in speed_best],
        break_even_batch=break_even,
        max_batch_in_memory=max_fit, max_batch_plain=max_plain,
        speed_best_low=[float(x) for x in low], speed_best_high=[float(x) for x in high],
    )


def break_even_text(bd: BestDraftLen, at: str = "at this context") -> str:
    """The break-even batch: the speed threshold from which no D ≥ 1 beats plain decoding
    (`break_even_batch`, by speed alone), with "marginal" where the 80 % interval of the best
    speedup spans 1×; then, named apart, where memory stops the speculative points (the
    best-D table among points that fit falls to D = 0 there) and the largest batch that fits
    (`at`: where, e.g. "at S=8K"), said once."""
    b = bd.batch
    speed = bd.speed_best_speedup
    be = bd.break_even_batch
    pays = [s > 1.0 and d > 0 for s, d in zip(speed, bd.speed_best_draft_len, strict=True)]
    if be is None:
        text = f"by speed, speculation pays at every B from {b[0]} to {b[-1]}"
        stop = len(b)
    elif be == b[0] and not any(pays):
        text = (f"by speed, speculation pays at no B from {b[0]} to {b[-1]}: no D ≥ 1 beats "
                "plain decoding")
        stop = 0
    else:
        stop = b.index(be)
        text = (f"by speed, speculation pays up to **B ≈ {b[stop - 1]}**; from **B ≈ {be}** no "
                "D ≥ 1 beats plain decoding")
    if bd.speed_best_low and stop:
        # marginal: the paying B from which on every paying B's interval spans 1×
        said = [verdict(speed[i], bd.speed_best_low[i]) if pays[i] else None
                for i in range(stop)]
        unsure = [i for i in range(stop) if said[i] == MARGINAL]
        sure_after = [i for i in range(stop) if said[i] == PAYS]
        first = next((i for i in unsure if not any(j > i for j in sure_after)), None)
        if first is not None:
            lo, hi = bd.speed_best_low[first], bd.speed_best_high[first]
            text += (f" — **marginal** from B ≈ {b[first]} (its 80 % interval "
                     f"{lo:.2f}–{hi:.2f}× spans 1×)" if first > 0 else
                     " — **marginal** at every B where it pays (the 80 % interval spans 1×)")
    # Memory, apart: the first B (below the speed threshold) whose speculative point does not
    # fit, though speed alone would pay there.
    mem = next((i for i in range(stop) if pays[i] and bd.best_draft_len[i] == 0), None)
    max_b, plain = bd.max_batch_in_memory, bd.max_batch_plain
    # The drafter's memory (weights, KV) is the same at every D, so where a speculative point
    # does not fit, none does; plain decoding, without the drafter, may fit a little further.
    with_it = "in memory" if plain is None or plain == max_b else "with its drafter"
    plain_too = "" if plain is None or plain == max_b else f" (plain decoding: B = {plain})"
    if max_b is None:
        if mem is not None:
            return (text + f". Memory, not speed, stops it: no batch fits {with_it} {at}"
                    + (f"; plain decoding fits up to B = {plain}." if plain else "."))
        return text + "."
    if mem is not None:
        return (text + f". Memory, not speed, stops it above **B = {max_b}**, the largest "
                f"batch that fits {with_it} {at}{plain_too}.")
    return text + f". The largest batch that fits {with_it} {at} is **B = {max_b}**{plain_too}."


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

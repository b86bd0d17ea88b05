"""Acceptance length (AL): tokens emitted per target step, bonus token included.

AL = 1 + sum_i m_i, with marginal m_i = prod_{j<=i} c_j of the conditional per-position
acceptance rates c_j (DESIGN.md §2.3). Everything here is vectorized numpy.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def marginal_from_conditional(conditional: npt.ArrayLike) -> FloatArray:
    """m_i = prod_{j<=i} c_j (the chance that position i is accepted)."""
    c = np.asarray(conditional, dtype=np.float64)
    return np.asarray(np.cumprod(c, axis=-1), dtype=np.float64)


def conditional_from_marginal(marginal: npt.ArrayLike) -> FloatArray:
    """c_i = m_i / m_{i-1} (c_1 = m_1); a position after a zero marginal gets c = 0."""
    m = np.asarray(marginal, dtype=np.float64)
    prev = np.concatenate([np.ones_like(m[..., :1]), m[..., :-1]], axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(prev > 0, m / np.where(prev > 0, prev, 1.0), 0.0)
    return np.asarray(c, dtype=np.float64)


def al_from_marginal(marginal: npt.ArrayLike) -> FloatArray:
    """AL(D) for D = 1..len(marginal): 1 + cumulative sum of marginals; index 0 is D = 1."""
    m = np.asarray(marginal, dtype=np.float64)
    return np.asarray(1.0 + np.cumsum(m, axis=-1), dtype=np.float64)


def al_std_error_from_marginals(marginal: npt.ArrayLike, n_drafts: float) -> FloatArray:
    """Standard error of AL(D), D = 1..len(marginal), from `n_drafts` drafts' marginals.

    K_D, the tokens accepted of the first D, is Σ_{i≤D} 1[K ≥ i]; the indicators are nested
    (accepting position j means accepting every i < j), so cov(1[K≥i], 1[K≥j]) = m_j(1 − m_i)
    for i < j and var K_D = Σ_{i≤D} m_i(1 − m_i) + 2 Σ_{i<j≤D} m_j(1 − m_i), exactly. Drafts
    are taken as independent; drafts of one request are correlated, so this is a lower bound on
    the spread of a request mix."""
    m = np.clip(np.asarray(marginal, dtype=np.float64), 0.0, 1.0)
    j = np.arange(m.size, dtype=np.float64)  # positions before j (0-based)
    before = np.concatenate([[0.0], np.cumsum(m)[:-1]])  # Σ_{i<j} m_i
    var = np.cumsum(m * (1.0 - m)) + 2.0 * np.cumsum(m * (j - before))
    return np.asarray(np.sqrt(np.maximum(var, 0.0) / max(float(n_drafts), 1.0)),
                      dtype=np.float64)


def al_std_error_bound(al: float, draft_len: int, n_drafts: float) -> float:
    """The largest standard error AL can have at D when only its mean and the count are known:
    K ∈ [0, D] with mean g = AL − 1 has variance at most g·(D − g)."""
    g = min(max(al - 1.0, 0.0), float(draft_len))
    return float(np.sqrt(g * (draft_len - g) / max(float(n_drafts), 1.0)))


def al_from_conditional(conditional: npt.ArrayLike) -> FloatArray:
    """AL(D) for D = 1..len(conditional) from conditional per-position rates."""
    return al_from_marginal(marginal_from_conditional(conditional))


def marginal_from_al(al_by_draft_len: npt.ArrayLike) -> FloatArray:
    """Inverse of al_from_marginal: m_D = AL(D) - AL(D-1), with AL(0) = 1."""
    al = np.asarray(al_by_draft_len, dtype=np.float64)
    return np.diff(np.concatenate([np.ones_like(al[..., :1]), al], axis=-1), axis=-1)


def al_iid(alpha: npt.ArrayLike, draft_len: npt.ArrayLike) -> FloatArray:
    """AL for i.i.d. acceptance α: (1 − α^{D+1}) / (1 − α); D + 1 at α = 1."""
    a = np.asarray(alpha, dtype=np.float64)
    d = np.asarray(draft_len, dtype=np.float64)
    near_one = np.isclose(a, 1.0)
    safe = np.where(near_one, 0.5, a)
    al = np.where(near_one, d + 1.0, (1.0 - safe ** (d + 1.0)) / (1.0 - safe))
    return np.asarray(al, dtype=np.float64)


def al_decaying(first_rate: float, decay: float, draft_len: npt.ArrayLike) -> FloatArray:
    """AL for conditional rates c_j = c_1·d^{j−1}, evaluated at integer draft lengths D ≥ 0."""
    d = np.asarray(draft_len, dtype=np.int64)
    d_max = int(d.max()) if d.size else 0
    positions = np.arange(1, d_max + 1, dtype=np.float64)
    conditional = np.clip(first_rate * decay ** (positions - 1.0), 0.0, 1.0)
    al_table = np.concatenate([[1.0], al_from_conditional(conditional)])
    return np.asarray(al_table[d], dtype=np.float64)


def scaled_al(marginal: npt.ArrayLike, level: npt.ArrayLike) -> FloatArray:
    """AL(D) for D = 0..len(marginal) when every marginal is scaled by `level` (capped at 1).

    min(1, r·m_i) stays non-increasing when m_i is, so the result is a valid chain AL for any
    r ≥ 0: the mechanism's prior *shape* with another *level*. `level` may carry leading axes
    (draws); the last axis of the result is D.
    """
    m = np.asarray(marginal, dtype=np.float64)
    r = np.asarray(level, dtype=np.float64)[..., None]
    scaled = np.minimum(1.0, r * m)
    zero = np.zeros((*scaled.shape[:-1], 1))
    return np.asarray(1.0 + np.concatenate([zero, np.cumsum(scaled, axis=-1)], axis=-1),
                      dtype=np.float64)


# Subnormal marginals are left out of the level range: 1/m overflows to inf and the level search
# would multiply inf by the zero marginals (NaN). Any normal float keeps 1/m finite.
NEGLIGIBLE_MARGINAL = float(np.finfo(np.float64).tiny)


def saturating_level(marginal: FloatArray) -> float:
    """The smallest level r at which min(1, r·m_i) = 1 for every non-negligible marginal."""
    usable = marginal[marginal >= NEGLIGIBLE_MARGINAL]
    return 1.0 / float(usable.min()) if usable.size else 1.0


def level_through(marginal: npt.ArrayLike, draft_len: int, gain: npt.ArrayLike,
                  iterations: int = 100) -> FloatArray:
    """The level r with Σ_{i≤D} min(1, r·m_i) = gain (= AL(D) − 1), by vectorized bisection.

    Σ min(1, r·m_i) is continuous and non-decreasing in r, from 0 to the number of positive
    marginals; a gain above that is unreachable and gets the r that saturates every position.
    """
    m = np.asarray(marginal, dtype=np.float64)[:draft_len]
    g = np.asarray(gain, dtype=np.float64)
    hi_value = saturating_level(m)
    lo = np.zeros_like(g)
    hi = np.full_like(g, hi_value)
    for _ in range(iterations):  # fixed count: each halves the bracket of every element at once
        mid = 0.5 * (lo + hi)
        reached = np.minimum(1.0, mid[..., None] * m).sum(axis=-1) >= g
        hi = np.where(reached, mid, hi)
        lo = np.where(reached, lo, mid)
    return np.asarray(np.where(g <= 0.0, 0.0, hi), dtype=np.float64)


def fit_level(marginal: npt.ArrayLike, draft_lens: npt.ArrayLike, als: npt.ArrayLike,
              grid: int = 2001) -> float:
    """Least-squares level r of `scaled_al(marginal, r)` through the points (D, AL).

    A geometric grid over r ∈ {0} ∪ [10⁻³, 1/min m] (relative steps < 1 %), evaluated at once
    (no per-point loop): the scale at which the prior's shape best matches these points."""
    m = np.asarray(marginal, dtype=np.float64)
    d = np.asarray(draft_lens, dtype=np.int64)
    y = np.asarray(als, dtype=np.float64)
    top = saturating_level(m[: int(d.max())])
    levels = np.concatenate([[0.0], np.geomspace(1e-3, max(top, 1e-3), grid)])
    table = scaled_al(m[: int(d.max())], levels)  # (grid, D_max + 1)
    sse = ((table[:, d] - y) ** 2).sum(axis=-1)
    return float(levels[int(np.argmin(sse))])


def fit_decaying(draft_lens: npt.ArrayLike, als: npt.ArrayLike) -> tuple[float, float]:
    """Least-squares (first_rate, decay) of c_j = c_1·d^{j−1} through the points (D, AL).

    Two grids (coarse, then fine around the coarse optimum), each evaluated at once. c_1 stays
    below 1, so the fitted per-position acceptance is never 1."""
    d = np.asarray(draft_lens, dtype=np.int64)
    y = np.asarray(als, dtype=np.float64)
    positions = np.arange(int(d.max()), dtype=np.float64)

    def best(c1: FloatArray, dec: FloatArray) -> tuple[float, float]:
        cond = c1[:, None, None] * dec[None, :, None] ** positions
        al = 1.0 + np.cumsum(np.cumprod(cond, axis=-1), axis=-1)
        sse = ((al[..., d - 1] - y) ** 2).sum(axis=-1)
        i, j = np.unravel_index(int(np.argmin(sse)), sse.shape)
        return float(c1[i]), float(dec[j])

    c1, dec = best(np.linspace(0.01, MAX_FITTED_RATE, 100), np.linspace(0.3, 1.0, 71))
    return best(np.linspace(max(0.0, c1 - 0.01), min(MAX_FITTED_RATE, c1 + 0.01), 41),
                np.linspace(max(0.0, dec - 0.01), min(1.0, dec + 0.01), 41))


# A fitted per-position acceptance stays below this: a curve is never extended by acceptance 1.
MAX_FITTED_RATE = 0.999

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

"""Speedup intervals from the AL source's draws and the timing model's error (draws are an
array axis, seeded).

speedup_k = speedup_at(AL_k) · exp(σ_t(D)·z_k), speedup_at(AL) = T_verif(B)·AL / (T_verif(B(1+D))
+ T_draft) with each step's prompt prefill where the scenario prices whole requests: σ_t is the
engine's step-model leave-one-source-out log error (analysis/timing_error.py).
One z per draw for every option: the timing model errs alike for every mechanism, so the
error widens each interval without changing which option wins a draw.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from explorer.analysis.timing_error import timing_error
from explorer.base.engines import DEFAULT_ENGINE
from explorer.model.acceptance_source import N_DRAWS, ALResult, quantiles, standard_normal
from explorer.model.grid import GridResult, speedup_at

FloatArray = npt.NDArray[np.float64]

PAYS, MARGINAL, LOSES = "pays", "marginal", "loses"


def timing_note(engine: str = DEFAULT_ENGINE) -> str:
    return ("80 % interval of the AL source's draws and of the timing error: "
            f"{timing_error(engine).note}")


def speedup_draws(g: GridResult, al: ALResult, draft_len: npt.ArrayLike,
                  engine: str = DEFAULT_ENGINE) -> FloatArray:
    """Speedup draws, shape (N_DRAWS, *grid shape): the grid's times with each AL draw, each
    scaled by the timing error at its D."""
    plain = speedup_at(g, al.draws())
    sigma = timing_error(engine).sigma(draft_len)
    z = standard_normal("timing").reshape((N_DRAWS, *([1] * np.ndim(plain[0]))))
    return np.asarray(np.broadcast_to(plain, (N_DRAWS, *plain.shape[1:])) * np.exp(sigma * z),
                      dtype=np.float64)


def speedup_interval(g: GridResult, al: ALResult, draft_len: npt.ArrayLike,
                     engine: str = DEFAULT_ENGINE) -> tuple[FloatArray, FloatArray]:
    return quantiles(speedup_draws(g, al, draft_len, engine))


def verdict(speedup: float, low: float | None) -> str:
    """Whether speculation pays at a point, said alike wherever the app says it (the
    recommendation, the break-even line): PAYS above 1× with its 80 % interval above 1× too,
    MARGINAL above 1× where the interval spans 1× (`low` ≤ 1), LOSES at or below 1×. Without
    an interval (`low` None: records made before there was one) a speedup above 1× pays."""
    if speedup <= 1.0:
        return LOSES
    return MARGINAL if low is not None and low <= 1.0 else PAYS

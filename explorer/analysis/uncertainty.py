"""Speedup intervals from the AL source's draws (draws are an array axis, seeded).

speedup_k = T_verif(B)·AL_k / (T_verif(B(1+D)) + T_draft): the timing model is held fixed —
the hardware presets record no cross-validated timing error yet, so the intervals carry the
acceptance uncertainty only (said where they are shown).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from explorer.model.acceptance_source import ALResult, quantiles
from explorer.model.grid import GridResult

FloatArray = npt.NDArray[np.float64]
TIMING_NOTE = ("80 % interval of the AL source's draws; the timing model is held fixed (no "
               "cross-validated timing error is recorded for the hardware presets)")


def speedup_draws(g: GridResult, al: ALResult) -> FloatArray:
    """Speedup draws, shape (draws, *grid shape): the grid's times with each AL draw."""
    step = np.asarray(g.t_verif_spec_s + g.t_draft_s, dtype=np.float64)
    return np.asarray(np.asarray(g.t_verif_base_s)[None, ...] * al.draws() / step[None, ...],
                      dtype=np.float64)


def speedup_interval(g: GridResult, al: ALResult) -> tuple[FloatArray, FloatArray]:
    return quantiles(speedup_draws(g, al))

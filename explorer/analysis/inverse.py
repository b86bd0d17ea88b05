"""Inverse questions: the AL a drafter must reach, and where speculation breaks even.

At a scenario's (B, S) the model's step times do not depend on AL, so the formula inverts in
closed form:

    speedup = T_verif(B)·AL / (T_verif(B·W) + T_draft(B, D))
    ⇒ AL needed for X× at D = X · (T_verif(B·W) + T_draft(B, D)) / T_verif(B)

(with whole requests priced, each step's prompt prefill p enters both steps, AL·p·f the
speculative one: explorer/model/grid.py `al_for_speedup`)

A D is feasible iff 1 ≤ AL ≤ 1 + D (an AL below 1 means any drafter reaches X× there). The
per-token acceptance α a chain drafter needs (i.i.d.: AL = (1 − α^(D+1)) / (1 − α)) compares
D fairly: the best D is the feasible one that needs the lowest α.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from explorer.analysis.candidate import candidate
from explorer.analysis.frontier import best_draft_len, draft_len_range
from explorer.base.errors import ScenarioError
from explorer.model.grid import GridResult, al_for_speedup, scenario_model, speedup_at
from explorer.specs.scenario import Scenario

FloatArray = npt.NDArray[np.float64]
RHO_GRID: tuple[float, ...] = (0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5)


def _grid(scenario: Scenario, draft_len: npt.ArrayLike, batch: int | None = None) -> GridResult:
    d = np.asarray(draft_len, dtype=np.float64)
    return scenario_model(scenario).grid(scenario.batch if batch is None else batch, d)


def needed_al(scenario: Scenario, draft_len: npt.ArrayLike, target_speedup: float = 1.0,
              batch: int | None = None) -> FloatArray:
    """The AL that gives `target_speedup` at the scenario's (or `batch`'s) B and its S; at 1×,
    (T_verif(B·W) + T_draft) / T_verif(B) for decode steps: the AL of break-even. With whole
    requests priced (output tokens N) the speculative step's prefill grows with AL, so the
    formula inverts as `al_for_speedup` does (inf where no AL reaches the target)."""
    return al_for_speedup(_grid(scenario, draft_len, batch), target_speedup)


def alpha_for_al(al: npt.ArrayLike, draft_len: npt.ArrayLike, iters: int = 60) -> FloatArray:
    """The i.i.d. per-token acceptance α with (1 − α^(D+1)) / (1 − α) = AL (bisection; NaN
    where AL is outside [1, 1+D]; 0 at AL ≤ 1)."""
    a = np.asarray(al, dtype=np.float64)
    d = np.asarray(draft_len, dtype=np.float64)
    a, d = np.broadcast_arrays(a, d)
    lo, hi = np.zeros_like(a), np.ones_like(a)
    for _ in range(iters):  # vectorised over every (AL, D): a fixed number of halvings
        mid = 0.5 * (lo + hi)
        val = np.where(mid < 1, (1 - mid ** (d + 1)) / np.maximum(1 - mid, 1e-300), d + 1)
        below = val < a
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    out = 0.5 * (lo + hi)
    out = np.where(a <= 1.0, 0.0, out)
    return np.asarray(np.where(a > 1.0 + d + 1e-12, np.nan, out), dtype=np.float64)


class Requirement(BaseModel):
    """What a drafter needs. JSON keys are an interface (`require --json`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    target_speedup: float
    batch: int
    context: int
    mechanism: str
    draft_len: int  # the given D, or the best D (lowest α needed among the feasible)
    acceptance_length: float  # the AL needed at draft_len
    acceptance_rate: float | None  # the i.i.d. α needed (None when infeasible)
    feasible: bool  # AL ≤ 1 + D
    draft_lens: list[int]  # every D considered …
    acceptance_lengths: list[float]  # … and the AL needed at each
    feasible_at: list[bool]
    beat: str | None = None  # the mechanism to beat, whose best speedup at B set the target
    note: str = ""


def required_al(scenario: Scenario, target_speedup: float, draft_len: int | None = None,
                beat: str | None = None) -> Requirement:
    """The AL the scenario's drafter needs for `target_speedup` at its B and S (at `draft_len`,
    or at the best D)."""
    if not target_speedup > 0:
        raise ScenarioError("target_speedup", "must be > 0")
    d = draft_len_range(scenario)[1:]
    if draft_len is not None:
        if draft_len < 1:
            raise ScenarioError("draft_len", "needs D ≥ 1 (D = 0 is plain decoding)")
        d = np.asarray([draft_len], dtype=np.int64)
    need = needed_al(scenario, d, target_speedup)
    ok = need <= 1.0 + d + 1e-12
    alpha = alpha_for_al(need, d)
    if draft_len is not None or not ok.any():
        k = 0 if draft_len is not None else int(np.argmin(need / (1.0 + d)))
    else:
        k = int(np.nanargmin(np.where(ok, alpha, np.nan)))
    feasible = bool(ok[k])
    note = ("feasible: AL ≤ 1 + D" if feasible else
            f"infeasible: no drafter reaches {target_speedup:g}× at D = {int(d[k])} "
            f"(it would need AL {need[k]:.2f} > 1 + D = {1 + int(d[k])})")
    return Requirement(
        target_speedup=target_speedup, batch=scenario.batch, context=scenario.context,
        mechanism=scenario.mechanism, draft_len=int(d[k]), acceptance_length=float(need[k]),
        acceptance_rate=float(alpha[k]) if feasible else None, feasible=feasible,
        draft_lens=[int(x) for x in d], acceptance_lengths=[float(x) for x in need],
        feasible_at=[bool(x) for x in ok], beat=beat, note=note)


def required_to_beat(scenario: Scenario, mechanism: str, draft_len: int | None = None
                     ) -> Requirement:
    """The AL the scenario's drafter needs to match `mechanism`'s best speedup at B."""
    other = best_draft_len(candidate(scenario, mechanism), [scenario.batch])
    target = max(other.speed_best_speedup[0], 1.0)
    return required_al(scenario, target, draft_len, beat=mechanism)


class BreakEven(BaseModel):
    """Speedup over (D, AL) and over (D, ρ) at the scenario's B and S, for contour plots."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    draft_len: list[int]
    acceptance_length: list[float]
    speedup_d_al: list[list[float]]  # [AL][D]; NaN where AL > 1 + D
    break_even_al: list[float]  # per D: the AL of speedup 1
    rho: list[float]
    speedup_d_rho: list[list[float]]  # [ρ][D] with the scenario's AL source
    acceptance_length_scenario: list[float]  # per D


def break_even(scenario: Scenario, n_al: int = 41) -> BreakEven:
    """Contours of speedup over (D, AL) and (D, ρ)."""
    d = draft_len_range(scenario)[1:]
    g = _grid(scenario, d)
    ratio = al_for_speedup(g, 1.0)
    al = np.linspace(1.0, float(1 + d.max()), n_al)
    sp = speedup_at(g, al[:, None])
    sp = np.where(al[:, None] <= 1.0 + d[None, :] + 1e-12, sp, np.nan)
    m = scenario_model(scenario)
    al_s = m.acceptance(d).acceptance_length
    rows = []
    for rho in RHO_GRID:  # one cached model per ρ (B=1 in its key: B is passed to the grid)
        rows.append(speedup_at(_grid(scenario.model_copy(update={"rho": rho, "batch": 1}), d,
                                     scenario.batch), al_s))
    return BreakEven(
        draft_len=[int(x) for x in d], acceptance_length=[float(x) for x in al],
        speedup_d_al=sp.tolist(), break_even_al=[float(x) for x in ratio],
        rho=list(RHO_GRID), speedup_d_rho=np.asarray(rows).tolist(),
        acceptance_length_scenario=[float(x) for x in np.broadcast_to(al_s, d.shape)])

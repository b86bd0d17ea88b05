"""The published AL points behind a mechanism's prior (data/al_curves.csv), chosen for a target.

Closest first: points measured on the target model itself (or a revision of it with the same
architecture), else on its family, else on every other family — the mechanism's preset prior as
fitted. The prior's *shape* (c_j = c_1·d^{j−1} from mechanisms.csv) is kept; its *level* is the
least-squares scale of the marginals to the chosen points (1 for the other-family prior), and the
spread of those points around it, σ of log((AL − 1)/(AL_fit − 1)), is the prior's uncertainty.

Where the points hold: a chain prior past the largest published D of its mechanism is
model-extended (the prior's decay, not a measurement); a block prior exists only at the
published block sizes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

from explorer.base.limits import MAX_DRAFT_LEN
from explorer.model.acceptance import fit_level, marginal_from_conditional, scaled_al
from explorer.presets import PublishedPoint, mechanism_presets, published_al_points
from explorer.specs.architecture import ModelSpec
from explorer.specs.mechanism import MechanismSpec

Closeness = Literal["same model", "same family", "other family", "none"]
# Fewer points than this say little about their own spread: the other-family σ is used.
MIN_POINTS_FOR_SPREAD = 3
# σ of an AL source with no published point at all (the external draft prior): an ASSUMPTION,
# the widest spread of any model-based drafter's published points around its prior.
UNSOURCED = ("ASSUMPTION: no published point; σ = the widest spread of any model-based "
             "drafter's published points around its prior")


@dataclass(frozen=True)
class Evidence:
    """The published points a prior rests on for one target, and what they say."""

    mechanism: str
    closeness: Closeness
    points: tuple[PublishedPoint, ...]
    level: float  # scale of the prior's marginals fitted to the points (1 = the preset prior)
    log_sd: float  # spread of the points around the scaled prior (log of AL − 1)
    spread_from: str  # which points the spread was computed on
    # Where the points measure one drafter on one dataset at one D both greedy (T = 0) and
    # sampled (T > 0): (pairs, mean ratio of greedy to sampled AL − 1). Other differences
    # between points (heads, datasets) would confound an unpaired comparison.
    temperature_split: tuple[int, float] | None = None

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.model for p in self.points))

    @property
    def temperatures(self) -> str:
        """What the points say about decoding: greedy (T = 0), sampled (T > 0) or not stated, and
        — where both kinds are there — how far apart their levels are."""
        kinds = Counter("greedy (T=0)" if p.temperature == 0 else
                        f"sampled (T={p.temperature:g})" if p.temperature is not None else
                        "T not stated" for p in self.points)
        text = ", ".join(f"{k}: {n}" for k, n in kinds.most_common())
        if self.temperature_split is not None:
            pairs, ratio = self.temperature_split
            text += (f" — the data tells them apart on {pairs} paired point(s) (same drafter, "
                     f"dataset and D): greedy accepts {ratio - 1:+.0%} drafted tokens (AL − 1) "
                     "relative to sampled")
        return text

    def describe(self, target: ModelSpec | None) -> str:
        if self.closeness == "none":
            return UNSOURCED
        shown = ", ".join(self.models[:4]) + (" …" if len(self.models) > 4 else "")
        where = {"same model": f"the same model as {target.name if target else '?'}",
                 "same family": f"the {target.family if target else '?'} family",
                 "other family": "other model families"}[self.closeness]
        return (f"{self.closeness}: {len(self.points)} published points on {where} ({shown}); "
                f"level ×{self.level:.3g} of the prior's shape; spread σ = {self.log_sd:.2f} "
                f"(log of AL − 1, {self.spread_from}); {self.temperatures}")


def prior_marginal(mech: MechanismSpec, positions: int = MAX_DRAFT_LEN) -> np.ndarray:
    j = np.arange(positions, dtype=np.float64)
    return marginal_from_conditional(np.clip(mech.first_rate * mech.decay**j, 0.0, 1.0))


def _points(mechanism: str) -> tuple[PublishedPoint, ...]:
    return tuple(p for p in published_al_points() if p.mechanism == mechanism and p.primary)


def _temperature_split(pts: tuple[PublishedPoint, ...]) -> tuple[int, float] | None:
    """Greedy vs sampled on points that differ only in temperature (same model, drafter,
    dataset, D): how many such pairs, and the mean ratio of their AL − 1."""
    greedy: dict[tuple[str, str, str, int], float] = {}
    sampled: dict[tuple[str, str, str, int], float] = {}
    for p in pts:
        key = (p.model, p.drafter, p.dataset, p.draft_len)
        if p.temperature == 0:
            greedy[key] = p.acceptance_length
        elif p.temperature is not None and p.temperature > 0:
            sampled[key] = p.acceptance_length
    both = [k for k in greedy if k in sampled and sampled[k] > 1.0]
    if not both:
        return None
    ratios = np.asarray([(greedy[k] - 1.0) / (sampled[k] - 1.0) for k in both])
    return len(both), float(np.mean(ratios))


def _log_residuals(mech: MechanismSpec, pts: tuple[PublishedPoint, ...], level: float
                   ) -> np.ndarray:
    d = np.asarray([p.draft_len for p in pts], dtype=np.int64)
    al = np.asarray([p.acceptance_length for p in pts], dtype=np.float64)
    fit = scaled_al(prior_marginal(mech), level)[d]
    ok = (al > 1.0) & (fit > 1.0)
    return np.asarray(np.log((al[ok] - 1.0) / (fit[ok] - 1.0)), dtype=np.float64)


@lru_cache(maxsize=16)
def other_family_spread(mechanism: str) -> float:
    """σ of all of a mechanism's primary points around its preset prior (level 1)."""
    mech = mechanism_presets()[mechanism]
    pts = _points(mechanism)
    if len(pts) < MIN_POINTS_FOR_SPREAD:
        return widest_spread()
    return _spread(mech, pts, 1.0)


def _spread(mech: MechanismSpec, pts: tuple[PublishedPoint, ...], level: float) -> float:
    res = _log_residuals(mech, pts, level)
    return float(np.std(res, ddof=1)) if res.size >= 2 else float("nan")


@lru_cache(maxsize=1)
def widest_spread() -> float:
    spreads = [_spread(m, _points(slug), 1.0) for slug, m in mechanism_presets().items()
               if m.draft_style != "lookup" and len(_points(slug)) >= MIN_POINTS_FOR_SPREAD]
    return max(spreads) if spreads else 0.0


@lru_cache(maxsize=256)
def evidence(mechanism: str, target_slug: str | None, family: str) -> Evidence:
    """The closest published points of `mechanism` for a target (slug and family)."""
    mech = mechanism_presets()[mechanism]
    pts = _points(mechanism)
    same_model = tuple(p for p in pts if target_slug and p.target == target_slug)
    same_family = tuple(p for p in pts if family and p.family == family)
    if not pts:
        return Evidence(mechanism, "none", (), 1.0, widest_spread(), UNSOURCED)
    chosen: tuple[PublishedPoint, ...]
    closeness: Closeness
    if same_model:
        chosen, closeness = same_model, "same model"
    elif same_family:
        chosen, closeness = same_family, "same family"
    else:
        return Evidence(mechanism, "other family", pts, 1.0, other_family_spread(mechanism),
                        f"all {len(pts)} points of the mechanism", _temperature_split(pts))
    d = np.asarray([p.draft_len for p in chosen], dtype=np.int64)
    al = np.asarray([p.acceptance_length for p in chosen], dtype=np.float64)
    level = fit_level(prior_marginal(mech), d, al)
    own = _spread(mech, chosen, level) if len(chosen) >= MIN_POINTS_FOR_SPREAD else float("nan")
    if np.isfinite(own):
        log_sd = own
        spread_from = f"these {len(chosen)} points"
    else:
        log_sd = other_family_spread(mechanism)
        spread_from = f"fewer than {MIN_POINTS_FOR_SPREAD} points: the mechanism's other-family σ"
    return Evidence(mechanism, closeness, chosen, level, log_sd, spread_from,
                    _temperature_split(chosen))


def evidence_for(mech: MechanismSpec, target: ModelSpec | None) -> Evidence:
    return evidence(mech.slug, target.slug if target else None, target.family if target else "")


@lru_cache(maxsize=64)
def evidence_draft_lens(mechanism: str) -> tuple[int, ...]:
    """The draft lengths with a primary published point for this mechanism (sorted)."""
    return tuple(sorted({p.draft_len for p in _points(mechanism)}))

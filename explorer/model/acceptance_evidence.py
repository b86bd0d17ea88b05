"""The published AL points behind a mechanism's prior (data/al_curves.csv), chosen for a target.

Closest first: points measured on the target model itself (or a revision of it with the same
architecture), else on its family, else on every other family. The prior's *shape*
(c_j = c_1·d^{j−1} from mechanisms.csv) is kept; its *level* is the scale of the marginals that
fits the chosen points, and comes from independent serving benchmarks (SpecDecode-Bench,
SPEED-Bench, InferenceX, engine maintainers' tables, a third party measuring a public head)
wherever the chosen points hold any; a drafter's own card or paper sets it only where nothing
else does, scaled by the card discount — how far own cards sit above serving benchmarks where
both measured the same model and mechanism.

AL depends on the workload: each point has one (chat, coding, math/reasoning,
summarisation/RAG; mixed for an average over several). Workload offsets — how far a category's
points sit from their own run's level, in runs that cover several categories — re-weight the
evidence to a stated default mix and give each category its own level.

Uncertainty, σ of log(AL − 1): within a run (points around their run, workload removed),
between runs (sources and, for family or other-family evidence, models), the card discount's
spread where it is used; the workload is drawn from the mix (the user's workload is unknown).
These parts are estimated in-sample, which understates how far a new source lands: their sum
is scaled by one factor (data/al_spread_fit.csv) fitted so that the leave-one-source-out 80 %
intervals hold 80 % of the published AL points, and checked with the factor refitted without
each scored source (nested). A source left out is its whole publisher (`publisher`).
Where the points hold: a chain prior past the largest published D of its mechanism is
model-extended; a block prior exists only at the published block sizes.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

import numpy as np

from explorer.base.limits import MAX_DRAFT_LEN
from explorer.model.acceptance import fit_level, marginal_from_conditional, scaled_al
from explorer.presets import (
    PublishedPoint,
    al_spread_fit,
    mechanism_presets,
    published_al_points,
)
from explorer.specs.architecture import ModelSpec
from explorer.specs.mechanism import MechanismSpec

Closeness = Literal["same model", "same family", "other family", "none"]
# Fewer points than this say little about their own spread: the mechanism-wide σ is used.
MIN_POINTS_FOR_SPREAD = 3
# σ of an AL source with no published point at all (the external draft prior): an ASSUMPTION,
# the widest spread of any model-based drafter's published points around its prior.
UNSOURCED = ("ASSUMPTION: no published point; σ = the widest spread of any model-based "
             "drafter's published points around its prior")
SERVING = "serving benchmark"
OWN = "own card/paper"
WORKLOADS = ("chat", "coding", "math/reasoning", "summarisation/RAG")
# ASSUMPTION: no published serving mix says otherwise, so each category weighs the same.
DEFAULT_MIX: dict[str, float] = {w: 0.25 for w in WORKLOADS}
MIX_SOURCE = ("default mix: equal shares of chat, coding, math/reasoning and summarisation/RAG "
              "(an assumption: no published serving mix)")
# Left out of every prior: copy-heavy translation runs (TRT-LLM blog 7) say how much a lookup
# drafter gains on copies, not what a serving mix accepts.
LEFT_OUT_WORKLOADS = ("other",)
# A drafter no preset models, shipped as a sample curve under the nearest slug but kept out of
# every prior: SpecDecodeBench's Llama-3.1-8B "EAGLE head" is EAGLE-1 (the simulator reads it
# from key acc_eagle, not acc_eagle_three, and its AL matches yuhuili/EAGLE-LLaMA3.1-Instruct-8B
# in vLLM issue 20780, not the EAGLE-3 head there), not the EAGLE-3 preset.
OTHER_DRAFTER = re.compile(r"\bEAGLE-1\b", re.IGNORECASE)


@dataclass(frozen=True)
class Evidence:
    """The published points a prior rests on for one target, and what they say."""

    mechanism: str
    closeness: Closeness
    points: tuple[PublishedPoint, ...]
    level: float  # scale of the prior's marginals for the default mix (1 = the preset prior)
    log_sd: float  # spread of the level around it, workload aside (log of AL − 1)
    spread_from: str  # which points the spread was computed on
    # Where the points measure one drafter on one dataset at one D both greedy (T = 0) and
    # sampled (T > 0): (pairs, mean ratio of greedy to sampled AL − 1). Other differences
    # between points (heads, datasets) would confound an unpaired comparison.
    temperature_split: tuple[int, float] | None = None
    kind: str = SERVING  # what set the level: serving benchmarks, or own cards × the discount
    card_discount: float = 1.0  # applied to own-card levels (1 where serving runs set it)
    # log offset of each workload's level from the default mix's (0 for the mix itself)
    workload_offsets: dict[str, float] = field(default_factory=dict)
    workload_counts: dict[str, int] = field(default_factory=dict)  # chosen points per category
    set_aside: int = 0  # own-card/paper points at this closeness left out of the level
    spread_factor: float = 1.0  # the LOSO calibration already in log_sd (raw σ × factor)

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.model for p in self.points))

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(run_source(p.source) for p in self.points))

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

    def workload_level(self, workload: str) -> float:
        """The level for one workload category (the default mix's where it has no offset)."""
        return self.level * float(np.exp(self.workload_offsets.get(workload, 0.0)))

    def level_draws(self, z: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Level draws: the workload drawn from the default mix (u uniform in [0, 1)) with its
        offset, times the log-normal spread of the level (z standard normal)."""
        cats = list(DEFAULT_MIX)
        edges = np.cumsum([DEFAULT_MIX[c] for c in cats])
        pick = np.minimum(np.searchsorted(edges, u * edges[-1], side="right"), len(cats) - 1)
        offsets = np.asarray([self.workload_offsets.get(c, 0.0) for c in cats])[pick]
        return np.asarray(self.level * np.exp(offsets + self.log_sd * z), dtype=np.float64)

    @property
    def how_obtained(self) -> str:
        n_serving = sum(p.kind == SERVING for p in self.points)
        n_own = len(self.points) - n_serving
        if self.kind == SERVING:
            return (f"level from {n_serving} points of independent serving benchmarks"
                    + (f" ({self.set_aside} points of the drafters' own cards/papers set aside)"
                       if self.set_aside else ""))
        return (f"level from {n_own} points of the drafters' own cards/papers × the card "
                f"discount {self.card_discount:.2f} (no serving benchmark at this closeness)")

    def describe(self, target: ModelSpec | None) -> str:
        if self.closeness == "none":
            return UNSOURCED
        shown = ", ".join(self.models[:4]) + (" …" if len(self.models) > 4 else "")
        where = {"same model": f"the same model as {target.name if target else '?'}",
                 "same family": f"the {target.family if target else '?'} family",
                 "other family": "other model families"}[self.closeness]
        spreads = workload_spreads(self.mechanism)
        per = ", ".join(f"{w} ×{self.workload_level(w):.3g}" + (
            f" σ {spreads[w]:.2f}" if w in spreads else "") + (
            "" if self.workload_counts.get(w) else " (offset only)") for w in WORKLOADS)
        return (f"{self.closeness}: {len(self.points)} published points on {where} ({shown}); "
                f"{self.how_obtained}; level ×{self.level:.3g} of the prior's shape for the "
                f"{MIX_SOURCE}; per workload {per}; spread σ = {self.log_sd:.2f} "
                f"(log of AL − 1, {self.spread_from}); {self.temperatures}")


def spread_factor_for(covering: np.ndarray, coverage: float = 0.8) -> float:
    """The factor on σ whose intervals hold `coverage` of the points, from each point's covering
    factor (the smallest factor at which its interval holds it: inside at k, inside above k):
    the smallest k with share(covering ≤ k) ≥ coverage."""
    c = np.asarray(covering, dtype=np.float64)
    return float(np.quantile(c, coverage, method="inverted_cdf"))


def nested_coverage(covering: np.ndarray, groups: np.ndarray, coverage: float = 0.8) -> float:
    """Share of points inside when the factor is refitted without the point's own group (its
    source): the honest coverage of a factor fitted on the same points."""
    c = np.asarray(covering, dtype=np.float64)
    g = np.asarray(groups)
    hits = np.zeros(c.size, dtype=bool)
    for key in np.unique(g):
        own = g == key
        if (~own).any():
            hits[own] = c[own] <= spread_factor_for(c[~own], coverage)
    return float(hits.mean()) if c.size else float("nan")


def spread_calibration() -> str:
    """What the shipped σ factor is and what it was estimated on (for the UI and validate)."""
    fit = al_spread_fit()
    return (f"σ × {fit.factor:.2f}, calibrated by leave-one-source-out on {fit.points} published "
            f"AL points from {fit.publishers} publishers (80 % intervals hold "
            f"{fit.coverage_raw:.0%} uncalibrated, {fit.coverage:.0%} calibrated, "
            f"{fit.coverage_nested:.0%} with the factor refitted without each scored publisher)")


def prior_marginal(mech: MechanismSpec, positions: int = MAX_DRAFT_LEN) -> np.ndarray:
    j = np.arange(positions, dtype=np.float64)
    return marginal_from_conditional(np.clip(mech.first_rate * mech.decay**j, 0.0, 1.0))


def workload_of(dataset: str) -> str:
    """The workload category of a dataset name, for points that do not carry one (the
    categories of data/al_curves.csv's `workload` column)."""
    t = dataset.lower()
    if re.search(r"avg of|average|overall|qualitative$|throughput|isl 1k|long-context|mixed", t):
        return "mixed"
    if re.search(r"summar|cnn|rag|lcsts", t):
        return "summarisation/RAG"
    if re.search(r"code|coding|humaneval|mbpp|livecodebench|instructcoder", t):
        return "coding"
    if re.search(r"gsm8k|math|aime|reasoning|stem", t):
        return "math/reasoning"
    if re.search(r"sharegpt|mt-bench|mtbench|alpaca|arena|magpie|chat|qa|humanities|writing|"
                 r"roleplay|multilingual|finance", t):
        return "chat"
    return "other" if "translation" in t else "mixed"


def run_source(source: str) -> str:
    """The run a point belongs to: its source without the file or part it was read from
    ('SpecDecodeBench-simulator@2fdccbd data/llama3.1-8B/…' → its first words)."""
    return re.split(r" data/| \(|;|,", source, maxsplit=1)[0].strip()


def publisher(source: str) -> str:
    """Who published a source, what leave-one-source-out leaves out whole: a repository at any
    commit or in any fork is one (InferenceX's golden-AL files, each its own run, come from one
    harness), an organisation's model cards are one; anything else is its run source."""
    run = run_source(source)
    repo = re.match(r"(?:github\.com/)?[\w.-]+/([\w.-]+)@", run)
    if repo:
        return repo.group(1)
    card = re.match(r"HF model card (?:huggingface\.co/)?([\w.-]+)/", run)
    return f"HF model cards {card.group(1)}" if card else run


def _points(mechanism: str, exclude_source: str = "") -> tuple[PublishedPoint, ...]:
    left_out = publisher(exclude_source) if exclude_source else ""
    return tuple(p for p in published_al_points() if p.mechanism == mechanism and p.primary
                 and p.workload not in LEFT_OUT_WORKLOADS and not OTHER_DRAFTER.search(p.drafter)
                 and not (left_out and publisher(p.source) == left_out))


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


@dataclass(frozen=True)
class _Run:
    """The points of one run: one drafter on one model from one source."""

    points: tuple[PublishedPoint, ...]
    level: float  # fitted to its points as they are
    residuals: np.ndarray  # log residual of each point around the run's level

    @property
    def kind(self) -> str:
        return self.points[0].kind

    @property
    def model(self) -> str:
        return self.points[0].model


def _runs(mech: MechanismSpec, pts: tuple[PublishedPoint, ...]) -> list[_Run]:
    grouped: dict[tuple[str, str, str], list[PublishedPoint]] = {}
    for p in pts:
        grouped.setdefault((p.model, p.drafter, run_source(p.source)), []).append(p)
    out = []
    m = prior_marginal(mech)
    for group in grouped.values():
        g = tuple(group)
        d = np.asarray([p.draft_len for p in g], dtype=np.int64)
        al = np.asarray([p.acceptance_length for p in g], dtype=np.float64)
        level = fit_level(m, d, al)
        fit = scaled_al(m, level)[d]
        res = np.log(np.maximum(al - 1.0, 1e-6) / np.maximum(fit - 1.0, 1e-6))
        out.append(_Run(g, level, np.asarray(res, dtype=np.float64)))
    return out


def _lookup(slug: str) -> bool:
    return mechanism_presets()[slug].draft_style == "lookup"


def _workload_runs(mechanism: str, exclude_source: str) -> list[_Run]:
    """The runs that say how workloads differ: those covering two categories or more, of every
    mechanism of the same kind (model-based or lookup) — the serving benchmarks' where any
    are, as for the level: the drafters' own cards and papers, on the benchmarks they chose,
    spread the categories about twice as far apart (chat −0.37 / math +0.32 against −0.19 /
    +0.10 for EAGLE-3)."""
    pooled = [s for s in mechanism_presets() if _lookup(s) == _lookup(mechanism)]
    runs = [run for slug in pooled for run in _runs(mechanism_presets()[slug],
                                                     _points(slug, exclude_source))
            if len({p.workload for p in run.points} & set(WORKLOADS)) >= 2]
    serving = [run for run in runs if run.kind == SERVING]
    return serving or runs


@lru_cache(maxsize=64)
def workload_offsets(mechanism: str, exclude_source: str = "") -> dict[str, float]:
    """log offset of each workload from the default mix, measured inside runs that cover
    several categories (a run's own level removed). A model-based drafter pools every
    model-based mechanism's runs (math accepts more than chat whatever the head); a lookup
    drafter has its own. A category without such points gets offset 0 (the mix level)."""
    res: dict[str, list[float]] = {w: [] for w in WORKLOADS}
    for run in _workload_runs(mechanism, exclude_source):
        for p, r in zip(run.points, run.residuals, strict=True):
            if p.workload in res:
                res[p.workload].append(float(r))
    raw = {w: float(np.mean(v)) for w, v in res.items() if v}
    mix = sum(DEFAULT_MIX[w] * raw.get(w, 0.0) for w in WORKLOADS)
    return {w: raw.get(w, mix) - mix for w in WORKLOADS}


@lru_cache(maxsize=64)
def workload_spreads(mechanism: str, exclude_source: str = "") -> dict[str, float]:
    """σ of each workload's points around its offset (log of AL − 1), in the runs that give
    the offsets: how much one chat (coding, …) benchmark differs from another."""
    res: dict[str, list[float]] = {w: [] for w in WORKLOADS}
    for run in _workload_runs(mechanism, exclude_source):
        for p, r in zip(run.points, run.residuals, strict=True):
            if p.workload in res:
                res[p.workload].append(float(r))
    return {w: float(np.std(v, ddof=1)) for w, v in res.items() if len(v) >= 2}


def _mix_correction(run: _Run, offsets: dict[str, float]) -> float:
    """log factor that moves a run's level from its own workload composition to the mix."""
    own = np.mean([offsets.get(p.workload, 0.0) for p in run.points])
    return float(-own)


def _mix_level(run: _Run, offsets: dict[str, float]) -> float:
    return run.level * float(np.exp(_mix_correction(run, offsets)))


def _within(runs: list[_Run], offsets: dict[str, float]) -> np.ndarray:
    """Residuals of points around their run with the workload offsets taken out."""
    out = []
    for run in runs:
        off = np.asarray([offsets.get(p.workload, 0.0) for p in run.points])
        r = run.residuals - (off - off.mean())
        if r.size >= 2:
            out.append(r - r.mean())
    return np.concatenate(out) if out else np.zeros(0)


def _sd(x: np.ndarray) -> float:
    return float(np.std(x, ddof=1)) if x.size >= 2 else float("nan")


@lru_cache(maxsize=64)
def mechanism_spreads(mechanism: str, exclude_source: str = "") -> tuple[float, float, float]:
    """(within-run σ, between-source σ on one model, between-model σ) of a mechanism's runs,
    log of AL − 1 at the default mix: the parts of an interval."""
    mech = mechanism_presets()[mechanism]
    offsets = workload_offsets(mechanism, exclude_source)
    runs = _runs(mech, _points(mechanism, exclude_source))
    within = _sd(_within(runs, offsets))
    logs = {id(r): np.log(max(_mix_level(r, offsets), 1e-9)) for r in runs}
    by_model: dict[str, list[float]] = {}
    for r in runs:
        by_model.setdefault(r.model, []).append(float(logs[id(r)]))
    same = np.concatenate([np.asarray(v) - np.mean(v) for v in by_model.values() if len(v) >= 2]
                          ) if any(len(v) >= 2 for v in by_model.values()) else np.zeros(0)
    n_same = sum(len(v) - 1 for v in by_model.values() if len(v) >= 2)
    # as for models: one degree of freedom (two runs on one model) says little about a third
    source = (float(np.sqrt(np.sum(same**2) / n_same)) if n_same >= MIN_POINTS_FOR_SPREAD - 1
              else float("nan"))
    between = _own_between(mechanism, exclude_source)
    if len({run_source(p.source) for r in runs for p in r.points}) < 2:
        # one source (a paper retraining every head alike) cannot show how models or sources
        # differ: the other model-based mechanisms' between-model spread stands in
        source = between = _pooled_between(mechanism, exclude_source)
    elif len(by_model) < MIN_POINTS_FOR_SPREAD:
        # two models say little about how far a third lands (a σ from 2 values is 0 as often
        # as not): the pooled between-model spread stands in
        between = _pooled_between(mechanism, exclude_source)
    fallback = widest_spread()
    return (within if np.isfinite(within) else fallback,
            source if np.isfinite(source) else (between if np.isfinite(between) else fallback),
            between if np.isfinite(between) else fallback)


@lru_cache(maxsize=64)
def _model_levels(mechanism: str, exclude_source: str) -> tuple[float, ...]:
    """Each model's mean log level (default mix) over its runs of the mechanism."""
    offsets = workload_offsets(mechanism, exclude_source)
    by_model: dict[str, list[float]] = {}
    for r in _runs(mechanism_presets()[mechanism], _points(mechanism, exclude_source)):
        by_model.setdefault(r.model, []).append(float(np.log(max(_mix_level(r, offsets), 1e-9))))
    return tuple(float(np.mean(v)) for v in by_model.values())


def _own_between(mechanism: str, exclude_source: str) -> float:
    return _sd(np.asarray(_model_levels(mechanism, exclude_source)))


def _pooled_between(mechanism: str, exclude_source: str) -> float:
    """RMS between-model σ of the mechanisms of the same kind (model-based or lookup) whose
    runs come from two sources or more and cover enough models to show their own."""
    values = []
    for slug in mechanism_presets():
        if slug == mechanism or _lookup(slug) != _lookup(mechanism):
            continue
        pts = _points(slug, exclude_source)
        if (len({run_source(p.source) for p in pts}) >= 2
                and len(_model_levels(slug, exclude_source)) >= MIN_POINTS_FOR_SPREAD):
            values.append(_own_between(slug, exclude_source))
    return float(np.sqrt(np.mean(np.square(values)))) if values else widest_spread()


@lru_cache(maxsize=16)
def card_discount(exclude_source: str = "") -> tuple[float, float, int]:
    """(factor, σ, pairs): how far the level of the drafters' own cards/papers sits above
    independent serving benchmarks, exp of the mean log ratio over (mechanism, model) pairs
    that both measured, at the default mix; capped at 1 (a card is never taken as low)."""
    deltas = []
    for slug in mechanism_presets():
        mech = mechanism_presets()[slug]
        offsets = workload_offsets(slug, exclude_source)
        by: dict[str, dict[str, list[float]]] = {}
        for run in _runs(mech, _points(slug, exclude_source)):
            by.setdefault(run.model, {}).setdefault(run.kind, []).append(
                float(np.log(max(_mix_level(run, offsets), 1e-9))))
        for kinds in by.values():
            if SERVING in kinds and OWN in kinds:
                deltas.append(np.mean(kinds[SERVING]) - np.mean(kinds[OWN]))
    if not deltas:
        return 1.0, 0.0, 0
    d = np.asarray(deltas)
    sd = float(np.std(d, ddof=1)) if d.size >= 2 else float(abs(d[0]))
    return min(1.0, float(np.exp(d.mean()))), sd, int(d.size)


@lru_cache(maxsize=16)
def other_family_spread(mechanism: str) -> float:
    """σ of one model's level around another's for a mechanism: the within-run and
    between-model parts together (how far a curve measured on another model says this one)."""
    within, _, between = mechanism_spreads(mechanism)
    if len(_points(mechanism)) < MIN_POINTS_FOR_SPREAD:
        return widest_spread()
    return float(np.hypot(within, between))


def _spread(mech: MechanismSpec, pts: tuple[PublishedPoint, ...], level: float) -> float:
    res = _log_residuals(mech, pts, level)
    return float(np.std(res, ddof=1)) if res.size >= 2 else float("nan")


@lru_cache(maxsize=1)
def widest_spread() -> float:
    spreads = [_spread(m, _points(slug), 1.0) for slug, m in mechanism_presets().items()
               if m.draft_style != "lookup" and len(_points(slug)) >= MIN_POINTS_FOR_SPREAD]
    return max(spreads) if spreads else 0.0


@lru_cache(maxsize=512)
def evidence(mechanism: str, target_slug: str | None, family: str,
             exclude_source: str = "", spread_factor: float | None = None) -> Evidence:
    """The closest published points of `mechanism` for a target (slug and family);
    `exclude_source` leaves one run source out (leave-one-source-out validation);
    `spread_factor` replaces the shipped σ calibration (None: data/al_spread_fit.csv)."""
    mech = mechanism_presets()[mechanism]
    pts = _points(mechanism, exclude_source)
    factor = al_spread_fit().factor if spread_factor is None else spread_factor
    if not pts:
        how = UNSOURCED if spread_factor is not None else f"{UNSOURCED}; {spread_calibration()}"
        return Evidence(mechanism, "none", (), 1.0, factor * widest_spread(), how,
                        spread_factor=factor)
    same_model = tuple(p for p in pts if target_slug and p.target == target_slug)
    same_family = tuple(p for p in pts if family and p.family == family)
    chosen: tuple[PublishedPoint, ...]
    closeness: Closeness
    if same_model:
        chosen, closeness = same_model, "same model"
    elif same_family:
        chosen, closeness = same_family, "same family"
    else:
        chosen, closeness = pts, "other family"
    offsets = workload_offsets(mechanism, exclude_source)
    runs = _runs(mech, chosen)
    serving = [r for r in runs if r.kind == SERVING]
    used = serving or runs
    discount, discount_sd, pairs = (1.0, 0.0, 0) if serving else card_discount(exclude_source)
    logs = np.asarray([np.log(max(_mix_level(r, offsets), 1e-9)) for r in used])
    level = float(np.exp(logs.mean())) * discount
    # the pooled within-run σ of the mechanism: a run of one dataset shows only how well the
    # prior's shape fits it, not how a point scatters around a level
    within, source_sd, model_sd = mechanism_spreads(mechanism, exclude_source)
    between = source_sd if closeness == "same model" else model_sd
    # predictive, not the spread of the mean: a new source (or model) differs from the mean of
    # n known ones by σ²(1 + 1/n) — one known source leaves twice the variance
    n_known = len({(run_source(r.points[0].source) if closeness == "same model" else r.model)
                   for r in used})
    between *= float(np.sqrt(1.0 + 1.0 / max(n_known, 1)))
    log_sd = factor * float(np.sqrt(within**2 + between**2 + discount_sd**2))
    parts = (f"within a run {within:.2f}, between "
             + ("sources on this model" if closeness == "same model" else "models")
             + f" {between:.2f}" + (f", card discount {discount_sd:.2f} over {pairs} pairs"
                                    if not serving else "")
             + f"; {spread_calibration() if spread_factor is None else f'σ × {factor:.2f}'}"
             + "; the workload drawn from the mix on top")
    counts = Counter(p.workload for r in used for p in r.points)
    return Evidence(mechanism, closeness, tuple(p for r in used for p in r.points), level,
                    log_sd, parts, _temperature_split(chosen),
                    kind=SERVING if serving else OWN, card_discount=discount,
                    workload_offsets=dict(offsets), workload_counts=dict(counts),
                    set_aside=sum(len(r.points) for r in runs if r.kind == OWN) if serving else 0,
                    spread_factor=factor)


def evidence_for(mech: MechanismSpec, target: ModelSpec | None) -> Evidence:
    return evidence(mech.slug, target.slug if target else None, target.family if target else "")


@lru_cache(maxsize=64)
def evidence_draft_lens(mechanism: str) -> tuple[int, ...]:
    """The draft lengths with a primary published point for this mechanism (sorted)."""
    return tuple(sorted({p.draft_len for p in _points(mechanism)}))

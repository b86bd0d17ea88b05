"""The whole-step terms of each serving engine, calibrated on published step times.

A served step is the measured kernels (as the tables time them) plus four physical terms of
the engine (explorer/specs/engine.py FITTED_STEP_TERMS), each linear in its parameter:

    T_step = T_kernels(B, W, S) + c_step + c_seq·B + κ·min(compute, weight read) + c_draft·F

c_step the per-step fixed cost (scheduler, input preparation, launches), c_seq the cost per
request in the step, κ the share of the GEMMs' compute (at the dtype's peak, on the padded
tokens) a served step does not overlap with its weight reads (the tables time each GEMM alone,
overlapped with its own read; 1 = no overlap, the summed roofline), c_draft per draft forward
(F forwards a round). CUDA-graph padding and eager steps stay as the engine's code says
(data/engines.csv).

Evidence (`step_evidence`): published whole steps (../shared/reference/step_times_*.csv), the
SpecDecodeBench vLLM step fit (data/samples/step_times.csv) and speed-ups that publish their AL
(../shared/reference/speedups.csv: the speed-up is AL·T_base/T_step, both steps modelled). The fit
(`fit_engine`) is a bounded least squares on log residuals, each source weighted equally; an
engine with one source fits its per-step cost only and carries the other terms from the engine
with most evidence (vLLM). Leave-one-source-out (`leave_one_source_out`): each source predicted
by the terms fitted without it (an engine's only source: by the carried terms).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from explorer.base.engines import SERVING_ENGINES
from explorer.base.mechanisms import EAGLE3
from explorer.calibration._shared import FloatArray
from explorer.calibration.published import (
    ASSUMED_CONTEXT,
    carried_al,
    map_row,
    normalise_engine,
    published_speedup,
)
from explorer.model.engine_costs import graph_shape
from explorer.model.grid import PREFILL_CHUNK_TOKENS, ScenarioModel
from explorer.model.layers import total
from explorer.model.resolve import resolve
from explorer.presets import DATA_DIR, engine_profiles
from explorer.specs.engine import FITTED_STEP_TERMS, VLLM, EngineProfile
from explorer.specs.scenario import Acceptance, Scenario

# Term → (lower, upper, unit) in data/engines.csv units: physical ranges, not tuning ranges.
# c_step: a CPU-side scheduler step of a Python engine, 0.1-3 ms; c_seq: per-request input
# preparation, at most 50 µs; κ: a share; c_draft: a proposer forward's bookkeeping, ≤ 1 ms.
BOUNDS: dict[str, tuple[float, float, str]] = {
    "step_overhead_us": (100.0, 3000.0, "us per target step"),
    "per_sequence_us": (0.0, 50.0, "us per request in a step"),
    "compute_overlap_loss": (0.0, 1.0, "share of the GEMM compute"),
    "draft_forward_overhead_us": (0.0, 1000.0, "us per draft forward"),
}
TERMS: tuple[str, ...] = tuple(FITTED_STEP_TERMS)
# Where the fit starts, and what a term no row constrains keeps: the values data/engines.csv
# carried before the fit (its notes), 0 for the terms it did not have.
START: dict[str, float] = {"step_overhead_us": 1206.84, "per_sequence_us": 0.0,
                           "compute_overlap_loss": 0.0, "draft_forward_overhead_us": 200.0}
# Parameter units → the model's seconds (κ is a share).
_TO_MODEL = np.array([FITTED_STEP_TERMS[t][1] for t in TERMS])
_KAPPA = TERMS.index("compute_overlap_loss")
PRIMARY_ENGINE = VLLM.slug  # the engine whose fit the others carry where their evidence is thin
STEP_FIT_REFERENCE = DATA_DIR / "samples" / "step_times.csv"
# SpecDecodeBench-simulator@2fdccbd's own per-step overhead (reference/kernels.csv,
# overhead_constant_per_step): step_times.csv is its forward only, so each row gets it.
FIT_STEP_OVERHEAD_MS = 1.20683946


VLLM_20780 = "vLLM #20780 (Llama-3.1-8B EAGLE, H100, B=1)"
SPECDECODEBENCH = "SpecDecodeBench (specdecode-bench.github.io: its blog, its simulator's fits)"


def source_key(source: str) -> str:
    """One key per publication (leave-one-source-out holds out every row it gave): vLLM #20780's
    step times and speed-ups are one source, and so are SpecDecodeBench's fits and blog."""
    if "issues/20780" in source:
        return VLLM_20780
    if "SpecDecodeBench" in source:
        return SPECDECODEBENCH
    return source.split(" (")[0][:70]


def evidence_key(source: str, engine: str) -> str:
    """The fit's key for a published row's source (the engine does not change it)."""
    del engine
    return source_key(source)


def profile_terms(engine: str, terms: dict[str, float]) -> EngineProfile:
    """The engine's default profile with these whole-step terms (data/engines.csv units)."""
    update = {FITTED_STEP_TERMS[t][0]: v * FITTED_STEP_TERMS[t][1] for t, v in terms.items()}
    return engine_profiles()[engine].model_copy(update=update)


@dataclass(frozen=True)
class StepEvidence:
    """One published number the step model predicts: a step time (ms) or a speed-up."""

    source: str  # short key, one per publication
    engine: str
    scenario: Scenario  # batch, draft_len, verify width, context, AL (speed-ups) set
    kind: str  # "plain": T_verif(B); "verify": T_verif(B, 1+D); "step": + T_draft; "speedup"
    value: float
    label: str


@dataclass(frozen=True)
class _Features:
    """A row's kernels-only time(s) and the terms' features, so T = t0 + f·θ (linear)."""

    t0: float
    f: FloatArray
    base_t0: float = 0.0  # speed-ups: the plain step T_verif(B)
    base_f: FloatArray | None = None
    al: float = 1.0
    # speed-ups of whole requests (published request lengths): the prompt prefill a plain step
    # carries, kernels-only plus κ times its overlappable part (a marginal cost over a decode
    # step: the per-step, per-request and per-draft terms do not change it), and the
    # speculative step's factor on it (explorer/model/grid.py)
    prefill_s: float = 0.0
    prefill_kappa_s: float = 0.0
    prefill_f: float = 1.0


def _scenario(**kw: object) -> Scenario:
    return Scenario.model_validate({"context": ASSUMED_CONTEXT, **kw})


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in row.items()} for row in df.to_dict("records")]


def _read(path: Path) -> pd.DataFrame | None:
    return pd.read_csv(path) if path.exists() else None


def step_evidence(shared: Path) -> list[StepEvidence]:
    """Every published step time or AL-backed speed-up the step model can be scored on."""
    out: list[StepEvidence] = []
    ref = shared / "reference"
    fit = pd.read_csv(STEP_FIT_REFERENCE)
    for r in _records(fit):
        d = int(r["draft_len"])
        out.append(StepEvidence(
            SPECDECODEBENCH, VLLM.slug,
            _scenario(hardware="h100", model="llama-3.1-8b", tp=1, mechanism=EAGLE3.slug,
                      batch=int(r["batch"]), draft_len=d),
            "plain" if d == 0 else "verify", float(r["step_time_ms"]) + FIT_STEP_OVERHEAD_MS,
            f"B={r['batch']} D={d}"))
    derived = _read(ref / "step_times_derived.csv")
    if derived is not None:
        for r in _records(derived):
            if "20780" not in str(r["source"]):
                continue
            d = int(r["q_len"]) - 1
            if "EAGLE-1" in str(r["what_is_timed"]):
                continue  # EAGLE-1's head (no fused FC, the target's lm_head) is no preset
            kind = "plain" if d == 0 else "step"
            drafter = "EAGLE-3" if d else "plain"
            out.append(StepEvidence(
                VLLM_20780, VLLM.slug,
                _scenario(hardware="h100", model="llama-3.1-8b", tp=1, mechanism=EAGLE3.slug,
                          batch=1, draft_len=d),
                kind, float(r["step_ms"]), f"{drafter} D={d}"))
    measured = _read(ref / "step_times_measured.csv")
    if measured is not None:
        for r in _records(measured):
            if ("InferenceX/issues/828" not in str(r["source"])
                    or "KV-capacity wall" in str(r["notes"])):
                continue  # the row past the KV-capacity wall times queueing, not a step
            isl, osl = (int(x) for x in re.findall(r"(\d+)k", str(r["context"]))[:2])
            ctx = int((isl + osl / 2) * 1024)  # mean context over a request's decode
            out.append(StepEvidence(
                "InferenceX #828 (gpt-oss-120b, 8xH100, plain decode)", VLLM.slug,
                _scenario(hardware="h100", model="gpt-oss-120b", tp=8, dtype="fp4",
                          batch=int(r["batch"]), draft_len=0, context=ctx),
                "plain", float(r["step_ms"]), f"B={r['batch']} {isl}k/{osl}k"))
    speed = _read(ref / "speedups.csv")
    if speed is not None:
        out.extend(_speedup_evidence(speed, _read(ref / "al_curves.csv")))
    return out


def _speedup_evidence(df: pd.DataFrame, al_curves: pd.DataFrame | None = None
                      ) -> list[StepEvidence]:
    """Speed-ups of a named serving engine that map to the presets with their AL (printed, their
    series' at B = 1, or the publication's own acceptance curve:
    explorer/calibration/published.py). Left out: a row whose speed-up
    exceeds its AL (no step model reaches it: its AL and timing come from different requests)
    and vLLM #20780's rows, which its step times already give (step_times_derived.csv)."""
    out: list[StepEvidence] = []
    df = df[df.speedup.notna()]
    carried = carried_al(df, al_curves)
    for _, row in df.iterrows():
        src = str(row.source)
        if normalise_engine(str(row.engine)) is None or "issues/20780" in src:
            continue
        sc, _ = map_row(row, carried)
        if sc is None:
            continue
        al, sp = float(sc.acceptance.fixed_al or 1.0), published_speedup(row)
        if sp > al:
            continue
        width = f" W={sc.verify_width}" if sc.verify_width else ""
        out.append(StepEvidence(source_key(src), sc.engine, sc, "speedup", sp,
                                f"{sc.model} {sc.mechanism} B={sc.batch} D={sc.draft_len}"
                                f"{width}"))
    return out


@cache
def _model(scenario: Scenario) -> ScenarioModel:
    """The scenario's model with the fitted terms at 0 (the kernels-only step)."""
    sc = scenario.model_copy(update={"batch": 1, "draft_len": 0})
    return ScenarioModel(resolve(sc), engine_profiles(fitted=False)[sc.engine])


def _step_features(m: ScenarioModel, b: float, d: float, with_draft: bool) -> tuple[float,
                                                                                   FloatArray]:
    sc = m.r.scenario
    bb, dd = np.array([b]), np.array([d])
    width = m.verify_width(dd) if d > 0 else np.array([1.0])
    t0 = float(total(m.verify(bb, width, sc.context, m.r.group))[0])
    tokens, _ = graph_shape(m.engine, bb, width)
    forwards = 0.0
    if with_draft and d > 0:
        t0 += float(total(m.draft(bb, dd, sc.context, m.r.group))[0])
        forwards = float(m.draft_forwards(bb, dd)[0])
    feats = np.array([1.0, b, float(m.overlappable_s(tokens)[0]), forwards])
    return t0, feats


def features(e: StepEvidence) -> _Features:
    sc = e.scenario
    m = _model(sc.model_copy(update={"acceptance": Acceptance()}))
    b, d = float(sc.batch), float(sc.draft_len)
    if e.kind == "plain":
        t0, f = _step_features(m, b, 0.0, False)
        return _Features(t0, f)
    if e.kind == "verify":
        t0, f = _step_features(m, b, d, False)
        return _Features(t0, f)
    t0, f = _step_features(m, b, d, True)
    if e.kind == "step":
        return _Features(t0, f)
    bt0, bf = _step_features(m, b, 0.0, False)
    p, pk, pf = 0.0, 0.0, 1.0
    if sc.output_tokens:
        s = float(sc.context)
        pa, pf = m.prefill_per_step(np.array([b]), np.array([s]), np.array([m.r.group]))
        p = float(np.ravel(pa)[0])
        chunk = min(s, float(PREFILL_CHUNK_TOKENS))
        with_chunk, _ = graph_shape(m.engine, np.array([b]), np.array([1.0 + chunk / b]))
        alone, _ = graph_shape(m.engine, np.array([b]), np.array([1.0]))
        pk = float(np.ravel(m.overlappable_s(with_chunk) - m.overlappable_s(alone))[0]) \
            / chunk * b * s / sc.output_tokens
    return _Features(t0, f, bt0, bf, float(sc.acceptance.fixed_al or 1.0), p, pk, pf)


def predict(e: StepEvidence, f: _Features, theta_units: Sequence[float] | FloatArray) -> float:
    """The row's quantity (ms, or the speed-up) under the terms (data/engines.csv units)."""
    th = np.asarray(theta_units, dtype=np.float64) * _TO_MODEL
    step = f.t0 + float(f.f @ th)
    if e.kind != "speedup":
        return step * 1e3
    assert f.base_f is not None
    p = f.prefill_s + float(th[_KAPPA]) * f.prefill_kappa_s
    return f.al * (f.base_t0 + float(f.base_f @ th) + p) / (step + f.al * p * f.prefill_f)


@dataclass(frozen=True)
class EngineFit:
    engine: str
    values: dict[str, float]  # term → value in data/engines.csv units
    fitted_terms: tuple[str, ...]  # the ones this engine's own evidence fitted
    sources: tuple[str, ...]
    n_rows: int


def _fit(rows: Sequence[tuple[StepEvidence, _Features]], free: Sequence[str],
         fixed: dict[str, float]) -> dict[str, float]:
    idx = [TERMS.index(t) for t in free]
    lo = np.array([BOUNDS[t][0] for t in free])
    hi = np.array([BOUNDS[t][1] for t in free])
    counts: dict[str, int] = {}
    for e, _ in rows:
        counts[e.source] = counts.get(e.source, 0) + 1
    weights = np.array([1.0 / np.sqrt(counts[e.source]) for e, _ in rows])
    base = np.array([fixed.get(t, 0.0) for t in TERMS])

    def full(x: FloatArray) -> FloatArray:
        th = base.copy()
        th[idx] = x
        return th

    def resid(x: FloatArray) -> FloatArray:
        th = full(x)
        logs = np.asarray([np.log(predict(e, f, th) / e.value) for e, f in rows],
                          dtype=np.float64)
        return np.asarray(logs * weights, dtype=np.float64)

    x0 = np.array([START[t] for t in free])
    sol = least_squares(resid, x0, bounds=(lo, hi), method="trf")
    # a value within a millionth of the range from a bound is the bound (no 1e-23 µs terms)
    x = np.asarray(sol.x, dtype=np.float64)
    x = np.where(x - lo < 1e-6 * (hi - lo), lo, np.where(hi - x < 1e-6 * (hi - lo), hi, x))
    th = full(x)
    return {t: float(th[i]) for i, t in enumerate(TERMS)}


def fit_engine(rows: Sequence[tuple[StepEvidence, _Features]], engine: str,
               carried: dict[str, float] | None) -> EngineFit:
    """An engine's terms on its rows: all four with two or more sources, else its per-step cost
    only (the others carried); none without evidence (all carried). A term no row of the
    engine moves (no draft forwards among them) is not identified: it keeps the carried value,
    or without one the value data/engines.csv had before the fit (START)."""
    own = [(e, f) for e, f in rows if e.engine == engine]
    sources = tuple(sorted({e.source for e, _ in own}))
    if len(sources) >= 2 or carried is None:
        free: tuple[str, ...] = TERMS
    elif sources:
        free = ("step_overhead_us",)
    else:
        free = ()
    moved = {t for i, t in enumerate(TERMS)
             if any(f.f[i] != 0 or (f.base_f is not None and f.base_f[i] != 0) for _, f in own)}
    free = tuple(t for t in free if t in moved)
    fixed = {**START, **(carried or {})}
    values = _fit(own, free, fixed) if free and own else dict(fixed)
    if carried is not None and free == ("step_overhead_us",):
        lo, hi, _ = BOUNDS["step_overhead_us"]
        at_bound = min(values["step_overhead_us"] - lo, hi - values["step_overhead_us"])
        if at_bound < 1e-3 * (hi - lo):  # at a bound: the source does not
            free, values = (), dict(fixed)  # identify it, so the carried value stands
    return EngineFit(engine, values, free, sources, len(own))


def _donated(fits: dict[str, EngineFit], engine: str) -> dict[str, float]:
    """For an engine's terms its remaining evidence does not identify: the mean of the other
    engines' values for each term they fitted on their own evidence (none carried)."""
    out: dict[str, float] = {}
    for t in TERMS:
        vals = [f.values[t] for e, f in fits.items() if e != engine and t in f.fitted_terms]
        if vals:
            out[t] = float(np.mean(vals))
    return out


@dataclass(frozen=True)
class HeldOut:
    """One source predicted by the terms fitted without it."""

    engine: str
    source: str
    labels: tuple[str, ...]
    kinds: tuple[str, ...]
    published: FloatArray
    predicted: FloatArray  # leave-one-source-out
    in_fit: FloatArray  # with every source in the fit
    terms: dict[str, float]  # the engine's terms fitted without this source

    @property
    def rel_error(self) -> FloatArray:
        return np.asarray(self.predicted / self.published - 1.0, dtype=np.float64)

    @property
    def mape(self) -> float:
        return float(np.mean(np.abs(self.rel_error)))

    @property
    def bias(self) -> float:
        return float(np.mean(self.rel_error))


@dataclass(frozen=True)
class StepCostFit:
    fits: dict[str, EngineFit]
    held_out: tuple[HeldOut, ...]

    def loo(self, engine: str) -> tuple[float, float, int]:
        """(MAPE, log-RMS, rows) of an engine's leave-one-source-out predictions."""
        errs = np.concatenate([h.rel_error for h in self.held_out if h.engine == engine]
                              or [np.zeros(0)])
        if errs.size == 0:
            return float("nan"), float("nan"), 0
        return (float(np.mean(np.abs(errs))), float(np.sqrt(np.mean(np.log1p(errs) ** 2))),
                int(errs.size))

    def loo_speedup(self, engine: str | None = None) -> tuple[float, int]:
        """(log-RMS, rows) of the leave-one-source-out predictions of the published speed-ups
        alone, log(model / published): an engine's, or every engine's pooled (None). The
        error a user reads on a speed-up, which the step times' error understates (a speed-up
        divides two modelled steps, on targets the step times do not cover)."""
        logs = np.concatenate([np.log1p(h.rel_error)[np.asarray(h.kinds) == "speedup"]
                               for h in self.held_out if engine is None or h.engine == engine]
                              or [np.zeros(0)])
        if logs.size == 0:
            return float("nan"), 0
        return float(np.sqrt(np.mean(logs ** 2))), int(logs.size)


def fit_step_costs(shared: Path) -> StepCostFit:
    evidence = step_evidence(shared)
    rows = [(e, features(e)) for e in evidence]
    fits: dict[str, EngineFit] = {}
    primary = fit_engine(rows, PRIMARY_ENGINE, None)
    fits[PRIMARY_ENGINE] = primary
    for other in SERVING_ENGINES:
        if other != PRIMARY_ENGINE:
            fits[other] = fit_engine(rows, other, primary.values)
    held: list[HeldOut] = []
    for engine, fit in fits.items():
        for source in fit.sources:
            own = [(e, f) for e, f in rows if e.engine == engine and e.source == source]
            rest = [(e, f) for e, f in rows if not (e.engine == engine and e.source == source)]
            if engine == PRIMARY_ENGINE:  # unidentified terms: the other engines' own fits
                loo = fit_engine(rest, engine, {**START, **_donated(fits, engine)}).values
            else:  # the engine's own other sources, else the primary's terms carried
                carried = fit_engine(rest, PRIMARY_ENGINE, None).values
                loo = fit_engine(rest, engine, carried).values
            th_loo = [loo[t] for t in TERMS]
            th_all = [fit.values[t] for t in TERMS]
            held.append(HeldOut(
                engine, source, tuple(e.label for e, _ in own), tuple(e.kind for e, _ in own),
                np.array([e.value for e, _ in own]),
                np.array([predict(e, f, th_loo) for e, f in own]),
                np.array([predict(e, f, th_all) for e, f in own]), dict(loo)))
    return StepCostFit(fits, tuple(held))


FIT_COLUMNS = ("engine", "parameter", "value", "unit", "lower", "upper", "fitted_on", "n_rows",
               "loo_mape", "loo_log_rms", "loo_speedup_log_rms", "loo_speedup_rows", "loo_note",
               "source")


def fit_table(result: StepCostFit) -> pd.DataFrame:
    """data/step_cost_fit.csv: one row per engine and term."""
    out = []
    for engine, fit in result.fits.items():
        mape_, rms, n = result.loo(engine)
        sp_rms, sp_n = result.loo_speedup(engine)
        per_source = "; ".join(f"{h.source}: {h.mape:.1%} (bias {h.bias:+.1%}, {h.rel_error.size}"
                               " rows)" for h in result.held_out if h.engine == engine)
        for t in TERMS:
            lo, hi, unit = BOUNDS[t]
            own = t in fit.fitted_terms
            on = ("; ".join(fit.sources) if own else
                  f"carried from {PRIMARY_ENGINE}'s fit ({engine} has "
                  f"{len(fit.sources)} source{'s' if len(fit.sources) != 1 else ''})")
            note = (f"{mape_:.1%} MAPE over {n} rows ({per_source})" if n
                    else "none (no published step of this engine)")
            src = ("fit: scripts/fit_step_costs.py on " + on if own
                   else f"{PRIMARY_ENGINE}'s fitted value carried over (no {engine} evidence "
                   "fits it)")
            out.append({"engine": engine, "parameter": t, "value": f"{fit.values[t]:.6g}",
                        "unit": unit, "lower": f"{lo:g}", "upper": f"{hi:g}",
                        "fitted_on": on, "n_rows": fit.n_rows,
                        "loo_mape": f"{mape_:.4f}" if n else "",
                        "loo_log_rms": f"{rms:.4f}" if n else "",
                        "loo_speedup_log_rms": f"{sp_rms:.4f}" if sp_n else "",
                        "loo_speedup_rows": sp_n, "loo_note": note,
                        "source": src})
    return pd.DataFrame(out, columns=list(FIT_COLUMNS))

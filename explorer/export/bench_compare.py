"""Benchmark results against the prediction: predicted vs measured output tokens/s, TPOT and
speedup per run, and the step-cost terms backed out of them (explorer/calibration/bench_backout).

A run is priced as the plan priced it (explorer/export/bench_plan.py `predict`): the plan's
mechanism for the run's engine, at the run's B and D, with the run's forced AL (from the file or
its name, else the AL the engine measured, else the plan's), over whole requests of the run's own
mean input and output lengths (from the file; where it lacks them, the plan's, and the row says
so): each step carries the prefill of the requests that replace finished ones. The measured
speedup of a D > 0 run is its output tokens/s over that of the D = 0 run at the same engine and
batch.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict

from explorer.analysis.candidate import candidate
from explorer.calibration.bench_backout import BenchBackOut, back_out_step_terms
from explorer.export.bench_plan import BenchPlan, bench_plan, predict
from explorer.measured.bench_results import BenchFile, BenchMeasurement
from explorer.model.grid import scenario_model
from explorer.specs.hardware import STEP_TERM_OVERRIDES, HardwareOverrides
from explorer.specs.scenario import Scenario


class Figures(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    output_tokens_per_s: float
    tpot_s: float
    speedup: float | None  # vs the D = 0 run at the same engine and batch (None: no such run)


class Predicted(Figures):
    low: float  # 80 % interval of output tokens/s
    high: float


class CompareRow(BaseModel):
    """One run: the keys `predicted` and `measured` are an interface (issue #23)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    line: int | None
    format: str
    engine: str
    batch: int
    draft_len: int
    context: int  # mean KV length while decoding: input + output/2
    input_len: float  # mean tokens per request the prediction prices (prompt, output)
    output_len: float
    lengths_from: str  # the file's keys, or the plan's (the file lacks them)
    acceptance_length: float | None
    acceptance_from: str
    recognised_from: str
    predicted: Predicted
    measured: Figures
    error: dict[str, float | None]  # predicted / measured − 1, per figure
    in_interval: bool  # measured output tokens/s within the 80 % interval


class BenchComparison(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    mechanism: str
    rows: list[CompareRow]
    mape_output_tokens_per_s: float
    in_interval_share: float
    notes: list[str]


def base_scenario(scenario: Scenario) -> Scenario:
    """The scenario without benchmark step terms (a back-out replaces them, a comparison is
    against the model as it stands when none are applied)."""
    ov = scenario.hardware_overrides
    if ov is None or all(getattr(ov, k) is None for k in STEP_TERM_OVERRIDES):
        return scenario
    keep = ov.model_dump(exclude={*STEP_TERM_OVERRIDES, "step_overhead_s", "label"})
    rest = {k: v for k, v in keep.items() if v is not None}
    new = HardwareOverrides(**rest, label=ov.label) if rest else None
    return scenario.model_copy(update={"hardware_overrides": new})


def _plans(scenario: Scenario, engines: set[str]) -> dict[str, BenchPlan]:
    return {e: bench_plan(scenario.model_copy(update={"engine": e})) for e in sorted(engines)}


def _acceptance(run: BenchMeasurement, plan: BenchPlan, sc: Scenario) -> tuple[float | None, str]:
    if run.draft_len == 0:
        return None, ""
    if run.forced_acceptance_length is not None:
        return run.forced_acceptance_length, "the file (forced)"
    if run.measured_acceptance_length is not None:
        return run.measured_acceptance_length, "the engine's measured AL"
    if run.draft_len == plan.draft_len:
        forced = next(r.forced_acceptance_length for r in plan.runs if r.draft_len > 0)
        return forced, "the plan (forced)"
    al = float(np.ravel(scenario_model(sc).acceptance(float(run.draft_len)).acceptance_length)[0])
    return al, "the model's AL at this D"


def _lengths(run: BenchMeasurement, plan: BenchPlan) -> tuple[float, float, str]:
    """(input, output) tokens per request to price the run with: the file's means, else the
    plan's (which ran them)."""
    if run.input_len is not None and run.output_len is not None:
        return run.input_len, run.output_len, f"the file ({run.lengths_from})"
    return (float(plan.input_len), float(plan.output_len),
            f"the plan ({plan.input_len} in / {plan.output_len} out: the file does not say)")


def _err(p: float | None, m: float | None) -> float | None:
    if p is None or m is None or m == 0:
        return None
    return p / m - 1.0


def compare(scenario: Scenario, files: list[BenchFile]) -> BenchComparison:
    """Predicted vs measured for every run of the (valid) files."""
    runs = [r for f in files if f.ok for r in f.runs]
    if not runs:
        raise ValueError("no runs to compare")
    engines = {r.engine or scenario.engine for r in runs}
    plans = _plans(scenario, engines)
    rows_in: list[tuple[BenchMeasurement, str, float | None, str, tuple[float, float, str],
                        float, float, float, float]] = []
    for r in runs:
        engine = r.engine or scenario.engine
        plan = plans[engine]
        sc = candidate(scenario.model_copy(update={"engine": engine}), plan.mechanism)
        al, al_from = _acceptance(r, plan, sc)
        lengths = _lengths(r, plan)
        p = predict(sc, r.batch, r.draft_len, al if al is not None else 1.0,
                    input_len=lengths[0], output_len=lengths[1])
        rows_in.append((r, engine, al, al_from, lengths, float(p.output_tokens_per_s[0]),
                        float(p.tpot_s[0]), float(p.low[0]), float(p.high[0])))
    # D = 0 runs by (engine, batch): the measured and predicted baselines of the speedups
    base_m: dict[tuple[str, int], float] = {}
    base_p: dict[tuple[str, int], float] = {}
    for r, engine, _, _, _, ptps, *_ in rows_in:
        if r.draft_len == 0:
            base_m.setdefault((engine, r.batch), r.output_tokens_per_s)
            base_p.setdefault((engine, r.batch), ptps)
    rows: list[CompareRow] = []
    for r, engine, al, al_from, (isl, osl, l_from), ptps, ptpot, lo, hi in rows_in:
        key = (engine, r.batch)
        m_speed = r.output_tokens_per_s / base_m[key] if key in base_m else None
        p_speed = ptps / base_p[key] if key in base_p else None
        rows.append(CompareRow(
            file=r.file, line=r.line, format=r.format, engine=engine, batch=r.batch,
            draft_len=r.draft_len, context=round(isl + osl / 2), input_len=isl,
            output_len=osl, lengths_from=l_from, acceptance_length=al, acceptance_from=al_from,
            recognised_from=r.recognised_from,
            predicted=Predicted(output_tokens_per_s=ptps, tpot_s=ptpot, speedup=p_speed,
                                low=lo, high=hi),
            measured=Figures(output_tokens_per_s=r.output_tokens_per_s, tpot_s=r.tpot_s,
                             speedup=m_speed),
            error={"output_tokens_per_s": _err(ptps, r.output_tokens_per_s),
                   "tpot_s": _err(ptpot, r.tpot_s), "speedup": _err(p_speed, m_speed)},
            in_interval=lo <= r.output_tokens_per_s <= hi))
    rows.sort(key=lambda x: (x.engine, x.batch, x.draft_len, x.file))
    errs = [abs(x.error["output_tokens_per_s"] or 0.0) for x in rows]
    notes = []
    mechs = {e: p.mechanism_name for e, p in plans.items()}
    notes.append("Predicted with " + ", ".join(f"{m} on {e}" for e, m in mechs.items())
                 + " (the plan's mechanism), at each run's B, D and AL, over whole requests "
                 "of its mean input/output lengths: each step also carries the prefill of the "
                 "requests that replace finished ones.")
    planned = sorted({x.file for x in rows if x.lengths_from.startswith("the plan")})
    if planned:
        notes.append(f"{len(planned)} file{'s' if len(planned) != 1 else ''} "
                     f"({', '.join(planned[:3])}{', …' if len(planned) > 3 else ''}) say no "
                     "input/output lengths: priced at the plan's.")
    if any(x.measured.speedup is None and x.draft_len > 0 for x in rows):
        notes.append("A D > 0 run without a D = 0 run at the same engine and batch has no "
                     "measured speedup.")
    return BenchComparison(
        mechanism=next(iter(plans.values())).mechanism, rows=rows,
        mape_output_tokens_per_s=100.0 * float(np.mean(errs)),
        in_interval_share=sum(x.in_interval for x in rows) / len(rows), notes=notes)


def back_out(scenario: Scenario, comparison: BenchComparison,
             engine: str | None = None) -> BenchBackOut:
    """The step terms of one engine's runs (the scenario's engine by default)."""
    engine = engine or scenario.engine
    rows = [x for x in comparison.rows if x.engine == engine]
    if not rows:
        raise ValueError(f"no runs on {engine} to back step terms out of")
    base = candidate(base_scenario(scenario).model_copy(update={"engine": engine}),
                     comparison.mechanism)
    return back_out_step_terms(
        scenario_model(base), [x.batch for x in rows], [x.draft_len for x in rows],
        [x.acceptance_length if x.acceptance_length is not None else 1.0 for x in rows],
        [x.measured.tpot_s for x in rows], label=f"{engine} benchmark runs",
        input_len=[x.input_len for x in rows], output_len=[x.output_len for x in rows])


def applied(scenario: Scenario, result: BenchBackOut) -> Scenario:
    """The scenario with the backed-out terms applied (its kernel-side overrides kept)."""
    base = base_scenario(scenario)
    ov = base.hardware_overrides
    kept = {} if ov is None else {k: v for k, v in ov.model_dump(exclude={"label"}).items()
                                  if v is not None}
    merged = HardwareOverrides(**{**kept, **result.overrides.model_dump(exclude={"label"})},
                               label=result.overrides.label)
    return scenario.model_copy(update={"hardware_overrides": merged})


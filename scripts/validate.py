"""`make validate`: the model's error against every published number it can map.

Groups: (0) each engine's whole-step terms fitted on the published step times
(explorer/calibration/step_costs.py): every term with its bounds and what it was fitted on, and
the step-time error per source in the fit and left out of it; (1) the verify-cost ratio
T_verif(B·(1+D))/T_verif(B) of Llama-3.1-8B on one H100 at 1K context against
data/samples/step_times.csv (target: within 15%); (2) end-to-end speedups in
../shared/reference/speedups.csv that publish AL (or whose series does at B = 1, or whose
publication measured it for that target, dataset, drafter and D in reference/al_curves.csv)
and map to our
presets: MAPE and bias by batch bucket (1, 2–8, 16–32, ≥ 64), engine and source, fitted and
leave-one-source-out, and the fall of the speedup with batch, published vs model; (3) GEMM
kernels, roofline vs the measured tables per GPU/dtype/engine (the leave-one-GPU-out fit is
scripts/fit_roofline_from_tables.py). The shared data is read
relative to the checkout (../shared); without it those groups say so and the script exits 0.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explorer import Scenario  # noqa: E402
from explorer.analysis.timing_error import (  # noqa: E402
    FIT_STEP_OVERHEAD_MS,
    VerifyRatioCheck,
    timing_error,
    verify_ratio_checks,
)
from explorer.base.engines import ServingEngine  # noqa: E402
from explorer.base.errors import ScenarioError  # noqa: E402
from explorer.calibration.published import (  # noqa: E402  (tests read them here too)
    _LEAD_NUMBER,
    ASSUMED_CONTEXT,
    DEFAULT_OUTPUT_TOKENS,
    carried_al,
    map_row,
    published_speedup,
    series_key,
)
from explorer.calibration.step_costs import (  # noqa: E402
    BOUNDS,
    PRIMARY_ENGINE,
    TERMS,
    StepCostFit,
    evidence_key,
    fit_step_costs,
    profile_terms,
)
from explorer.kernel_tables import GemmTable, load_serving_gemm_table  # noqa: E402
from explorer.kernel_tables.served import SpeedOfLight, served_points  # noqa: E402
from explorer.model.engine_costs import graph_shape  # noqa: E402
from explorer.model.grid import GridResult, ScenarioModel, scenario_model  # noqa: E402
from explorer.model.kernels import gemm_time  # noqa: E402
from explorer.model.resolve import resolve  # noqa: E402
from explorer.presets import hardware_presets  # noqa: E402
from explorer.specs.engine import EngineProfile  # noqa: E402

SHARED = Path(os.environ.get("EXPLORER_SHARED_DIR", ROOT.parent / "shared"))


def _pct(err: np.ndarray) -> str:
    return f"MAPE {np.mean(np.abs(err)) * 100:5.1f}%  bias {np.mean(err) * 100:+5.1f}%"


def verify_ratio(engine: ServingEngine = "vllm") -> bool:
    print(f"1. verify-cost ratio T_verif(B(1+D))/T_verif(B), Llama-3.1-8B, 1xH100, 1K, {engine} "
          f"profile (reference: step_times.csv + {FIT_STEP_OVERHEAD_MS:.2f} ms step overhead)")
    ok = True
    growth: list[str] = []
    m = scenario_model(Scenario(hardware="h100", model="llama-3.1-8b", tp=1, context=1024,
                                engine=engine))
    for c in verify_ratio_checks(engine):
        b, d, err = c.batch, c.draft_len, c.relative_error
        worst = int(np.argmax(np.abs(err)))
        hit = bool(np.all(np.abs(err) <= 0.15))
        ok &= hit
        print(f"   D={d}: B={','.join(f'{x:g}' for x in b)}  {_pct(err)}  worst "
              f"{err[worst] * 100:+.1f}% at B={b[worst]:g} (model {c.model_ratio[worst]:.2f} vs "
              f"{c.reference_ratio[worst]:.2f})  {'within 15%' if hit else 'MISSES 15%'}")
        i = int(np.argmax(b))
        growth.append(_verify_growth(m, c, i))
    if not ok:
        print("   why it misses: the reference is a linear fit, 21 µs per batched token from the "
              "first one on top of a fixed 5.9 ms, i.e. the weight reads and the compute-bound "
              "GEMM time summed; the measured vLLM GEMMs of these shapes overlap the two "
              "(memory-bound up to a few hundred tokens), and the costs that scale with the "
              "verified tokens taken from vLLM's code (rejection-sampler passes over the "
              "vocabulary, elementwise traffic between the GEMMs) add less than the fit's slope:")
        for line in growth:
            print(f"     {line}")
        print("   (constants are not tuned to this table; the remaining gap is the fit's "
              "linear form, or a per-token cost that neither the measured kernels nor the "
              "engine code read so far show; what settles it: step times measured at "
              "B·(1+D) = 64…512 tokens on one GPU — the fit's authors name bs = 1…64 but not "
              "the D they ran, so past B·(1+D) ≈ 256 the reference may be extrapolated too)")
    print(f"   the speedup intervals carry this error: {timing_error().note}")
    return ok


def _verify_growth(m: ScenarioModel, c: VerifyRatioCheck, i: int) -> str:
    """Where the model's extra verify time for the 1+D tokens goes, at one checked batch."""
    g, b, d = c.grid, float(c.batch[i]), c.draft_len

    def part(name: str) -> float:
        return float((np.ravel(g.verify_spec[name])[i] - np.ravel(g.verify_base[name])[i]) * 1e3)
    t0, _ = graph_shape(m.engine, b, 1.0)
    t1, _ = graph_shape(m.engine, b, 1.0 + d)
    layers = float(m.r.layers)
    elementwise = float(m.target.elementwise(t1, layers) - m.target.elementwise(t0, layers)) * 1e3
    hw = m.r.hardware
    sampler = (b * d * m.engine.rejection_sampler_bytes_per_logit * m.r.model.vocab
               / (hw.hbm_bw_bytes_per_s * hw.gemm_memory_efficiency)) * 1e3
    rest = round(part("overhead") - elementwise - sampler, 2) + 0.0  # no "-0.00"
    return (f"B={b:g}, D={d}: {b:g}→{b * (1 + d):g} tokens, the fit adds "
            f"{c.reference_extra_ms[i]:.1f} ms; the model adds {part('gemm') + part('lm_head'):.1f}"
            f" ms of GEMMs + lm_head (measured tables), {elementwise:.2f} elementwise, "
            f"{sampler:.2f} rejection sampler, {part('attention'):.2f} attention, {rest:.2f} "
            "graph padding and launches")


# The batch buckets the speedup error is read by (issue #21): B = 1, 2–8, 16–32, ≥ 64 (a B
# between two buckets goes to the higher one).
BUCKETS: tuple[tuple[str, int, int], ...] = (("1", 1, 1), ("2-8", 2, 8), ("16-32", 9, 32),
                                             (">=64", 33, 1 << 30))
# Rows per bucket from which the leave-one-source-out bias is held to ±10 %.
BUCKET_MIN_ROWS = 5


class MappedRow(NamedTuple):
    source: str
    series: tuple[str, ...]
    scenario: Scenario
    published: float
    predicted: float  # with every source in the fit
    held_out: float  # with the row's own source left out of the step-cost fit
    al_carried: bool
    line: str  # the diagnosis

    @property
    def bucket(self) -> str:
        return next(n for n, lo, hi in BUCKETS if lo <= self.scenario.batch <= hi)


def _speedup(sc: Scenario, profile: EngineProfile | None, pub: float) -> tuple[float, str]:
    sm = ScenarioModel(resolve(sc), profile) if profile is not None else scenario_model(sc)
    g = sm.grid(sc.batch, sc.draft_len)
    pred = float(g.speedup.reshape(-1)[0])
    return pred, _row_diagnosis(sm, sc, g, pred, pub)


def mapped_speedups(fit: StepCostFit) -> tuple[list[MappedRow], dict[str, int], int]:
    """Every speedup row that maps to the presets (its AL, or its series' B = 1 AL), predicted
    with the fitted terms and with its own source held out of the fit."""
    df = pd.read_csv(SHARED / "reference" / "speedups.csv")
    df = df[df.speedup.notna()]
    curves = SHARED / "reference" / "al_curves.csv"
    carried = carried_al(df, pd.read_csv(curves) if curves.exists() else None)
    held = {(h.engine, h.source): h.terms for h in fit.held_out}
    skipped: dict[str, int] = {}
    out: list[MappedRow] = []
    n_with_al = int(df.AL.notna().sum())
    for _, row in df.iterrows():
        sc, why = map_row(row, carried)
        if sc is None:
            if pd.notna(row.AL):
                skipped[why] = skipped.get(why, 0) + 1
            continue
        key = evidence_key(str(row.source), sc.engine)
        terms = held.get((sc.engine, key)) if key is not None else None
        pub = published_speedup(row)
        try:
            pred, line = _speedup(sc, None, pub)
            loo = (_speedup(sc, profile_terms(sc.engine, terms), pub)[0] if terms is not None
                   else pred)
        except ScenarioError as err:
            k = f"scenario rejected: {err.field}"
            skipped[k] = skipped.get(k, 0) + 1
            continue
        out.append(MappedRow(str(row.source), series_key(row), sc, pub, pred, loo,
                             not _LEAD_NUMBER.match(str(row.AL)), line))
    return out, skipped, n_with_al


def _err_line(rows: list[MappedRow]) -> str:
    fit = np.array([r.predicted / r.published - 1.0 for r in rows])
    loo = np.array([r.held_out / r.published - 1.0 for r in rows])
    return (f"n={len(rows):3d}  fitted: {_pct(fit)}   leave-one-source-out: {_pct(loo)}")


def speedups(fit: StepCostFit) -> None:
    path = SHARED / "reference" / "speedups.csv"
    print("2. end-to-end speedups that publish AL, or whose series publishes it at B = 1, or whose"
          " publication measured it (reference/al_curves.csv) (their AL used; engine from the "
          f"row, vLLM where unnamed; requests as the publication's traces give them, else "
          f"{ASSUMED_CONTEXT} prompt and {DEFAULT_OUTPUT_TOKENS} output tokens, the explorer's "
          "default); each row also "
          "predicted with its own source left out of "
          "the step-cost fit")
    if not path.exists():
        print(f"   {path} is absent: skipped")
        return
    rows, skipped, n_with_al = mapped_speedups(fit)
    print("   by batch bucket (the user's terms: how far the speedup the model gives at this "
          "batch is from the published one):")
    for name, _, _ in BUCKETS:
        sel = [r for r in rows if r.bucket == name]
        if not sel:
            print(f"     B {name:6s} n=  0")
            continue
        loo_bias = float(np.mean([r.held_out / r.published - 1.0 for r in sel]))
        verdict = ("" if len(sel) < BUCKET_MIN_ROWS else
                   "  bias within ±10%" if abs(loo_bias) <= 0.10 else "  bias MISSES ±10%")
        print(f"     B {name:6s} {_err_line(sel)}{verdict}")
    print("   by engine:")
    for engine in sorted({r.scenario.engine for r in rows}):
        print(f"     {engine:7s}  {_err_line([r for r in rows if r.scenario.engine == engine])}")
    print("   by source:")
    for src in sorted({r.source for r in rows}):
        sel = [r for r in rows if r.source == src]
        print(f"     {src[:66]:66s} {_err_line(sel)}")
        loo = np.array([r.held_out / r.published - 1.0 for r in sel])
        if np.mean(np.abs(loo)) > 0.10:
            for r in sel:
                carried = " (AL carried: its series' at B=1 or its publication's curve)"
                print(f"        {r.line}{carried if r.al_carried else ''}")
            for key, caveat in SOURCE_CAVEATS.items():
                if key in src:
                    print(f"        the source itself: {caveat}")
    _fall_with_batch(rows)
    print(f"   {len(rows)} rows map ({sum(r.al_carried for r in rows)} with their series' B=1 "
          "AL or their publication's AL curve); of the "
          f"{n_with_al} rows that print an AL, not mapped: "
          f"{', '.join(f'{k}: {v}' for k, v in sorted(skipped.items()))}")


def _fall_with_batch(rows: list[MappedRow]) -> None:
    """Each published series over batches: speedup(B) / speedup(smallest B), published vs
    model (the fall the issue is about)."""
    series: dict[tuple[str, ...], list[MappedRow]] = {}
    for r in rows:
        series.setdefault(r.series, []).append(r)
    lines = []
    for key, sel in series.items():
        if len({r.scenario.batch for r in sel}) < 2:
            continue
        sel = sorted(sel, key=lambda r: r.scenario.batch)
        first = sel[0]
        pts = ", ".join(f"B={r.scenario.batch}: {r.published / first.published:.2f} vs "
                        f"{r.held_out / first.held_out:.2f}" for r in sel[1:])
        sc = first.scenario
        lines.append(f"     {sc.engine} {sc.model} {sc.mechanism} D={sc.draft_len} "
                     f"({key[4][:20]}; {key[0][:30]}…) from B={sc.batch}: {pts}")
    print("   fall of the speedup with batch, speedup(B)/speedup(first B), published vs model "
          "(leave-one-source-out):")
    print("\n".join(lines) if lines else "     no published series spans two batches")
    base = Scenario(hardware="h100", model="llama-3.1-8b", tp=1, mechanism="eagle3",
                    draft_len=3, context=ASSUMED_CONTEXT, output_tokens=None)
    g = scenario_model(base).grid(np.array([1.0, 8.0, 32.0, 64.0, 128.0]), 3.0)
    pts = ", ".join(f"B={b:g} {s:.2f}x" for b, s in zip((1, 8, 32, 64, 128), g.speedup,
                                                        strict=True))
    print(f"     the model's EAGLE-3 D=3, Llama-3.1-8B, 1xH100, vLLM, its AL prior "
          f"({float(g.acceptance_length[0]):.2f}), decode steps: {pts}")
    for prompt, output in ((94, 166), (1024, 1024)):  # GSM8K's requests (SpecDecodeBench), 1K/1K
        whole = base.model_copy(update={"context": prompt, "output_tokens": output})
        gw = scenario_model(whole).grid(np.array([1.0, 8.0, 32.0, 64.0, 128.0]), 3.0)
        pts = ", ".join(f"B={b:g} {s:.2f}x" for b, s in zip((1, 8, 32, 64, 128), gw.speedup,
                                                            strict=True))
        print(f"       whole requests of {prompt} prompt and {output} output tokens (each step "
              f"carries the prefill of the requests that replace finished ones): {pts}")


def step_costs(fit: StepCostFit) -> None:
    print("0. whole-step terms per engine, fitted on published step times (scripts/"
          "fit_step_costs.py → data/step_cost_fit.csv), and the step-time error per source: "
          "in the fit, and left out of it (predicted by the terms fitted on the other sources)")
    for engine, f in fit.fits.items():
        mape, rms, n = fit.loo(engine)
        sp_rms, sp_n = fit.loo_speedup(engine)
        te = timing_error(engine)  # the σ the intervals carry (data/step_cost_fit.csv)
        how = (f"the pooled speed-ups' {te.speedup_log_rms:.3f} over {te.speedup_rows} rows "
               "of every engine (too few of its own)" if te.speedup_pooled
               else f"its {te.speedup_rows} speed-ups' {te.speedup_log_rms:.3f}")
        print(f"   {engine}: {f.n_rows} rows from {len(f.sources)} source(s); "
              f"leave-one-source-out MAPE {mape:.1%} (log-RMS {rms:.3f}) over {n} rows; "
              f"its speed-ups alone log-RMS {sp_rms:.3f} over {sp_n} rows; the intervals' σ "
              f"{te.log_rms:.3f}, the larger of the step error and {how}")
        for t in TERMS:
            lo, hi, unit = BOUNDS[t]
            how = "fitted" if t in f.fitted_terms else f"carried from {PRIMARY_ENGINE}"
            if t in f.fitted_terms and f.values[t] in (lo, hi):  # the evidence pushes past it
                how += f", at its {'lower' if f.values[t] == lo else 'upper'} bound"
            print(f"     {t:26s} {f.values[t]:10.4g} {unit:26s} bounds [{lo:g}, {hi:g}]  {how}")
        for h in fit.held_out:
            if h.engine == engine:
                what = "speedup" if "speedup" in h.kinds else "step time"
                in_fit = float(np.mean(np.abs(h.in_fit / h.published - 1.0)))
                print(f"     {what} of {h.source[:60]:60s} n={h.rel_error.size:2d}  in the fit "
                      f"MAPE {in_fit:5.1%}  left out MAPE {h.mape:5.1%} bias {h.bias:+.1%}")


def _row_diagnosis(sm: ScenarioModel, sc: Scenario, g: GridResult, pred: float,
                   pub: float) -> str:
    """One mapped row: the model's step vs the step its published speedup implies."""
    al = float(sc.acceptance.fixed_al or 1.0)
    base = float(np.ravel(g.t_verif_base_s)[0])
    step = float(np.ravel(g.t_verif_spec_s)[0] + np.ravel(g.t_draft_s)[0])
    implied = al / pub * base
    used = ["step_overhead_us", "sampler_bytes_per_logit", "rejection_sampler_bytes_per_logit"]
    if sc.mechanism != "ngram":
        used += ["draft_forward_overhead_us", "draft_first_forward"]
    else:
        used.append("ngram_no_match")
    assumed = [k for k in used if k in sm.engine.assumptions]
    text = (f"{sc.engine} {sc.hardware} TP{sc.tp} {sc.model} {sc.mechanism} B={sc.batch} "
            f"D={sc.draft_len} AL={al:g}: published {pub:.2f}x, model {pred:.2f}x; step "
            f"implied {implied * 1e3:.2f} ms vs model {step * 1e3:.2f} ms "
            f"({(step - implied) * 1e3:+.2f})")
    if pub > al:
        text += "; the published speedup exceeds its AL: no step model reaches it"
    if assumed:
        text += f"; profile assumptions: {', '.join(assumed)}"
    return text


# What a source's own text says that bears on mapping its rows (read in the source, quoted
# briefly): where a published speed-up and its AL were not measured on the same requests.
SOURCE_CAVEATS: dict[str, str] = {
    "blog7_NGram": "its AL table is 'derived from 3000 sampled conversations' while each "
    "speed-up runs '20 * batch_size number of requests' (TensorRT-LLM tech blog 7, Case 1), so "
    "a row's AL and speed-up need not come from the same requests: at B=1 the 20 timed ones "
    "must have accepted more than 1.66 tokens a step for a 1.96x speed-up",
    "SpecDecodeBench-blog": "one row maps (SGLang, B=1); SGLang's per-step and per-draft-forward "
    "costs are vLLM's carried over (data/engines.csv, assumptions), so this row tests that "
    "assumption as much as the model",
}


def kernels() -> None:
    print("3. GEMM kernels: roofline vs the measured tables as a serving step takes them (all "
          "grid points, per-rank shapes; TRT-LLM fp8 on its static path, every time at least "
          "the DRAM read of the weights: data/SOURCES.md)")
    for gpu in ("h100", "h200", "b200", "a100", "l40s"):
        for engine in ("vllm", "sglang", "trtllm"):
            hw = hardware_presets()[gpu].for_engine(engine)  # the engine's own roofline fit
            for dtype in ("bf16", "fp8"):
                t = load_serving_gemm_table(gpu, engine, dtype, SpeedOfLight.of(hw, dtype))
                if not isinstance(t, GemmTable):
                    continue
                m, n, k, meas = served_points(t, hw.hbm_bw_bytes_per_s)
                roof = gemm_time(hw, m, n, k, dtype).time_s
                fit = hw.gemm_fit(dtype)
                origin = f"  ({fit.engine} fit)" if fit is not None and fit.engine != engine \
                    else ""
                print(f"   {gpu:5s} {engine:6s} {dtype:4s} n={m.size:6d}  "
                      f"{_pct(roof / meas - 1.0)}{origin}")
    print("   each engine against its own roofline fit (the one its scenarios fall back on)")
    print("   the model uses the table where it covers the call, so its in-table GEMM error is 0;"
          " leave-one-GPU-out for the roofline: scripts/fit_roofline_from_tables.py")


def main() -> int:
    fit = fit_step_costs(SHARED) if (SHARED / "reference").exists() else None
    if fit is not None:
        step_costs(fit)
    verify_ratio()
    if fit is not None:
        speedups(fit)
    kernels()
    roofline_cross_validation()
    __import__("validate_acceptance").report(SHARED)  # groups A, B: acceptance intervals (#22)
    return 0


# -- group 4: the roofline carried to a GPU without tables (issue #10, item 4) ----------------
def roofline_cross_validation() -> None:
    """Leave-one-GPU-out error of the recorded roofline per kind, dtype and engine, with the
    ≤ 12% verdict and, where it misses, why; * marks the lowest engine, whose fit stands in
    for an engine without one (data/roofline_fit.csv, data/roofline_loo.csv)."""
    from explorer.analysis.roofline_check import ROOFLINE_TARGET_MAPE, roofline_scores

    print("4. roofline for what no table covers: leave-one-GPU-out MAPE per dtype and engine "
          f"(fit on the other GPUs, scored on the held-out one; target ≤ "
          f"{ROOFLINE_TARGET_MAPE:.0%}; GEMM on serving shapes n, k ≥ 1024; a scenario uses "
          "its engine's fit, * the lowest, which stands in where an engine has none)")
    for sc in roofline_scores():
        verdict = "meets" if sc.meets_target else "MISSES"
        what = "GEMM" if sc.kind == "gemm" else "decode attention, KV"
        per_gpu = ", ".join(f"{h.gpu} {h.mape_serving:.0%}" for h in sc.held_out)
        print(f"  {'*' if sc.best else ' '}{what} {sc.dtype:9s} {sc.engine:6s} ({sc.rule}): "
              f"MAPE {sc.loo_mape * 100:5.1f}%  bias {sc.loo_bias * 100:+5.1f}%  {verdict}"
              f"  [{per_gpu}]")
        if sc.why:
            print(f"      why: {sc.why}")
    print("   refit: PYTHONPATH=. python scripts/fit_roofline_from_tables.py --write")


if __name__ == "__main__":
    raise SystemExit(main())

"""`make validate`: the model's error against every published number it can map.

Groups: (1) the verify-cost ratio T_verif(B·(1+D))/T_verif(B) of Llama-3.1-8B on one H100 at 1K
context against data/samples/step_times.csv (target: within 15%); (2) end-to-end speedups in
../shared/reference/speedups.csv that publish AL, D and a batch and map to our presets, by source
(MAPE and signed bias); (3) GEMM kernels, roofline vs the measured tables per GPU/dtype/engine
(the leave-one-GPU-out fit is scripts/fit_roofline_from_tables.py). The shared data is read
relative to the checkout (../shared); without it those groups say so and the script exits 0.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

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
from explorer.kernel_tables import GemmTable, load_serving_gemm_table  # noqa: E402
from explorer.kernel_tables.served import SpeedOfLight, served_points  # noqa: E402
from explorer.model.engine_costs import graph_shape  # noqa: E402
from explorer.model.grid import GridResult, ScenarioModel, scenario_model  # noqa: E402
from explorer.model.kernels import gemm_time  # noqa: E402
from explorer.presets import hardware_presets, model_presets  # noqa: E402
from explorer.specs.scenario import Acceptance  # noqa: E402

SHARED = Path(os.environ.get("EXPLORER_SHARED_DIR", ROOT.parent / "shared"))
# Assumption: published end-to-end runs without a stated context are short chat prompts.
ASSUMED_CONTEXT = 1024


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


# GPU names as the reference writes them → hardware preset; longest prefix first.
GPU_NAMES = (("GB200", "gb200"), ("H100", "h100"), ("H200", "h200"), ("A100", "a100"),
             ("B200", "b200"), ("B300", "b300"), ("L40S", "l40s"), ("MI300X", "mi300x"))
# Reference model names that are another spelling of a preset (the architecture the row ran);
# any other name maps only when it is a preset's slug.
MODEL_ALIASES = {
    "llama-3.3-70b": "llama-3.1-70b",  # same architecture (data/al_curves.csv maps it so)
    "deepseek-r1": "deepseek-v3",
    "llama-4-scout-17b-16e": "llama-4-scout",
    "llama-4-maverick-17b-128e": "llama-4-maverick",
}
ENGINE_NAMES = (("sglang", "sglang"), ("tensorrt", "trtllm"), ("trt-llm", "trtllm"),
                ("vllm", "vllm"))
_INT = re.compile(r"^\s*(\d+)\s*$")
_LEAD_NUMBER = re.compile(r"^\s*~?(\d+(?:\.\d+)?)x?(?:\s*(?:\(|/|$))")


def normalise_gpu(text: str) -> tuple[str | None, int, str]:
    """'H100-80GB (SGLang)' → ('h100', 1, ''); 'A100-80GB x2 (TP2)' → ('a100', 2, ''); the reason
    when it does not map."""
    t = text.strip().upper().replace("NVIDIA ", "")
    if not t or t.startswith("(NOT STATED"):
        return None, 1, "GPU not stated"
    if "NODE" in t:
        return None, 1, "multi-node deployment"
    hw = next((slug for name, slug in GPU_NAMES if t.startswith(name)), None)
    if hw is None:
        return None, 1, "GPU not a preset"
    tp = re.search(r"TP\s*(\d+)", t) or re.search(r"\bX\s*(\d+)", t)
    return hw, int(tp.group(1)) if tp else 1, ""


def normalise_model(text: str) -> str | None:
    """'LLaMA-3.1-8B-Instruct', 'Llama-3.1-8B(-Instruct)' → 'llama-3.1-8b'; None if no preset."""
    t = text.strip().split(" ")[0].lower().split("/")[-1]
    t = re.sub(r"\(-?instruct\)|-instruct$|-instruct\b", "", t)
    t = MODEL_ALIASES.get(t, t)
    return t if t in model_presets() else None


def normalise_engine(text: str) -> str | None:
    t = text.lower()
    return next((slug for name, slug in ENGINE_NAMES if name in t), None)


def map_row(row: pd.Series) -> tuple[Scenario | None, str]:
    """A reference speedup row as a scenario with its own AL, or the reason it does not map."""
    hw, tp, why = normalise_gpu(str(row.gpu))
    if hw is None:
        return None, why
    if hw not in hardware_presets():
        return None, "GPU not a preset"
    model = normalise_model(str(row.model_target))
    if model is None:
        return None, "model not a preset"
    mech = str(row.mechanism).lower()
    if "tree" in mech or " vs " in mech:
        return None, "tree verification or comparison"
    slug = ("eagle3" if mech.startswith(("eagle3", "eagle_chain")) else
            "mtp" if mech.startswith("mtp") else "dflash" if mech.startswith("dflash") else
            "dspark" if mech.startswith("dspark") else "ngram" if "ngram" in mech else None)
    if slug is None:
        return None, "mechanism not a preset"
    d_m, b_m = _INT.match(str(row.D)), _INT.match(str(row.batch).replace("concurrency", ""))
    al_m, sp_m = _LEAD_NUMBER.match(str(row.AL)), _LEAD_NUMBER.match(str(row.speedup))
    if not (d_m and b_m and al_m and sp_m):
        return None, "D, batch, AL or speedup not a single number"
    engine = normalise_engine(str(row.engine)) or "vllm"
    dtype = "fp8" if "fp8" in str(row.model_target).lower() else "bf16"  # 'Llama-4-Scout (FP8)'
    try:
        sc = Scenario(hardware=hw, model=model, tp=tp, mechanism=slug, batch=int(b_m.group(1)),
                      draft_len=int(d_m.group(1)), context=ASSUMED_CONTEXT, dtype=dtype,
                      engine=engine,  # type: ignore[arg-type]
                      acceptance=Acceptance(kind="fixed", fixed_al=float(al_m.group(1))))
    except (ValueError, TypeError) as err:
        return None, f"not a valid scenario ({type(err).__name__})"
    return sc, ""


def published_speedup(row: pd.Series) -> float:
    m = _LEAD_NUMBER.match(str(row.speedup))
    return float(m.group(1)) if m else float("nan")


def speedups() -> None:
    path = SHARED / "reference" / "speedups.csv"
    print("2. end-to-end speedups that publish AL (their AL used; engine from the row, vLLM "
          f"where unnamed; context assumed {ASSUMED_CONTEXT} tokens)")
    if not path.exists():
        print(f"   {path} is absent: skipped")
        return
    df = pd.read_csv(path)
    df = df[df.AL.notna() & df.speedup.notna()]
    skipped: dict[str, int] = {}
    errs: dict[str, list[float]] = {}
    rows: dict[str, list[str]] = {}
    for _, row in df.iterrows():
        sc, why = map_row(row)
        if sc is None:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        try:
            sm = scenario_model(sc)
            g = sm.grid(sc.batch, sc.draft_len)
        except ScenarioError as err:
            key = f"scenario rejected: {err.field}"
            skipped[key] = skipped.get(key, 0) + 1
            continue
        pred, pub = float(g.speedup.reshape(-1)[0]), published_speedup(row)
        errs.setdefault(str(row.source), []).append(pred / pub - 1.0)
        rows.setdefault(str(row.source), []).append(_row_diagnosis(sm, sc, g, pred, pub))
    for src, e in sorted(errs.items()):
        arr = np.asarray(e)
        flag = "" if np.mean(np.abs(arr)) <= 0.10 else "  MISSES 10%"
        print(f"   {src[:70]:70s} n={arr.size:3d}  {_pct(arr)}{flag}")
        if flag:
            for line in rows[src]:
                print(f"      {line}")
            for key, caveat in SOURCE_CAVEATS.items():
                if key in src:
                    print(f"      the source itself: {caveat}")
    n_mapped = sum(len(e) for e in errs.values())
    print(f"   {n_mapped} of {len(df)} rows with AL and a speedup map to the presets")
    print(f"   not mapped: {', '.join(f'{k}: {v}' for k, v in sorted(skipped.items()))}")
    if any(np.mean(np.abs(e)) > 0.10 for e in errs.values()):
        print("   why a source misses: 1–3 rows each, contexts not published (assumed "
              f"{ASSUMED_CONTEXT}); per row above: the step the published speedup implies "
              "(AL / speedup × the model's T_verif(B)) against the model's T_verif(B·(1+D)) + "
              "T_draft, and the engine-profile numbers that row rests on that are assumptions "
              "(data/engines.csv); a row whose speedup exceeds its AL cannot be reached by any "
              "step model (the speculative step never costs less than the plain one); an "
              "n-gram row's single AL gives no match share, so the engine's no-match semantics "
              "(ngram_no_match) cannot be weighed")
    if n_mapped == 0:
        print("   why: the rows that state their GPU run models that are not presets "
              "(Qwen3.6/3.8-27B, Vicuna) or span several nodes; the rest state no GPU or use "
              "tree verification")


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
    verify_ratio()
    speedups()
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

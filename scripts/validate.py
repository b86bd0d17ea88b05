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
from explorer.base.errors import ScenarioError  # noqa: E402
from explorer.kernel_tables import GemmTable, load_gemm_table  # noqa: E402
from explorer.model.grid import scenario_model  # noqa: E402
from explorer.model.kernels import gemm_time  # noqa: E402
from explorer.presets import hardware_presets, model_presets  # noqa: E402
from explorer.specs.scenario import Acceptance  # noqa: E402

SHARED = Path(os.environ.get("EXPLORER_SHARED_DIR", ROOT.parent / "shared"))
# Assumption: published end-to-end runs without a stated context are short chat prompts.
ASSUMED_CONTEXT = 1024
GPU_PREFIX = {"GB200": "gb200", "H100": "h100", "H200": "h200", "A100": "a100", "B200": "b200"}


def _pct(err: np.ndarray) -> str:
    return f"MAPE {np.mean(np.abs(err)) * 100:5.1f}%  bias {np.mean(err) * 100:+5.1f}%"


def verify_ratio(engine: str = "vllm") -> bool:
    steps = pd.read_csv(ROOT / "data" / "samples" / "step_times.csv")
    base = steps[steps.draft_len == 0].set_index("batch").step_time_ms
    m = scenario_model(Scenario(hardware="h100", model="llama-3.1-8b", tp=1, context=1024,
                                engine=engine))  # type: ignore[arg-type]
    print(f"1. verify-cost ratio T_verif(B(1+D))/T_verif(B), Llama-3.1-8B, 1xH100, 1K, {engine}")
    ok = True
    for d in (3, 7):
        rows = steps[(steps.draft_len == d) & (steps.batch <= 64)]
        b = rows.batch.to_numpy(dtype=float)
        fit = rows.step_time_ms.to_numpy() / base.loc[rows.batch].to_numpy()
        g = m.grid(b, float(d))
        model = g.t_verif_spec_s / g.t_verif_base_s
        err = model / fit - 1.0
        worst = int(np.argmax(np.abs(err)))
        hit = bool(np.all(np.abs(err) <= 0.15))
        ok &= hit
        print(f"   D={d}: {_pct(err)}  worst {err[worst] * 100:+.1f}% at B={b[worst]:g} "
              f"(model {model[worst]:.2f} vs fit {fit[worst]:.2f})  "
              f"{'within 15%' if hit else 'MISSES 15%'}")
    if not ok:
        print("   why: the model grows too little with verified tokens — the measured GEMMs of "
              "these shapes are nearly flat up to ~512 tokens, while the fit charges 21 µs per "
              "batched token; which per-token costs make that (sampling, attention over the new "
              "tokens, CUDA-graph padding, eager steps) is not yet modelled (engine profiles are "
              "not built)")
    return ok


def _map_row(row: pd.Series) -> tuple[Scenario | None, str]:
    gpu = str(row.gpu)
    hw = next((slug for p, slug in GPU_PREFIX.items() if gpu.startswith(p)), None)
    if hw is None or hw not in hardware_presets():
        return None, "GPU not a preset"
    tp_match = re.search(r"x(\d+)", gpu)
    tp = int(tp_match.group(1)) if tp_match else 1
    name = str(row.model_target).split(" ")[0].lower().removesuffix("-instruct")
    model = name if name in model_presets() else None
    if model is None:
        return None, "model not a preset"
    mech = str(row.mechanism).lower()
    if "tree" in mech or " vs " in mech:
        return None, "tree or comparison row"
    slug = ("eagle3" if mech.startswith("eagle3") else "mtp" if mech.startswith("mtp")
            else "dflash" if mech.startswith("dflash") else "ngram" if "ngram" in mech else None)
    if slug is None:
        return None, "mechanism not a preset"
    try:
        d, b, al = int(float(row.D)), int(float(row.batch)), float(row.AL)
        sc = Scenario(hardware=hw, model=model, tp=tp, mechanism=slug, batch=b, draft_len=d,
                      context=ASSUMED_CONTEXT, acceptance=Acceptance(kind="fixed", fixed_al=al))
    except (ValueError, TypeError) as err:
        return None, f"unusable numbers ({type(err).__name__})"
    return sc, ""


def speedups() -> None:
    path = SHARED / "reference" / "speedups.csv"
    print("2. end-to-end speedups that publish AL (AL given; context assumed "
          f"{ASSUMED_CONTEXT} tokens)")
    if not path.exists():
        print(f"   {path} is absent: skipped")
        return
    df = pd.read_csv(path)
    df = df[df.AL.notna() & df.speedup.notna() & df.D.notna() & df.batch.notna()]
    skipped: dict[str, int] = {}
    errs: dict[str, list[float]] = {}
    for _, row in df.iterrows():
        sc, why = _map_row(row)
        if sc is None:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        try:
            g = scenario_model(sc).grid(sc.batch, sc.draft_len)
        except ScenarioError as err:
            skipped[f"scenario rejected ({err})"[:60]] = skipped.get("scenario rejected", 0) + 1
            continue
        pub = float(str(row.speedup).rstrip("x"))
        errs.setdefault(str(row.source), []).append(float(g.speedup.reshape(-1)[0]) / pub - 1.0)
    for src, e in sorted(errs.items()):
        arr = np.asarray(e)
        flag = "" if np.mean(np.abs(arr)) <= 0.10 else "  MISSES 10%"
        print(f"   {src[:70]:70s} n={arr.size:3d}  {_pct(arr)}{flag}")
    if not errs:
        print("   no row maps to the presets")
    print(f"   not mapped: {', '.join(f'{k}: {v}' for k, v in sorted(skipped.items()))}")
    if any(np.mean(np.abs(e)) > 0.10 for e in errs.values()):
        print("   why: the engine's per-step and per-draft-forward fixed costs are not yet "
              "charged (item 2), and published contexts are assumed")


def kernels() -> None:
    print("3. GEMM kernels: roofline vs the measured tables (all grid points, per-rank shapes)")
    for gpu in ("h100", "h200", "b200", "a100", "l40s"):
        hw = hardware_presets()[gpu]
        for engine in ("vllm", "sglang", "trtllm"):
            for dtype in ("bf16", "fp8"):
                t = load_gemm_table(gpu, engine, dtype)
                if not isinstance(t, GemmTable):
                    continue
                mm, nn, kk = np.meshgrid(t.m_values, t.n_values, t.k_values, indexing="ij")
                ok = t.measured
                meas = np.exp(t.log_latency[ok])
                roof = gemm_time(hw, mm[ok], nn[ok], kk[ok], dtype).time_s
                print(f"   {gpu:5s} {engine:6s} {dtype:4s} n={ok.sum():6d}  "
                      f"{_pct(roof / meas - 1.0)}")
    print("   the model uses the table where it covers the call, so its in-table GEMM error is 0;"
          " leave-one-GPU-out for the roofline: scripts/fit_roofline_from_tables.py")


def main() -> int:
    verify_ratio()
    speedups()
    kernels()
    roofline_cross_validation()
    return 0


# -- group 4: the roofline carried to a GPU without tables (issue #10, item 4) ----------------
def roofline_cross_validation() -> None:
    """Leave-one-GPU-out error of the recorded roofline per kind and dtype, with the ≤ 12%
    verdict and, where it misses, why (data/roofline_fit.csv, data/roofline_loo.csv)."""
    from explorer.analysis.roofline_check import ROOFLINE_TARGET_MAPE, roofline_scores

    print("4. roofline for what no table covers: leave-one-GPU-out MAPE per dtype "
          f"(fit on the other GPUs, scored on the held-out one; target ≤ "
          f"{ROOFLINE_TARGET_MAPE:.0%}; GEMM on serving shapes n, k ≥ 1024)")
    for sc in roofline_scores():
        verdict = "meets" if sc.meets_target else "MISSES"
        what = "GEMM" if sc.kind == "gemm" else "decode attention, KV"
        per_gpu = ", ".join(f"{h.gpu} {h.mape_serving:.0%}" for h in sc.held_out)
        print(f"   {what} {sc.dtype:9s} ({sc.engine} tables, {sc.rule}): MAPE "
              f"{sc.loo_mape * 100:5.1f}%  bias {sc.loo_bias * 100:+5.1f}%  {verdict}"
              f"  [{per_gpu}]")
        if sc.why:
            print(f"      why: {sc.why}")
    print("   refit: PYTHONPATH=. python scripts/fit_roofline_from_tables.py --write")


if __name__ == "__main__":
    raise SystemExit(main())

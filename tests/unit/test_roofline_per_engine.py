"""The roofline for uncovered calls follows the scenario's serving engine: every engine's fit
is recorded (data/roofline_fit.csv), a scenario uses its engine's, and an engine without a fit
at a dtype falls back on the lowest-LOO engine's and says so."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from explorer.analysis.kernel_points import gemm_points, roofline_source
from explorer.analysis.roofline_check import roofline_scores
from explorer.model.grid import scenario_model
from explorer.model.kernels import gemm_time
from explorer.model.resolve import resolve
from explorer.presets import DATA_DIR, hardware_presets, roofline_held_out, roofline_records
from explorer.specs.hardware import GemmRooflineFit
from explorer.specs.scenario import Scenario
from tests.support.paths import ROOT

VOCAB_N = 128256.0  # Llama-3's lm_head width: past every table's n box (65536)
TOKENS = 256.0  # a verify step of 32 sequences × 8 tokens: between weight streaming and compute


def _scenario(engine: str) -> Scenario:
    return Scenario(hardware="h100", model="llama-3.1-8b", tp=1, dtype="fp8", engine=engine,
                    batch=8, context=1024)


def test_every_engine_has_its_fp8_gemm_fit_and_one_is_marked_lowest():
    hw = hardware_presets()["h100"]
    fp8 = [f for f in hw.gemm_fits if f.dtype == "fp8"]
    assert {f.engine for f in fp8} == {"vllm", "sglang", "trtllm"}
    assert len(fp8) == 3  # one per engine: the Hopper row where one was fitted on Hopper
    best = [f for f in fp8 if f.best]
    assert len(best) == 1 and best[0].loo_mape == min(f.loo_mape for f in fp8)
    assert hw.gemm_fit("fp8") == best[0]  # no engine named: the lowest-LOO one


def test_each_kind_and_dtype_marks_exactly_its_lowest_engine():
    by_key: dict[tuple[str, str], dict[str, tuple[float, bool]]] = {}
    for rec in roofline_records():
        fit = rec.fit
        kind = "gemm" if isinstance(fit, GemmRooflineFit) else "attention"
        dtype = fit.dtype if isinstance(fit, GemmRooflineFit) else fit.kv_dtype
        by_key.setdefault((kind, dtype), {})[fit.engine] = (fit.loo_mape, fit.best)
    assert len(by_key[("gemm", "bf16")]) == 3  # every engine's fit is recorded
    for engines in by_key.values():
        marked = [e for e, (_, best) in engines.items() if best]
        assert len(marked) == 1
        assert engines[marked[0]][0] == min(mape for mape, _ in engines.values())


def test_a_vllm_scenarios_off_table_fp8_gemm_uses_the_vllm_fit_and_trtllm_its_own():
    times = {}
    for engine in ("vllm", "trtllm"):
        r = resolve(_scenario(engine))
        fit = r.hardware.gemm_fit("fp8")
        assert fit is not None and fit.engine == engine
        assert [f.engine for f in r.hardware.gemm_fits if f.dtype == "fp8"] == [engine]
        lm = scenario_model(_scenario(engine)).target
        assert lm.tables is not None
        lm.tables.tally.reset()
        t = float(lm._gemm(np.asarray([TOKENS]), VOCAB_N, 4096)[0])
        assert lm.tables.tally.share("gemm") == 0.0  # no table covers it: the roofline
        own = hardware_presets()["h100"].gemm_fit("fp8", engine)
        assert own is not None and own.engine == engine
        want = float(gemm_time(hardware_presets()["h100"].for_engine(engine), TOKENS,
                               VOCAB_N, 4096, "fp8").time_s)
        assert t == pytest.approx(want, rel=1e-12)
        times[engine] = t
    # vLLM's fp8 kernels run slower than TRT-LLM's static-quant path off the weight-streaming
    # corner: so does its roofline (26% at this shape on H100; the two agree within 2% at m=8)
    assert times["vllm"] > 1.15 * times["trtllm"]


def test_the_kernel_command_prices_with_its_engines_fit_and_names_it():
    hw = hardware_presets()["h100"]
    for engine in ("vllm", "trtllm"):
        (p,) = gemm_points(hw, engine, [int(TOKENS)], [int(VOCAB_N)], [4096], "fp8")
        assert not p.measured and f"on {engine} tables" in p.source
        want = gemm_time(hw.for_engine(engine), TOKENS, VOCAB_N, 4096.0, "fp8").time_s
        assert p.time_s == pytest.approx(float(want), rel=1e-12)


def test_an_engine_without_a_fit_falls_back_on_the_lowest_and_says_so():
    hw = hardware_presets()["h100"]
    lowest = hw.gemm_fit("fp8")
    assert lowest is not None and lowest.best and lowest.engine != "vllm"
    no_vllm = hw.model_copy(update={"gemm_fits": tuple(
        f for f in hw.gemm_fits if not (f.dtype == "fp8" and f.engine == "vllm"))})
    narrowed = no_vllm.for_engine("vllm")
    assert narrowed.gemm_fit("fp8") == lowest
    assert narrowed.gemm_fit("bf16") == hw.gemm_fit("bf16", "vllm")  # its own where it has one
    text = roofline_source(no_vllm, "gemm", "fp8", "vllm")
    assert f"on {lowest.engine} tables (lowest-LOO engine; vllm has no fp8 fit)" in text
    assert "lowest-LOO" not in roofline_source(hw, "gemm", "fp8", "vllm")
    # a fit recorded for one engine only (no `best` needed) is every engine's
    only = hw.model_copy(update={"gemm_fits": (hw.gemm_fit("bf16", "sglang"),)})
    assert only.for_engine("trtllm").gemm_fit("bf16") == hw.gemm_fit("bf16", "sglang")


def test_the_recorded_loo_numbers_per_engine_are_the_mean_of_its_held_out_gpus():
    held = roofline_held_out()
    scores = roofline_scores()
    assert {s.engine for s in scores if s.kind == "gemm" and s.dtype == "fp8"} == {
        "vllm", "sglang", "trtllm"}
    for sc in scores:
        rows = [h for h in held if (h.kind, h.dtype, h.engine) == (sc.kind, sc.dtype, sc.engine)]
        assert len(rows) >= 3 and tuple(rows) == sc.held_out
        assert sc.loo_mape == pytest.approx(np.mean([h.mape_serving for h in rows]), abs=1e-4)
        assert sc.loo_bias == pytest.approx(np.mean([h.bias_serving for h in rows]), abs=1e-4)


def test_the_recorded_rows_are_in_the_sort_order(tmp_path: Path):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import fit_roofline_from_tables as fit
    finally:
        sys.path.pop(0)
    for name in ("roofline_fit.csv", "roofline_loo.csv"):
        copy = tmp_path / name
        shutil.copy(DATA_DIR / name, copy)
        fit.sort_record(copy)
        assert copy.read_text(encoding="utf-8") == (DATA_DIR / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(("gpu", "dtype"), [("h100", "fp4"), ("a100", "fp8")])
def test_a_gpu_without_a_table_of_the_dtype_gets_the_lowest_fit_whatever_the_engine(gpu, dtype):
    """FP4 on Hopper, FP8 on Ampere: no engine's fit was made on this GPU's own table, so their
    differences there are no evidence; every engine prices it with the lowest-LOO fit, and the
    source says it is carried from the GPUs it was fitted on."""
    hw = hardware_presets()[gpu]
    fits = {e: hw.for_engine(e).gemm_fit(dtype) for e in ("vllm", "sglang", "trtllm")}
    best = next(f for f in hw.gemm_fits if f.dtype == dtype and f.best)
    assert gpu not in best.gpus.split()
    assert all(f == best for f in fits.values())
    times = {e: float(gemm_time(hw.for_engine(e), 64.0, 4096.0, 4096.0, dtype).time_s)
             for e in fits}
    assert len(set(times.values())) == 1
    other = next(e for e in fits if e != best.engine)
    text = roofline_source(hw, "gemm", dtype, other)
    assert f"{gpu} has no {dtype} table, so the fit is carried from" in text
    # where the GPU has the table, each engine keeps its own fit
    assert hardware_presets()["h100"].for_engine("vllm").gemm_fit("fp8").engine == "vllm"

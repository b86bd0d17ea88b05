"""Check it on your engine: the benchmark plan (Export panel) and its result files read back
(Measured-data page), with the step-cost terms backed out and applied to the explorer.

The decisions live in the core (explorer/export/bench_plan.py, bench_compare.py,
explorer/calibration/bench_backout.py); this module lays them out."""

from __future__ import annotations

import functools
import json

import pandas as pd
import streamlit as st

from explorer.base.engines import SERVING_ENGINES
from explorer.base.errors import ScenarioError
from explorer.calibration.bench_backout import BenchBackOut
from explorer.export.bench_compare import BenchComparison, applied, back_out, compare
from explorer.export.bench_plan import PLAN_KEYS, BenchPlan, bench_plan, bench_script
from explorer.measured.bench_results import BenchFile, parse_bench_bytes
from explorer.measured.published_tables import parse_published
from explorer.specs.engine import engine_name
from explorer.specs.hardware import HardwareOverrides
from explorer.specs.measured import ParseResult, Problem
from explorer.specs.scenario import Scenario
from explorer.ui.text import md_text

BENCH_FILES = "bench_files"  # file name → BenchFile, in this browser session
BENCH_ERRORS = "bench_errors"


@functools.lru_cache(maxsize=16)
def cached_plan(scenario_js: str, engine: str) -> BenchPlan:
    sc = Scenario.model_validate_json(scenario_js)
    return bench_plan(sc.model_copy(update={"engine": engine}))


def plan_frame(plan: BenchPlan) -> pd.DataFrame:
    rows = []
    for r in plan.runs:
        rows.append({
            "B": r.batch, "D": r.draft_len,
            "forced AL": "—" if r.forced_acceptance_length is None
            else f"{r.forced_acceptance_length:.2f}",
            "expected output tok/s": round(r.expected_output_tokens_per_s),
            "80 % interval": f"{r.expected_low:.0f}–{r.expected_high:.0f}",
            "expected TPOT (ms)": round(r.expected_tpot_s * 1e3, 2),
        })
    return pd.DataFrame(rows)


def render_plan(scenario: Scenario, key: str = "export") -> None:
    """Export panel section: the runs for one engine, their commands and the script."""
    st.markdown("#### Check it on your engine")
    st.caption("Benchmark runs that test this prediction on your own GPU: D = 0 and the "
               "recommended D at this batch and one step either side, each with the acceptance "
               "length forced, so the run measures the step costs the explorer predicts. The "
               "expected figures are over the runs' whole requests (their prompts' prefill "
               "included). Read the result files back on the Measured data page.")
    engine = st.selectbox("Engine", list(SERVING_ENGINES), key=f"{key}_bench_engine",
                          index=list(SERVING_ENGINES).index(scenario.engine),
                          format_func=engine_name)
    try:
        plan = cached_plan(scenario.model_dump_json(), engine)
    except (ScenarioError, ValueError) as exc:
        st.warning(f"No benchmark plan for this scenario on {engine_name(engine)}: "
                   f"{md_text(str(exc))}")
        return
    ck = f" (`{md_text(plan.draft_checkpoint)}`)" if plan.draft_checkpoint else ""
    st.markdown(f"**{md_text(plan.mechanism_name)}**{ck} D = **{plan.draft_len}** vs D = 0, "
                f"{plan.input_len} input / {plan.output_len} output tokens per request.")
    st.dataframe(plan_frame(plan), hide_index=True, key=f"{key}_bench_table")
    with st.expander("Commands for every run"):
        for r in plan.runs:
            st.markdown(f"B = {r.batch}, D = {r.draft_len}")
            st.code(f"{r.server_command}\n{r.client_command}", language="bash")
    for n in plan.notes:
        st.caption(md_text(n))
    st.caption(md_text(plan.interval))
    st.caption("Flags checked against: " + md_text(plan.engine_version["engine"]))
    c = st.columns(2)
    c[0].download_button("Benchmark script (sh)", bench_script(plan),
                         file_name=f"bench_{engine}.sh", mime="text/x-shellscript",
                         key=f"{key}_bench_script", on_click="ignore")
    out = plan.model_dump()
    out["runs"] = [{k: r[k] for k in PLAN_KEYS} for r in out["runs"]]
    c[1].download_button("Benchmark plan (JSON)", json.dumps(out, indent=2),
                         file_name=f"bench_plan_{engine}.json", mime="application/json",
                         key=f"{key}_bench_json", on_click="ignore")


@functools.lru_cache(maxsize=8)  # reruns of the page reuse it (a plan per engine costs ~1 s)
def cached_compare(scenario_js: str, files: tuple[BenchFile, ...]) -> BenchComparison:
    return compare(Scenario.model_validate_json(scenario_js), list(files))


@functools.lru_cache(maxsize=8)
def cached_back_out(scenario_js: str, files: tuple[BenchFile, ...], engine: str) -> BenchBackOut:
    return back_out(Scenario.model_validate_json(scenario_js),
                    cached_compare(scenario_js, files), engine)


def bench_files() -> dict[str, BenchFile]:
    return st.session_state.setdefault(BENCH_FILES, {})  # type: ignore[no-any-return]


def _ingest(datasets: dict[str, ParseResult]) -> None:
    """on_change of the uploader: benchmark results go to this section; an InferenceX golden
    AL YAML or a vLLM profile cache becomes a dataset of the page (an AL source, a step table).
    A bad file never replaces loaded data."""
    uploads = st.session_state.get("bench_upload") or []
    errors: list[tuple[str, str, str, tuple[Problem, ...]]] = []
    for up in uploads:
        data = up.getvalue()
        published = parse_published(up.name, data)
        if published is not None:
            if published.ok:
                datasets[up.name] = published
            else:
                errors.append((up.name, published.format, published.summary,
                               published.errors))
            continue
        f = parse_bench_bytes(up.name, data)
        if f.ok:
            bench_files()[up.name] = f
        else:
            errors.append((f.file, f.format, f.summary, f.errors))
    st.session_state[BENCH_ERRORS] = errors


def comparison_frame(c: BenchComparison) -> pd.DataFrame:
    rows = []
    for r in c.rows:
        p, m = r.predicted, r.measured
        rows.append({
            "engine": r.engine, "B": r.batch, "D": r.draft_len,
            "AL": None if r.acceptance_length is None else round(r.acceptance_length, 2),
            "in / out tokens": f"{r.input_len:.0f} / {r.output_len:.0f}",
            "predicted tok/s": round(p.output_tokens_per_s),
            "80 % interval": f"{p.low:.0f}–{p.high:.0f}",
            "measured tok/s": round(m.output_tokens_per_s),
            "error": f"{(r.error['output_tokens_per_s'] or 0):+.1%}",
            "in interval": "yes" if r.in_interval else "no",
            "predicted TPOT (ms)": round(p.tpot_s * 1e3, 2),
            "measured TPOT (ms)": round(m.tpot_s * 1e3, 2),
            "predicted speedup": None if p.speedup is None else round(p.speedup, 2),
            "measured speedup": None if m.speedup is None else round(m.speedup, 2),
            "lengths from": r.lengths_from,
            "file": r.file,
        })
    return pd.DataFrame(rows)


def backout_frame(b: BenchBackOut) -> pd.DataFrame:
    return pd.DataFrame({
        "B": b.batch.astype(int), "D": b.draft_len.astype(int),
        "measured step (ms)": (b.measured_s * 1e3).round(3),
        "model before (ms)": (b.predicted_before_s * 1e3).round(3),
        "model after (ms)": (b.predicted_after_s * 1e3).round(3),
        "of which prefill (ms)": (b.prefill_after_s * 1e3).round(3),
    })


def render_results(scenario: Scenario, overrides_key: str,
                   datasets: dict[str, ParseResult]) -> None:
    """Measured-data page section: benchmark result files vs the prediction, and the step terms
    backed out of them, applied to the explorer through the page's calibrated-hardware state
    (`overrides_key`), which saved scenarios and their links carry. Published tables uploaded
    here join the page's `datasets`."""
    st.subheader("Benchmark results vs the prediction")
    st.caption("Result files of the runs the Export panel plans: `vllm bench serve` "
               "(--save-result JSON), `sglang.bench_serving` (--output-file JSON lines), "
               "`trtllm-bench` (--report_json) or AIPerf (profile_export_aiperf.json). Keep the "
               "plan's file names (bench_<engine>_b<B>_d<D>_al<AL>…): they say what the file "
               "does not. Published tables too: an InferenceX golden AL curve "
               "(golden_al_distribution/*.yaml) becomes an AL source, a vLLM adaptive-"
               "verification profile cache (adaptive_verification/profile_*.json) a step table.")
    st.file_uploader("Upload benchmark results", key="bench_upload", on_change=_ingest,
                     args=(datasets,), type=["json", "jsonl", "yaml", "yml"],
                     accept_multiple_files=True)
    for fname, fmt, summary, problems in st.session_state.get(BENCH_ERRORS) or []:
        lines = [f"- line {p.row if p.row is not None else '—'}, field "
                 f"{md_text(p.field or '—')}: {md_text(p.message)}" for p in problems]
        st.error(f"**{md_text(fname)}** was not loaded ({fmt}): {md_text(summary)}\n\n"
                 + "\n".join(lines))
    files = bench_files()
    if not files:
        return
    if st.button("Clear benchmark results", key="bench_clear"):
        files.clear()
        st.rerun()
    try:
        result = cached_compare(scenario.model_dump_json(), tuple(files.values()))
    except (ScenarioError, ValueError) as exc:
        st.warning(md_text(str(exc)))
        return
    st.markdown(f"Output tokens/s: MAPE **{result.mape_output_tokens_per_s:.1f}%**, "
                f"**{result.in_interval_share:.0%}** of runs within the 80 % interval.")
    st.dataframe(comparison_frame(result), hide_index=True, key="bench_compare_table")
    for n in result.notes:
        st.caption(md_text(n))
    engines = sorted({r.engine for r in result.rows})
    engine = scenario.engine if scenario.engine in engines else engines[0]
    try:
        bo = cached_back_out(scenario.model_dump_json(), tuple(files.values()), engine)
    except ValueError as exc:
        st.warning(md_text(str(exc)))
        return
    st.markdown(f"**Step-cost terms of this deployment ({engine_name(engine)})**: "
                f"{md_text(bo.summary)}")
    for n in bo.notes:
        st.caption(md_text(n))
    st.dataframe(backout_frame(bo), hide_index=True, key="bench_backout_table")
    c = st.columns(2)
    if c[0].button("Apply these step terms to the explorer", key="bench_apply"):
        merged = applied(scenario.model_copy(update={"engine": engine}), bo)
        st.session_state[overrides_key] = merged.hardware_overrides
    current = st.session_state.get(overrides_key)
    if isinstance(current, HardwareOverrides) and current.step_cost_per_token_s is not None:
        if c[1].button("Stop using benchmark step terms", key="bench_unapply"):
            rest = current.model_dump(exclude={"label", "step_overhead_s",
                                               "step_cost_per_token_s", "verify_growth_scale",
                                               "draft_cost_scale"})
            kept = {k: v for k, v in rest.items() if v is not None}
            st.session_state[overrides_key] = (HardwareOverrides(**kept, label=current.label)
                                               if kept else None)
            st.rerun()
        st.info(f"The explorer uses step terms backed out of benchmark runs "
                f"({md_text(current.label)}); Save & share keeps them with the scenario.")

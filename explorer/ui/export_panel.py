"""The Export tab: the scenario as JSON (+ schema), a default sweep as CSV/Parquet, every chart as
standalone HTML and PNG/SVG, and the recommendation as vLLM / SGLang / TensorRT-LLM configuration.

The byte producers are plain functions (testable without a Streamlit server); `render` lays them
out. Large files are made only when asked for: downloads take callables, images wait for the
"Prepare images" button (each costs ~0.3–3 s in Chromium via kaleido).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import re
import threading
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from explorer.analysis.frontier import draft_len_range
from explorer.analysis.recommend import recommend
from explorer.analysis.sweep import DEFAULT_SWEEP_BATCHES, default_sweep
from explorer.base.errors import ScenarioError
from explorer.export.engine_configs import EngineConfigs, engine_configs
from explorer.presets import mechanism_presets
from explorer.specs.scenario import Scenario, scenario_json_schema
from explorer.ui import bench_ui

CHROMIUM = Path("/usr/bin/chromium")
SWEEP_BATCHES = DEFAULT_SWEEP_BATCHES  # 1, 2, 4 … 4096 (analysis.sweep decides)
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")  # spreadsheet formula triggers (OWASP)
IMAGE_SIZE = (1100, 650)

_kaleido_lock = threading.Lock()
_kaleido_started = False


# --- byte producers --------------------------------------------------------------------------

def scenario_json(scenario: Scenario) -> str:
    """Re-importable by `Scenario.model_validate_json` and `python -m explorer … --scenario`."""
    return scenario.model_dump_json(indent=2)


def _is_text(s: pd.Series) -> bool:
    return s.dtype == object or pd.api.types.is_string_dtype(s.dtype)


def escape_formulas(df: pd.DataFrame) -> pd.DataFrame:
    """Text cells a spreadsheet would run as a formula get a leading apostrophe."""
    out = df.copy()
    for col in out.columns:
        if _is_text(out[col]):
            out[col] = out[col].map(
                lambda v: "'" + v if isinstance(v, str) and v.startswith(FORMULA_PREFIXES) else v)
    return out


def csv_bytes(df: pd.DataFrame) -> bytes:
    # RFC 4180 line ends: a field holding \r or \n is then quoted like any other.
    return escape_formulas(df).to_csv(index=False, lineterminator="\r\n").encode("utf-8")


def parquet_bytes(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


@functools.lru_cache(maxsize=8)
def sweep_file(scenario_js: str, fmt: str) -> bytes:
    df = default_sweep(Scenario.model_validate_json(scenario_js))
    return parquet_bytes(df) if fmt == "parquet" else csv_bytes(df)


PLOTLY_JS_FILE = "plotly.min.js"


def figure_html(fig: go.Figure) -> str:
    """One chart's page, small: it loads plotly.js from `plotly.min.js` beside it (offered once,
    as its own download) instead of inlining 4.8 MB in every chart; no CDN (users behind
    firewalls). The report (`report_html`) is the self-contained file."""
    return str(fig.to_html(include_plotlyjs="directory", full_html=True))


@functools.lru_cache(maxsize=1)
def plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return str(get_plotlyjs())


def report_html(figures: dict[str, go.Figure], title: str, scenario: Scenario | None = None
                ) -> str:
    """Every chart in one self-contained page that carries plotly.js once, inline."""
    import html

    parts = []
    for name, fig in figures.items():
        stem = _file_stem(name)
        div = fig.to_html(include_plotlyjs=False, full_html=False, div_id=f"chart-{stem}",
                          default_height="560px")
        parts.append(f'<section><h2>{html.escape(stem)}</h2>{div}</section>')
    inputs = ("" if scenario is None else "<details><summary>Scenario (JSON)</summary><pre>"
              + html.escape(scenario_json(scenario)) + "</pre></details>")
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
            + html.escape(title) + "</title>\n<script type=\"text/javascript\">" + plotly_js()
            + "</script></head>\n<body style=\"font-family: sans-serif\"><h1>" + html.escape(title)
            + "</h1>" + inputs + "\n".join(parts) + "</body></html>\n")


def start_kaleido() -> None:
    """One kaleido browser per process (then ~0.3 s per image instead of ~3 s)."""
    global _kaleido_started
    with _kaleido_lock:
        if _kaleido_started:
            return
        import kaleido

        start = getattr(kaleido, "start_sync_server", None)  # kaleido ≥ 1.1
        if start is not None:
            kwargs: dict[str, Any] = {"mathjax": False}  # MathJax would come from a CDN
            if CHROMIUM.exists():
                kwargs["path"] = str(CHROMIUM)
            start(silence_warnings=True, **kwargs)
        _kaleido_started = True


def figure_image(fig: go.Figure, fmt: str) -> bytes:
    """PNG or SVG through kaleido and the system Chromium."""
    if fmt not in ("png", "svg"):
        raise ValueError(f"image format must be png or svg, not {fmt!r}")
    start_kaleido()
    width = fig.layout.width or IMAGE_SIZE[0]
    height = fig.layout.height or IMAGE_SIZE[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "kopts is ignored if using a server"
        return bytes(fig.to_image(format=fmt, width=width, height=height))


@functools.lru_cache(maxsize=16)
def cached_engine_configs(scenario_js: str, mechanism: str | None) -> EngineConfigs:
    return engine_configs(Scenario.model_validate_json(scenario_js), mechanism)


def sglang_script(ec: EngineConfigs) -> str:
    if not ec.sglang.flags:
        return "# " + " ".join(ec.sglang.notes) + "\n"
    return ("python -m sglang.launch_server --model-path '<target model path>' \\\n  "
            + ec.sglang.cli + "\n")


def vllm_script(ec: EngineConfigs) -> str:
    if ec.vllm.speculative_config is None:
        return "# " + " ".join(ec.vllm.notes) + "\n"
    return "vllm serve '<target model path>' \\\n  " + ec.vllm.cli + "\n"


def _file_stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_") or "figure"


def _fig_digest(fig: go.Figure) -> str:
    return hashlib.sha1(fig.to_json().encode("utf-8"), usedforsecurity=False).hexdigest()


def _md(text: str) -> str:
    """Plain text for st.markdown: no HTML, no stray emphasis."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("*", r"\*")


# --- the panel -------------------------------------------------------------------------------

def render(scenario: Scenario, figures: dict[str, go.Figure], key: str = "export") -> None:
    js = scenario.model_dump_json()
    _scenario_section(scenario, key)
    _sweep_section(scenario, js, key)
    _charts_section(figures, key, scenario)
    _engine_section(scenario, js, key)
    bench_ui.render_plan(scenario, key)


def _scenario_section(scenario: Scenario, key: str) -> None:
    st.markdown("#### Scenario")
    c = st.columns(2)
    c[0].download_button("Scenario (JSON)", scenario_json(scenario), file_name="scenario.json",
                         mime="application/json", key=f"{key}_scenario", on_click="ignore")
    c[1].download_button("Scenario JSON schema", scenario_json_schema(),
                         file_name="scenario.schema.json", mime="application/schema+json",
                         key=f"{key}_schema", on_click="ignore")
    st.caption("Re-import: `python -m explorer evaluate --scenario scenario.json` (flags override "
               "the file), or `Scenario.model_validate_json(text)` in Python.")


def _sweep_section(scenario: Scenario, js: str, key: str) -> None:
    st.markdown("#### Sweep")
    try:
        d_max = int(draft_len_range(scenario)[-1])
    except ScenarioError as exc:
        st.warning(f"No sweep for this scenario: {exc.message}")
        return
    rows = len(SWEEP_BATCHES) * (d_max + 1)
    st.caption(f"B = 1, 2, 4 … 4096 × D = 0 … {d_max} for {scenario.mechanism} ({rows} rows, "
               "with the time breakdown); made when you download.")
    c = st.columns(2)
    c[0].download_button("Sweep (CSV)", lambda: sweep_file(js, "csv"), file_name="sweep.csv",
                         mime="text/csv", key=f"{key}_sweep_csv", on_click="ignore")
    c[1].download_button("Sweep (Parquet)", lambda: sweep_file(js, "parquet"),
                         file_name="sweep.parquet", mime="application/vnd.apache.parquet",
                         key=f"{key}_sweep_parquet", on_click="ignore")


def _charts_section(figures: dict[str, go.Figure], key: str,
                    scenario: Scenario | None = None) -> None:
    st.markdown("#### Charts")
    if not figures:
        st.caption("No charts on this page yet.")
        return
    c = st.columns([3, 2])
    c[0].download_button(
        "Report: every chart (HTML, self-contained)",
        functools.partial(report_html, figures, "SpecDec Explorer report", scenario),
        file_name="specdec_report.html", mime="text/html", key=f"{key}_report",
        on_click="ignore", icon=":material/summarize:")
    c[1].download_button("plotly.min.js (for the per-chart HTML)", plotly_js,
                         file_name=PLOTLY_JS_FILE, mime="text/javascript",
                         key=f"{key}_plotlyjs", on_click="ignore")
    st.caption("The report carries one inline copy of plotly.js (~4.8 MB) for all its charts "
               "and opens offline. Each chart's HTML below is small and loads "
               f"`{PLOTLY_JS_FILE}` from its own folder: save that file once beside them.")
    store_key = f"{key}_images"
    prepared: dict[str, dict[str, Any]] = st.session_state.get(store_key, {})
    if st.button("Prepare images (PNG and SVG)", key=f"{key}_prepare",
                 help="Renders every chart in a headless Chromium (kaleido): ~1 s per image."):
        try:
            with st.spinner("Rendering charts…"):
                prepared = {name: {"digest": _fig_digest(fig), "png": figure_image(fig, "png"),
                                   "svg": figure_image(fig, "svg")}
                            for name, fig in figures.items()}
            st.session_state[store_key] = prepared
        except Exception as exc:  # kaleido/Chromium failures are reported, the page goes on
            st.warning(f"Images could not be rendered: {type(exc).__name__}: {exc}")
    for name, fig in figures.items():
        stem = _file_stem(name)
        c = st.columns([3, 1, 1, 1])
        c[0].markdown(f"`{stem}`")
        c[1].download_button("HTML", functools.partial(figure_html, fig), file_name=f"{stem}.html",
                             mime="text/html", key=f"{key}_html_{stem}", on_click="ignore")
        img = prepared.get(name)
        if img is not None and img["digest"] == _fig_digest(fig):
            c[2].download_button("PNG", img["png"], file_name=f"{stem}.png", mime="image/png",
                                 key=f"{key}_png_{stem}", on_click="ignore")
            c[3].download_button("SVG", img["svg"], file_name=f"{stem}.svg",
                                 mime="image/svg+xml", key=f"{key}_svg_{stem}", on_click="ignore")
        else:
            c[2].caption("PNG: prepare")
            c[3].caption("SVG: prepare")


def _engine_section(scenario: Scenario, js: str, key: str) -> None:
    st.markdown("#### Serving-engine configuration")
    options = ["recommended", *mechanism_presets()]
    choice = st.selectbox(
        "Mechanism", options, key=f"{key}_mechanism",
        format_func=lambda s: "the recommended one" if s == "recommended"
        else mechanism_presets()[s].name)
    try:
        ec = cached_engine_configs(js, None if choice == "recommended" else choice)
    except (ScenarioError, ValueError) as exc:
        st.warning(f"No engine configuration for this choice: {exc}")
        return
    off = ("never" if ec.switch_off_batch == 0 else
           f"above B = {ec.switch_off_batch}" if ec.switch_off_batch else
           f"nowhere up to B = {ec.max_batch_evaluated}")
    st.markdown(f"**{_md(ec.mechanism_name)}**, D = **{ec.draft_len}** at B = {ec.batch}; "
                f"switch speculation off **{off}**.")
    for note in ec.notes:
        st.markdown("- " + _md(note))
    extended = _model_extended_note(js, ec.mechanism, ec.recommended_draft_len)
    if extended:
        st.warning(_md(extended), icon=":material/timeline:")
    st.dataframe(pd.DataFrame(ec.schedule, columns=["up to batch B", "draft length D"]),
                 hide_index=True, height=180)

    st.markdown("##### vLLM")
    if ec.vllm.speculative_config is not None:
        st.code(json.dumps(ec.vllm.speculative_config, indent=2), language="json")
    st.code(vllm_script(ec), language="bash")
    _notes(ec.vllm.notes, ec.vllm.source)

    st.markdown("##### SGLang")
    st.code(sglang_script(ec), language="bash")
    _notes(ec.sglang.notes, ec.sglang.source)

    st.markdown("##### TensorRT-LLM")
    if ec.tensorrt_llm.config is not None:
        st.code(ec.tensorrt_llm.yaml, language="yaml")
    _notes(ec.tensorrt_llm.notes, ec.tensorrt_llm.source)

    c = st.columns(3)
    c[0].download_button("vLLM speculative_config (JSON)",
                         json.dumps(ec.vllm.speculative_config, indent=2) + "\n",
                         file_name="vllm_speculative_config.json", mime="application/json",
                         key=f"{key}_vllm", on_click="ignore",
                         disabled=ec.vllm.speculative_config is None)
    c[1].download_button("SGLang launch (sh)", sglang_script(ec), file_name="sglang_launch.sh",
                         mime="text/x-shellscript", key=f"{key}_sglang", on_click="ignore")
    c[2].download_button("TensorRT-LLM config (YAML)", ec.tensorrt_llm.yaml or "# not supported\n",
                         file_name="trtllm_config.yaml", mime="application/yaml",
                         key=f"{key}_trtllm", on_click="ignore",
                         disabled=ec.tensorrt_llm.config is None)


@functools.lru_cache(maxsize=16)
def _model_extended_note(scenario_js: str, mechanism: str, draft_len: int | None) -> str:
    """Whether the exported D's AL is model-extended (an acceptance model, not the evidence)."""
    if draft_len is None:
        return ""
    rec = recommend(Scenario.model_validate_json(scenario_js), [mechanism])
    opt = next((o for o in rec.ranking if o.draft_len == draft_len), None)
    if opt is None or not opt.acceptance_model_extended:
        return ""
    return (f"AL {opt.acceptance_length:.2f} at D = {draft_len} is model-extended: no published "
            "or measured point at this D backs it (see the AL vs D tab).")


def _notes(notes: list[str], source: str) -> None:
    for note in notes:
        st.caption(_md(note))
    st.caption("Checked against: " + _md(source))

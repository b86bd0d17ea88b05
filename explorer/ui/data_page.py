"""Measured data in: upload, validate, name, use as the AL source, calibrate the hardware."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import numpy as np
import streamlit as st

from explorer.base.limits import MAX_PROBLEMS
from explorer.calibration import (
    Calibration,
    CalibrationError,
    DraftBackOut,
    back_out_draft_cost,
    fit_kernel_efficiencies,
)
from explorer.calibration.measured_file import apply_measured_file, calibration_helps
from explorer.measured import FORMATS, ParseResult, json_schema, parse_bytes
from explorer.model.grid import scenario_model
from explorer.specs.measured import KernelTimings, StepTimings
from explorer.specs.scenario import Scenario
from explorer.ui import bench_ui, chart_view, model_upload
from explorer.ui.data_figures import (
    calibration_figure,
    draft_backout_figure,
    uploaded_curves_figure,
)
from explorer.ui.state import (
    ACTIVE_CURVE,
    DATASETS,
    MEASURED_KERNELS,
    MEASURED_STEPS,
    OVERRIDES,
    UPLOAD_ERRORS,
    active_curve,
    datasets,
    hardware_overrides,
)
from explorer.ui.text import md_text

# The session's loaded data and the choices made here are owned by explorer/ui/state.py, which
# the other pages read; these names stay importable from here for older callers.
__all__ = ["ACTIVE_CURVE", "DATASETS", "active_curve", "datasets", "hardware_overrides",
           "render"]

def _ingest() -> None:
    """on_change of the uploader: a bad file never replaces what the user already has."""
    upload = st.session_state.get("upload")
    if upload is None:
        return
    result = parse_bytes(upload.name, upload.getvalue())
    if not result.ok:
        st.session_state[UPLOAD_ERRORS] = (upload.name, result)
        return
    st.session_state[UPLOAD_ERRORS] = None
    name = (st.session_state.get("dataset_name") or upload.name).strip()[:80]
    datasets()[name] = result
    if result.curves and not st.session_state.get(ACTIVE_CURVE):
        # the file's overall/mean row where it has one (shown as the selected curve)
        st.session_state[ACTIVE_CURVE] = f"{name}::{result.default_curve_index() or 0}"


def render(scenario: Scenario | None) -> None:
    st.title("Measured data")
    st.caption("Bring your own acceptance curves and kernel/step timings, in the formats your "
               "tools already write. Validation names every problem by row and field; an invalid "
               "file never replaces the data you already loaded.")
    st.text_input("Dataset name (optional; defaults to the file name)", key="dataset_name",
                  max_chars=80)
    st.file_uploader("Upload a file", key="upload", on_change=_ingest,
                     type=["csv", "json", "jsonl", "txt", "prom"])
    err = st.session_state.get(UPLOAD_ERRORS)
    if err:
        fname, result = err
        # The parser lists a page of problems and counts the rest in its last one.
        lines = [f"- row {p.row if p.row is not None else '—'}, field "
                 f"{md_text(p.field or '—')}: {md_text(p.message)}" for p in result.problems
                 if p.severity == "error"]
        st.error(f"**{md_text(fname)}** was not loaded ({result.format}): "
                 f"{md_text(result.summary)}\n\n"
                 + "\n".join(lines[: MAX_PROBLEMS + 1]))

    loaded = datasets()
    if loaded:
        st.subheader("Loaded datasets")
        for name, result in list(loaded.items()):
            with st.container(border=True):
                cols = st.columns([5, 1])
                cols[0].markdown(f"**{md_text(name)}** — {result.format}: "
                                 f"{md_text(result.summary)}")
                if cols[1].button("Remove", key=f"rm_{name}"):
                    del loaded[name]
                    st.rerun()
                for p in result.problems:
                    st.caption(md_text(f"warning — row {p.row}, field {p.field}: {p.message}"))
        _curves_section(loaded)
        if scenario is not None:
            _calibration_section(loaded, scenario)
            _draft_section(loaded, scenario)
    if scenario is not None:
        bench_ui.render_results(scenario, OVERRIDES, datasets())
    model_upload.render()  # after the measured-data uploader, which stays the page's first
    _templates_section()


def _curves_section(loaded: dict[str, ParseResult]) -> None:
    options = [f"{n}::{i}" for n, r in loaded.items() for i in range(len(r.curves))]
    if not options:
        return
    st.subheader("Acceptance curves")
    labels = {f"{n}::{i}": md_text(f"{n}: {c.label}") for n, r in loaded.items()
              for i, c in enumerate(r.curves)}
    if st.session_state.get(ACTIVE_CURVE) not in options:
        st.session_state[ACTIVE_CURVE] = options[0]
    st.radio("AL source for the explorer (with 'upload' selected in the sidebar)", options,
             key=ACTIVE_CURVE, format_func=labels.__getitem__)
    fig = uploaded_curves_figure([(n, c) for n, r in loaded.items() for c in r.curves])
    chart_view.show(fig, key="fig_uploaded_al")



def _calibration_section(loaded: dict[str, ParseResult], scenario: Scenario) -> None:
    files = [(n, r) for n, r in loaded.items() if r.kernel_timings is not None]
    if not files:
        return
    st.subheader("Calibrate the hardware to your kernel timings")
    hw = scenario_model(scenario.model_copy(update={"hardware_overrides": None})).r.hardware
    name, result = files[-1]
    t = result.kernel_timings
    assert t is not None
    cal: Calibration | None = None
    try:
        cal = fit_kernel_efficiencies(hw, t.gemm, t.attention)  # cached per (hardware, table)
    except CalibrationError as exc:
        st.warning(md_text(str(exc)))
    if cal is not None:
        st.markdown(f"{cal.summary}  \nMAPE **{cal.mape_before:.1f}% → "
                    f"{cal.mape_after:.1f}%** on {hw.name}.")
        for note in cal.notes:
            st.caption(md_text(note))
        fig = calibration_figure(cal)
        chart_view.show(fig, key="fig_calibration")
        cols = st.columns(2)
        if calibration_helps(cal):
            if cols[0].button("Apply calibrated hardware to the explorer", key="apply_cal"):
                # what the file does to a scenario: one decision, shared with the CLI
                st.session_state[OVERRIDES] = apply_measured_file(
                    scenario, result, name, {"calibrate"}).hardware_overrides
        else:  # a fit that predicts these timings worse than the preset is not offered
            cols[0].warning(md_text(
                f"Not offered: the calibrated hardware predicts these timings worse than the "
                f"preset (MAPE {cal.mape_before:.1f}% → {cal.mape_after:.1f}%); the preset "
                "stays. Use the measured kernel times where shapes match instead."),
                icon=":material/block:")
        if cols[1].button("Back to the preset", key="clear_cal"):
            st.session_state[OVERRIDES] = None
    c2 = st.columns(2)
    if c2[0].button("Use these kernel times where shapes match", key="use_kernels"):
        st.session_state[MEASURED_KERNELS] = apply_measured_file(
            scenario, result, name, {"times"}).measured_kernels
    if c2[1].button("Stop using measured kernel times", key="drop_kernels"):
        st.session_state[MEASURED_KERNELS] = None
    used: KernelTimings | None = st.session_state.get(MEASURED_KERNELS)
    if used is not None and used == t and cal is None:
        # The rows calibration cannot model are the rows the model cannot use either (their
        # dtype has no roofline): say so rather than imply the table changes anything.
        st.warning("None of these kernel times matches a kernel the model computes (no row has "
                   "a dtype the roofline knows), so using them changes nothing in the explorer.")
    elif used is not None:
        st.info("The explorer uses your measured kernel times for matching GEMM/attention "
                "shapes; other kernels use the (calibrated) roofline.")
    if hardware_overrides() is not None:
        st.info("The explorer uses calibrated hardware: "
                + md_text(hardware_overrides().label))  # type: ignore[union-attr]


def _draft_section(loaded: dict[str, ParseResult], scenario: Scenario) -> None:
    files = [(n, r) for n, r in loaded.items() if r.step_timings is not None]
    if not files:
        return
    name, result = files[-1]
    t = result.step_timings
    assert t is not None
    whole = t.includes_draft
    st.subheader("Measured step times")
    kind = ("whole speculation rounds (drafting included)" if whole
            else "the target's verify step (no drafting)")
    st.markdown(f"**{md_text(name)}** holds {kind} at {len(t.batch)} (B, D) points; they are "
                f"taken at the explorer's context S={scenario.context}.")
    c = st.columns(2)
    if c[0].button("Use these step times in the explorer", key="use_steps"):
        st.session_state[MEASURED_STEPS] = apply_measured_file(
            scenario, result, name, {"times"}).measured_steps
    if c[1].button("Stop using measured step times", key="drop_steps"):
        st.session_state[MEASURED_STEPS] = None
    if st.session_state.get(MEASURED_STEPS) is not None:
        st.info("The explorer uses your measured step times where (B, D) matches.")
    d = np.asarray(t.draft_len)
    spec = d > 0
    if not spec.any() or not whole:
        return
    st.subheader("Draft cost backed out of measured step times")
    out = _back_out(scenario, t)
    st.markdown(f"{out.summary}  \nT_draft = measured step − model T_verif(B·(1+D)), for "
                f"{scenario.mechanism} on {md_text(scenario.model)}.")
    if out.n_negative:
        st.warning(out.message)
    fig = draft_backout_figure(out)
    chart_view.show(fig, key="fig_draft_backout")


@lru_cache(maxsize=4)  # per (scenario, table): reruns of the page reuse it
def _back_out(scenario: Scenario, table: StepTimings) -> DraftBackOut:
    d = np.asarray(table.draft_len)
    spec = d > 0
    return back_out_draft_cost(scenario_model(scenario), np.asarray(table.batch)[spec], d[spec],
                               scenario.context, np.asarray(table.step_time_s)[spec])


def _templates_section() -> None:
    st.subheader("Formats, templates and schemas")
    for name, info in FORMATS.items():
        with st.expander(f"{info.title} (`{name}`)"):
            st.markdown(info.description)
            c = st.columns(2)
            c[0].download_button("Template", info.template, file_name=info.filename,
                                 mime=info.media_type, key=f"tpl_{name}")
            schema: Any = json_schema(name)
            c[1].download_button("JSON schema", json.dumps(schema, indent=2).encode(),
                                 file_name=f"{name}.schema.json", mime="application/json",
                                 key=f"schema_{name}")

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
from explorer.measured import FORMATS, ParseResult, json_schema, parse_bytes
from explorer.model.grid import scenario_model
from explorer.specs.hardware import HardwareOverrides
from explorer.specs.measured import AcceptanceCurve, KernelTimings, StepTimings
from explorer.specs.scenario import Scenario
from explorer.ui import model_upload
from explorer.ui.data_figures import (
    calibration_figure,
    draft_backout_figure,
    uploaded_curves_figure,
)
from explorer.ui.text import md_text

DATASETS = "datasets"  # name → ParseResult, in this browser session
ACTIVE_CURVE = "active_curve"  # "dataset name::curve index"
OVERRIDES = "hw_overrides"  # HardwareOverrides applied to the whole explorer
UPLOAD_ERRORS = "upload_errors"
MEASURED_KERNELS = "use_measured_kernels"  # KernelTimings replacing matching kernels
MEASURED_STEPS = "use_measured_steps"  # StepTimings replacing the model's steps


def measured_updates() -> dict[str, Any]:
    """Measured tables the user chose to use: fields to set on the explorer's scenario."""
    out: dict[str, Any] = {}
    for key, field in ((MEASURED_KERNELS, "measured_kernels"), (MEASURED_STEPS, "measured_steps")):
        if st.session_state.get(key) is not None:
            out[field] = st.session_state[key]
    out.update(model_upload.updates())  # a model from its config.json (this page's section)
    return out


def load_saved(scenario: Scenario) -> None:
    """A saved scenario's measured data become this page's state: its calibrated hardware and
    the kernel/step times it uses (the uploaded AL curve travels in its acceptance)."""
    st.session_state[OVERRIDES] = scenario.hardware_overrides
    st.session_state[MEASURED_KERNELS] = scenario.measured_kernels
    st.session_state[MEASURED_STEPS] = scenario.measured_steps
    model_upload.load_saved(scenario)


def datasets() -> dict[str, ParseResult]:
    return st.session_state.setdefault(DATASETS, {})  # type: ignore[no-any-return]


def active_curve() -> AcceptanceCurve | None:
    """The uploaded curve chosen as the AL source, labelled with its dataset's name."""
    key = st.session_state.get(ACTIVE_CURVE)
    if not key:
        return None
    name, _, idx = key.partition("::")
    result = datasets().get(name)
    if result is None or not idx.isdigit() or int(idx) >= len(result.curves):
        return None
    curve = result.curves[int(idx)]
    return curve.with_label(f"{name}: {curve.label}")


def hardware_overrides() -> HardwareOverrides | None:
    value = st.session_state.get(OVERRIDES)
    return value if isinstance(value, HardwareOverrides) else None


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
        st.session_state[ACTIVE_CURVE] = f"{name}::0"


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
    st.plotly_chart(fig, width="stretch", key="fig_uploaded_al")


def calibration_helps(cal: Calibration) -> bool:
    """Apply is offered only for a fit that predicts the uploaded timings better (lower MAPE)
    than the preset it replaces."""
    return cal.mape_after < cal.mape_before


def _calibration_section(loaded: dict[str, ParseResult], scenario: Scenario) -> None:
    tables = [r.kernel_timings for r in loaded.values() if r.kernel_timings is not None]
    if not tables:
        return
    st.subheader("Calibrate the hardware to your kernel timings")
    hw = scenario_model(scenario.model_copy(update={"hardware_overrides": None})).r.hardware
    t = tables[-1]
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
        st.plotly_chart(fig, width="stretch", key="fig_calibration")
        cols = st.columns(2)
        if calibration_helps(cal):
            if cols[0].button("Apply calibrated hardware to the explorer", key="apply_cal"):
                st.session_state[OVERRIDES] = cal.overrides
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
        st.session_state[MEASURED_KERNELS] = t
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
        st.info(f"The explorer uses calibrated hardware: {hardware_overrides().label}")  # type: ignore[union-attr]


def _draft_section(loaded: dict[str, ParseResult], scenario: Scenario) -> None:
    tables = [r.step_timings for r in loaded.values() if r.step_timings is not None]
    if not tables:
        return
    t = tables[-1]
    name = next(n for n, r in loaded.items() if r.step_timings is t)
    whole = t.includes_draft
    st.subheader("Measured step times")
    kind = ("whole speculation rounds (drafting included)" if whole
            else "the target's verify step (no drafting)")
    st.markdown(f"**{name}** holds {kind} at {len(t.batch)} (B, D) points; they are taken at "
                f"the explorer's context S={scenario.context}.")
    c = st.columns(2)
    if c[0].button("Use these step times in the explorer", key="use_steps"):
        st.session_state[MEASURED_STEPS] = t
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
                f"{scenario.mechanism} on {scenario.model}.")
    if out.n_negative:
        st.warning(out.message)
    fig = draft_backout_figure(out)
    st.plotly_chart(fig, width="stretch", key="fig_draft_backout")


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

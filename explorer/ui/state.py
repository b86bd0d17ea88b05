"""The session's UI state, one owner below the pages: the measured data loaded on the Measured
data page and what the user chose to use from it (the AL curve, calibrated hardware, measured
kernel and step times, a model from its config.json). Pages read and set it through these names;
no page imports another page (tests/unit/test_registries.py)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from explorer.measured import ParseResult
from explorer.specs.hardware import HardwareOverrides
from explorer.specs.measured import AcceptanceCurve
from explorer.specs.scenario import Scenario
from explorer.ui import model_upload

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

"""The parsers' contract, checkable on any result: refused with bounded, safe messages, or valid
for every downstream use — evaluate with each curve and each table, calibration, the step fit,
the draft back-out — the way the CLI and the app use them."""

from __future__ import annotations

import math
import re
from itertools import pairwise

import numpy as np

from explorer import Scenario, evaluate
from explorer.base.limits import (
    MAX_CURVE_POINTS,
    MAX_CURVES,
    MAX_DRAFT_LEN,
    MAX_FIELD_CHARS,
    MAX_LABEL_CHARS,
    MAX_MEASURED_DRAFT_LEN,
    MAX_MEASURED_ROWS,
    MAX_MESSAGE_CHARS,
    MAX_PROBLEMS,
    MAX_SOURCE_CHARS,
    MAX_TIME_S,
    MIN_TIME_S,
)
from explorer.calibration import (
    CalibrationError,
    back_out_draft_cost,
    fit_kernel_efficiencies,
    fit_step_overheads,
)
from explorer.measured import ParseResult
from explorer.model.grid import scenario_model
from explorer.specs.measured import AcceptanceCurve, StepTimings
from explorer.specs.scenario import Acceptance

# What a terminal or a page must never receive raw (base/quoting.py escapes exactly these).
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def safe(text: str | None, limit: int) -> bool:
    return text is None or (len(text) <= limit and CONTROL.search(text) is None)


def check_result(result: ParseResult) -> None:
    """Refused (no data, a page of bounded, escaped messages) or within every declared limit."""
    assert isinstance(result, ParseResult)
    assert len(result.problems) <= MAX_PROBLEMS + 1, len(result.problems)
    assert safe(result.summary, MAX_MESSAGE_CHARS), result.summary[:200]
    for p in result.problems:
        assert "internal error" not in p.message, str(p)
        assert safe(p.message, MAX_MESSAGE_CHARS), p.message[:200]
        assert safe(p.field, MAX_FIELD_CHARS), (p.field or "")[:200]
    if not result.ok:
        assert not result.curves and result.step_timings is None
        assert result.kernel_timings is None
        return
    assert len(result.curves) <= MAX_CURVES
    for curve in result.curves:
        check_curve(curve)
    if result.step_timings is not None:
        st = result.step_timings
        assert len(st.batch) <= MAX_MEASURED_ROWS
        assert all(MIN_TIME_S <= t <= MAX_TIME_S for t in st.step_time_s)
        for a, d in zip(st.acceptance_length or (), st.draft_len, strict=False):
            assert a is None or 1.0 <= a <= 1.0 + d
    if result.kernel_timings is not None:
        kt = result.kernel_timings
        times = (kt.gemm.time_s if kt.gemm else ()) + (kt.attention.time_s if kt.attention
                                                         else ())
        assert all(MIN_TIME_S <= t <= MAX_TIME_S for t in times)


def check_curve(curve: AcceptanceCurve) -> None:
    d = curve.draft_lens
    assert 1 <= len(d) <= MAX_CURVE_POINTS and len(curve.conditional_rates or ()) <= (
        MAX_CURVE_POINTS)
    assert d[0] >= 1 and d[-1] <= MAX_MEASURED_DRAFT_LEN
    assert all(b > a for a, b in pairwise(d))
    for dl, al in zip(d, curve.acceptance_lengths, strict=True):
        assert math.isfinite(al) and 1.0 <= al <= 1.0 + dl  # exactly: the tolerance is clamped
    for r in curve.conditional_rates or ():
        assert 0.0 <= r <= 1.0
    assert safe(curve.label, MAX_LABEL_CHARS) and safe(curve.source_text, 8 * MAX_SOURCE_CHARS)


def _draft_lens(curve: AcceptanceCurve) -> list[int]:
    """The scenario's D for this curve: its first and last measured D within the model's
    range, and the default."""
    inside = [x for x in curve.draft_lens if x <= MAX_DRAFT_LEN]
    return sorted({3, *inside[:1], *inside[-1:]})


def use_everywhere(result: ParseResult, max_curves: int = 3) -> None:
    """Every accepted dataset through what the CLI and the app do with it; nothing may raise
    (CalibrationError is the one clear refusal a usable table may get)."""
    if not result.ok:
        return
    for curve in result.curves[:max_curves]:
        mechanism = curve.mechanism or "eagle3"
        for d in _draft_lens(curve):
            ev = evaluate(Scenario(mechanism=mechanism, draft_len=d,
                                   acceptance=Acceptance(kind="curve", curve=curve)))
            assert ev.acceptance_length is None or 1.0 <= ev.acceptance_length <= 1.0 + d
    base = Scenario()
    if result.kernel_timings is not None:
        kt = result.kernel_timings
        scenario = base.model_copy(update={"measured_kernels": kt})
        try:
            cal = fit_kernel_efficiencies(scenario_model(base).r.hardware, kt.gemm,
                                          kt.attention)
            scenario = scenario.model_copy(update={"hardware_overrides": cal.overrides})
        except CalibrationError as exc:
            assert str(exc) and "\n" not in str(exc)
        evaluate(scenario)
    if result.step_timings is not None:
        use_steps(base, result.step_timings)


def use_steps(base: Scenario, st: StepTimings) -> None:
    model = scenario_model(base)
    d = np.asarray(st.draft_len)
    width = np.asarray(st.verify_tokens) if st.verify_tokens else 1 + d
    step = fit_step_overheads(model, np.asarray(st.batch), width, base.context,
                              np.asarray(st.step_time_s))
    evaluate(base.model_copy(update={"measured_steps": st,
                                     "hardware_overrides": step.overrides}))
    spec = d > 0
    if spec.any():
        back_out_draft_cost(model, np.asarray(st.batch)[spec], d[spec], base.context,
                            np.asarray(st.step_time_s)[spec])

"""Building AL curves from parsed points: bounds, monotonicity, rates and their consistency."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt
from pydantic import ValidationError

from explorer.base.limits import (
    MAX_CURVE_POINTS,
    MAX_CURVES,
    MAX_LABEL_CHARS,
    MAX_MEASURED_DRAFT_LEN,
)
from explorer.measured._bounds import over_cap
from explorer.measured._problems import Collector, validation_message
from explorer.model.acceptance import conditional_from_marginal
from explorer.specs.measured import (
    AcceptanceCurve,
    DraftStyle,
    Mechanism,
    Provenance,
    al_within_bounds,
)

# |AL - (1 + Σ marginals)| above this is an error. Same tolerance as specdec_bench's own
# mean-consistency check (speculation_profile.py, _consistency_check).
AL_CONSISTENCY_TOL = 0.02
# Conditional and marginal vectors given together must agree to this (files round to 1e-6).
RATE_CONSISTENCY_TOL = 1e-3


def too_many_curves(col: Collector, count: int, what: str = "curves") -> bool:
    """Refuse a file with more AL curves than one file may hold, before building any."""
    if count > MAX_CURVES:
        over_cap(col, "the file", count, MAX_CURVES, what, "MAX_CURVES")
        return True
    return False


def group_provenance(
    name: str, sources: Iterable[str], model: str, dataset: str, temperature: float | None,
    fmt: str, drafter: str = "",
) -> Provenance:
    """Provenance of one curve built from a group of CSV rows."""
    return Provenance(
        file=name,
        source="; ".join(sorted({s for s in sources if s})) or None,
        model=model or None,
        drafter=drafter or None,
        dataset=dataset or None,
        temperature=temperature,
        format=fmt,
    )


def join_nonempty(parts: Iterable[str | None], sep: str = " · ") -> str:
    return sep.join(p for p in parts if p)


def report_al_bounds(col: Collector, label: str, draft_lens: Sequence[int],
                     als: Sequence[float], rows: Sequence[int | None],
                     fields: Sequence[str | None]) -> bool:
    """Name every point with AL outside [1, 1 + D] (or not finite); True when none is. Also
    called on the readable rows of a curve that other errors (a bad D) already refuse, so
    that a file's problems are all reported at once."""
    within = al_within_bounds(als, draft_lens)

    def bound_problem(i: int) -> tuple[str, int | None, str | None]:
        d, a = draft_lens[i], als[i]
        if not math.isfinite(a):
            return f"{label}: AL at D={d} is not a finite number", rows[i], fields[i]
        return (f"{label}: AL {a:g} at D={d} is outside [1, {1 + d}] (AL counts the bonus "
                "token, so 1 <= AL <= 1 + D)", rows[i], fields[i])

    col.add_each("error", [int(i) for i in np.flatnonzero(~within)], bound_problem)
    return bool(within.all())


def build_curve(
    col: Collector,
    *,
    label: str,
    mechanism: Mechanism | None,
    draft_style: DraftStyle | None,
    draft_lens: Sequence[int],
    als: Sequence[float],
    provenance: Provenance,
    conditional: Sequence[float] | None = None,
    max_supported: int | None = None,
    rows: Sequence[int | None] | None = None,
    fields: Sequence[str | None] | None = None,
    std_errors: Sequence[float] | None = None,
) -> AcceptanceCurve | None:
    """Check the curve's size, AL bounds and monotonicity, then build it (None on errors).

    The checks are the AcceptanceCurve type's own (explorer/base/limits.py), made first so
    that each failure names its row and field; AL within the float tolerance above 1 + D is
    stored as 1 + D."""
    n = len(draft_lens)
    points = max(n, len(conditional or ()))
    if points > MAX_CURVE_POINTS:
        what = "draft lengths" if n >= points else "per-position rates"
        over_cap(col, label, points, MAX_CURVE_POINTS, what, "MAX_CURVE_POINTS: points of one "
                 "AL curve")
        return None
    if n and max(draft_lens) > MAX_MEASURED_DRAFT_LEN:
        col.error(f"{label}: D={max(draft_lens)} is past the largest draft length a measurement "
                  f"may name ({MAX_MEASURED_DRAFT_LEN}, MAX_MEASURED_DRAFT_LEN)",
                  None if rows is None else rows[int(np.argmax(draft_lens))], "D")
        return None
    rows_ = list(rows) if rows is not None else [None] * n
    fields_ = list(fields) if fields is not None else ["AL"] * n
    ok = report_al_bounds(col, label, draft_lens, als, rows_, fields_)
    for i in range(1, n):
        if ok and als[i] < als[i - 1] - 1e-12:
            col.warn(
                f"{label}: AL falls from {als[i - 1]:g} at D={draft_lens[i - 1]} to {als[i]:g} "
                f"at D={draft_lens[i]} (AL should not decrease with D)",
                rows_[i],
                fields_[i],
            )
    if max_supported is not None and draft_lens and max_supported < max(draft_lens):
        col.error(
            f"{label}: measured at D={max(draft_lens)} but the maximum supported draft length "
            f"is {max_supported}",
            None,
            "max_supported_draft_len",
        )
        ok = False
    if not ok:
        return None
    try:
        return AcceptanceCurve(
            label=label[:MAX_LABEL_CHARS],
            mechanism=mechanism,
            draft_style=draft_style,
            draft_lens=tuple(int(d) for d in draft_lens),
            acceptance_lengths=tuple(
                np.minimum(np.asarray(als, dtype=np.float64),
                           1.0 + np.asarray(draft_lens, dtype=np.float64)).tolist()),
            conditional_rates=None if conditional is None else tuple(float(c) for c in conditional),
            provenance=provenance,
            max_supported_draft_len=max_supported,
            al_std_errors=None if std_errors is None else tuple(float(x) for x in std_errors),
        )
    except ValidationError as exc:
        col.error(f"{label}: {validation_message(exc)}")
        return None


def conditional_rates_of(marginal: npt.ArrayLike) -> list[float]:
    """Conditional rates from marginals, kept in [0, 1] (rising marginals are warned about)."""
    with np.errstate(all="ignore"):
        c = conditional_from_marginal(marginal)
    return [float(x) for x in np.clip(np.nan_to_num(c, nan=0.0, posinf=1.0), 0.0, 1.0)]


def check_rates(
    col: Collector,
    rates: Sequence[float],
    *,
    field: str,
    rows: Sequence[int | None] | None = None,
    what: str = "rate",
) -> bool:
    """Every rate in [0, 1]; errors name the position (1-based) and field."""
    ok = True
    for i, r in enumerate(rates):
        row = rows[i] if rows is not None else None
        f = field if rows is not None else f"{field}[{i}]"
        if not (math.isfinite(r) and 0.0 <= r <= 1.0):
            col.error(f"{what} at position {i + 1} is {r:g}, outside [0, 1]", row, f)
            ok = False
    return ok


def warn_if_marginals_increase(
    col: Collector, marginal: Sequence[float], *, label: str, field: str | None = None
) -> None:
    for i in range(1, len(marginal)):
        if marginal[i] > marginal[i - 1] + 1e-9:
            col.warn(
                f"{label}: marginal acceptance rises from {marginal[i - 1]:g} at position {i} "
                f"to {marginal[i]:g} at position {i + 1}; a survival probability cannot rise "
                f"(malformed data, or these are conditional rates)",
                None,
                field,
            )


def check_al_consistency(
    col: Collector,
    reported_al: float,
    marginal: Sequence[float],
    *,
    label: str,
    field: str | None,
    row: int | None = None,
) -> None:
    implied = 1.0 + float(sum(marginal))
    if abs(implied - reported_al) > AL_CONSISTENCY_TOL:
        col.error(
            f"{label}: reported AL {reported_al:.6g} disagrees with 1 + sum of marginal rates "
            f"= {implied:.6g} (difference {reported_al - implied:+.4g}, tolerance "
            f"{AL_CONSISTENCY_TOL})",
            row,
            field,
        )

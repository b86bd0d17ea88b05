"""Per-position acceptance CSV: acceptance rate of draft position 1..n, conditional or marginal.

Source checked: no upstream tool owns this layout; it follows the shared reference data
(shared/reference/position_acceptance.csv: columns mechanism, dataset, position, acceptance,
kind with kind = conditional | unconditional) and the two conventions that
NVIDIA specdec_bench names explicitly (examples/specdec_bench/specdec_bench/
speculation_profile.py @095124e: conditional = P(draft i accepted | drafts < i accepted),
marginal = P(first i drafts all accepted); vLLM's per-position rate is the marginal one).

Two layouts are accepted:
  long:  position, rate, kind (kind: conditional | marginal; also unconditional, joint,
         cumulative = marginal)
  wide:  position, conditional and/or marginal (the column name says the kind)
plus optional mechanism, dataset (or category), model, temperature, drafter, source and AL
(the measured mean acceptance length at D = n, cross-checked against 1 + Σ marginals).
AL(D) for D = 1..n is 1 + Σ_{i<=D} m_i for chain drafters; block drafters (dflash, dspark) are
only valid at the measured D = n, so their curve has that single point.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from explorer.base.limits import MAX_MEASURED_DRAFT_LEN
from explorer.base.quoting import quote
from explorer.measured._csv import Numbers, find_column, parse_numbers, read_csv
from explorer.measured._curve_groups import curve_groups
from explorer.measured._curves import (
    RATE_CONSISTENCY_TOL,
    build_curve,
    check_al_consistency,
    conditional_rates_of,
    warn_if_marginals_increase,
)
from explorer.measured._problems import Collector, finish
from explorer.measured.al_csv import AL_ALIASES
from explorer.model.acceptance import al_from_marginal, marginal_from_conditional
from explorer.specs.measured import AcceptanceCurve, ParseResult

FORMAT = "position_acceptance_csv"

Kind = Literal["conditional", "marginal"]
POSITION_ALIASES = ("position", "pos", "draft_position")
MAX_POSITION = MAX_MEASURED_DRAFT_LEN
RATE_ALIASES = ("rate", "acceptance", "acceptance_rate", "accept_rate", "value")
KIND_ALIASES = ("kind", "rate_kind", "type")
CONDITIONAL_COLUMNS = ("conditional", "conditional_rate", "conditional_acceptance")
MARGINAL_COLUMNS = (
    "marginal",
    "marginal_rate",
    "unconditional",
    "joint",
    "cumulative",
    "marginal_acceptance",
)


def parse_kind(raw: str) -> Kind | None:
    s = raw.strip().lower()
    if s.startswith("cond"):
        return "conditional"
    if s.startswith(("marg", "uncond", "joint", "cumul", "surviv")):
        return "marginal"
    return None


def parse_text(name: str, text: str) -> ParseResult:
    col = Collector()
    tab = read_csv(text, col)
    if tab is None:
        return finish(FORMAT, "", col)
    h = tab.headers
    pos_col = find_column(h, POSITION_ALIASES)
    rate_col = find_column(h, RATE_ALIASES)
    kind_col = find_column(h, KIND_ALIASES)
    cond_col = find_column(h, CONDITIONAL_COLUMNS)
    marg_col = find_column(h, MARGINAL_COLUMNS)
    if pos_col is None:
        col.error(
            f"no position column: expected one of {', '.join(POSITION_ALIASES)}", field="position"
        )
    if rate_col is None and cond_col is None and marg_col is None:
        col.error(
            "no rate column: expected rate (with a kind column) or columns named "
            "conditional and/or marginal",
            field="rate",
        )
    if rate_col is not None and kind_col is None and cond_col is None and marg_col is None:
        col.error(
            "say whether the rates are conditional or marginal: add a kind column "
            "(conditional | marginal) or name the rate column conditional or marginal",
            field=rate_col,
        )
    if col.has_errors or pos_col is None:
        return finish(FORMAT, "", col)

    n_rows = len(tab.df)
    pos = parse_numbers(
        tab, pos_col, col, integer=True, minimum=1, maximum=MAX_POSITION, what="position"
    )
    # (kind, rates) for every rate source in the file.
    sources: list[tuple[Kind | None, str, Numbers]] = []
    kinds_per_row: list[Kind | None] = [None] * n_rows
    if rate_col is not None and kind_col is not None:
        kinds_text = tab.text(kind_col)
        for i, raw in enumerate(kinds_text):
            k = parse_kind(raw)
            if k is None:
                col.error(
                    f"kind {quote(raw)} is neither conditional nor marginal "
                    f"(also accepted: unconditional, joint, cumulative)",
                    int(tab.rows[i]),
                    kind_col,
                )
            kinds_per_row[i] = k
        rates = parse_numbers(tab, rate_col, col, minimum=0.0, maximum=1.0, what="rate")
        sources.append((None, rate_col, rates))
    wide: tuple[tuple[Kind, str | None], ...] = (
        ("conditional", cond_col),
        ("marginal", marg_col),
    )
    for wide_kind, wide_col in wide:
        if wide_col is not None:
            nums = parse_numbers(
                tab,
                wide_col,
                col,
                minimum=0.0,
                maximum=1.0,
                required=False,
                what=f"{wide_kind} rate",
            )
            sources.append((wide_kind, wide_col, nums))
    if not any(src_kind is None for src_kind, _, _ in sources):
        no_rate = np.logical_and.reduce([nums.empty for _, _, nums in sources])
        for j in np.flatnonzero(no_rate):
            col.error("no rate in this row", int(tab.rows[j]), sources[0][1])

    al_col = find_column(h, AL_ALIASES)
    al = parse_numbers(tab, al_col, col, required=False, what="AL") if al_col else None
    groups = curve_groups(tab, col, name, FORMAT)
    if groups is None:
        return finish(FORMAT, "", col)
    curves: list[AcceptanceCurve] = []
    for group in groups:
        idx, label = group.rows, group.label
        # kind -> position -> (rate, row index)
        by_kind: dict[Kind, dict[int, tuple[float, int]]] = {"conditional": {}, "marginal": {}}
        field_of: dict[Kind, str] = {}
        bad = False
        for src_kind, header, src_nums in sources:
            for i in idx:
                row_kind = src_kind if src_kind is not None else kinds_per_row[i]
                if src_nums.empty[i] and src_kind is not None:
                    continue
                if row_kind is None or not pos.valid[i] or not src_nums.valid[i]:
                    bad = True
                    continue
                p = int(pos.values[i])
                field_of[row_kind] = header
                if p in by_kind[row_kind]:
                    col.error(
                        f"{label}: {row_kind} rate for position {p} given twice (rows "
                        f"{tab.rows[by_kind[row_kind][p][1]]} and {tab.rows[i]})",
                        int(tab.rows[i]),
                        pos_col,
                    )
                    bad = True
                by_kind[row_kind][p] = (float(src_nums.values[i]), i)
        vectors: dict[Kind, list[float]] = {}
        for kind, entries in by_kind.items():
            if not entries:
                continue
            n = max(entries)
            missing = [p for p in range(1, n + 1) if p not in entries]
            if missing:
                col.error(
                    f"{label}: {kind} rates missing for position(s) "
                    f"{', '.join(map(str, missing[:10]))}"
                    f"{f', … ({len(missing)} in all)' if len(missing) > 10 else ''} "
                    f"(positions must run 1..{n})",
                    None,
                    pos_col,
                )
                bad = True
                continue
            vectors[kind] = [entries[p][0] for p in range(1, n + 1)]
        if bad or not vectors:
            continue
        cond = vectors.get("conditional")
        marg = vectors.get("marginal")
        if cond is not None and marg is not None:
            if len(cond) != len(marg):
                col.error(
                    f"{label}: {len(cond)} conditional but {len(marg)} marginal positions",
                    None,
                    pos_col,
                )
                continue
            implied = marginal_from_conditional(cond)
            mismatch = False
            for p in range(len(marg)):
                if abs(implied[p] - marg[p]) > RATE_CONSISTENCY_TOL:
                    i_row = by_kind["marginal"][p + 1][1]
                    col.error(
                        f"{label}: marginal rate {marg[p]:g} at position {p + 1} disagrees with "
                        f"the product of conditional rates {implied[p]:.6g}",
                        int(tab.rows[i_row]),
                        field_of["marginal"],
                    )
                    mismatch = True
            if mismatch:
                continue
        if marg is not None:
            warn_if_marginals_increase(col, marg, label=label, field=field_of["marginal"])
            m = np.asarray(marg, dtype=np.float64)
        else:
            m = marginal_from_conditional(np.asarray(cond, dtype=np.float64))
        c = np.asarray(cond if cond is not None else conditional_rates_of(m), dtype=np.float64)
        n = len(m)
        if al is not None and al_col is not None:
            reported = sorted({float(al.values[i]) for i in idx if al.valid[i]})
            if len(reported) > 1:
                col.error(
                    f"{label}: several AL values {reported} for one curve; AL is the mean at "
                    f"D = {n}",
                    None,
                    al_col,
                )
                continue
            if reported:
                first_row = next(int(tab.rows[i]) for i in idx if al.valid[i])
                check_al_consistency(
                    col, reported[0], m.tolist(), label=label, field=al_col, row=first_row
                )
        mech, style = group.mechanism, group.inferred_style
        al_curve = al_from_marginal(m)
        if style == "block":
            draft_lens, als = [n], [float(al_curve[-1])]
        else:
            draft_lens, als = list(range(1, n + 1)), [float(a) for a in al_curve]
        curve = build_curve(
            col,
            label=label,
            mechanism=mech,
            draft_style=style,
            draft_lens=draft_lens,
            als=als,
            provenance=group.provenance,
            conditional=[float(x) for x in np.clip(c, 0.0, 1.0)],
            fields=["position"] * len(draft_lens),
        )
        if curve is not None:
            curves.append(curve)

    summary = ""
    if curves:
        n_pos = max(len(cv.conditional_rates or ()) for cv in curves)
        summary = (
            f"{len(curves)} per-position acceptance curve{'s' if len(curves) != 1 else ''} "
            f"(up to {n_pos} positions) from {name}"
        )
    return finish(FORMAT, summary, col, curves=curves)

"""Plain CSV of acceptance length AL against draft length D.

Source checked: no upstream tool owns this layout; it is this project's own, chosen to match
the shared reference data (shared/reference/al_curves.csv: columns source, model_target,
drafter, mechanism, dataset, D, AL, temperature), so that file and its subsets load as they
are. Columns (case and spacing ignored): D (or draft_len, k, num_speculative_tokens), AL (or
acceptance_length, accept_length, acc_length), optional mechanism, dataset (or category),
model (or model_target), temperature, drafter, source, draft_style, max_supported_draft_len,
al_std_error (the standard error of AL at that D, from the run's counts or per-request values:
the measured points then carry an interval; a curve uses it only where every row gives one).
Other columns are ignored.
One curve per (mechanism, dataset, model, temperature, drafter).
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from explorer.base.limits import MAX_MEASURED_DRAFT_LEN
from explorer.base.quoting import quote
from explorer.measured._csv import Table, find_column, parse_numbers, read_csv
from explorer.measured._curve_groups import (
    curve_groups,
)
from explorer.measured._curves import (
    build_curve,
    report_al_bounds,
)
from explorer.measured._mechanisms import (
    parse_draft_style,
)
from explorer.measured._problems import Collector, finish
from explorer.specs.measured import AcceptanceCurve, ParseResult

FORMAT = "al_curve_csv"

D_ALIASES = ("d", "draft_len", "draft_length", "k", "num_speculative_tokens", "num_spec_tokens")
AL_ALIASES = (
    "al",
    "acceptance_length",
    "accept_length",
    "acc_length",
    "mean_accept_length",
    "mean_acceptance_length",
)
STYLE_ALIASES = ("draft_style",)
MAX_K_ALIASES = ("max_supported_draft_len", "max_supported_k")
STD_ERROR_ALIASES = ("al_std_error", "al_stderr", "al_se", "std_error")


def missing_columns_message(what: str, aliases: tuple[str, ...], tab: Table) -> str:
    return (
        f"no {what} column: expected one of {', '.join(aliases)}; "
        f"the header has {', '.join(tab.headers)}"
    )


def parse_text(name: str, text: str) -> ParseResult:
    col = Collector()
    tab = read_csv(text, col)
    if tab is None:
        return finish(FORMAT, "", col)
    h = tab.headers
    d_col, al_col = find_column(h, D_ALIASES), find_column(h, AL_ALIASES)
    if d_col is None:
        col.error(missing_columns_message("draft length", D_ALIASES, tab), field="D")
    if al_col is None:
        col.error(missing_columns_message("acceptance length", AL_ALIASES, tab), field="AL")
    if d_col is None or al_col is None:
        return finish(FORMAT, "", col)

    d = parse_numbers(tab, d_col, col, integer=True, minimum=1, maximum=MAX_MEASURED_DRAFT_LEN,
                      what="draft length D")
    al = parse_numbers(tab, al_col, col, what="acceptance length AL")
    style_col = find_column(h, STYLE_ALIASES)
    max_col = find_column(h, MAX_K_ALIASES)
    max_k = (
        parse_numbers(
            tab,
            max_col,
            col,
            integer=True,
            minimum=1,
            required=False,
            what="max supported draft length",
        )
        if max_col is not None
        else None
    )
    se_col = find_column(h, STD_ERROR_ALIASES)
    se = (parse_numbers(tab, se_col, col, minimum=0, required=False,
                        what="standard error of AL") if se_col is not None else None)
    styles_raw = tab.text(style_col)
    groups = curve_groups(tab, col, name, FORMAT)
    if groups is None:
        return finish(FORMAT, "", col)
    curves: list[AcceptanceCurve] = []
    for group in groups:
        idx, label, row0 = group.rows, group.label, group.first_row
        usable = [i for i in idx if d.valid[i] and al.valid[i]]
        usable.sort(key=lambda i: (d.values[i], tab.rows[i]))
        dup = False
        for a, b in pairwise(usable):
            if d.values[a] == d.values[b]:
                col.error(
                    f"{label}: D={int(d.values[a])} appears twice (rows {tab.rows[a]} and "
                    f"{tab.rows[b]}); add a model/drafter/dataset column to tell them apart",
                    int(tab.rows[b]),
                    d_col,
                )
                dup = True
        if dup or not usable or len(usable) != len(idx):
            # refused already; its readable rows' AL bounds are named now, not after a fix
            report_al_bounds(col, label, [int(d.values[i]) for i in usable],
                             [float(al.values[i]) for i in usable],
                             [int(tab.rows[i]) for i in usable], [al_col] * len(usable))
            continue
        style = group.inferred_style
        if style_col is not None:
            given = next((styles_raw[i] for i in idx if styles_raw[i]), "")
            parsed, known_style = parse_draft_style(given)
            if not known_style:
                col.error(f"draft_style {quote(given)} is not chain, block or tree", row0,
                          style_col)
            elif given:
                style = parsed
        max_supported = None
        if max_k is not None:
            vals = [int(max_k.values[i]) for i in idx if max_k.valid[i]]
            max_supported = max(vals) if vals else None
        std_errors = None
        if se is not None:
            with_se = [i for i in usable if se.valid[i]]
            if len(with_se) == len(usable):
                std_errors = [float(se.values[i]) for i in usable]
            elif with_se:
                col.warn(f"{label}: {se_col} is given for {len(with_se)} of {len(usable)} rows; "
                         "the curve's measured points carry no interval", row0, se_col)
        curve = build_curve(
            col,
            label=label,
            mechanism=group.mechanism,
            draft_style=style,
            draft_lens=[int(d.values[i]) for i in usable],
            als=[float(al.values[i]) for i in usable],
            provenance=group.provenance,
            max_supported=max_supported,
            rows=[int(tab.rows[i]) for i in usable],
            fields=[al_col] * len(usable),
            std_errors=std_errors,
        )
        if curve is not None:
            curves.append(curve)

    summary = ""
    if curves:
        dl = np.concatenate([np.asarray(c.draft_lens) for c in curves])
        mech_names = sorted({c.mechanism or "unknown" for c in curves})
        summary = (
            f"{len(curves)} AL curve{'s' if len(curves) != 1 else ''} "
            f"({', '.join(mech_names)}), D {int(dl.min())}-{int(dl.max())}, from {name}"
        )
    return finish(FORMAT, summary, col, curves=curves)

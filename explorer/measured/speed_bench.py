"""AIPerf SPEED-Bench report CSV (``aiperf speed-bench-report``, speed_bench_report.csv).

Source checked: ai-dynamo/aiperf src/aiperf/dataset/loader/speed_bench_report.py
@4b90184ed318 (write_csv: header ["Model", *columns, "Overall"], one row per model, values
formatted "%.2f", empty cell for a missing run, Overall = mean of the row's values; columns are
the SPEED-Bench qualitative categories coding, humanities, math, multilingual, qa, rag,
reasoning, roleplay, stem, summarization, writing, or the throughput tiers low_entropy, mixed,
high_entropy, or other dataset names) and docs/tutorials/speed-bench.md @354eab7d.

The CSV does not say which metric it holds (--metric accept_length | accept_rate |
throughput) nor the draft length the server ran with. Values <= 1 are rejected as acceptance
rates, large ones as throughput. The draft length comes from a D (or draft_len,
num_speculative_tokens) column, this project's addition, or from the file name
(speed_bench_report_D3.csv, ..._k3.csv).
"""

from __future__ import annotations

import math
import re

import numpy as np

from explorer.base.limits import MAX_CATEGORIES, MAX_MEASURED_DRAFT_LEN
from explorer.measured._bounds import over_cap
from explorer.measured._csv import find_column, normalize_name, parse_numbers, read_csv
from explorer.measured._curve_groups import MECHANISM_ALIASES
from explorer.measured._curves import build_curve, too_many_curves
from explorer.measured._mechanisms import normalize_mechanism, unknown_mechanism_message
from explorer.measured._problems import Collector, finish
from explorer.measured.al_csv import D_ALIASES
from explorer.specs.measured import AcceptanceCurve, ParseResult, Provenance

FORMAT = "speed_bench_report"
_NAME_D = re.compile(
    r"(?:^|[^a-z0-9])(?:d|k|draft_len|num_speculative_tokens)[=_-]?(\d{1,3})"
    r"(?=$|[^0-9])",
    re.IGNORECASE,
)


def looks_like(headers: list[str]) -> bool:
    norm = [normalize_name(h) for h in headers]
    return bool(norm) and norm[0] == "model" and "overall" in norm


def draft_len_from_name(name: str) -> int | None:
    stem = name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    m = _NAME_D.search(stem)
    return int(m.group(1)) if m else None


def parse_text(name: str, text: str) -> ParseResult:
    col = Collector()
    tab = read_csv(text, col)
    if tab is None:
        return finish(FORMAT, "", col)
    h = list(tab.headers)
    model_col = find_column(h, ("model",))
    overall_col = find_column(h, ("overall",))
    d_col = find_column(h, D_ALIASES)
    mech_col = find_column(h, MECHANISM_ALIASES)
    if model_col is None:
        col.error("no Model column (aiperf speed-bench-report writes Model first)", field="Model")
        return finish(FORMAT, "", col)
    value_cols = [c for c in h if c not in (model_col, d_col, mech_col)]
    cat_cols = [c for c in value_cols if c != overall_col]
    if not cat_cols:
        col.error("no category columns between Model and Overall")
        return finish(FORMAT, "", col)
    if len(cat_cols) > MAX_CATEGORIES:
        over_cap(col, "the report", len(cat_cols), MAX_CATEGORIES, "categories",
                 "MAX_CATEGORIES")
        return finish(FORMAT, "", col)
    # Each (row, category) cell is one single-point curve: refuse before building them.
    if too_many_curves(col, len(tab.df) * len(value_cols),
                       "cells (rows x categories with Overall), each one AL point"):
        return finish(FORMAT, "", col)

    d_from_name = draft_len_from_name(name)
    d_vals = (
        parse_numbers(tab, d_col, col, integer=True, minimum=1, maximum=MAX_MEASURED_DRAFT_LEN,
                      what="draft length D")
        if d_col is not None
        else None
    )
    if d_col is None and d_from_name is None:
        col.error(
            "the report does not say which draft length the server ran with: add a column D "
            "(num_speculative_tokens) or put it in the file name, e.g. "
            "speed_bench_report_D3.csv",
            field="D",
        )
    values = {
        c: parse_numbers(tab, c, col, required=False, what="acceptance length") for c in value_cols
    }
    allv = np.concatenate([values[c].values[values[c].valid] for c in value_cols])
    if allv.size and float(allv.max()) <= 1.0:
        col.error(
            "every value is <= 1: this looks like an acceptance-rate report "
            "(--metric accept_rate); export the acceptance-length report "
            "(--metric accept_length)",
            field=cat_cols[0],
        )
    elif allv.size and float(np.median(allv)) > 20.0:
        col.error(
            "values look like throughput in tokens/s (--metric throughput), not acceptance "
            "lengths; export the acceptance-length report (--metric accept_length)",
            field=cat_cols[0],
        )
    if col.has_errors:
        return finish(FORMAT, "", col)

    models = tab.text(model_col)
    mech_text = tab.text(mech_col)
    curves: list[AcceptanceCurve] = []
    for i in range(len(tab.df)):
        row = int(tab.rows[i])
        if d_vals is not None:
            if not d_vals.valid[i]:
                continue
            d = int(d_vals.values[i])
        else:
            assert d_from_name is not None
            d = d_from_name
        mech, style, known = normalize_mechanism(mech_text[i])
        if not known:
            col.error(unknown_mechanism_message(mech_text[i]), row, mech_col)
            continue
        model = models[i] or None
        present = [float(values[c].values[i]) for c in cat_cols if values[c].valid[i]]
        if overall_col is not None and values[overall_col].valid[i] and present:
            overall = float(values[overall_col].values[i])
            mean = sum(present) / len(present)
            if abs(overall - mean) > 0.011:
                col.warn(
                    f"Overall {overall:g} is not the mean of the row's categories ({mean:.4g})",
                    row,
                    overall_col,
                )
        for c in value_cols:
            if not values[c].valid[i]:
                continue
            dataset = "Overall (mean of categories)" if c == overall_col else c
            curve = build_curve(
                col,
                label=f"SPEED-Bench {dataset} · {model or 'model ?'} · D={d}",
                mechanism=mech,
                draft_style=style,
                draft_lens=[d],
                als=[float(values[c].values[i])],
                provenance=Provenance(
                    file=name,
                    source="aiperf speed-bench-report",
                    model=model,
                    dataset=dataset,
                    format=FORMAT,
                ),
                rows=[row],
                fields=[c],
            )
            if curve is not None:
                curves.append(curve)
    if not curves and not col.has_errors:
        col.error("the report holds no values")
    n_models = len({c.provenance.model for c in curves if c.provenance is not None})
    summary = (
        f"SPEED-Bench report: {n_models} model{'s' if n_models != 1 else ''}, "
        f"{len(cat_cols)} categor{'ies' if len(cat_cols) != 1 else 'y'}, "
        f"{len(curves)} single-D AL points from {name}"
    )
    if curves and math.isfinite(curves[0].acceptance_lengths[0]):
        summary += f" (D={curves[0].draft_lens[0]})"
    return finish(FORMAT, summary, col, curves=curves)

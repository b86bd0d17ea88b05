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

from collections import defaultdict
from itertools import pairwise

import numpy as np

from explorer.base.limits import MAX_MEASURED_DRAFT_LEN
from explorer.base.quoting import quote
from explorer.measured._csv import Table, find_column, parse_numbers, parse_temperature, read_csv
from explorer.measured._curves import (
    build_curve,
    group_provenance,
    join_nonempty,
    too_many_curves,
)
from explorer.measured._mechanisms import (
    normalize_mechanism,
    parse_draft_style,
    unknown_mechanism_message,
)
from explorer.measured._problems import Collector, finish
from explorer.specs.measured import AcceptanceCurve, DraftStyle, Mechanism, ParseResult

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
MECHANISM_ALIASES = ("mechanism", "method", "algorithm", "speculative_algorithm")
DATASET_ALIASES = ("dataset", "category", "task", "benchmark")
MODEL_ALIASES = ("model", "model_target", "target_model", "target")
DRAFTER_ALIASES = ("drafter", "draft_model", "speculator")
SOURCE_ALIASES = ("source", "reference", "citation")
TEMPERATURE_ALIASES = ("temperature", "temp")
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
    mech_col = find_column(h, MECHANISM_ALIASES)
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
    mech_raw = tab.text(mech_col)
    datasets = tab.text(find_column(h, DATASET_ALIASES))
    models = tab.text(find_column(h, MODEL_ALIASES))
    drafters = tab.text(find_column(h, DRAFTER_ALIASES))
    sources = tab.text(find_column(h, SOURCE_ALIASES))
    temp_col = find_column(h, TEMPERATURE_ALIASES)
    temps_raw = tab.text(temp_col)
    styles_raw = tab.text(style_col)

    mechs: list[Mechanism | None] = []
    inferred: list[DraftStyle | None] = []
    for i, raw in enumerate(mech_raw):
        mech, style, known = normalize_mechanism(raw)
        if not known:
            col.error(unknown_mechanism_message(raw), int(tab.rows[i]), mech_col)
        mechs.append(mech)
        inferred.append(style)

    groups: dict[tuple[str, str, str, str, str], list[int]] = defaultdict(list)
    for i in range(len(tab.df)):
        key = (mechs[i] or mech_raw[i], datasets[i], models[i], temps_raw[i], drafters[i])
        groups[key].append(i)

    curves: list[AcceptanceCurve] = []
    if too_many_curves(col, len(groups), "curves (distinct mechanism, dataset, model, "
                       "temperature, drafter)"):
        return finish(FORMAT, "", col)
    for key, idx in groups.items():
        mech_name, dataset, model, temp_raw, drafter = key
        first = idx[0]
        row0 = int(tab.rows[first])
        temperature = parse_temperature(temp_raw, col, row0, temp_col)
        label = join_nonempty(
            [
                mech_name or "mechanism ?",
                dataset,
                model,
                drafter,
                f"T={temperature:g}" if temperature is not None else None,
            ]
        )
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
            continue
        style = inferred[first]
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
        prov = group_provenance(name, (sources[i] for i in idx), model, dataset, temperature,
                                FORMAT, drafter)
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
            mechanism=mechs[first],
            draft_style=style,
            draft_lens=[int(d.values[i]) for i in usable],
            als=[float(al.values[i]) for i in usable],
            provenance=prov,
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

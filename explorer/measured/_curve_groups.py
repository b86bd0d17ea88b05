"""The rows of a long CSV of AL data (AL CSV, per-position CSV) grouped into curves: one curve per
(mechanism, dataset, model, temperature, drafter), with its label, mechanism and provenance."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from explorer.measured._csv import Table, find_column, parse_temperature
from explorer.measured._curves import group_provenance, join_nonempty, too_many_curves
from explorer.measured._mechanisms import normalize_mechanism, unknown_mechanism_message
from explorer.measured._problems import Collector
from explorer.specs.measured import DraftStyle, Mechanism, Provenance

MECHANISM_ALIASES = ("mechanism", "method", "algorithm", "speculative_algorithm")
DATASET_ALIASES = ("dataset", "category", "task", "benchmark")
MODEL_ALIASES = ("model", "model_target", "target_model", "target")
DRAFTER_ALIASES = ("drafter", "draft_model", "speculator")
SOURCE_ALIASES = ("source", "reference", "citation")
TEMPERATURE_ALIASES = ("temperature", "temp")


@dataclass(frozen=True)
class CurveGroup:
    """The rows of one curve (indices into the table) and what they say about it."""

    rows: list[int]
    label: str
    mechanism: Mechanism | None
    inferred_style: DraftStyle | None  # the draft style the mechanism's name implies
    first_row: int  # 1-based data row number of the group's first row
    provenance: Provenance


def curve_groups(tab: Table, col: Collector, name: str, fmt: str) -> list[CurveGroup] | None:
    """The table's rows grouped into curves; None (with the problem listed) when the file holds
    more curves than one file may. Unknown mechanisms are listed by row."""
    h = tab.headers
    mech_col = find_column(h, MECHANISM_ALIASES)
    mech_raw = tab.text(mech_col)
    datasets = tab.text(find_column(h, DATASET_ALIASES))
    models = tab.text(find_column(h, MODEL_ALIASES))
    drafters = tab.text(find_column(h, DRAFTER_ALIASES))
    sources = tab.text(find_column(h, SOURCE_ALIASES))
    temp_col = find_column(h, TEMPERATURE_ALIASES)
    temps_raw = tab.text(temp_col)

    mechs: list[Mechanism | None] = []
    styles: list[DraftStyle | None] = []
    for i, raw in enumerate(mech_raw):
        mech, style, known = normalize_mechanism(raw)
        if not known:
            col.error(unknown_mechanism_message(raw), int(tab.rows[i]), mech_col)
        mechs.append(mech)
        styles.append(style)

    keyed: dict[tuple[str, str, str, str, str], list[int]] = defaultdict(list)
    for i in range(len(tab.df)):
        key = (mechs[i] or mech_raw[i], datasets[i], models[i], temps_raw[i], drafters[i])
        keyed[key].append(i)
    if too_many_curves(col, len(keyed), "curves (distinct mechanism, dataset, model, "
                       "temperature, drafter)"):
        return None
    out = []
    for (mech_name, dataset, model, temp_raw, drafter), idx in keyed.items():
        first = idx[0]
        row0 = int(tab.rows[first])
        temperature = parse_temperature(temp_raw, col, row0, temp_col)
        label = join_nonempty([mech_name or "mechanism ?", dataset, model, drafter,
                               f"T={temperature:g}" if temperature is not None else None])
        out.append(CurveGroup(
            rows=idx, label=label, mechanism=mechs[first], inferred_style=styles[first],
            first_row=row0,
            provenance=group_provenance(name, (sources[i] for i in idx), model, dataset,
                                        temperature, fmt, drafter)))
    return out

"""Compare: two to four scenarios side by side — saved ones or the current one pinned."""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from explorer.analysis.evaluate import Evaluation, evaluate
from explorer.analysis.targets import operating_point
from explorer.base.errors import ScenarioError
from explorer.interfaces.store import (
    ScenarioSummary,
    StoreDamaged,
    StoredScenario,
    StoreError,
    UnreadableScenario,
    default_store,
    parse_id,
)
from explorer.interfaces.view_state import decode_view
from explorer.specs.scenario import Scenario
from explorer.ui import chart_view
from explorer.ui import compare_figures as cf
from explorer.ui.text import md_text

PINS = "_compare_pins"  # list[CompareItem] pinned in this session
SAVED = "_compare_saved"  # id → StoredScenario added in this session
SELECTION = "compare_selection"
KEPT = "_compare_kept"  # the selection, kept while another page is shown
MESSAGE = "_compare_message"
MAX_ITEMS = 4
MAX_PINS = 8


@dataclass(frozen=True)
class CompareItem:
    key: str  # "pin:1" or "saved:<id>"
    title: str  # shown as text (user-provided names included)
    scenario: Scenario
    view: dict[str, Any]


def _describe(sc: Scenario) -> str:
    return f"{sc.mechanism} · {sc.model} on {sc.hardware} ×{sc.tp} · B={sc.batch} D={sc.draft_len}"


def item_of_record(record: StoredScenario) -> CompareItem:
    # The stored view through the link's validation (a tampered `slo: "abc"` falls back to its
    # default, as `?s=` does), never read raw.
    return CompareItem(f"saved:{record.id}", f"{record.name or _describe(record.scenario)} "
                       f"(?s={record.id[:8]}…)", record.scenario,
                       dict(decode_view(record.view).values))


def _flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """Scenario inputs as field → short text; measured curves and tables summarised."""
    if isinstance(value, dict):
        if "draft_lens" in value and "acceptance_lengths" in value:  # a measured AL curve
            pairs = ", ".join(f"{d}:{a:g}" for d, a in zip(value["draft_lens"],
                                                           value["acceptance_lengths"],
                                                           strict=False))
            return {prefix: f"{value.get('label', '')} [{pairs[:120]}]"}
        if "time_s" in value or "step_time_s" in value:  # a measured table
            rows = len(value.get("time_s") or value.get("step_time_s") or ())
            return {prefix: f"{rows} measured rows" + (f" ({value['source']})"
                                                       if value.get("source") else "")}
        out: dict[str, str] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: "—" if value is None else str(value)}


def differing_inputs(items: Sequence[CompareItem]) -> pd.DataFrame:
    """The inputs that differ between the items (rows) by item (columns)."""
    flats = []
    for it in items:
        flat = _flatten(it.scenario.model_dump(mode="json"))
        flat["target: SLO (tokens/s per user)"] = str(it.view.get("slo", "—"))
        flat["target: GPU price ($/h)"] = str(it.view.get("usd", "—"))
        flats.append(flat)
    fields = list(dict.fromkeys(k for f in flats for k in f))
    rows = {k: [f.get(k, "—") for f in flats] for k in fields}
    differing = {k: v for k, v in rows.items() if len(set(v)) > 1}
    return pd.DataFrame.from_dict(differing, orient="index",
                                  columns=[_letter(i) for i in range(len(items))])


# The inputs a legend names by symbol (the rest by their field path).
SHORT_NAMES = {"mechanism": "", "draft_len": "D", "batch": "B", "context": "S", "group": "G",
               "tp": "TP", "hardware": "", "model": "", "engine": "", "dtype": "weights",
               "kv_dtype": "KV", "draft_model": "draft"}


def legend_labels(diff: pd.DataFrame, n: int, most: int = 3) -> list[str]:
    """Each scenario's chart label: its letter and the inputs that tell it apart (the
    mechanism first), e.g. "A: eagle3, D=3" — a letter alone made the reader look it up."""
    order = sorted(diff.index, key=lambda k: (k != "mechanism", k != "draft_len", k))[:most]
    out = []
    for i in range(n):
        parts = []
        for k in order:
            v = str(diff.iloc[:, i][k])[:24]
            short = SHORT_NAMES.get(k, k)
            parts.append(v if short == "" else f"{short}={v}")
        out.append(f"{_letter(i)}: {', '.join(parts)}" if parts else _letter(i))
    return out


def _letter(i: int) -> str:
    return string.ascii_uppercase[i]


@st.cache_data(max_entries=32, show_spinner=False)
def _compute(js: str, label: str) -> tuple[Evaluation, cf.CompareSeries]:
    sc = Scenario.model_validate_json(js)
    ev = evaluate(sc)
    return ev, cf.compare_series(label, sc, operating_point(ev))


def _pins() -> list[CompareItem]:
    return st.session_state.setdefault(PINS, [])  # type: ignore[no-any-return]


def _saved() -> dict[str, StoredScenario]:
    return st.session_state.setdefault(SAVED, {})  # type: ignore[no-any-return]


def _select(key: str) -> None:
    chosen = list(st.session_state.get(SELECTION) or st.session_state.get(KEPT) or [])
    if key not in chosen:
        chosen.append(key)
    st.session_state[SELECTION] = chosen[-MAX_ITEMS:]


def _pin(scenario: Callable[[], Scenario | None], values: dict[str, Any]) -> None:
    sc = scenario()
    if sc is None:
        st.session_state[MESSAGE] = "The current scenario cannot be evaluated; nothing pinned."
        return
    pins = _pins()
    n = int(pins[-1].key.split(":")[1]) + 1 if pins else 1
    pins.append(CompareItem(f"pin:{n}", f"Pinned {n}: {_describe(sc)}", sc, dict(values)))
    del pins[:-MAX_PINS]
    st.session_state[MESSAGE] = None
    _select(f"pin:{n}")


def _add_saved() -> None:
    text = st.session_state.get("compare_add_id") or ""
    try:
        record = default_store().get(parse_id(text))
    except StoreError as exc:
        st.session_state[MESSAGE] = exc.message
        return
    _saved()[record.id] = record
    st.session_state[MESSAGE] = None
    st.session_state["compare_add_id"] = ""
    _select(f"saved:{record.id}")


def _recent() -> list[ScenarioSummary]:
    """The recent saved scenarios to choose from; those that cannot be read are named with
    why (as text: the reason may quote a tampered record), and a damaged store is said so."""
    store = default_store()
    try:
        listed = store.list(limit=20)
    except StoreDamaged as exc:
        st.error(md_text(exc.message), icon=":material/database:")
        return []
    except StoreError as exc:
        st.caption(md_text(f"Saved scenarios are not available: {exc.message}"))
        return []
    if store.damage:
        st.error(md_text(f"The scenario store is damaged ({store.damage}); saving is stopped "
                         "until it is repaired."), icon=":material/database:")
    unreadable = [r for r in listed if isinstance(r, UnreadableScenario)]
    if unreadable:
        with st.expander(f"{len(unreadable)} recent saved scenario(s) cannot be read",
                         icon=":material/warning:"):
            for r in unreadable:
                st.text(f"?s={r.id}: {r.reason}")
    return [r for r in listed if isinstance(r, ScenarioSummary)]


# The sidebar holds the Explorer's current scenario, which this page compares only once
# pinned: its controls are hidden here (kept rendered, so their values survive the visit), the
# page navigation stays.
HIDE_SIDEBAR_CONTROLS = ("<style>[data-testid='stSidebarUserContent']{display:none}</style>")


def render(scenario: Callable[[], Scenario | None], values: dict[str, Any]) -> None:
    st.html(HIDE_SIDEBAR_CONTROLS)
    st.title("Compare scenarios")
    st.caption("Two to four scenarios side by side: saved ones (by id or link) or the current "
               "one pinned. The table lists only the inputs that differ; the charts overlay "
               "speedup, Pareto frontier and AL.")
    left, right = st.columns([2, 3], vertical_alignment="bottom")
    left.button("Pin the current scenario", key="compare_pin", icon=":material/push_pin:",
                on_click=_pin, args=(scenario, values),
                help="Adds the Explorer's scenario (with its uploaded data) to the choices")
    left.caption("Current (the Explorer's sidebar, hidden here): " + md_text(
        f"{values.get('mech')} · {values.get('m')} on {values.get('hw')} ×{values.get('tp')} · "
        f"B={values.get('b')} D={values.get('d')}"))
    with right:
        c1, c2 = st.columns([4, 1], vertical_alignment="bottom")
        c1.text_input("Add a saved scenario (id or ?s= link)", key="compare_add_id",
                      max_chars=300)
        c2.button("Add", key="compare_add", on_click=_add_saved)
    msg = st.session_state.get(MESSAGE)
    if msg:
        st.error(md_text(msg), icon=":material/error:")  # quotes what the user typed

    items: dict[str, CompareItem] = {it.key: it for it in _pins()}
    items.update({f"saved:{sid}": item_of_record(r) for sid, r in _saved().items()})
    recent = _recent()
    recent_keys = {f"saved:{r.id}": r for r in recent if f"saved:{r.id}" not in items}
    titles = {k: it.title for k, it in items.items()}
    titles.update({k: f"{r.name or '(unnamed)'} (?s={r.id[:8]}…, saved "
                      f"{r.created_at:%Y-%m-%d %H:%M})" for k, r in recent_keys.items()})
    if SELECTION not in st.session_state and KEPT in st.session_state:
        # The choice outlives a visit to another page (the sidebar is edited on the Explorer:
        # a widget's own state is dropped while its page is not shown).
        st.session_state[SELECTION] = list(st.session_state[KEPT])
    if SELECTION in st.session_state:
        st.session_state[SELECTION] = [k for k in st.session_state[SELECTION] if k in titles]
    chosen: list[str] = st.multiselect(
        "Scenarios to compare (two to four)", list(titles), key=SELECTION,
        max_selections=MAX_ITEMS, format_func=lambda k: titles.get(k, k))
    st.session_state[KEPT] = list(chosen)
    for k in chosen:
        if k not in items:  # a recent saved one: load it now
            try:
                record = default_store().get(k.removeprefix("saved:"))
            except StoreError as exc:
                st.error(md_text(exc.message))
                continue
            _saved()[record.id] = record
            items[k] = item_of_record(record)
    selected = [items[k] for k in chosen if k in items]
    if len(selected) < 2:
        st.info("Pick two to four scenarios: pin the current one (change the sidebar and pin "
                "again), add a saved one by its link, or choose from the recent saved ones.",
                icon=":material/compare:")
        return
    _comparison(selected)


def _comparison(selected: list[CompareItem]) -> None:
    evaluated: list[tuple[CompareItem, Evaluation, cf.CompareSeries]] = []
    labels = legend_labels(differing_inputs(selected), len(selected))
    for i, it in enumerate(selected):
        label = labels[i]
        try:
            ev, one = _compute(it.scenario.model_dump_json(), label)
        except (ScenarioError, ValueError) as exc:
            st.error(md_text(f"{label} cannot be evaluated: {exc}"))
            continue
        evaluated.append((it, ev, one))
    st.subheader("The scenarios")
    for i, (it, _, _) in enumerate(evaluated):
        st.text(f"{_letter(i)}: {it.title}")
    if len(evaluated) < 2:
        return
    items = [it for it, _, _ in evaluated]
    diff = differing_inputs(items)
    st.subheader("Inputs that differ")
    if diff.empty:
        st.caption("None: the inputs are identical.")
    else:
        st.dataframe(diff, key="compare_diff")

    def fmt(x: float | None, spec: str) -> str:
        return "n/a" if x is None or not np.isfinite(x) else format(x, spec)

    st.subheader("Results")
    results = pd.DataFrame({
        _letter(i): {
            "speedup (×)": fmt(ev.speedup, ".2f"),
            "acceptance length": fmt(ev.acceptance_length, ".2f"),
            "tokens/s per user": fmt(ev.tokens_per_s_per_user, ",.1f"),
            "tokens/s per GPU": fmt(ev.tokens_per_s_per_gpu, ",.0f"),
            "tokens/s per GPU without spec": fmt(ev.baseline_tokens_per_s_per_gpu, ",.0f"),
            "memory per GPU (GB)": f"{ev.memory_bytes / 1e9:,.0f} / {ev.hbm_bytes / 1e9:,.0f}",
            "fits in memory": "yes" if ev.fits_in_memory else "no",
        } for i, (_, ev, _) in enumerate(evaluated)})
    st.dataframe(results, key="compare_results")
    series = [s for _, _, s in evaluated]
    slos = {float(it.view.get("slo") or 0) for it in items}
    slo = slos.pop() if len(slos) == 1 else None
    tabs = st.tabs(["Speedup", "Pareto", "AL vs D"])
    with tabs[0]:
        chart_view.show(cf.speedup_overlay(series), key="fig_cmp_speedup")
    with tabs[1]:
        chart_view.show(cf.pareto_overlay(series, slo or None), key="fig_cmp_pareto")
    with tabs[2]:
        chart_view.show(cf.al_overlay(series), key="fig_cmp_al")

"""Sidebar controls: one widget per declared setting (explorer/specs/settings.py), each bound to
its URL key (explorer/interfaces/view_state.py). What stays here is presentation: which preset
slugs a select offers, how a value reads, the captions under a choice."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from explorer.interfaces import view_state as us
from explorer.presets import hardware_presets, model_presets, sample_curves
from explorer.specs.hardware import HARDWARE_GROUPS
from explorer.specs.settings import SETTINGS, Setting
from explorer.ui import model_upload
from explorer.ui.text import md_text

WARNINGS_KEY = "_url_warnings"
RESETS_KEY = "_url_resets"  # link values that fell back, set again on the second run
DRAWN_KEY = "_sidebar_drawn"  # the widgets exist (not before a first paint's report: first_paint)
OVERRIDES_OPEN_KEY = "overrides_open"  # the preset overrides' expander (open: its widgets drawn)
# What the sidebar said when it changed a choice the others rule out: said again in the run
# that follows (the Explorer lays its page out again where the sidebar changed a value it had
# drawn for, explorer_page.render), where the choice is already changed.
FALLBACK_NOTES = "_sidebar_fallback_notes"  # a draft model only matters for the external mechanism


def check_url_once() -> None:
    """Validate the link on the session's first run; bad parameters fall back to defaults."""
    # the resets are for the run after the widgets' first (a first paint draws none)
    resets = st.session_state.pop(RESETS_KEY, None) if st.session_state.get(DRAWN_KEY) else None
    if resets:
        st.session_state.update(resets)
        return
    if WARNINGS_KEY in st.session_state:
        return
    raw = {k: st.query_params.get_all(k) for k in st.query_params}
    view = us.decode(raw)
    st.session_state[WARNINGS_KEY] = list(view.warnings)
    # Widgets the sidebar links itself (shown by name, linked by slug) take the link's value here.
    st.session_state.update({s.key: view.values[s.key] for s in SETTINGS
                             if us.shown_by_name(s)
                             and (s.key in raw or s.key in view.respelled)  # an old link's too
                             and s.key not in view.fell_back})
    resets = {key: view.values[key] for key in view.fell_back}
    st.session_state.update(resets)  # a bound widget ignores a bad value: start at the default
    if view.respelled or view.upgraded:
        # A bound widget reads the link's text itself, from the query string of the run: it
        # drops text it cannot read (`L=07`, repeats; Streamlit takes the last) or reads it
        # otherwise. So before any widget binds, the link is rewritten as decoded (plain
        # spelling, bad values gone) and the page runs again: widgets, URL and view agree.
        for key in view.respelled:
            st.query_params[key] = us.spelled(view.values[key])
        if view.upgraded:
            st.query_params[us.VERSION_KEY] = us.URL_VERSION
        for key in view.fell_back:
            if key in st.query_params:
                del st.query_params[key]
        st.rerun()
    # …but on its first run a widget takes a value it can show from the link (W=4 that D=7
    # rules out), whatever the session says; from the second run on, the session's value wins.
    if any(key in st.query_params and not us.shown_by_name(us.PARAM_BY_KEY[key].setting)
           for key in resets):
        st.session_state[RESETS_KEY] = resets


def show_url_warnings() -> None:
    for w in st.session_state.get(WARNINGS_KEY, []):  # quotes what the link says: as text
        st.warning(md_text(w), icon=":material/warning:")


def reset_overrides() -> None:
    for s in SETTINGS:
        if s.overrides_preset:
            st.session_state[s.key] = s.default


def _options(s: Setting, v: dict[str, Any]) -> list[Any]:
    """The choices the widget offers now (preset tables filtered to what fits the others);
    GPUs in their selector groups' order (a selectbox cannot group, so the label says it)."""
    options = us.offered(s, v)
    if s.presets == "hardware":
        hw = hardware_presets()
        rank = {g: i for i, g in enumerate(HARDWARE_GROUPS)}
        options.sort(key=lambda o: rank.get(getattr(hw.get(o), "group", ""), len(rank)))
    return options


def _group_label(s: Setting, option: Any, label: str) -> str:
    """'NVIDIA datacenter · H200 SXM': a GPU's selector group before its name."""
    group = getattr(hardware_presets().get(option), "group", "") if s.presets == "hardware" else ""
    return f"{group} · {label}" if group else label


def _preset_value(s: Setting, v: dict[str, Any]) -> str:
    """The number a "no override" choice stands for, where the page knows it."""
    model = model_presets()[v["m"]]
    return {"g": f"{model.group_size:g}", "L": str(model.layers)}.get(s.key, "")


def _format(s: Setting, v: dict[str, Any]) -> Callable[[Any], str]:
    preset = _preset_value(s, v) if s.none_value is not None and "m" in v else ""
    none = f"{s.none_label} ({preset})" if preset else s.none_label

    def fmt(x: Any) -> str:
        if s.none_value is not None and x == s.none_value:
            return none
        return f"{x:g}" if isinstance(x, float) else str(x)
    return fmt


def _caption(s: Setting, value: Any) -> str | None:
    if s.key == "curve" and value:
        return str(sample_curves()[value].source_text[:200])
    return None


def link(s: Setting, value: Any) -> None:
    """Write a setting's value into the link where it differs (a write sends the whole query
    string as this run read it: never more often than the value changes)."""
    text = us.linked_value(s, value)
    if text is None:
        if s.key in st.query_params:
            del st.query_params[s.key]
    elif st.query_params.get(s.key) != text:
        st.query_params[s.key] = text


def _widget(s: Setting, v: dict[str, Any], carried: dict[str, str],
            sb: DeltaGenerator) -> Any:
    """The setting's widget in `sb` (the sidebar, or a section of it)."""
    # A bound widget writes its *displayed* option into the URL: its options are the raw values.
    # Preset choices are shown by name instead, and linked by slug here (`link`).
    named = us.shown_by_name(s)
    common: dict[str, Any] = {"key": s.key, "help": s.help}
    if not named:
        common["bind"] = "query-params"
    # A value the session holds already (a link, Apply, a saved scenario set it) wins over a
    # default; passing one beside it makes Streamlit log that the widget had both.
    held = s.key in st.session_state
    if s.kind == "slider":
        lo, hi = s.view_range or (0, 0)
        if s.value_type is int:
            return sb.slider(s.label, int(lo), int(hi), None if held else int(s.default),
                             int(s.step or 1), **common)
        return sb.slider(s.label, float(lo), float(hi), None if held else float(s.default),
                         float(s.step or 1), **common)
    if s.kind == "number":
        lo, hi = s.view_range or (0.0, 0.0)
        return sb.number_input(s.label, float(lo), float(hi), float(s.default),
                               float(s.step or 1), **common)
    options = _options(s, v)
    current = st.session_state.get(s.key, s.default)
    if current not in options:  # choices follow other settings
        if s.options_of is not None:  # an engine the chosen GPU does not run: say so
            reason = us.why_not(s, current, v)
            carried = {s.key: md_text(f"{s.label}: {reason}; using {s.default}.")}
            st.session_state[FALLBACK_NOTES][s.key] = carried[s.key]
        st.session_state[s.key] = s.default
    if s.key in carried:
        sb.warning(carried[s.key], icon=":material/warning:")
    fmt = _format(s, v)
    if named:  # the "none" choice (no draft model) keeps its label
        labels = us.preset_labels(s, [o for o in options if o != s.none_value])
        plain = fmt
        fmt = lambda x: _group_label(s, x, labels.get(x) or plain(x))  # noqa: E731
    if s.kind == "radio":
        return sb.radio(s.label, options, horizontal=True, format_func=fmt, **common)
    if s.kind == "select_slider":
        value = sb.select_slider(s.label, options, value=None if held else s.default,
                                 format_func=fmt, **common)
        if named:
            link(s, value)
        return value
    # The session's value wins over `index` (a keyed widget); index 0 then says so to Streamlit,
    # which logs a warning for a default given beside a value set in the session.
    index = 0 if named and s.key in st.session_state else options.index(s.default)
    value = sb.selectbox(s.label, options, index=index, format_func=fmt, **common)
    if named:
        link(s, value)
    return value


def page_setting(s: Setting) -> Any:
    """A setting edited on its own page: kept in the session (from the link on the first run)
    and written to the link here, on every page, so the view and a saved scenario carry it."""
    if s.key not in st.session_state:
        raw = st.query_params.get_all(s.key)
        st.session_state[s.key] = us.decode({s.key: raw}).values[s.key] if raw else s.default
    value = st.session_state[s.key]
    link(s, value)
    return value


def predicted_values() -> dict[str, Any]:
    """The values `sidebar()` is about to return, read before its widgets exist: a keyed widget's
    value is in the session from its first run on (a move, Apply, a link or saved scenario set
    it there), else the link's, else the default. What the widgets then correct (a choice the
    other settings rule out, a value the link's text does not give) is caught by comparing with
    what `sidebar()` returns (explorer_page.render_first)."""
    linked = us.decode({k: st.query_params.get_all(k) for k in st.query_params}).values
    return {s.key: st.session_state[s.key] if s.key in st.session_state
            else linked.get(s.key, s.default) for s in SETTINGS}


def _held(s: Setting) -> Any:
    """A setting not drawn here holds what `predicted_values` reads: a bound widget's link value
    stays in the link while it does not apply (back when it does), and a value that differs from
    the prediction would lay the Explorer out twice on every run (render: EARLY_MISS)."""
    if s.key in st.session_state or s.key not in st.query_params:
        return st.session_state.get(s.key, s.default)
    return us.decode({s.key: st.query_params.get_all(s.key)}).values.get(s.key, s.default)


def sidebar(again: bool = False) -> dict[str, Any]:
    """Render the controls; return the values keyed like the URL. `again`: this run repeats
    the last one's (its fallback warnings are said again)."""
    carried: dict[str, str] = st.session_state.get(FALLBACK_NOTES, {}) if again else {}
    st.session_state[FALLBACK_NOTES] = {}
    v: dict[str, Any] = {}
    sb = st.sidebar
    section = None
    last_override = [s.key for s in SETTINGS if s.overrides_preset][-1:]
    overrides: DeltaGenerator | None = None  # the preset overrides' expander, where open
    asked = False  # whether that expander is drawn yet
    # Read first: a widget may depend on them (the expert dtype on a custom target's experts).
    on_pages = {s.key: page_setting(s) for s in SETTINGS if s.page is not None}
    for s in SETTINGS:
        if s.page is not None:
            v[s.key] = on_pages[s.key]
            continue
        if s.section != section:
            (sb.header if section is None else sb.subheader)(s.section)
            section = s.section
        if not applies(s, v):
            v[s.key] = _held(s)
            if us.shown_by_name(s):  # not shown: out of the link
                link(s, s.default)
            continue
        where = sb
        if s.overrides_preset:
            if not asked:
                overrides, asked = _overrides_box(), True
            if overrides is None:  # closed: the preset's own numbers
                v[s.key] = s.default
                continue
            where = overrides
        v[s.key] = _widget(s, v, carried, where)
        caption = _caption(s, v[s.key])
        if caption:
            where.caption(caption)
        if [s.key] == last_override:  # after the overrides, how to undo them
            _overrides_note(v, where)
    st.session_state[DRAWN_KEY] = True
    if RESETS_KEY in st.session_state:  # the link set a widget the view rejected: again
        st.rerun()
    return v


def applies(s: Setting, v: dict[str, Any]) -> bool:
    """Whether the setting means anything beside the values before it (a draft model for the
    external mechanism, α for the i.i.d. AL source, a sample curve for that source, the expert
    dtype for an MoE target). Its widget is drawn only where it does: a disabled widget costs
    as much to draw as a live one, and one that changes nothing misleads."""
    if s.moe_only:
        custom = model_upload.target()  # a model from its config.json replaces the preset
        model = custom if custom is not None else model_presets().get(str(v.get("m")))
        if model is None or not model.is_moe:
            return False
    return s.applies_when is None or v.get(s.applies_when[0]) == s.applies_when[1]


def _overrides_box() -> DeltaGenerator | None:
    """The preset overrides (G, L_target, ρ), in an expander drawn when opened: three sliders
    few move, that every page would draw on every run. A link, a saved scenario or a move that
    overrides one keeps it open (its widgets show what the page prices)."""
    predicted = predicted_values()
    overridden = any(predicted[s.key] != s.default for s in SETTINGS if s.overrides_preset)
    symbols = ", ".join(s.symbol for s in SETTINGS if s.overrides_preset)
    if overridden:  # in the session, not `expanded=`: a changed argument is a new widget
        st.session_state[OVERRIDES_OPEN_KEY] = True
    box = st.sidebar.expander(f"Override the preset: {symbols}", key=OVERRIDES_OPEN_KEY,
                              on_change="rerun")
    return box if box.open else None


def _overrides_note(v: dict[str, Any], where: DeltaGenerator) -> None:
    overridden = [s.symbol for s in SETTINGS if s.overrides_preset and v[s.key] != s.default]
    if overridden:
        where.info(f"Override of the preset: {', '.join(overridden)}")
        where.button("Reset to preset", on_click=reset_overrides, key="reset_overrides")

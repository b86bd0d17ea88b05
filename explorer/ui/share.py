"""Save & share: saved scenarios (explorer/interfaces/store.py) opened by short `?s=<id>` links.

Opening a link sets every sidebar widget from the saved view (bound widgets take values set in
st.session_state before they are created), the calibrated hardware and the uploaded AL curve the
scenario embeds — so another browser, another day, shows the same numbers. Names and descriptions
are user text: shown with st.text, never as markdown or HTML.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import streamlit as st

from explorer.interfaces import view_state as us
from explorer.interfaces.store import (
    MAX_DESCRIPTION_CHARS,
    MAX_NAME_CHARS,
    StoredScenario,
    StoreError,
    default_store,
    share_link,
)
from explorer.specs.measured import AcceptanceCurve
from explorer.specs.scenario import Scenario
from explorer.ui import state as ui_state
from explorer.ui.text import md_text

LOADED = "_share_record"  # the StoredScenario this session opened or saved last
LOADED_ID = "_share_loaded_id"  # the ?s=<id> already handled in this session
LOADED_VIEW = "_share_view"  # the view values it set (to tell when the user changed them)
OPEN_ERROR = "_share_open_error"
OPEN_WARNINGS = "_share_open_warnings"
SAVE_RESULT = "_share_save_result"
SAVE_OPEN_KEY = "share_open"  # the Save & share expander's state (open: its form is drawn)


def loaded() -> StoredScenario | None:
    value = st.session_state.get(LOADED)
    return value if isinstance(value, StoredScenario) else None


def loaded_curve() -> AcceptanceCurve | None:
    """The uploaded AL curve the opened scenario embeds (the 'upload' AL source)."""
    record = loaded()
    if record is None or record.view.get("acc") != "upload":
        return None
    acc = record.scenario.acceptance
    return acc.curve if acc.kind == "curve" else None


def _apply(record: StoredScenario) -> None:
    state = us.decode_view(record.view)
    for key, value in state.values.items():
        st.session_state[key] = value
    ui_state.load_saved(record.scenario)
    st.session_state[LOADED] = record
    st.session_state[LOADED_VIEW] = dict(state.values)
    st.session_state[OPEN_WARNINGS] = list(state.warnings)


def open_link() -> None:
    """Before the sidebar: a new `?s=<id>` in the URL loads that scenario into the widgets.

    The bound widgets then write the opened view into the URL (context S replaces the id, as
    both use `s`); the embedded data stay in this session."""
    raw = {k: st.query_params.get_all(k) for k in st.query_params}
    sid = us.share_id(raw)
    if not sid or st.session_state.get(LOADED_ID) == sid:
        return
    st.session_state[LOADED_ID] = sid
    st.session_state[OPEN_ERROR] = None
    try:
        record = default_store().get(sid)
    except StoreError as exc:
        st.session_state[OPEN_ERROR] = f"Cannot open the saved scenario: {exc.message}"
        return
    _apply(record)


def show_opened(values: dict[str, Any]) -> None:
    """On the Explorer page: what was opened (name and description as plain text), or why not."""
    err = st.session_state.get(OPEN_ERROR)
    if err:  # quotes the link's ?s= value: as text
        st.error(md_text(err), icon=":material/link_off:")
    record = loaded()
    if record is None:
        return
    view = st.session_state.get(LOADED_VIEW) or {}
    same = all(values.get(k) == v for k, v in view.items())
    with st.container(border=True, key="share_opened"):
        st.caption(("Saved scenario " if same else "Changed since saved scenario ")
                   + md_text(f"{share_link(record.id)} — saved "
                             f"{record.created_at:%Y-%m-%d %H:%M} UTC"))
        st.text(record.name or "(unnamed)")
        if record.description:
            st.text(record.description)
    for w in st.session_state.get(OPEN_WARNINGS) or []:
        st.warning(md_text(w), icon=":material/warning:")


def absolute_link(scenario_id: str) -> str | None:
    """The current page's address with `?s=<id>` (None where the server does not know it)."""
    try:
        url = st.context.url
    except Exception:  # not served (AppTest) or an older runtime
        return None
    if not url:
        return None
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return None
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", f"s={scenario_id}", ""))


def _save(values: dict[str, Any], scenario: Callable[[], Scenario | None]) -> None:
    sc = scenario()
    if sc is None:
        st.session_state[SAVE_RESULT] = ("error", "This scenario cannot be evaluated, so it is "
                                                  "not saved: fix the inputs first.")
        return
    name = st.session_state.get("share_name") or ""
    description = st.session_state.get("share_description") or ""
    try:
        # stamped with the link version: a setting a view leaves out means that version's
        # default when it is opened (view_state.LINK_DEFAULTS_OF)
        record = default_store().save(sc, {**values, us.VERSION_KEY: us.URL_VERSION},
                                      name=name, description=description)
    except StoreError as exc:
        st.session_state[SAVE_RESULT] = ("error", f"Not saved: {exc.message}")
        return
    st.session_state[SAVE_RESULT] = ("ok", record.id)
    st.session_state[LOADED] = record
    st.session_state[LOADED_ID] = record.id
    st.session_state[LOADED_VIEW] = dict(values)
    st.session_state[OPEN_WARNINGS] = []
    st.session_state[OPEN_ERROR] = None


def save_panel(values: dict[str, Any], scenario: Callable[[], Scenario | None]) -> None:
    """Sidebar: name + description → a new saved scenario and its short link."""
    damage = default_store().damage
    # Drawn when opened (an expander that reruns on open): its form, two text fields and a
    # button are the sidebar's only ones, and would be drawn on every first paint for the
    # few who save. A damaged store opens it, to say so.
    with st.sidebar.expander("Save & share", icon=":material/share:", expanded=bool(damage),
                             key=SAVE_OPEN_KEY, on_change="rerun") as panel:
        if not panel.open:
            return
        st.caption("Saves the whole scenario with its uploaded data; the link opens it "
                   "anywhere, any day. Saved scenarios never change.")
        if damage and not st.session_state.get(SAVE_RESULT):  # a failed save says it itself
            st.error(md_text(f"The scenario store is damaged ({damage}); saving is stopped "
                             "until it is repaired."), icon=":material/database:")
        with st.form("share_form", border=False):
            st.text_input("Name", key="share_name", max_chars=MAX_NAME_CHARS,
                          placeholder="e.g. 70B on 2×H200, EAGLE-3, D=3")
            st.text_area("Description", key="share_description",
                         max_chars=MAX_DESCRIPTION_CHARS, height=80)
            submitted = st.form_submit_button("Save & share", key="share_save",
                                              icon=":material/save:")
        if submitted:
            _save(values, scenario)
        result = st.session_state.get(SAVE_RESULT)
        if not result:
            return
        if result[0] == "error":
            st.error(md_text(result[1]), icon=":material/error:")  # names paths, URLs
            return
        link = share_link(result[1])
        st.success("Saved. Share this link:", icon=":material/link:")
        st.code(link, language=None)
        full = absolute_link(result[1])
        if full:
            st.code(full, language=None)

"""Bring your own model: a Hugging Face config.json (uploaded or pasted) as the target model, the
external draft model or the drafter head (explorer/measured/hf_config.py parses it).

The model chosen here is the view's `cm` / `cd` setting (explorer/specs/settings.py): the spec
packed into the URL (explorer/specs/compact.py), so a plain link carries it, and the explorer's
scenario has it as `custom_model` / `custom_drafter`, so Save & share stores it too. Config text
is user input: shown with md_text, never as markdown.
"""

from __future__ import annotations

from typing import Any, TypeVar

import streamlit as st

from explorer.base.limits import MAX_FILE_BYTES, MAX_PROBLEMS
from explorer.interfaces.view_state import CUSTOM_DRAFTER_KEY, CUSTOM_MODEL_KEY, view_of_custom
from explorer.measured.hf_config import HfModelConfig, parse_config, parse_drafter
from explorer.specs.architecture import DrafterSpec, ModelSpec
from explorer.specs.compact import pack, unpack
from explorer.specs.scenario import Scenario
from explorer.ui.text import md_text

TARGET = CUSTOM_MODEL_KEY  # the packed ModelSpec used as the target, or ""
DRAFTER = CUSTOM_DRAFTER_KEY  # the packed DrafterSpec used as the drafter, or ""
T = TypeVar("T", ModelSpec, DrafterSpec)
PARSED = "_custom_parsed"  # (label, text, HfModelConfig) of the last upload or paste
UPLOAD_KEY = "model_config_upload"
PASTE_KEY = "model_config_paste"


def _unpacked(key: str, cls: type[T]) -> T | None:
    value = st.session_state.get(key)
    if not value or not isinstance(value, str):
        return None
    try:
        return unpack(value, cls)
    except ValueError:  # decode() named a bad link value and fell back: not reached
        return None


def target() -> ModelSpec | None:
    return _unpacked(TARGET, ModelSpec)


def drafter() -> DrafterSpec | None:
    return _unpacked(DRAFTER, DrafterSpec)


def updates() -> dict[str, Any]:
    """Fields to set on the explorer's scenario for the model(s) chosen here."""
    out: dict[str, Any] = {}
    m = target()
    if m is not None:
        out.update(custom_model=m, model=m.slug)
    d = drafter()
    if d is not None:
        out["custom_drafter"] = d
    return out


def load_saved(scenario: Scenario) -> None:
    """A saved scenario's own models become this session's choice (the ?s= link carries them)."""
    st.session_state.update(view_of_custom(scenario))


def _parse(label: str, text: str) -> None:
    st.session_state[PARSED] = (label, text, parse_config(text, name=label))


def _on_upload() -> None:
    up = st.session_state.get(UPLOAD_KEY)
    if up is None:
        return
    data = up.getvalue()
    if len(data) > MAX_FILE_BYTES:
        st.session_state[PARSED] = (up.name, "", HfModelConfig(
            summary=f"not loaded: {len(data) / 2**20:.1f} MiB is over the "
                    f"{MAX_FILE_BYTES / 2**20:.0f} MiB limit"))
        return
    _parse(up.name.removesuffix(".json"), data.decode("utf-8", "replace"))


def _on_paste() -> None:
    text = str(st.session_state.get(PASTE_KEY) or "")
    if text.strip():
        _parse("pasted config", text)


def _use_target(res: HfModelConfig) -> None:
    st.session_state[TARGET] = pack(res.model) if res.model is not None else ""
    # The checkpoint's quantization sets the dtypes (callbacks run before the widgets exist).
    if res.weights_dtype is not None:
        st.session_state["dt"] = res.weights_dtype
    if res.kv_dtype is not None:
        st.session_state["kv"] = res.kv_dtype


def _use_draft(label: str, text: str) -> None:
    d = parse_drafter(text, name=label).drafter
    st.session_state[DRAFTER] = pack(d) if d is not None else ""
    if d is not None:
        st.session_state["mech"] = d.kind


def _clear(key: str) -> None:
    st.session_state[key] = ""


def sidebar_note() -> None:
    """In the sidebar, under the presets: which of them a config replaces."""
    m, d = target(), drafter()
    if m is not None:
        st.sidebar.info(md_text(f"Target model: {m.name} (your config.json) — replaces the "
                                "Target model choice; the link carries it."),
                        icon=":material/upload_file:")
    if d is not None:
        st.sidebar.info(md_text(f"Drafter: {d.name} ({d.kind}, your config.json)"),
                        icon=":material/upload_file:")


def _problems(res: HfModelConfig) -> None:
    lines = [f"- field {md_text(p.field or '—')}: {md_text(p.message)}"
             for p in res.problems if p.severity == "error"]
    st.error(f"Not loaded: {md_text(res.summary)}\n\n" + "\n".join(lines[: MAX_PROBLEMS + 1]),
             icon=":material/error:")


def render() -> None:
    """The Measured data page's section: upload or paste, see how it is priced, use it."""
    st.subheader("Your model: a Hugging Face config.json")
    st.caption("A target's or a drafter's config.json (EAGLE-3 head, DFlash/DSpark block "
               "drafter, or a draft model). Only its numbers are read: auto_map and remote code "
               "are ignored. The link (and Save & share) carries the model you use.")
    st.file_uploader("Upload config.json", key=UPLOAD_KEY, type=["json"], on_change=_on_upload)
    st.text_area("…or paste it", key=PASTE_KEY, height=120, max_chars=MAX_FILE_BYTES)
    st.button("Read the pasted config", key="model_config_read", on_click=_on_paste)
    parsed = st.session_state.get(PARSED)
    if parsed:
        label, text, res = parsed
        if not res.ok:
            _problems(res)
        else:
            with st.container(border=True, key="model_config_parsed"):
                st.markdown(f"**{md_text(res.summary)}**")
                if res.model is not None:
                    st.caption(md_text(f"weights {res.weights_dtype}"
                                       + (f", KV {res.kv_dtype}" if res.kv_dtype else "")
                                       + f"; G = {res.model.group_size:g}, "
                                         f"{res.model.param_count() / 1e9:.2f}B parameters"))
                for note in res.notes:  # how the cost model prices what it cannot as written
                    st.caption(md_text(f"• {note}"))
                cols = st.columns(2)
                if res.model is not None:
                    cols[0].button("Use as the target model", key="model_config_use_target",
                                   on_click=_use_target, args=(res,), type="primary")
                    cols[1].button("Use as the draft model", key="model_config_use_draft",
                                   on_click=_use_draft, args=(label, text))
                else:
                    cols[0].button("Use as the drafter", key="model_config_use_drafter",
                                   on_click=_use_draft, args=(label, text), type="primary")
    m, d = target(), drafter()
    if m is not None:
        row = st.columns([5, 1])
        row[0].success(md_text(f"Target in use: {m.name} ({m.slug})"), icon=":material/check:")
        row[1].button("Stop using", key="model_config_stop_target", on_click=_clear,
                       args=(TARGET,))
    if d is not None:
        row = st.columns([5, 1])
        row[0].success(md_text(f"Drafter in use: {d.name} ({d.kind})"),
                        icon=":material/check:")
        row[1].button("Stop using", key="model_config_stop_drafter", on_click=_clear,
                       args=(DRAFTER,))

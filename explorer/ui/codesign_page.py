"""The Co-design page: the current scenario's target with G and L_target varied, the best
speedup and its D for each design (explorer/analysis/codesign.py), as a heatmap and a table."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from explorer.analysis.codesign import ACCEPTANCE_NOTE, GroupAt, codesign
from explorer.base.errors import ScenarioError
from explorer.model.resolve import resolve
from explorer.specs.scenario import Scenario
from explorer.ui import chart_view
from explorer.ui.codesign_figures import best_speedup_heatmap
from explorer.ui.text import md_text

TABLE_OPEN_KEY = "cd_table_open"
GROUPS = (1, 2, 4, 8, 16, 32, 64)
LAYERS = (16, 24, 32, 48, 64, 80, 96, 128)
# With MLA (one latent KV head) G is the query heads: DeepSeek-V2-Lite's 16 to V3's 128. Its
# own widget (key), so a session that had a GQA target open keeps its G there, and each kind
# opens on its own defaults.
MLA_GROUPS = (8, 16, 32, 64, 128)
MLA_NOTE = ("With MLA (one latent KV head) G is the query heads, varied at fixed KV bytes (the "
            "latent's).")


@st.cache_data(max_entries=16, show_spinner="Evaluating the designs…")
def _designs(js: str, groups: tuple[int, ...], layers: tuple[int, ...],
             at: GroupAt) -> pd.DataFrame:
    return codesign(Scenario.model_validate_json(js), {"group": groups, "layers": layers}, at)


def render(scenario: Callable[[], Scenario | None]) -> None:
    st.title("Co-design")
    st.caption("The target's G and L_target varied at the sidebar's operating point: the best "
               "speedup and its D for each design. " + ACCEPTANCE_NOTE + ".")
    sc = scenario()
    if sc is None:
        st.error("This scenario cannot be evaluated: fix the inputs first.")
        return
    mla = resolve(sc).model.attention_kind == "mla"
    cols = st.columns(3)
    if mla:
        groups = cols[0].multiselect("G (query heads)", MLA_GROUPS, key="cd_groups_mla",
                                     default=tuple(g for g in MLA_GROUPS[1:] if g >= sc.tp))
        at_label = cols[2].radio("G at fixed", ("KV bytes",), key="cd_at_mla", horizontal=True,
                                 disabled=True, help=MLA_NOTE)
    else:
        groups = cols[0].multiselect("G", GROUPS, default=(1, 4, 8, 16), key="cd_groups")
        at_label = cols[2].radio("G at fixed", ("KV bytes", "parameters"), key="cd_at",
                                 horizontal=True)
    layers = cols[1].multiselect("L_target", LAYERS, default=(32, 64, 80, 128), key="cd_layers")
    if mla:
        st.caption(MLA_NOTE)
    if not groups or not layers:
        st.info("Pick at least one G and one L_target.")
        return
    at: GroupAt = "fixed_kv" if at_label == "KV bytes" else "fixed_params"
    try:
        df = _designs(sc.model_dump_json(), tuple(sorted(groups)), tuple(sorted(layers)), at)
    except ScenarioError as exc:
        st.error(md_text(f"These designs cannot be built: {exc}"))
        return
    chart_view.show(best_speedup_heatmap(df), key="cd_heatmap")
    st.caption("Tile boundary: verification stays in one 128-row attention tile up to "
               "D = 128/G_rank − 1 (column tile_free_draft_len). Grey cells do not fit in "
               "memory at this batch and context: their label is the speed-only best "
               "(no fit), outside the colour scale.")
    # drawn when opened (an expander that reruns on open): the data grid's library is a second
    # download and parse, and the heatmap above already shows each design's best
    with st.expander("Every design as a table", key=TABLE_OPEN_KEY, on_change="rerun") as table:
        if table.open:
            st.dataframe(df, hide_index=True)

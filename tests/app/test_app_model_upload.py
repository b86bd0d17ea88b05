"""AppTest: a config.json pasted on the Measured data page becomes the explorer's target (its
numbers are the core's for that model), travels in Save & share's link, and a bad config is named
by field while the explorer keeps working; the Co-design page draws its designs."""

from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from explorer import evaluate
from explorer.interfaces.store import default_store
from explorer.measured.hf_config import read_shipped, shipped_config_paths
from explorer.specs.architecture import DrafterSpec, ModelSpec
from explorer.specs.compact import pack, unpack
from explorer.specs.scenario import Scenario
from explorer.ui import codesign_page
from explorer.ui.share import SAVE_OPEN_KEY
from tests.support import headline
from tests.support.apptest import goto, open_section, run_app

pytestmark = [pytest.mark.usefixtures("data_dir"), pytest.mark.slow]
QWEN_32B = next(p for p in shipped_config_paths() if p.name == "Qwen--Qwen3-32B_config.json")


def plain(markdown: str) -> str:
    """Alert text as shown: user text in alerts is Markdown-escaped (explorer/ui/text.py)."""
    return re.sub(r"\\(.)", r"\1", markdown)


def metric(at: AppTest, label: str) -> str:
    return headline.value(at, label)


def paste(at: AppTest, text: str) -> AppTest:
    goto(at, "data")
    at.text_area(key="model_config_paste").input(text)
    at.button(key="model_config_read").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_pasted_config_is_the_target_and_travels_in_the_saved_link():
    at = run_app()
    paste(at, QWEN_32B.read_text(encoding="utf-8"))
    at.button(key="model_config_use_target").click().run()
    assert not at.exception
    spec = read_shipped(QWEN_32B).model
    assert spec is not None
    goto(at, "")  # the Explorer (the default page)
    pasted = unpack(at.session_state["cm"], ModelSpec)
    sc = Scenario(tp=2, model=pasted.slug, custom_model=pasted)  # the app's defaults
    assert (pasted.layers, pasted.hidden, pasted.q_heads) == (spec.layers, spec.hidden,
                                                              spec.q_heads)
    assert metric(at, "Speedup") == f"{evaluate(sc).speedup:.2f}×"
    assert metric(at, "Speedup") != f"{evaluate(Scenario(tp=2)).speedup:.2f}×"
    assert any("your config.json" in plain(i.value) for i in at.sidebar.info)

    open_section(at, SAVE_OPEN_KEY)  # Save & share's form is drawn when opened
    at.text_input(key="share_name").input("my Qwen3-32B")
    at.button(key="share_save").click().run()
    sid = next(c.value for c in at.sidebar.code).removeprefix("?s=")
    rec = default_store().get(sid)
    assert rec.scenario.custom_model == pasted
    reopened = run_app(s=sid)
    assert metric(reopened, "Speedup") == metric(at, "Speedup")
    assert any("your config.json" in plain(i.value) for i in reopened.sidebar.info)
    # a plain link carries it too: the page writes the packed spec to the URL
    assert at.query_params["cm"] == pack(pasted)
    linked = run_app(cm=pack(pasted))
    assert metric(linked, "Speedup") == metric(at, "Speedup")
    assert unpack(linked.session_state["cm"], ModelSpec) == pasted


def test_a_link_with_a_custom_drafter_prices_it_and_a_tampered_one_is_named():
    head = DrafterSpec(kind="eagle3", name="two-layer head", draft_layers=2, draft_vocab=32000)
    at = run_app(cd=pack(head))
    sc = Scenario(tp=2, custom_drafter=head)
    assert metric(at, "Speedup") == f"{evaluate(sc).speedup:.2f}×"
    assert metric(at, "Speedup") != f"{evaluate(Scenario(tp=2)).speedup:.2f}×"
    bad = pack(head)[:-6] + "AAAAAA"
    tampered = run_app(cm=bad)
    shown = " ".join(plain(w.value) for w in tampered.warning)
    assert "URL parameter 'cm=" in shown and "custom target model" in shown
    assert metric(tampered, "Speedup") == f"{evaluate(Scenario(tp=2)).speedup:.2f}×"
    huge = run_app(cm="A" * 5000)
    assert "URL parameter 'cm' (custom target model): too long" in " ".join(
        plain(w.value) for w in huge.warning)


def test_a_bad_config_names_its_field_and_the_explorer_keeps_working():
    at = run_app()
    cfg = json.loads(QWEN_32B.read_text(encoding="utf-8"))
    paste(at, json.dumps({**cfg, "num_attention_heads": "sixty-four"}))
    shown = " ".join(plain(e.value) for e in at.error)
    assert "num_attention_heads" in shown and "whole number" in shown
    assert not [b for b in at.button if b.key == "model_config_use_target"]
    goto(at, "")
    assert metric(at, "Speedup") == f"{evaluate(Scenario()).speedup:.2f}×"


def test_the_co_design_page_shows_the_heatmap_of_the_current_scenario():
    at = run_app()
    goto(at, "codesign")
    assert not at.exception
    assert at.get("plotly_chart"), "the heatmap is drawn"
    assert not at.dataframe  # the table below it is drawn when opened (issue 24)
    open_section(at, codesign_page.TABLE_OPEN_KEY)
    table = at.dataframe[0].value
    assert set(table["group"]) == {1, 4, 8, 16} and set(table["layers"]) == {32, 64, 80, 128}


def test_the_co_design_page_varies_an_mla_targets_query_heads():
    """DeepSeek-V3 at TP=8: the page said "These designs cannot be built: group … is a GQA
    shape" and drew nothing; G is its query heads, from 16 (as many as TP allows) to 128."""
    at = goto(run_app(m="deepseek-v3", tp="8", dt="fp8"), "codesign")
    assert not at.error, [e.value for e in at.error]
    assert [c.key for c in at.get("plotly_chart")] == ["cd_heatmap"]
    g = next(m for m in at.multiselect if m.key == "cd_groups_mla")
    assert g.label == "G (query heads)" and list(g.value) == [16, 32, 64, 128]
    assert any("G is the query heads" in c.value for c in at.caption)
    open_section(at, codesign_page.TABLE_OPEN_KEY)
    table = at.dataframe[0].value
    assert set(table["q_heads"]) == {16, 32, 64, 128} and set(table["kv_heads_total"]) == {1}

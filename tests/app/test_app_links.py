"""Hostile links, uploads and saved views (issue 25's reproducers, ../shared/repro/links-and-cli/
app_repros.py and tamper_view.sh) in AppTest: each gives a named warning or error, never an
exception, and no user text is rendered as Markdown."""

from __future__ import annotations

import base64
import json
import zlib

import pytest
from streamlit.testing.v1 import AppTest

from explorer.interfaces.store import default_store
from explorer.interfaces.view_state import view_of_scenario
from explorer.specs.deployment import URL_MAX_CHARS
from explorer.specs.scenario import Scenario
from explorer.ui.deploy_page import EDITOR_OPEN_KEY
from tests.support.apptest import goto, open_section, run_app

pytestmark = pytest.mark.usefixtures("data_dir")  # a private SQLite store (conftest.py)

INJECTED = "![x](https://evil.example/p.png) [update](https://evil.example/x)"
SMALL_MODEL = {"slug": "hf-x-00000000", "name": "tiny", "layers": 2, "hidden": 64, "q_heads": 4,
               "kv_heads": 2, "head_dim": 16, "ffn_intermediate": 128, "vocab": 1000}
# A JSON-lines file whose bad cell is a lone surrogate: the problem message quotes it.
SURROGATE_JSONL = (
    b'{"batch_size": 2, "steps": 0, "topk": 0, "num_draft_tokens": 0, "acc_length": 1.0, '
    b'"step_time": 0.03922, "speed": 25.497, "completion_tokens": 4096.0}\n'
    b'{"batch_size": "\\ud800", "steps": 3, "topk": 1, "num_draft_tokens": 4, "acc_length": 2.18, '
    b'"step_time": 0.0535, "speed": 40.748, "completion_tokens": 4096.0}\n')


def packraw(raw: bytes) -> str:
    """Any bytes packed as a link's `cm`/`cd` value (explorer/specs/compact.py's form)."""
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def shown(at: AppTest) -> str:
    parts = [*at.error, *at.warning, *at.info, *at.success, *at.markdown, *at.caption]
    return "\n".join(str(x.value) for x in parts)


def dp_of(at: AppTest) -> str | None:
    try:  # AppTest's session state has no .get
        return str(at.session_state["dp"])
    except KeyError:
        return None


def warned(at: AppTest, *words: str) -> bool:
    return any(all(w in x.value.replace("\\", "") for w in words)
               for x in [*at.warning, *at.error])


@pytest.mark.parametrize(("key", "raw", "words"), [
    ("cm", b"[" * 60000, "(MAX_JSON_DEPTH)"),  # the 110-character link
    ("cd", b"{" * 60000, "(MAX_JSON_DEPTH)"),
    ("cm", b'{"hidden": ' + b"9" * 5000 + b"}", "(MAX_NUMBER_CHARS)"),
    ("cm", json.dumps({**SMALL_MODEL, "hidden": 10**20}).encode(), "hidden"),
    ("cm", json.dumps({**SMALL_MODEL, "hidden": 1e20}).encode(), "hidden"),
])
def test_a_packed_spec_over_the_caps_is_a_named_warning(key: str, raw: bytes, words: str):
    value = packraw(raw)
    at = run_app(**{key: value, "v": "2"})  # raises on any exception
    assert warned(at, f"URL parameter '{key}=", words), shown(at)[:800]


# An 8B-sized target: a head to train for it is worth asking about (on SMALL_MODEL, since #21's
# per-step and per-draft-forward costs, n-gram wins and no "Worth training?" names the model).
SIZED_MODEL = {**SMALL_MODEL, "layers": 32, "hidden": 4096, "q_heads": 32, "kv_heads": 8,
               "head_dim": 128, "ffn_intermediate": 14336, "vocab": 128256}


def test_a_markdown_model_name_from_a_link_is_shown_as_text():
    at = run_app(cm=packraw(json.dumps({**SIZED_MODEL, "name": INJECTED}).encode()), v="2")
    text = shown(at)
    assert "](https://evil" not in text and "![x]" not in text
    # the name reaches the page where the target is named and where a head would be trained for
    # it ("Worth training?"): escaped in both, rendered literally
    target = [i.value for i in at.info if "Target model" in i.value]
    assert target and r"\!\[x\]\(https\:" in target[0]
    worth = [c.value for c in at.caption if "Worth training?" in c.value]
    assert worth and r"\!\[x\]\(https\:" in worth[0]


def test_deployment_weights_that_sum_to_infinity_are_named_on_the_page():
    at = run_app(dp="h1-1e308_2-1e308~l2048-1-8~s", v="2")  # a 28-character link
    assert warned(at, "URL parameter 'dp", "the weights sum to inf"), shown(at)[:800]
    goto(at, "deploy")
    # the default profile runs, its policy said (a heading on its own line since #24)
    assert any(h.value.startswith("Policy to run: ") for h in at.subheader)


def test_a_lone_surrogate_in_a_problem_message_is_shown_escaped_on_every_rerun():
    at = goto(run_app(), "data")
    at.file_uploader(key="upload").set_value(("b.jsonl", SURROGATE_JSONL, "text/plain")).run()
    assert not at.exception, [e.value for e in at.exception]
    assert warned(at, "b.jsonl", "ud800"), shown(at)[:800]
    goto(at, "data")  # raises on any exception
    goto(at, "")


def test_the_profile_editor_refuses_a_profile_a_link_cannot_carry_with_the_reason():
    at = open_section(goto(run_app(), "deploy"), EDITOR_OPEN_KEY)
    at.radio(key="dp_conc_kind").set_value("histogram")
    at.radio(key="dp_ctx_kind").set_value("buckets")
    at.text_input(key="dp_hist").input(
        ", ".join(f"{b}:{0.123456 + i}" for i, b in enumerate(range(65473, 65537))))
    at.text_input(key="dp_ctx_buckets").input(
        ", ".join(f"{1_999_936 + i}:{0.654321 + i}" for i in range(64)))
    before = dp_of(at)
    next(b for b in at.button if b.label == "Apply").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert warned(at, "Profile not applied", "its link form is",
                  f"at most {URL_MAX_CHARS:,}"), shown(at)[:800]
    after = dp_of(at)
    assert after == before  # nothing written that would then be read as the default


def test_a_saved_view_with_a_deep_packed_model_opens_with_a_warning():
    sc = Scenario()
    record = default_store().save(sc, {**view_of_scenario(sc), "cm": packraw(b"[" * 60000)},
                                  name="deep")
    at = run_app(s=record.id)
    assert warned(at, "saved value 'cm=", "(MAX_JSON_DEPTH)"), shown(at)[:800]


def test_compare_reads_a_saved_slo_that_is_no_number_as_its_default():
    a = default_store().save(Scenario(batch=4), {**view_of_scenario(Scenario(batch=4)),
                                                 "slo": "abc"}, name="bad slo")
    b = default_store().save(Scenario(batch=8), name="fine")
    at = goto(run_app(), "compare")
    at.multiselect(key="compare_selection").set_value(
        [f"saved:{a.id}", f"saved:{b.id}"]).run()
    assert not at.exception, [e.value for e in at.exception]

"""AppTest: `?s=<id>` opens a saved scenario exactly; bad ids and a broken store are explained;
Save & share stores what is on screen; Compare puts scenarios side by side."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explorer import evaluate
from explorer.interfaces import store
from explorer.interfaces import view_state as us
from explorer.interfaces.store import default_store
from explorer.interfaces.view_state import view_of_scenario
from explorer.specs.hardware import HardwareOverrides
from explorer.specs.measured import AcceptanceCurve, StepTimings
from explorer.specs.scenario import Acceptance, Scenario
from explorer.ui.share import SAVE_OPEN_KEY
from tests.support import headline
from tests.support.apptest import goto, open_section, run_app
from tests.support.tamper import TAMPER_BY_NAME, corrupt_sqlite, tamper

CURVE = AcceptanceCurve(label="mine.csv: eagle3 on llama-70b, chat", draft_lens=(1, 2, 3, 5, 7),
                        acceptance_lengths=(1.7, 2.2, 2.6, 3.1, 3.4), source="file mine.csv")


pytestmark = pytest.mark.usefixtures("data_dir")  # a private SQLite store (conftest.py)


def plain(markdown: str) -> str:
    """Alert text as shown: user text in alerts is Markdown-escaped (explorer/ui/text.py)."""
    return re.sub(r"\\(.)", r"\1", markdown)


def errors(elements) -> str:  # type: ignore[no-untyped-def]
    return " ".join(plain(e.value) for e in elements)


def metric(at: AppTest, label: str) -> str:
    return headline.value(at, label)


def shared_scenario() -> Scenario:
    """An uploaded AL curve, calibrated hardware and a measured step table: all must travel."""
    return Scenario(batch=8, draft_len=5, tp=4, context=32768,
                    acceptance=Acceptance(kind="curve", curve=CURVE),
                    hardware_overrides=HardwareOverrides(gemm_compute_efficiency=0.55,
                                                         label="calibrated to my kernels"),
                    measured_steps=StepTimings(batch=(8, 8), draft_len=(0, 5),
                                               step_time_s=(0.012, 0.016), source="bench.csv"))


def pareto_view(at):  # type: ignore[no-untyped-def]
    at.segmented_control(key=us.VIEW_KEY).set_value("pareto").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_opening_a_link_restores_widgets_uploaded_curve_and_calibration():
    sc = shared_scenario()
    view = view_of_scenario(sc, slo=45.0, usd=2.5)
    assert view["acc"] == "upload"
    rec = default_store().save(sc, view, name="**bold?** <img src=x onerror=alert(1)>",
                               description="line 1\n# not a heading")
    at = run_app(s=rec.id)
    ev = evaluate(sc)
    assert ev.speedup != evaluate(sc.model_copy(update={"measured_steps": None})).speedup
    assert metric(at, "Speedup") == f"{ev.speedup:.2f}×"
    assert metric(at, "Acceptance length") == f"{ev.acceptance_length:.2f}"
    assert metric(at, "Tokens/s per GPU") == f"{ev.tokens_per_s_per_gpu:,.0f}"
    assert at.slider(key="d").value == 5 and at.select_slider(key="b").value == 8
    assert at.select_slider(key="ctx").value == 32768 and at.selectbox(key="tp").value == 4
    assert at.radio(key="acc").value == "upload"
    pareto_view(at)  # the targets are the Pareto view's inputs
    assert at.number_input(key="slo_input").value == 45.0
    assert at.number_input(key="usd_input").value == 2.5
    texts = [t.value for t in at.text]
    assert "**bold?** <img src=x onerror=alert(1)>" in texts
    assert "line 1\n# not a heading" in texts
    assert not any("<img" in m.value for m in at.markdown)
    warnings = " ".join(w.value for w in at.warning)
    assert "URL parameter" not in warnings and "no uploaded curve" not in warnings
    assert "calibrated to my kernels" in warnings  # the calibration is applied and said so


def test_a_link_without_uploads_and_the_plain_url_state_agree():
    sc = Scenario(batch=16, draft_len=7, hardware="b200", tp=1, model="llama-3.1-8b",
                  acceptance=Acceptance(kind="iid", alpha=0.6))
    rec = default_store().save(sc, view_of_scenario(sc))
    by_id = run_app(s=rec.id)
    plain = run_app(b="16", d="7", hw="b200", tp="1", m="llama-3.1-8b", acc="alpha", a="0.6",
                    v="2")
    for label in ("Speedup", "Acceptance length", "Tokens/s per GPU"):
        assert metric(by_id, label) == metric(plain, label)
    assert metric(by_id, "Speedup") == f"{evaluate(sc).speedup:.2f}×"


@pytest.mark.parametrize(("sid", "needle"), [
    ("not-an-id", "'not-an-id' is not a scenario id"),
    ("Z" * 22, f"no saved scenario has the id '{'Z' * 22}'"),
    ("<script>alert(1)</script>", "is not a scenario id"),
])
def test_a_bad_or_unknown_id_is_explained_and_the_explorer_works(sid: str, needle: str):
    at = run_app(s=sid)
    shown = errors(at.error)
    assert "Cannot open the saved scenario" in shown and needle in shown
    assert metric(at, "Speedup") == f"{evaluate(Scenario()).speedup:.2f}×"
    assert at.select_slider(key="ctx").value == 8192


def save_from_sidebar(at: AppTest, name: str, description: str = "") -> AppTest:
    open_section(at, SAVE_OPEN_KEY)  # its form is drawn when opened
    at.text_input(key="share_name").input(name)
    at.text_area(key="share_description").input(description)
    at.button(key="share_save").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_save_and_share_stores_what_is_shown_and_the_link_reopens_it():
    at = run_app()
    at.slider(key="d").set_value(6).run()
    at.radio(key="acc").set_value("alpha").run()
    at.slider(key="a").set_value(0.8).run()
    pareto_view(at).number_input(key="slo_input").set_value(55.0).run()
    shown = metric(at, "Speedup")
    save_from_sidebar(at, "α=0.8 at D=6", "for the design doc")
    codes = [c.value for c in at.sidebar.code]
    assert codes and codes[0].startswith("?s=")
    sid = codes[0].removeprefix("?s=")
    rec = default_store().get(sid)
    assert (rec.name, rec.description) == ("α=0.8 at D=6", "for the design doc")
    assert rec.scenario.draft_len == 6 and rec.scenario.acceptance.alpha == 0.8
    assert rec.view["slo"] == 55.0
    again = run_app(s=sid)
    assert metric(again, "Speedup") == shown
    assert again.slider(key="d").value == 6
    assert pareto_view(again).number_input(key="slo_input").value == 55.0
    save_from_sidebar(at, "α=0.8 at D=6")
    assert at.sidebar.code[0].value != f"?s={sid}", "saving again makes a new record"
    assert default_store().count() == 2


def test_an_unavailable_store_says_why_and_the_explorer_keeps_working(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(store.DATA_DIR_ENV, str(blocker / "data"))
    store.reset_default_stores()
    at = save_from_sidebar(run_app(), "x")
    shown = errors(at.sidebar.error)
    assert "Not saved" in shown and "cannot be created" in shown
    assert metric(at, "Speedup") == f"{evaluate(Scenario()).speedup:.2f}×"
    at2 = run_app(s="Q" * 22)
    assert "cannot be created" in errors(at2.error)


def test_a_read_only_store_refuses_to_save_with_the_reason(data_dir: Path, monkeypatch):
    rec = default_store().save(Scenario(batch=4), name="kept")
    path = data_dir / store.SQLITE_FILE
    monkeypatch.setenv(store.DATABASE_URL_ENV, f"sqlite:///file:{path}?mode=ro&uri=true")
    store.reset_default_stores()
    at = run_app(s=rec.id)
    assert at.select_slider(key="b").value == 4
    save_from_sidebar(at, "refused")
    assert "read-only" in errors(at.sidebar.error)


def tables(at: AppTest) -> tuple[object, object]:
    """(inputs that differ, results) of the Compare page."""
    frames = [d.value for d in at.dataframe]
    results = next(f for f in frames if "speedup (×)" in f.index)
    diff = next(f for f in frames if "speedup (×)" not in f.index)
    return diff, results


def chart_traces(at: AppTest) -> dict[str, list[str]]:
    out = {}
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        out[spec["layout"]["title"]["text"]] = [t.get("name", "") for t in spec["data"]]
    return out


def test_compare_pinned_and_saved_scenarios_side_by_side():
    saved = default_store().save(Scenario(batch=64, draft_len=3, mechanism="mtp",
                                          model="deepseek-v3", tp=8), name="R1 MTP")
    at = run_app()
    goto(at, "compare")
    assert any("Pick two to four" in i.value for i in at.info)
    at.button(key="compare_pin").click().run()
    at.slider(key="d").set_value(7).run()
    at.button(key="compare_pin").click().run()
    assert at.multiselect(key="compare_selection").value == ["pin:1", "pin:2"]
    diff, results = tables(at)
    assert list(diff.index) == ["draft_len"] and list(diff.loc["draft_len"]) == ["3", "7"]
    traces = chart_traces(at)
    speedup = next(v for k, v in traces.items() if k.startswith("Speedup vs draft length"))
    assert any(n.startswith("A") for n in speedup) and any(n.startswith("B") for n in speedup)
    assert any(k.startswith("Pareto frontiers") for k in traces)
    assert any(k.startswith("Acceptance length vs draft length") for k in traces)
    assert results.loc["speedup (×)", "A"] == f"{evaluate(Scenario()).speedup:.2f}"
    assert results.loc["speedup (×)", "B"] == f"{evaluate(Scenario(draft_len=7)).speedup:.2f}"

    at.text_input(key="compare_add_id").input(f"http://x/explorer?s={saved.id}")
    at.button(key="compare_add").click().run()
    assert at.multiselect(key="compare_selection").value[-1] == f"saved:{saved.id}"
    diff, _ = tables(at)
    assert {"mechanism", "model", "tp", "batch"} <= set(diff.index)
    assert "R1 MTP" in " ".join(t.value for t in at.text)

    at.text_input(key="compare_add_id").input("nope")
    at.button(key="compare_add").click().run()
    assert "'nope' is not a scenario id" in errors(at.error)


def _store_url(data_dir: Path) -> str:
    return f"sqlite:///{data_dir / store.SQLITE_FILE}"


@pytest.mark.parametrize("name", ["non-ISO created_at", "integer created_at",
                                  "non-integer schema_version", "deep view_json"])
def test_a_tampered_record_is_explained_and_the_intact_ones_still_open_and_compare(
        data_dir: Path, name: str):
    t = TAMPER_BY_NAME[name]
    intact = default_store().save(Scenario(batch=64, draft_len=5), name="intact one")
    other = default_store().save(Scenario(batch=4), name="intact two")
    bad = default_store().save(Scenario(batch=8), name="tampered")
    tamper(_store_url(data_dir), bad.id, t)
    store.reset_default_stores()

    at = run_app(s=bad.id)
    shown = errors(at.error)
    assert "Cannot open the saved scenario" in shown and t.needle in shown
    assert f"saved scenario '{bad.id}' cannot be read" in shown
    assert metric(at, "Speedup") == f"{evaluate(Scenario()).speedup:.2f}×"

    at = run_app(s=intact.id)
    assert at.select_slider(key="b").value == 64 and at.slider(key="d").value == 5
    assert metric(at, "Speedup") == f"{evaluate(intact.scenario).speedup:.2f}×"

    goto(at, "compare")
    options = at.multiselect(key="compare_selection").options
    assert any("intact one" in o for o in options) and any("intact two" in o for o in options)
    if t.listed:
        assert not any(bad.id[:8] in o for o in options)
        texts = " ".join(x.value for x in at.text)
        assert f"?s={bad.id}: {t.needle}" in texts
        assert any("1 recent saved scenario(s) cannot be read" in e.label for e in at.expander)
    at.multiselect(key="compare_selection").set_value(
        [f"saved:{intact.id}", f"saved:{other.id}"]).run()
    assert not at.exception
    _, results = tables(at)
    assert results.loc["speedup (×)", "A"] == f"{evaluate(intact.scenario).speedup:.2f}"
    if not t.listed:  # listed, but opening it says why; the others compare
        at.multiselect(key="compare_selection").set_value(
            [f"saved:{intact.id}", f"saved:{bad.id}", f"saved:{other.id}"]).run()
        assert not at.exception and t.needle in errors(at.error)
        _, results = tables(at)
        assert list(results.columns) == ["A", "B"]


def test_a_damaged_store_is_said_so_on_compare_and_save_and_the_explorer_works(
        data_dir: Path):
    for i in range(40):
        default_store().save(shared_scenario(), name=f"r{i}")
    store.reset_default_stores()
    corrupt_sqlite(data_dir / store.SQLITE_FILE)
    at = run_app()
    goto(at, "compare")
    shown = errors(at.error)
    assert "is damaged, so listing is not possible" in shown and "Saving is stopped" in shown
    at = run_app()  # another session of this server: the Save panel says so before a save
    assert "The scenario store is damaged" in errors(at.sidebar.error)
    save_from_sidebar(at, "into a damaged store")
    assert "Not saved" in errors(at.sidebar.error)
    assert "so saving is not possible" in errors(at.sidebar.error)
    assert metric(at, "Speedup") == f"{evaluate(Scenario()).speedup:.2f}×"

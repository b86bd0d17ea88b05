"""AppTest: the Deployment page shows deploy()'s figures, edits the profile into the link."""

from __future__ import annotations

import re

import pytest

from explorer.analysis.deploy import POLICY_NAMES, deploy
from explorer.interfaces import view_state as us
from explorer.specs.deployment import DEFAULT_PROFILE, profile_from_url
from explorer.specs.scenario import Scenario
from explorer.ui.deploy_page import EDITOR_OPEN_KEY, INVERSE_OPEN_KEY, POLICY_LABELS
from tests.support import headline
from tests.support.apptest import goto, open_section, run_app


def _cell(text: str) -> object:
    text = headline.unshown(text.strip())  # shown literally: Markdown escapes
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return text


def policy_rows(at) -> dict[str, dict[str, object]]:
    """The policy table as shown: one Markdown table (a row per policy)."""
    table = next(m.value for m in at.markdown if m.value.startswith("| policy |"))
    head, _, *rows = [[_cell(c) for c in re.split(r"(?<!\\)\|", line)[1:-1]]
                      for line in table.splitlines()]
    return {str(r[0]): dict(zip(head, r, strict=True)) for r in rows}


def test_page_agrees_with_deploy_for_the_default() -> None:
    at = goto(run_app(), "deploy")
    rows = policy_rows(at)
    assert list(rows) == list(POLICY_NAMES)
    api = deploy(Scenario(), DEFAULT_PROFILE)
    for p in api.policies:
        row = rows[p.name]
        assert row["tokens/s per GPU"] == pytest.approx(p.tokens_per_s_per_gpu, abs=0.05)
        assert row["tokens/s per user p50"] == pytest.approx(p.tokens_per_s_per_user_p50,
                                                             abs=0.05)
        assert row["tokens/s per user p90"] == pytest.approx(p.tokens_per_s_per_user_p90,
                                                             abs=0.05)
        assert row["gap to oracle"] == f"{p.gap_to_oracle:.1%}"
    # the headline: the chosen policy's figures, the speed-up against speculation off under them
    title = next(h.value for h in at.subheader if h.value.startswith("Policy to run: "))
    chosen = api.policy(next(name for name, label in POLICY_LABELS.items()
                             if title.removeprefix("Policy to run: ").startswith(label)))
    shown = headline.numbers(at)
    assert shown["Tokens/s per GPU"].value == f"{chosen.tokens_per_s_per_gpu:,.0f}"
    assert shown["Tokens/s per GPU"].note == f"{chosen.speedup:.2f}× vs off"
    assert shown["Tokens/s per user p90"].value == f"{chosen.tokens_per_s_per_user_p90:,.1f}"
    assert shown["Gap to oracle"].value == f"{chosen.gap_to_oracle:.1%}"
    # below the policy, what a drafter must reach is drawn when opened (issue 24: the page
    # sends one chart, not three, and no editor form until asked)
    assert [c.key for c in at.get("plotly_chart")] == ["dp_fig_sched"]
    assert not at.get("number_input") or all(n.key != "dp_target" for n in at.number_input)
    open_section(at, INVERSE_OPEN_KEY)
    assert len(at.get("plotly_chart")) == 3  # D*(B, S), (D, AL), (D, ρ)
    assert any("AL ≥" in s.value for s in [*at.success, *at.warning])


def test_a_profile_link_opens_and_the_editor_writes_the_link() -> None:
    link = "h1-1_64-1~b4096-1~s"
    at = open_section(goto(run_app(dp=link), "deploy"), EDITOR_OPEN_KEY)
    rows = policy_rows(at)
    api = deploy(Scenario(), profile_from_url(link))
    assert rows["oracle"]["tokens/s per GPU"] == pytest.approx(
        api.policy("oracle").tokens_per_s_per_gpu, abs=0.05)
    at.text_input(key="dp_hist").set_value("1:1, 8:1")
    at.button[0].click().run()  # the form's Apply
    assert not at.exception
    link = at.query_params["dp"]
    link = link[0] if isinstance(link, list) else link
    assert link.startswith("h1-1_8-1~b4096-1")
    want = deploy(Scenario(), profile_from_url(link))
    assert policy_rows(at)["static"]["tokens/s per GPU"] == pytest.approx(
        want.policy("static").tokens_per_s_per_gpu, abs=0.05)


def test_a_bad_profile_link_warns_and_falls_back() -> None:
    at = run_app(dp="h0-1~s~s")
    assert any("dp" in w.value for w in at.warning)
    at = goto(at, "deploy")
    assert list(policy_rows(at)) == list(POLICY_NAMES)
    assert "dp" not in at.query_params


def test_a_bad_profile_in_the_editor_names_the_field() -> None:
    at = open_section(goto(run_app(), "deploy"), EDITOR_OPEN_KEY)
    at.radio(key="dp_conc_kind").set_value("histogram")
    at.text_input(key="dp_hist").set_value("0:1")
    at.button[0].click().run()
    assert any("concurrency.batches.0" in e.value.replace("\\", "") for e in at.error)
    assert us.DEFAULT_VALUES["dp"] == DEFAULT_PROFILE.to_url()


def test_the_inverse_question_follows_its_inputs() -> None:
    from explorer.analysis.inverse import required_al, required_to_beat

    at = open_section(goto(run_app(), "deploy"), INVERSE_OPEN_KEY)
    at.number_input(key="dp_target").set_value(3.0).run()
    want = required_al(Scenario(), 3.0)
    shown = " ".join(x.value.replace("\\", "") for x in [*at.success, *at.warning])
    assert f"AL ≥ {want.acceptance_length:.2f} at D = {want.draft_len}" in shown
    at.selectbox(key="dp_beat").set_value("ngram").run()
    beat = required_to_beat(Scenario(), "ngram")
    shown = " ".join(x.value.replace("\\", "") for x in [*at.success, *at.warning])
    assert "match ngram" in shown and f"AL ≥ {beat.acceptance_length:.2f}" in shown


def test_uploaded_categories_are_workloads() -> None:
    """A SPEED-Bench report loaded on the Data page offers its categories as the mix."""
    from tests.support.paths import SAMPLES

    at = goto(run_app(), "data")
    data = (SAMPLES / "speed_bench_report_D3.csv").read_bytes()
    at.file_uploader(key="upload").set_value(("speed_bench_report_D3.csv", data, "text/csv")).run()
    assert not at.exception and not at.session_state["upload_errors"]
    at = open_section(goto(at, "deploy"), EDITOR_OPEN_KEY)
    options = at.multiselect(key="dp_workloads").options
    uploads = [o for o in options if o.startswith("upload:")]
    assert len(uploads) >= 7
    ms = at.multiselect(key="dp_workloads")
    for o in uploads[:7]:
        ms.select(o)
    ms.unselect("scenario")
    at.text_input(key="dp_workload_weights").set_value("")
    at.button[0].click().run()
    assert not at.exception
    rows = at.dataframe
    spread = next(d for d in rows if "tokens_per_s_per_user_p90" in d.value.columns).value
    assert len(spread) == 7
    assert spread["tokens_per_s_per_user_mean"].nunique() > 1  # categories differ


def test_states_that_do_not_fit_are_said_with_the_answer() -> None:
    """70B on 2×H100: 39 % of the default profile's time is in states where even plain decoding
    does not fit, priced as if it did; that was a note inside the closed "Assumptions" section,
    under headline figures that count those states."""
    at = goto(run_app(hw="h100"), "deploy")
    api = deploy(Scenario(hardware="h100"), DEFAULT_PROFILE)
    assert api.not_fitting_share == pytest.approx(0.386, abs=0.01)
    shown = " ".join(headline.unshown(w.value) for w in at.warning)  # as read: unescaped
    assert "39% of the time is in states where even plain decoding does not fit in memory " \
        "(B ≥ 61 at S = 869 … B ≥ 4 at S = 14.8K)" in shown
    assert "include states this deployment cannot serve" in shown
    # where everything fits, nothing is said
    fits = goto(run_app(m="llama-3.1-405b", tp="8", dt="fp8"), "deploy")
    assert not any("does not fit in memory" in w.value for w in fits.warning)

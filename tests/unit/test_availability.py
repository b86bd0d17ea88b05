"""Mechanisms that exist for the target (issue 11, item 2): MTP only with MTP layers, external
drafts only with the target's tokenizer, heads published (with source) or to be trained, and
priors that say how close their evidence is."""

from __future__ import annotations

import numpy as np
import pytest

from explorer import Scenario, evaluate, recommend
from explorer.analysis.availability import availability
from explorer.base.errors import ScenarioError
from explorer.model.acceptance_evidence import evidence_for
from explorer.model.acceptance_source import prior_al
from explorer.presets import mechanism_presets, model_presets

DEEPSEEK = {"model": "deepseek-v3", "tp": 8, "dtype": "fp8", "batch": 8, "context": 8192}


@pytest.mark.parametrize("model", ["llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b"])
def test_mtp_is_unavailable_for_llama_targets_with_its_reason(model: str):
    rec = recommend(Scenario(model=model, tp=8))
    assert "mtp" not in {o.mechanism for o in rec.ranking}
    assert "ships no MTP layers" in rec.unavailable["mtp"]
    assert "co-trained" in rec.unavailable["mtp"]


def test_mtp_is_ranked_for_deepseek_v3_with_its_shipped_module():
    rec = recommend(Scenario(**DEEPSEEK))  # type: ignore[arg-type]
    mtp = [o for o in rec.ranking if o.mechanism == "mtp"]
    assert mtp and "mtp" not in rec.unavailable
    assert mtp[0].availability == "ships with the target"
    assert "README_WEIGHTS.md" in mtp[0].availability_detail
    assert mtp[0].acceptance_evidence == "same model"  # DeepSeek-V3/R1 MTP points
    # no external draft shares DeepSeek-V3's tokenizer: listed with the reason, never a CLI flag
    assert "external" in rec.unavailable and "tokenizer" in rec.unavailable["external"]
    assert "--" not in rec.unavailable["external"]


def test_a_draft_with_another_tokenizer_is_refused_with_the_reason():
    sc = Scenario(model="llama-3.1-70b", mechanism="external", draft_model="qwen3-0.6b")
    with pytest.raises(ScenarioError) as info:
        evaluate(sc)
    assert info.value.field == "draft_model"
    assert "qwen3 tokenizer" in info.value.message and "llama-3" in info.value.message
    assert "llama-3.2-1b" in info.value.message  # the drafts that would do
    rec = recommend(sc.model_copy(update={"mechanism": "eagle3"}))  # ranks external as candidate
    assert "external" in rec.unavailable and "vocabulary" in rec.unavailable["external"]
    assert "external" not in {o.mechanism for o in rec.ranking}
    ok = availability(Scenario(model="llama-3.1-70b"), "external")
    assert ok.available and ok.status == "separate draft model" and ok.checkpoints == [
        "llama-3.2-1b"]


def test_heads_are_published_with_their_source_or_to_be_trained():
    published = availability(Scenario(model="llama-3.1-70b"), "eagle3")
    assert published.status == "published"
    assert "nebius/EAGLE3-Llama-3.3-70B-Instruct" in published.checkpoints
    assert "HF model card" in published.text
    trained = availability(Scenario(model="deepseek-v3"), "eagle3")
    assert trained.status == "to be trained" and "SafeAILab/EAGLE" in trained.text
    sibling = availability(Scenario(model="qwen3-30b-a3b"), "dflash")
    assert sibling.status == "to be trained"
    assert "z-lab/Qwen3-Coder-30B-A3B-DFlash" in sibling.text and "sibling" in sibling.text


def test_an_unavailable_mechanism_evaluates_as_a_flagged_hypothetical():
    ev = evaluate(Scenario(mechanism="mtp"))  # Llama-3.1-70B has no MTP layers
    assert ev.mechanism_available is False and "ships no MTP layers" in ev.availability
    assert ev.speedup is not None  # a hypothetical target with MTP layers: still computed


def test_each_prior_says_how_close_its_evidence_is():
    models, mechs = model_presets(), mechanism_presets()
    cases = {("llama-3.1-8b", "eagle3"): "same model", ("llama-3.1-70b", "eagle3"): "same model",
             ("qwen3-32b", "eagle3"): "same family", ("llama-3.1-70b", "dspark"): "other family",
             ("qwen3-235b-a22b", "dspark"): "same family", ("deepseek-v3", "mtp"): "same model",
             ("llama-3.1-70b", "external"): "none"}
    for (model, mech), closeness in cases.items():
        ev = evidence_for(mechs[mech], models[model])
        assert ev.closeness == closeness, (model, mech)
        res = prior_al(mechs[mech], np.arange(0, 9), models[model])
        assert res.evidence == closeness
        assert (closeness if closeness != "none" else "ASSUMPTION") in res.provenance
    # the evidence differs, so the prior differs: EAGLE-3 at D=7 on the 8B (vLLM issue 20780's
    # MT-bench run of the yuhuili EAGLE-3 head, 3.54; 3.44 while SpecDecodeBench's EAGLE-1 head
    # was counted as EAGLE-3) and on the 70B (the public RedHatAI and yuhuili heads as the
    # nebius card measured them, T=1; nebius's own heads, 4.0 at D=7, no longer set the level),
    # each re-weighted to the default workload mix (chat sits 0.19 below it in log(AL − 1))
    al8 = float(prior_al(mechs["eagle3"], 7, models["llama-3.1-8b"]).acceptance_length)
    al70 = float(prior_al(mechs["eagle3"], 7, models["llama-3.1-70b"]).acceptance_length)
    assert al8 == pytest.approx(4.16, abs=0.05) and al70 == pytest.approx(3.29, abs=0.05)
    ext = prior_al(mechs["external"], np.arange(0, 4), models["llama-3.1-70b"])
    assert "ASSUMPTION" in ext.provenance and "any draft size" in ext.provenance


def test_temperature_is_a_property_of_the_al_source():
    models, mechs = model_presets(), mechanism_presets()
    ev = evidence_for(mechs["eagle3"], models["llama-3.1-70b"])
    # nebius KL and LK heads measured at T=0 and T=1 on the same datasets and D=7:
    # (4.78 − 1)/(4.5 − 1) and (4.81 − 1)/(4.66 − 1), mean 1.0605
    assert ev.temperature_split is not None
    pairs, ratio = ev.temperature_split
    assert pairs == 2 and ratio == pytest.approx(((3.78 / 3.5) + (3.81 / 3.66)) / 2)
    assert "greedy accepts +6% drafted tokens" in ev.temperatures
    # SpecDecodeBench's 40 greedy points are EAGLE-1's, no longer EAGLE-3 evidence
    assert evidence_for(mechs["eagle3"], models["llama-3.1-8b"]).temperatures == (
        "T not stated: 6")
    assert evidence_for(mechs["eagle3"], models["llama-3.1-8b"]).temperature_split is None
    from explorer.model.acceptance_source import curve_al
    from explorer.presets import sample_curves

    greedy = curve_al(sample_curves()["eagle3/Llama-3.1-8B-Instruct/gsm8k"], 3, block=False)
    assert greedy.temperature == "greedy (T=0)"
    ev_json = evaluate(Scenario())
    # the level of the 70B's prior rests on the serving runs (the public heads at T=1)
    assert ev_json.acceptance_temperature.startswith("sampled (T=1): 6 — ")

"""Issue 22: public heads are ready, and a head still to be trained is a question apart from
the headline, never the headline itself."""

from __future__ import annotations

import json

import pytest

from explorer import Scenario, recommend
from tests.unit.test_cli import run


@pytest.mark.parametrize(("model", "checkpoint"), [
    ("gpt-oss-20b", "RedHatAI/gpt-oss-20b-speculator.eagle3"),
    ("qwen3-8b", "RedHatAI/Qwen3-8B-speculator.eagle3"),
])
def test_public_eagle3_heads_are_offered_as_ready_on_one_h100(model: str, checkpoint: str):
    rec = recommend(Scenario(model=model, hardware="h100", tp=1, batch=8))
    eagle = [o for o in rec.ranking if o.mechanism == "eagle3"]
    assert eagle and all(o.availability == "published" for o in eagle)
    assert checkpoint in eagle[0].availability_detail
    # the headline is what runs today: EAGLE-3 beats n-gram (gpt-oss-20b: 1.18× before)
    assert rec.best is not None and rec.best.mechanism == "eagle3"
    assert rec.best.speedup > 1.5
    assert "published" in rec.explanation


def test_a_target_where_only_heads_to_train_fit_headlines_plain_decoding():
    big = Scenario(model="llama-3.1-405b", hardware="h200", tp=8, dtype="fp8", batch=8)
    rec = recommend(big, ["eagle3", "dflash"])  # no public head for either on the 405B
    assert rec.best is None and rec.best_if_trained is not None
    assert rec.explanation.startswith("Nothing that runs today fits here")
    assert "EAGLE-3" not in rec.explanation and "1.00×" in rec.explanation
    w = rec.worth_training
    assert w is not None and w.beat == "plain decoding" and w.beat_speedup == 1.0
    assert w.evidence == "same family" and w.required_al is not None and w.required_al > 1.0
    # its interval is as wide as its evidence is far: a family prior, not the model's own
    assert w.speedup_low is not None and w.speedup_high is not None
    assert w.speedup_high / w.speedup_low > 1.4


def test_worth_training_is_printed_apart_and_in_json():
    code, out, _ = run("recommend", "--model", "llama-3.1-405b", "--hardware", "h200", "--tp",
                       "8", "--dtype", "fp8", "--json")
    assert code == 0
    data = json.loads(out)
    assert "Worth training" not in data["explanation"]
    w = data["worth_training"]
    assert w["mechanism"] == "eagle3" and w["text"].startswith("Worth training? EAGLE-3 head")
    assert w["beat"] == data["best"]["mechanism_name"]
    assert w["required_al"] < w["acceptance_length"]
    code, text, _ = run("recommend", "--model", "llama-3.1-405b", "--hardware", "h200", "--tp",
                        "8", "--dtype", "fp8")
    lines = text.splitlines()
    headline = next(i for i, line in enumerate(lines) if line.startswith(data["best"][
        "mechanism_name"]))
    assert lines[headline + 1].startswith("Worth training? ")

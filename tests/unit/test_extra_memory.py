"""Extra memory of each mechanism (issue 11, item 3): draft weights + draft KV cache, in the
ranking and `recommend --json`; when nothing fits, the largest B and what else would fit."""

from __future__ import annotations

import json

import pytest

from explorer import Scenario, evaluate, recommend
from tests.unit.test_cli import run

EIGHT_B = {"mechanism": "external", "draft_model": "llama-3.1-8b"}  # 70B on 2×H200, B=32, 8K


def test_an_8b_draft_adds_its_weights_and_kv_cache():
    plain = evaluate(Scenario(mechanism="ngram")).memory_bytes  # a lookup adds nothing
    eagle3 = evaluate(Scenario()).memory_bytes
    with_8b = evaluate(Scenario(**EIGHT_B)).memory_bytes  # type: ignore[arg-type]
    assert plain / 1e9 == pytest.approx(113.50, abs=0.01)
    assert eagle3 / 1e9 == pytest.approx(115.16, abs=0.01)  # the 115 GB …
    assert with_8b / 1e9 == pytest.approx(138.71, abs=0.01)  # … → 139 GB with an 8B draft
    # weights 8.03e9 × 2 B / TP 2 + KV 32 seq × 8192 tok × 32 layers × 2 × 4 KV heads/rank ×
    # 128 × 2 B
    weights = 8.03e9 * 2 / 2
    kv = 32 * 8192 * 32 * 2 * 4 * 128 * 2
    rec = recommend(Scenario(**EIGHT_B))  # type: ignore[arg-type]
    external = next(o for o in rec.ranking if o.mechanism == "external")
    assert external.extra_memory_bytes == pytest.approx(weights + kv, rel=1e-9)
    assert external.extra_memory_bytes == pytest.approx(with_8b - plain, rel=1e-9)
    by_mech = {o.mechanism: o.extra_memory_bytes for o in rec.ranking}
    assert by_mech["ngram"] == 0.0 and by_mech["eagle3"] == pytest.approx(eagle3 - plain)
    assert by_mech["dflash"] > by_mech["eagle3"] > 0  # 5 draft layers and their KV vs 1


def test_recommend_json_reports_the_extra_memory():
    code, out, _ = run("recommend", "--mechanism", "external", "--draft-model", "llama-3.1-8b",
                       "--json")
    assert code == 0
    ranking = json.loads(out)["ranking"]
    ext = [o for o in ranking if o["mechanism"] == "external"]
    assert ext and all(o["extra_memory_bytes"] / 1e9 == pytest.approx(25.21, abs=0.01)
                       for o in ext)


def test_mtp_memory_is_the_shipped_module():
    ev_mtp = evaluate(Scenario(model="deepseek-v3", tp=8, dtype="fp8", mechanism="mtp"))
    ev_ng = evaluate(Scenario(model="deepseek-v3", tp=8, dtype="fp8", mechanism="ngram"))
    # 11.5e9 unique MTP parameters × 1 B / 8 + one layer of MLA KV (576 × 2 B per token)
    kv = 32 * 8192 * 576 * 2
    assert ev_mtp.memory_bytes - ev_ng.memory_bytes == pytest.approx(11.5e9 / 8 + kv, rel=1e-9)


def test_when_nothing_fits_the_largest_batch_and_what_would_fit():
    rec = recommend(Scenario(context=32768, batch=64, output_tokens=None))  # 70B on 2×H200
    # the fastest option that runs today is EAGLE-3 (one draft layer): B=12. DFlash (five layers:
    # B=11) ranks a hair above it since #21's per-draft-forward cost, but it would have to be
    # trained for this target, so the hint does not size the batch for it
    assert rec.best is None and rec.max_fitting_batch == 12
    assert rec.ranking[0].availability == "to be trained"  # the case the hint must skip
    assert not any("DFlash" in h for h in rec.fit_hints)
    assert any("largest batch that fits" in h and "B=12" in h for h in rec.fit_hints)
    assert any("TP=8" in h for h in rec.fit_hints) and "TP=8" in rec.explanation
    deepseek = recommend(Scenario(model="deepseek-v3", tp=8, batch=32))  # BF16: 168 GB weights
    assert deepseek.best is None and deepseek.max_fitting_batch is None
    assert any("FP8 weights" in h for h in deepseek.fit_hints)
    fitting = recommend(Scenario(model="deepseek-v3", tp=8, batch=32, dtype="fp8"))
    assert fitting.best is not None and fitting.fit_hints == []

"""The logits GEMM and the embedding table stay BF16 when the weights are quantized (ModelOpt's
exclude_modules ["lm_head"]; aiconfigurator prices generation_logits_gemm as bfloat16)."""

from __future__ import annotations

import numpy as np
import pytest

from explorer import Scenario, evaluate
from explorer.base.dtypes import BYTES_PER_ELEMENT, LOGITS_DTYPE
from explorer.model.grid import scenario_model
from explorer.presets import model_presets


@pytest.mark.parametrize("dtype", ["fp8", "fp8_block", "fp4"])
def test_the_lm_head_is_priced_as_the_bf16_gemm_whatever_the_weights(dtype: str):
    hw = "b200" if dtype == "fp4" else "h100"
    tokens = np.array([1.0, 8.0, 64.0, 256.0])
    quantized = scenario_model(Scenario(hardware=hw, model="llama-3.1-8b", tp=1, dtype=dtype))
    plain = scenario_model(Scenario(hardware=hw, model="llama-3.1-8b", tp=1, dtype="bf16"))
    np.testing.assert_allclose(quantized.target.lm_head(tokens), plain.target.lm_head(tokens))
    # ... while its layers' GEMMs are the quantized ones (cheaper at small batch).
    q, p = (m.target._gemm(tokens[:1], 28672.0, 4096.0) for m in (quantized, plain))
    assert q[0] < 0.8 * p[0]


def test_quantized_weights_keep_the_embeddings_and_lm_head_in_bf16_memory():
    m = model_presets()["llama-3.1-8b"]
    emb = m.embedding_param_count()
    assert emb == 2 * 128256 * 4096  # untied: embedding table + lm_head
    b, s, g = 1.0, 1024.0, float(m.group_size)
    # n-gram: no drafter weights, so the difference is the target's alone
    fp8, bf16 = (scenario_model(Scenario(hardware="h100", model="llama-3.1-8b", tp=1, dtype=d,
                                         mechanism="ngram")) for d in ("fp8", "bf16"))
    diff = float(np.ravel(bf16.memory_bytes(b, s, g) - fp8.memory_bytes(b, s, g))[0])
    per = BYTES_PER_ELEMENT["bf16"] - BYTES_PER_ELEMENT["fp8"]
    assert diff == pytest.approx((m.param_count() - emb) * per, rel=1e-9)
    assert BYTES_PER_ELEMENT[LOGITS_DTYPE] == 2.0


def test_the_sources_say_the_logits_gemm_runs_in_bf16():
    ev = evaluate(Scenario(hardware="h100", model="llama-3.1-8b", tp=1, dtype="fp8", batch=8))
    assert "logits GEMM in bf16" in ev.sources["kernel_times"]
    plain = evaluate(Scenario(hardware="h100", model="llama-3.1-8b", tp=1, batch=8))
    assert "logits GEMM" not in plain.sources["kernel_times"]

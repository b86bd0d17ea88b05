"""A measured kernel table far off its siblings is flagged where a scenario uses it (issue #21)."""

from __future__ import annotations

import json

import pytest

from explorer import Scenario, evaluate
from explorer.analysis.table_sanity import FLAG_RATIO, table_flags
from tests.unit.test_cli import run

QWEN_235B = dict(hardware="h200", model="qwen3-235b-a22b", tp=8, batch=64, dtype="fp8")


def test_vllm_fp8_moe_on_h200_is_flagged_with_the_sibling_to_switch_to():
    flags = table_flags(Scenario(**QWEN_235B, engine="vllm"))  # type: ignore[arg-type]
    moe = [f for f in flags if f.component == "moe"]
    assert len(moe) == 1
    f = moe[0]
    # vLLM's ModelOpt FP8 MoE table reads ~5× slower than the other engines' FP8 and its own BF16
    assert f.ratio > FLAG_RATIO and f.time_s > 3 * f.sibling_time_s
    assert f.alternative in ({"engine": "sglang"}, {"engine": "trtllm"}, {"dtype": "bf16"})
    assert "far off its siblings" in f.message and "routed-expert" in f.message
    # the alternative it names prices the experts near the sibling's time
    alt = table_flags(Scenario(**(QWEN_235B | {"engine": "vllm"} | f.alternative)))  # type: ignore[arg-type]
    assert not [g for g in alt if g.component == "moe"]


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
def test_the_same_case_on_the_other_engines_is_not_flagged(engine):
    assert table_flags(Scenario(**QWEN_235B, engine=engine)) == ()  # type: ignore[arg-type]


def test_the_default_scenario_has_no_flag_and_evaluate_carries_them():
    assert evaluate(Scenario()).table_flags == ()
    code, out, _ = run("evaluate", "--hardware", "h200", "--model", "qwen3-235b-a22b", "--tp",
                       "8", "--batch", "64", "--dtype", "fp8", "--json")
    assert code == 0
    flags = json.loads(out)["table_flags"]
    assert [f["component"] for f in flags] == ["moe"] and flags[0]["engine"] == "vllm"

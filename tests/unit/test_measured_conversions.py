"""Conditional ↔ marginal ↔ AL conversions through every parser that does them."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.measured import AcceptanceCurve, parse_bytes
from explorer.model.acceptance import (
    al_from_conditional,
    conditional_from_marginal,
    marginal_from_al,
    marginal_from_conditional,
)

COND = [0.8, 0.75, 0.5]
MARG = [0.8, 0.6, 0.3]  # running products of COND
AL = [1.8, 2.4, 2.7]  # 1 + running sums of MARG


def only_curve(name: str, text: str) -> AcceptanceCurve:
    r = parse_bytes(name, text.encode())
    assert r.ok, [str(p) for p in r.problems]
    assert len(r.curves) == 1
    return r.curves[0]


def position_csv(kind: str, rates: list[float], mechanism: str = "eagle3") -> str:
    rows = [f"{mechanism},{i + 1},{r!r},{kind}" for i, r in enumerate(rates)]
    return "mechanism,position,rate,kind\n" + "\n".join(rows) + "\n"


def test_conditional_rates_give_marginals_and_al() -> None:
    c = only_curve("pos.csv", position_csv("conditional", COND))
    assert c.draft_lens == (1, 2, 3)
    assert c.acceptance_lengths == pytest.approx(AL, abs=1e-12)
    assert c.conditional_rates == tuple(COND)
    assert marginal_from_al(c.acceptance_lengths) == pytest.approx(MARG, abs=1e-12)


def test_marginal_rates_give_conditionals_and_al() -> None:
    c = only_curve("pos.csv", position_csv("marginal", MARG))
    assert c.acceptance_lengths == pytest.approx(AL, abs=1e-12)
    assert c.conditional_rates == pytest.approx(COND, abs=1e-12)


def test_wide_layout_with_both_kinds() -> None:
    rows = "\n".join(f"{i + 1},{c},{m}" for i, (c, m) in enumerate(zip(COND, MARG, strict=True)))
    c = only_curve("pos.csv", "position,conditional,marginal\n" + rows + "\n")
    assert c.acceptance_lengths == pytest.approx(AL, abs=1e-12)
    assert c.conditional_rates == tuple(COND)


def test_block_drafter_keeps_only_the_measured_length() -> None:
    c = only_curve("pos.csv", position_csv("marginal", MARG, mechanism="dflash"))
    assert c.draft_style == "block"
    assert c.draft_lens == (3,)
    assert c.acceptance_lengths == pytest.approx([2.7], abs=1e-12)
    assert c.conditional_rates == pytest.approx(COND, abs=1e-12)


@pytest.mark.parametrize("given_key", ["conditional_accept_rates", "marginal_accept_rates"])
def test_specdec_profile_derives_the_missing_vector(given_key: str) -> None:
    vec = COND if given_key.startswith("conditional") else MARG
    profile = {
        "schema_version": "1.0",
        "method": "eagle3",
        "num_speculative_tokens": 3,
        given_key: vec,
        "mean_accept_length": 2.7,
        "accept_length_model": "chain_analytic",
    }
    c = only_curve("speculation_profile.json", json.dumps(profile))
    assert c.draft_style == "chain" and c.draft_lens == (1, 2, 3)
    assert c.acceptance_lengths == pytest.approx(AL, abs=1e-12)
    assert c.conditional_rates == pytest.approx(COND, abs=1e-12)


def test_specdec_profile_block_uses_accept_length_by_k() -> None:
    profile = {
        "schema_version": "1.0",
        "method": "dspark",
        "num_speculative_tokens": 3,
        "max_supported_k": 7,
        "conditional_accept_rates": COND,
        "marginal_accept_rates": MARG,
        "mean_accept_length": 2.7,
        "accept_length_model": "measured_per_k",
        "accept_length_by_k": {"3": 2.7, "7": 3.9},
        "per_category": {"math": 2.9, "chat": {"mean_accept_length": 2.2}},
    }
    r = parse_bytes("speculation_profile.json", json.dumps(profile).encode())
    assert r.ok, [str(p) for p in r.problems]
    main, math_c, chat = r.curves
    assert main.draft_style == "block" and main.draft_lens == (3, 7)
    assert main.acceptance_lengths == (2.7, 3.9)
    assert main.max_supported_draft_len == 7
    assert (math_c.provenance.dataset, math_c.draft_lens, math_c.acceptance_lengths) == (
        "math",
        (3,),
        (2.9,),
    )
    assert chat.acceptance_lengths == (2.2,)


def metrics_text(per_engine: Sequence[Mapping[str, float]], model: str = "m") -> str:
    lines = []
    for engine, counts in enumerate(per_engine):
        labels = f'engine="{engine}",model_name="{model}"'
        for key in ("num_drafts", "num_draft_tokens", "num_accepted_tokens"):
            lines.append(f"vllm:spec_decode_{key}_total{{{labels}}} {counts[key]}")
            lines.append(f"vllm:spec_decode_{key}_created{{{labels}}} 1.7e9")
        for p in range(3):
            lines.append(
                f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{p}"}} '
                f"{counts[f'pos{p}']}"
            )
    return "\n".join(lines) + "\n"


def test_vllm_counters_to_al_and_rates() -> None:
    counts = {
        "num_drafts": 200,
        "num_draft_tokens": 600,
        "num_accepted_tokens": 340,
        "pos0": 160,
        "pos1": 120,
        "pos2": 60,
    }
    c = only_curve("metrics.txt", metrics_text([counts]))
    assert c.draft_lens == (1, 2, 3)  # num_draft_tokens / num_drafts = 3
    assert c.acceptance_lengths[-1] == pytest.approx(1 + 340 / 200, abs=1e-12)
    assert c.acceptance_lengths == pytest.approx(AL, abs=1e-12)
    assert c.conditional_rates == pytest.approx(COND, abs=1e-12)
    # The same totals split over two engines give the same curve.
    half = {k: v / 2 for k, v in counts.items()}
    c2 = only_curve("metrics.txt", metrics_text([half, half]))
    assert c2.acceptance_lengths == pytest.approx(c.acceptance_lengths, abs=1e-12)


def test_vllm_counters_without_total_suffix_and_two_models() -> None:
    counts = {
        "num_drafts": 200,
        "num_draft_tokens": 600,
        "num_accepted_tokens": 340,
        "pos0": 160,
        "pos1": 120,
        "pos2": 60,
    }
    text = metrics_text([counts], "a").replace("_total{", "{") + metrics_text([counts], "b")
    r = parse_bytes("metrics.txt", text.encode())
    assert r.ok
    assert sorted(c.provenance.model or "" for c in r.curves) == ["a", "b"]


def test_vllm_counters_without_per_position() -> None:
    text = (
        'vllm:spec_decode_num_drafts_total{model_name="m"} 100\n'
        'vllm:spec_decode_num_draft_tokens_total{model_name="m"} 400\n'
        'vllm:spec_decode_num_accepted_tokens_total{model_name="m"} 180\n'
    )
    c = only_curve("metrics.txt", text)
    assert c.draft_lens == (4,) and c.acceptance_lengths == (2.8,)
    assert c.conditional_rates is None


def test_vllm_dynamic_config_al() -> None:
    cfg = {
        "max_num_speculative_tokens": 3,
        "acceptance_rate_per_pos": MARG,
        "batch_stats": {"1": {"0": 6.0, "1": 7.0, "3": 8.5}},
    }
    r = parse_bytes("dynamic_speculative_config.json", json.dumps(cfg).encode())
    assert r.ok
    (c,) = r.curves
    assert c.acceptance_lengths == pytest.approx(AL, abs=1e-12)
    assert r.step_timings is not None
    assert r.step_timings.step_time_s == (0.006, 0.007, 0.0085)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=12))
def test_position_csv_matches_explorer_acceptance(conditional: list[float]) -> None:
    c = only_curve("pos.csv", position_csv("conditional", conditional))
    np.testing.assert_array_equal(c.acceptance_lengths, al_from_conditional(conditional))
    marginal = marginal_from_conditional(conditional)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["mechanism", "position", "marginal"])
    for i, m in enumerate(marginal):
        w.writerow(["eagle3", i + 1, repr(float(m))])
    r = parse_bytes("pos.csv", buf.getvalue().encode())
    assert r.ok
    (c2,) = r.curves
    np.testing.assert_allclose(c2.acceptance_lengths, c.acceptance_lengths, rtol=0, atol=1e-12)
    assert c2.conditional_rates is not None
    np.testing.assert_allclose(
        c2.conditional_rates, np.clip(conditional_from_marginal(marginal), 0, 1), atol=1e-12
    )

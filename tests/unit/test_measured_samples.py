"""Each shipped sample and template parses as its format, with the published numbers."""

from __future__ import annotations

import pytest

from explorer.measured import (
    FORMATS,
    AcceptanceCurve,
    ParseResult,
    json_schema,
    parse_bytes,
    validate_path,
)
from tests.support.paths import REFERENCE, SAMPLES


def load(name: str) -> ParseResult:
    result = validate_path(SAMPLES / name)
    assert result.ok, [str(p) for p in result.problems]
    return result


def curve_by(result: ParseResult, text: str) -> AcceptanceCurve:
    matches = [c for c in result.curves if text in c.label]
    assert len(matches) == 1, [c.label for c in result.curves]
    return matches[0]


def test_al_curve_csv() -> None:
    r = load("al_curve.csv")
    assert r.format == "al_curve_csv"
    assert len(r.curves) == 6
    assert r.problems == ()
    mtp = curve_by(r, "DeepSeek-R1")
    assert mtp.mechanism == "mtp" and mtp.draft_style == "chain"
    assert mtp.draft_lens == (1, 2, 3, 4, 5)
    assert mtp.acceptance_lengths == (1.92, 2.58, 2.82, 2.99, 3.01)
    assert mtp.provenance.temperature == 0.0
    assert mtp.provenance.dataset == "ISL 1k / OSL 2k min-latency workload"
    assert mtp.provenance.source is not None and "TensorRT-LLM" in mtp.provenance.source
    eagle = curve_by(r, "Maverick")
    assert eagle.mechanism == "eagle3"
    assert eagle.draft_lens == tuple(range(1, 8))
    assert eagle.acceptance_lengths == (1.83, 2.45, 2.94, 3.26, 3.47, 3.57, 3.62)
    assert eagle.provenance.temperature == 0.6
    ngram = curve_by(r, "gsm8k")
    assert ngram.mechanism == "ngram" and ngram.draft_lens == tuple(range(1, 11))
    assert ngram.acceptance_lengths[0] == 1.109 and ngram.acceptance_lengths[-1] == 1.186
    dflash = [c for c in r.curves if c.mechanism == "dflash"]
    dspark = [c for c in r.curves if c.mechanism == "dspark"]
    assert [(c.draft_lens, c.acceptance_lengths, c.draft_style) for c in dflash] == [
        ((7,), (5.4,), "block")
    ]
    assert [(c.draft_lens, c.acceptance_lengths, c.draft_style) for c in dspark] == [
        ((7,), (6.11,), "block")
    ]
    assert {c.provenance.model for c in dflash + dspark} == {"Qwen3-4B"}


def test_position_acceptance_csv() -> None:
    r = load("position_acceptance.csv")
    assert r.format == "position_acceptance_csv" and len(r.curves) == 2
    kimi = curve_by(r, "Kimi")
    # DSpark is a block drafter: only the measured D = 7 is kept.
    assert kimi.mechanism == "dspark" and kimi.draft_style == "block"
    assert kimi.draft_lens == (7,)
    assert kimi.acceptance_lengths[0] == pytest.approx(2.05, abs=1e-12)
    assert kimi.conditional_rates is not None
    assert kimi.conditional_rates[0] == pytest.approx(0.365, abs=1e-12)
    assert kimi.conditional_rates[1] == pytest.approx(0.214 / 0.365, abs=1e-12)
    assert kimi.conditional_rates[6] == pytest.approx(0.057 / 0.071, abs=1e-12)
    mm = curve_by(r, "MiniMax")
    assert mm.mechanism == "eagle3" and mm.draft_style == "chain"
    assert mm.draft_lens == (1, 2, 3)
    assert mm.acceptance_lengths == pytest.approx((1.76, 2.32, 2.75), abs=1e-12)
    assert mm.conditional_rates == pytest.approx((0.76, 0.56 / 0.76, 0.43 / 0.56), abs=1e-12)


def test_specdec_bench_profile() -> None:
    r = load("specdec_bench_speculation_profile.json")
    assert r.format == "specdec_bench_profile"
    (c,) = r.curves
    assert c.mechanism == "dflash" and c.draft_style == "block"
    assert c.draft_lens == (3,)
    assert c.acceptance_lengths == (2.473298,)
    assert c.conditional_rates == (0.719081, 0.645495, 0.624895)
    assert c.max_supported_draft_len == 3
    assert c.provenance.model == "MiniMax-M2.7"
    assert "nvidia/MiniMax-M2.7-DFlash" in c.label


def test_vllm_metrics() -> None:
    r = load("vllm_metrics.txt")
    assert r.format == "vllm_metrics"
    (c,) = r.curves
    assert c.provenance.model == "Kimi-K2.7"
    assert c.draft_lens == tuple(range(1, 8))
    expected_marginal = [0.365, 0.214, 0.151, 0.106, 0.086, 0.071, 0.057]
    al = 1.0
    for d, m in enumerate(expected_marginal):
        al += m
        assert c.acceptance_lengths[d] == pytest.approx(al, abs=1e-12)
    assert c.acceptance_lengths[-1] == pytest.approx(2.05, abs=1e-12)
    assert c.conditional_rates is not None
    assert c.conditional_rates[1] == pytest.approx(0.214 / 0.365, abs=1e-12)


def test_sglang_bench_speculative() -> None:
    r = load("sglang_bench_speculative.jsonl")
    assert r.format == "sglang_bench_speculative"
    st = r.step_timings
    assert st is not None
    assert st.batch == (2, 2, 2)
    assert st.draft_len == (0, 3, 4)
    assert st.verify_tokens == (1, 4, 5)
    assert st.step_time_s == (0.03922, 0.0535, 0.05951)
    assert st.acceptance_length == (1.0, 2.18, 2.44)
    (c,) = r.curves
    assert c.draft_style == "chain"
    assert c.draft_lens == (3, 4) and c.acceptance_lengths == (2.18, 2.44)


def test_speed_bench_report() -> None:
    r = load("speed_bench_report_D3.csv")
    assert r.format == "speed_bench_report"
    assert len(r.curves) == 12
    assert {c.draft_lens for c in r.curves} == {(3,)}
    assert curve_by(r, "coding").acceptance_lengths == (3.32,)
    assert curve_by(r, "roleplay").acceptance_lengths == (2.01,)
    assert curve_by(r, "Overall").acceptance_lengths == (2.80,)
    assert {c.provenance.model for c in r.curves} == {"amd/MiniMax-M3-MXFP4"}


def test_vllm_dynamic_sd_config() -> None:
    r = load("vllm_dynamic_sd_config.json")
    assert r.format == "vllm_dynamic_sd_config"
    (c,) = r.curves
    rates = [0.68, 0.39, 0.20, 0.10, 0.06, 0.03, 0.02]
    assert c.draft_lens == tuple(range(1, 8))
    assert c.acceptance_lengths[0] == pytest.approx(1.68, abs=1e-12)
    assert c.acceptance_lengths[-1] == pytest.approx(1 + sum(rates), abs=1e-12)
    st = r.step_timings
    assert st is not None and len(st.batch) == 24
    frame = st.to_frame()
    row = frame[(frame.batch == 32) & (frame.draft_len == 7)]
    assert row.step_time_s.iloc[0] == pytest.approx(14.86e-3, rel=1e-12)
    assert set(frame.batch) == {1, 4, 16, 32}


def test_kernel_timings() -> None:
    r = load("kernel_timings.csv")
    kt = r.kernel_timings
    assert kt is not None
    assert len(kt.gemm.m) == 19 and len(kt.attention.batch) == 13
    # the file writes "bfloat16"; the table holds the canonical spelling
    assert kt.gemm.m[0] == 1 and kt.gemm.n[0] == 4096 and kt.gemm.dtype[0] == "bf16"
    assert kt.gemm.time_s[0] == pytest.approx(0.01656e-3, rel=1e-12)
    frame = kt.attention.to_frame()
    row = frame[(frame.batch == 8) & (frame.context == 4095)]
    assert row.time_s.iloc[0] == pytest.approx(0.068523e-3, rel=1e-12)
    assert set(frame.q_heads) == {32} and set(frame.kv_heads) == {8} and set(frame.q_len) == {1}


def test_step_times() -> None:
    r = load("step_times.csv")
    st = r.step_timings
    assert st is not None and len(st.batch) == 20
    frame = st.to_frame()
    row = frame[(frame.batch == 64) & (frame.draft_len == 7)]
    expected = 3.92645679e-08 * 64 * 1024 + 2.10103129e-05 * 64 * 8 + 0.00588590713
    assert row.step_time_s.iloc[0] == pytest.approx(expected, rel=1e-5)
    assert tuple(frame.verify_tokens) == tuple(frame.draft_len + 1)


def test_reference_files_load_as_they_are() -> None:
    ref = REFERENCE
    if not ref.exists():
        pytest.skip("reference data not mounted")
    gemm = validate_path(ref / "gemm_measured.csv")
    assert gemm.ok and gemm.kernel_timings is not None
    assert len(gemm.kernel_timings.gemm.m) == 1197
    attention = validate_path(ref / "attention_measured.csv")
    assert attention.ok and attention.kernel_timings is not None
    assert len(attention.kernel_timings.attention.batch) == 534


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_template_parses_as_its_format(fmt: str) -> None:
    info = FORMATS[fmt]
    detected = parse_bytes(info.filename, info.template)
    assert detected.format == fmt and detected.ok, [str(p) for p in detected.problems]
    assert detected.curves or detected.step_timings or detected.kernel_timings
    forced = info.parse("upload", info.template)
    assert forced.format == fmt and forced.ok


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_json_schema(fmt: str) -> None:
    schema = json_schema(fmt)
    assert schema["type"] == "object" and schema["properties"]


def test_json_schema_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown format"):
        json_schema("nope")

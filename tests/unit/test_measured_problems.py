"""Every kind of problem is reported, with its row and/or field, and all of them at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from explorer.measured import KNOWN_MECHANISMS, ParseResult, Problem, parse_bytes, validate_path
from explorer.measured._entry import MAX_FILE_BYTES
from explorer.measured._problems import MAX_PROBLEMS


def parse(name: str, text: str | bytes) -> ParseResult:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return parse_bytes(name, data)


def find(result: ParseResult, fragment: str) -> Problem:
    hits = [p for p in result.problems if fragment in p.message]
    assert hits, f"no problem mentions {fragment!r}: {[str(p) for p in result.problems]}"
    return hits[0]


def assert_failed(result: ParseResult) -> None:
    assert not result.ok
    assert result.curves == () and result.step_timings is None and result.kernel_timings is None


# ---------------------------------------------------------------- acceptance lengths


def test_al_outside_bounds_names_row_and_field() -> None:
    r = parse("al.csv", "mechanism,D,AL\neagle3,1,1.5\neagle3,2,3.5\nngram,1,0.9\n")
    assert_failed(r)
    high = find(r, "AL 3.5 at D=2 is outside [1, 3]")
    assert (high.row, high.field, high.severity) == (2, "AL", "error")
    low = find(r, "AL 0.9 at D=1 is outside [1, 2]")
    assert (low.row, low.field) == (3, "AL")


def test_unknown_mechanism_lists_the_known_ones() -> None:
    r = parse("al.csv", "mechanism,D,AL\nmedusa,1,1.5\neagle3,1,1.6\n")
    assert_failed(r)
    p = find(r, "unknown mechanism 'medusa'")
    assert (p.row, p.field) == (1, "mechanism")
    for known in KNOWN_MECHANISMS:
        assert known in p.message


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("EAGLE3", "eagle3"),
        ("eagle3_chain (1 layer, TTT 7)", "eagle3"),
        ("draft_model", "external"),
        ("DRAFT_TARGET", "external"),
        ("ngram_prompt_lookup", "ngram"),
        ("n-gram", "ngram"),
        ("MTP", "mtp"),
        ("dflash_block_diffusion (5 layers, block 7)", "dflash"),
        ("DSpark", "dspark"),
    ],
)
def test_mechanism_spellings(raw: str, expected: str) -> None:
    r = parse("al.csv", f'mechanism,D,AL\n"{raw}",1,1.5\n')
    assert r.ok, [str(p) for p in r.problems]
    assert r.curves[0].mechanism == expected


def test_non_monotone_al_is_a_warning_with_row() -> None:
    r = parse("al.csv", "mechanism,D,AL\neagle3,1,1.8\neagle3,2,2.3\neagle3,3,2.2\n")
    assert r.ok
    p = find(r, "AL falls from 2.3 at D=2 to 2.2 at D=3")
    assert (p.row, p.field, p.severity) == (3, "AL", "warning")
    assert r.curves[0].acceptance_lengths == (1.8, 2.3, 2.2)


def test_duplicate_draft_length_in_one_curve() -> None:
    r = parse("al.csv", "mechanism,D,AL\neagle3,1,1.8\neagle3,1,1.7\n")
    assert_failed(r)
    p = find(r, "D=1 appears twice (rows 1 and 2)")
    assert (p.row, p.field) == (2, "D")


def test_draft_length_must_be_whole_and_positive() -> None:
    r = parse("al.csv", "D,AL\n0,1.0\n1.5,1.2\nx,1.1\n")
    assert_failed(r)
    assert (find(r, "must be >= 1").row, find(r, "must be >= 1").field) == (1, "D")
    assert find(r, "whole number").row == 2
    assert find(r, "'x' is not a number").row == 3


def test_missing_columns_are_named() -> None:
    r = parse_bytes("al.csv", b"mechanism,D,tokens\neagle3,1,1.5\n", fmt="al_curve_csv")
    assert_failed(r)
    p = find(r, "no acceptance length column")
    assert "acceptance_length" in p.message and "tokens" in p.message


# ---------------------------------------------------------------- rates and consistency


def test_rate_outside_unit_interval() -> None:
    r = parse("pos.csv", "position,rate,kind\n1,0.8,marginal\n2,1.2,marginal\n3,-0.1,marginal\n")
    assert_failed(r)
    assert (find(r, "rate must be <= 1, got 1.2").row, find(r, "<= 1").field) == (2, "rate")
    assert find(r, "rate must be >= 0, got -0.1").row == 3


def test_al_disagreeing_with_marginals_gives_both_numbers() -> None:
    r = parse("pos.csv", "position,rate,kind,AL\n1,0.8,marginal,2.5\n2,0.6,marginal,2.5\n")
    assert_failed(r)
    p = find(r, "disagrees with 1 + sum of marginal rates")
    assert "2.5" in p.message and "2.4" in p.message
    assert (p.row, p.field) == (1, "AL")


def test_conditional_and_marginal_columns_must_agree() -> None:
    r = parse("pos.csv", "position,conditional,marginal\n1,0.8,0.8\n2,0.5,0.5\n")
    assert_failed(r)
    p = find(r, "marginal rate 0.5 at position 2 disagrees with the product")
    assert (p.row, p.field) == (2, "marginal")
    assert "0.4" in p.message


def test_missing_position_and_unknown_kind() -> None:
    r = parse("pos.csv", "position,rate,kind\n1,0.8,marginal\n3,0.5,marginal\n1,0.9,bogus\n")
    assert_failed(r)
    assert "position(s) 2" in find(r, "missing for position").message
    p = find(r, "kind 'bogus'")
    assert (p.row, p.field) == (3, "kind")


def test_rate_without_kind() -> None:
    r = parse_bytes("pos.csv", b"position,rate\n1,0.8\n", fmt="position_acceptance_csv")
    assert_failed(r)
    assert find(r, "conditional or marginal").field == "rate"


def test_rising_marginals_are_a_warning() -> None:
    r = parse("pos.csv", "mechanism,position,marginal\neagle3,1,0.5\neagle3,2,0.6\n")
    p = find(r, "marginal acceptance rises")
    assert p.severity == "warning" and p.field == "marginal"


def test_specdec_profile_problems_all_reported() -> None:
    profile = {
        "schema_version": "1.0",
        "method": "eagle3",
        "conditional_accept_rates": [0.8, 0.5],
        "marginal_accept_rates": [0.8, 1.4],
        "mean_accept_length": 3.0,
        "extra_key": 1,
    }
    r = parse("speculation_profile.json", json.dumps(profile))
    assert r.format == "specdec_bench_profile"
    assert_failed(r)
    assert find(r, "outside [0, 1]").field == "marginal_accept_rates[1]"
    assert find(r, "product of conditional").field == "marginal_accept_rates[1]"
    consistency = find(r, "reported AL 3 disagrees")
    assert consistency.field == "mean_accept_length" and "3.2" in consistency.message
    assert find(r, "unknown key 'extra_key'").severity == "warning"


def test_specdec_profile_unknown_method_and_stub() -> None:
    r = parse(
        "p.json",
        json.dumps({"schema_version": "1.0", "method": "medusa", "marginal_accept_rates": [0.5]}),
    )
    assert find(r, "unknown mechanism 'medusa'").field == "method"
    stub = parse(
        "p.json",
        json.dumps({"schema_version": "1.0", "measured": False, "marginal_accept_rates": [0.0]}),
    )
    assert_failed(stub)
    assert find(stub, "stub profile").field == "measured"


def test_specdec_profile_type_errors_name_the_path() -> None:
    r = parse("p.json", json.dumps({"schema_version": "1.0", "marginal_accept_rates": ["a"]}))
    assert_failed(r)
    assert any(p.field == "marginal_accept_rates[0]" for p in r.problems)


def test_vllm_metrics_inconsistent_counters() -> None:
    labels = 'model_name="m"'
    text = "\n".join(
        [
            f"vllm:spec_decode_num_drafts_total{{{labels}}} 100",
            f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} 300",
            f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} 150",
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="0"}} 80',
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="1"}} 60',
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="2"}} 40',
        ]
    )
    r = parse("metrics.txt", text)
    assert_failed(r)
    p = find(r, "reported AL 2.5 disagrees with 1 + sum of marginal rates = 2.8")
    assert p.field == "vllm:spec_decode_num_accepted_tokens"


def test_vllm_metrics_without_counters_or_drafts() -> None:
    r = parse("metrics.txt", "# HELP vllm:num_requests_running x\nvllm:num_requests_running 1\n")
    assert_failed(r)
    find(r, "no vllm:spec_decode_* counters")
    r0 = parse("metrics.txt", 'vllm:spec_decode_num_drafts_total{model_name="a"} 0\n')
    p = find(r0, "no drafts recorded yet")
    assert (p.row, p.field) == (1, "vllm:spec_decode_num_drafts")
    neg = parse("metrics.txt", 'vllm:spec_decode_num_drafts_total{model_name="a"} -5\n')
    assert find(neg, "whole number >= 0").row == 1


def test_sglang_record_problems_name_line_and_key() -> None:
    lines = [
        '{"batch_size": 1, "steps": 3, "topk": 1, "acc_length": 2.5, "step_time": 0.01}',
        "not json",
        '{"batch_size": 1, "steps": 2, "topk": 1, "num_draft_tokens": 3, "acc_length": 3.5, '
        '"step_time": 0.01}',
        '{"batch_size": 1, "steps": 1, "topk": 1, "num_draft_tokens": 2, "acc_length": 1.5, '
        '"step_time": -0.01}',
    ]
    r = parse("bench.jsonl", "\n".join(lines))
    assert r.format == "sglang_bench_speculative"
    assert_failed(r)
    assert (find(r, "missing key 'num_draft_tokens'").row, find(r, "missing key").field) == (
        1,
        "num_draft_tokens",
    )
    assert find(r, "not a JSON object").row == 2
    p = find(r, "acc_length 3.5 is outside [1, 3]")
    assert (p.row, p.field) == (3, "acc_length")
    assert (find(r, "step_time is negative").row, find(r, "negative").field) == (4, "step_time")


def test_speed_bench_report_needs_a_draft_length_and_al_values() -> None:
    r = parse("speed_bench_report.csv", "Model,coding,math,Overall\nm,0.71,0.65,0.68\n")
    assert r.format == "speed_bench_report"
    assert_failed(r)
    assert find(r, "which draft length").field == "D"
    find(r, "acceptance-rate report")
    big = parse("speed_bench_report_D3.csv", "Model,coding,math,Overall\nm,350.1,420.2,385.1\n")
    find(big, "throughput")
    over = parse("speed_bench_report_k3.csv", "Model,coding,math,Overall\nm,3.5,4.2,3.85\n")
    p = find(over, "AL 4.2 at D=3 is outside [1, 4]")
    assert (p.row, p.field) == (1, "math")


def test_vllm_dynamic_config_problems() -> None:
    cfg = {
        "max_num_speculative_tokens": 3,
        "acceptance_rate_per_pos": [0.7, 1.3],
        "batch_stats": {"1": {"0": 6.0, "1": -7.0}, "x": {"0": 1.0}},
    }
    r = parse("dynamic_speculative_config.json", json.dumps(cfg))
    assert r.format == "vllm_dynamic_sd_config"
    assert_failed(r)
    find(r, "2 entries but max_num_speculative_tokens is 3")
    assert find(r, "outside [0, 1]").field == "acceptance_rate_per_pos[1]"
    assert find(r, "latency is negative").field == "batch_stats.1.1"
    assert find(r, "batch size key 'x'").field == "batch_stats.x"


# ---------------------------------------------------------------- times and units


def test_negative_nan_inf_times_are_errors_with_row_and_field() -> None:
    r = parse("steps.csv", "batch,draft_len,step_time_ms\n1,0,-1\n1,1,nan\n1,2,inf\n1,3,5.0\n")
    assert r.format == "step_times_csv"
    assert_failed(r)
    assert [(p.row, p.field) for p in r.errors] == [
        (1, "step_time_ms"),
        (2, "step_time_ms"),
        (3, "step_time_ms"),
    ]
    assert "negative" in r.errors[0].message
    assert "finite" in r.errors[1].message and "finite" in r.errors[2].message


def test_kernel_time_zero_and_negative() -> None:
    r = parse("k.csv", "kind,m,n,k,dtype,time_us\ngemm,1,8,8,bf16,0\ngemm,2,8,8,bf16,-3\n")
    assert_failed(r)
    assert find(r, "must be > 0").row == 1
    assert find(r, "negative").row == 2


def test_unit_suffixes_convert_to_seconds() -> None:
    ms = parse("steps.csv", "batch,draft_len,step_time_ms\n1,0,6.87\n")
    us = parse("steps.csv", "batch,draft_len,step_time_us\n1,0,6870\n")
    s = parse("steps.csv", "batch,draft_len,step_time_s\n1,0,0.00687\n")
    for r in (ms, us, s):
        assert r.ok and r.problems == ()
        assert r.step_timings is not None
        assert r.step_timings.step_time_s[0] == pytest.approx(0.00687, rel=1e-12)
    k = parse("k.csv", "kind,m,n,k,dtype,latency_us\ngemm,128,4096,4096,bf16,16.1\n")
    assert k.kernel_timings is not None
    assert k.kernel_timings.gemm.time_s[0] == pytest.approx(16.1e-6, rel=1e-12)


def test_unitless_step_time_that_looks_like_ms() -> None:
    r = parse("steps.csv", "batch,draft_len,step_time\n1,0,6.87\n1,1,7.97\n")
    assert_failed(r)
    p = find(r, "look like milliseconds")
    assert p.field == "step_time" and "step_time_ms" in p.message


def test_unitless_kernel_time_that_looks_like_us() -> None:
    r = parse("k.csv", "kind,m,n,k,dtype,time\ngemm,1,8,8,bf16,165\ngemm,2,8,8,bf16,160.5\n")
    assert_failed(r)
    p = find(r, "microseconds")
    assert p.field == "time" and "time_us" in p.message


def test_unitless_plausible_seconds_is_a_warning() -> None:
    r = parse("steps.csv", "batch,draft_len,step_time\n1,0,0.00687\n")
    assert r.ok
    p = find(r, "has no unit; read as seconds")
    assert p.severity == "warning" and p.field == "step_time"


def test_stated_unit_with_implausible_values_warns() -> None:
    r = parse("steps.csv", "batch,draft_len,step_time_s\n1,0,6.87\n")
    assert r.ok
    assert find(r, "check the unit").field == "step_time_s"


def test_acceptance_length_in_step_table_is_bounded() -> None:
    r = parse("steps.csv", "batch,draft_len,step_time_ms,acceptance_length\n1,2,9.1,3.4\n")
    assert_failed(r)
    p = find(r, "exceeds 1 + D = 3")
    assert (p.row, p.field) == (1, "acceptance_length")


# ---------------------------------------------------------------- several problems at once


def test_all_problems_of_a_file_come_back_together() -> None:
    text = (
        "mechanism,dataset,D,AL\n"
        "eagle3,chat,1,1.7\n"
        "eagle3,chat,2,9.0\n"  # AL too high
        "medusa,chat,1,1.5\n"  # unknown mechanism
        "mtp,code,x,1.5\n"  # D not a number
        "mtp,code,2,\n"  # AL missing
        "ngram,code,1,0.5\n"  # AL too low
    )
    r = parse("al.csv", text)
    assert_failed(r)
    assert sorted(p.row or 0 for p in r.errors) == [2, 3, 4, 5, 6]
    assert all(p.field in ("AL", "D", "mechanism") for p in r.errors)
    assert [p.row for p in r.problems] == sorted(p.row or 0 for p in r.problems)


def test_problem_count_is_capped_with_a_summary() -> None:
    rows = "\n".join(f"1,{i % 3},-1" for i in range(MAX_PROBLEMS + 50))
    r = parse("steps.csv", "batch,draft_len,step_time_ms\n" + rows + "\n")
    assert_failed(r)
    assert len(r.problems) == MAX_PROBLEMS + 1
    assert "50 more problems" in r.problems[-1].message


# ---------------------------------------------------------------- files and encodings


def test_oversized_input_is_a_problem_not_an_exception() -> None:
    r = parse_bytes("huge.csv", b"D,AL\n" + b"1" * (MAX_FILE_BYTES + 1))
    assert_failed(r)
    find(r, "the limit is 50 MiB")


def test_oversized_path(tmp_path: Path) -> None:
    path = tmp_path / "huge.csv"
    with open(path, "wb") as fh:
        fh.seek(MAX_FILE_BYTES + 10)
        fh.write(b"\n")
    find(validate_path(path), "the limit is")


def test_missing_path(tmp_path: Path) -> None:
    r = validate_path(tmp_path / "nope.csv")
    assert_failed(r)
    find(r, "cannot read")
    assert not validate_path(tmp_path).ok  # a directory


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"", "empty"),
        (b"   \n\n", "empty"),
        (b"\x00\x01\x02binary", "binary"),
        (b"PK\x03\x04rest", "Excel"),
        (b"\x81\x8d\x8f\x90 bad", "not UTF-8"),
        (b"just some words\nand more\n", "could not recognise"),
        (b'{"a": 1}', "could not recognise"),
        (b'{"a": 1', "not valid JSON"),
    ],
)
def test_unusable_inputs(data: bytes, fragment: str) -> None:
    r = parse_bytes("upload", data)
    assert_failed(r)
    find(r, fragment)


def test_windows_1252_is_read_with_a_warning() -> None:
    r = parse_bytes("steps.csv", "batch,draft_len,step_time_µs\n1,0,6870\n".encode("cp1252"))
    assert r.ok
    assert find(r, "Windows-1252").severity == "warning"
    assert r.step_timings is not None and r.step_timings.step_time_s == (0.00687,)


def test_utf16_and_bom() -> None:
    text = "batch,draft_len,step_time_ms\n1,0,6.87\n"
    for data in (text.encode("utf-16"), text.encode("utf-8-sig")):
        r = parse_bytes("steps.csv", data)
        assert r.ok and r.problems == ()


def test_forced_unknown_format() -> None:
    r = parse_bytes("a.csv", b"D,AL\n1,1.5\n", fmt="bogus")
    assert_failed(r)
    find(r, "unknown format 'bogus'")


def test_csv_parser_errors_become_problems() -> None:
    r = parse("al.csv", 'D,AL\n1,1.5\n2,"2.0\n')
    assert not r.ok
    dup = parse("al.csv", "D,AL,al\n1,1.5,1.5\n")
    assert find(dup, "name the same field").field == "al"


def test_problem_str_names_row_and_field() -> None:
    p = Problem(row=3, field="AL", message="bad")
    assert str(p) == "error (row 3, field 'AL'): bad"


def test_wide_layout_row_without_any_rate() -> None:
    r = parse("pos.csv", "position,conditional,marginal\n1,0.8,\n2,,\n")
    assert_failed(r)
    p = find(r, "no rate in this row")
    assert (p.row, p.field) == (2, "conditional")


def test_absurd_sizes_are_rejected_not_expanded() -> None:
    pos = parse("pos.csv", "position,rate,kind\n999999999,0.5,marginal\n")
    assert find(pos, "position must be <= 1024").row == 1
    label = 'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="999999999"} 1\n'
    metrics = parse("metrics.txt", "vllm:spec_decode_num_drafts_total 10\n" + label)
    assert find(metrics, 'position label "999999999"').row == 2
    big = parse("k.csv", "kind,m,n,k,dtype,time_us\ngemm,1e20,8,8,bf16,3\n")
    assert (find(big, "too large").row, find(big, "too large").field) == (1, "m")

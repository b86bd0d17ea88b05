"""Each declared cap (explorer/base/limits.py): a file past it is refused with the cap named,
a file at it is used, and the messages about a file stay short and safe."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from explorer.base.limits import (
    AL_BOUND_TOLERANCE,
    MAX_CALIBRATION_ROWS,
    MAX_CATEGORIES,
    MAX_CELL_CHARS,
    MAX_CELLS,
    MAX_COLUMNS,
    MAX_CURVE_POINTS,
    MAX_CURVES,
    MAX_JSON_DEPTH,
    MAX_JSON_VALUES,
    MAX_MEASURED_DRAFT_LEN,
    MAX_MEASURED_ROWS,
    MAX_MESSAGE_CHARS,
    MAX_PROBLEMS,
    MAX_QUOTE_CHARS,
    MAX_ROWS,
    MAX_TIME_S,
    MIN_TIME_S,
)
from explorer.base.quoting import escape_controls, quote
from explorer.calibration import CalibrationError, fit_kernel_efficiencies
from explorer.measured import ParseResult, parse_bytes, validate_path
from explorer.presets import hardware_presets
from explorer.specs.measured import AcceptanceCurve, GemmTimings, Problem, StepTimings
from explorer.specs.scenario import Acceptance, Scenario
from tests.support.measured_contract import check_result, use_everywhere


def refused(result: ParseResult, *phrases: str) -> str:
    check_result(result)
    assert not result.ok, result.summary
    text = " | ".join(str(p) for p in result.problems)
    for phrase in phrases:
        assert phrase in text, (phrase, text[:600])
    return text


def used(result: ParseResult) -> ParseResult:
    assert result.ok, [str(p) for p in result.problems]
    check_result(result)
    use_everywhere(result)
    return result


# --- shapes that were slow: refused at the header, before any cell is read -------------------

def test_a_40000_column_csv_is_refused_at_the_header():
    header = "D,AL," + ",".join(f"c{i}" for i in range(40_000))
    result = parse_bytes("wide.csv", (header + "\n1,1.5\n").encode())
    refused(result, "40,002 columns", f"the limit is {MAX_COLUMNS}", "MAX_COLUMNS")


def test_a_50000_category_speed_bench_report_is_refused_at_the_header():
    cats = ",".join(f"cat{i}" for i in range(50_000))
    text = f"Model,{cats},Overall\nm," + ",".join(["2.5"] * 50_001) + "\n"
    result = parse_bytes("speed_bench_report_D3.csv", text.encode())
    assert result.format == "speed_bench_report"
    refused(result, "columns", "MAX_COLUMNS")


def test_categories_past_the_cap_are_refused_and_at_the_cap_used():
    def report(n: int) -> bytes:
        cats = ",".join(f"c{i}" for i in range(n))
        return f"Model,{cats},Overall\nm," .encode() + ",".join(["2.5"] * (n + 1)).encode() + b"\n"

    refused(parse_bytes("speed_bench_report_D3.csv", report(MAX_CATEGORIES + 1)),
            f"{MAX_CATEGORIES + 1} categories", "MAX_CATEGORIES")
    ok = used(parse_bytes("speed_bench_report_D3.csv", report(MAX_CATEGORIES)))
    assert len(ok.curves) == MAX_CATEGORIES + 1  # and the Overall

    profile = {"schema_version": "1.0", "method": "eagle3", "marginal_accept_rates": [0.5],
               "per_category": {f"c{i}": 1.5 for i in range(MAX_CATEGORIES + 1)}}
    refused(parse_bytes("speculation_profile.json", json.dumps(profile).encode()),
            "per_category", f"the limit is {MAX_CATEGORIES}")


def test_speed_bench_rows_past_the_curve_cap_are_refused_before_building_curves():
    rows = "".join(f"m{i},2.5,2.5,2.5\n" for i in range(MAX_CURVES))
    result = parse_bytes("speed_bench_report_D3.csv",
                         f"Model,coding,math,Overall\n{rows}".encode())
    refused(result, "MAX_CURVES")


def test_lines_past_the_row_cap_are_refused_before_parsing():
    body = "eagle3,1,1.5\n" * (MAX_ROWS + 1)
    refused(parse_bytes("al.csv", f"mechanism,D,AL\n{body}".encode()),
            f"{MAX_ROWS + 2:,} lines", "MAX_ROWS")
    metrics = "vllm:spec_decode_num_drafts_total 1\n" * (MAX_ROWS + 2)
    refused(parse_bytes("metrics.txt", metrics.encode()), "MAX_ROWS")


def test_tiny_cells_past_the_cell_cap_are_refused_before_parsing():
    columns = MAX_COLUMNS
    lines = MAX_CELLS // columns + 2
    header = "D,AL," + ",".join(f"c{i}" for i in range(columns - 2))
    row = ",".join(["1"] * columns)
    refused(parse_bytes("cells.csv", (header + "\n" + (row + "\n") * lines).encode()),
            "cells", "MAX_CELLS")


def test_a_long_cell_is_refused_and_quoted_as_a_short_prefix():
    result = parse_bytes("long.csv", b"mechanism,D,AL\n" + b"x" * 5_000_000 + b",1,1.5\n")
    text = refused(result, "5,000,000 characters", "MAX_CELL_CHARS")
    assert len(text) < 1_000
    result = parse_bytes("long.csv", b"mechanism,D,AL\n" + b"e" * MAX_CELL_CHARS + b"3,1,1.5\n")
    refused(result, f"{MAX_CELL_CHARS + 1:,} characters")
    assert result.problems[0].row == 1 and result.problems[0].field == "mechanism"


def test_json_nesting_and_size_past_their_caps_are_refused_before_json_loads():
    deep = b'{"schema_version": "1.0", "x": ' + b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (
        MAX_JSON_DEPTH + 1) + b"}"
    refused(parse_bytes("p.json", deep), "levels of nesting", "MAX_JSON_DEPTH")
    shallow = b'{"schema_version": "1.0", "x": ' + b"[" * (MAX_JSON_DEPTH - 2) + b"]" * (
        MAX_JSON_DEPTH - 2) + b', "s": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}'
    assert "MAX_JSON_DEPTH" not in " ".join(str(p) for p in parse_bytes("p.json",
                                                                        shallow).problems)
    big = b'{"schema_version": "1.0", "validation": [' + b",".join(
        [b"0"] * MAX_JSON_VALUES) + b"]}"
    refused(parse_bytes("p.json", big), "MAX_JSON_VALUES")


def test_groups_past_the_curve_cap_are_refused_and_at_the_cap_used():
    def table(n: int) -> bytes:
        return ("mechanism,dataset,D,AL\n" + "".join(f"eagle3,ds{i},1,1.5\n" for i in range(n))
                ).encode()

    refused(parse_bytes("al.csv", table(MAX_CURVES + 1)), f"{MAX_CURVES + 1:,} curves",
            "MAX_CURVES")
    assert len(used(parse_bytes("al.csv", table(MAX_CURVES))).curves) == MAX_CURVES


def test_curve_points_past_the_cap_are_refused_in_every_format():
    n = MAX_CURVE_POINTS + 1
    al = "mechanism,D,AL\n" + "".join(f"eagle3,{d},1.5\n" for d in range(1, n + 1))
    pos = "mechanism,position,rate,kind\n" + "".join(f"eagle3,{p},0.9,conditional\n"
                                                       for p in range(1, n + 1))
    dyn = {"max_num_speculative_tokens": n, "acceptance_rate_per_pos": [0.5] * n,
           "batch_stats": {"1": {"0": 5.0, "1": 6.0}}}
    prof = {"schema_version": "1.0", "method": "eagle3", "marginal_accept_rates": [0.5] * n}
    for name, data in (("al.csv", al), ("pos.csv", pos), ("dynamic.json", json.dumps(dyn)),
                       ("speculation_profile.json", json.dumps(prof))):
        refused(parse_bytes(name, data.encode()), f"{n} ", "MAX_CURVE_POINTS")
    ok = used(parse_bytes("al.csv", "\n".join(al.splitlines()[:-1]).encode() + b"\n"))
    assert len(ok.curves[0].draft_lens) == MAX_CURVE_POINTS


def test_draft_lengths_past_the_cap_are_refused_and_at_it_kept_not_evaluated():
    refused(parse_bytes("al.csv", f"D,AL\n{MAX_MEASURED_DRAFT_LEN + 1},2\n".encode()),
            f"<= {MAX_MEASURED_DRAFT_LEN}")
    ok = used(parse_bytes("al.csv", f"mechanism,D,AL\ndflash,{MAX_MEASURED_DRAFT_LEN},2\n"
                                    .encode()))
    assert ok.curves[0].draft_lens == (MAX_MEASURED_DRAFT_LEN,)
    with pytest.raises(ValueError, match="draft_lens"):
        AcceptanceCurve(draft_lens=(MAX_MEASURED_DRAFT_LEN + 1,), acceptance_lengths=(2.0,))


@pytest.mark.slow  # builds 200k rows per step format: seconds, out of the quick loop
def test_step_rows_past_the_table_cap_are_refused_in_every_step_format():
    n = MAX_MEASURED_ROWS + 1
    sglang = "\n".join(json.dumps({"batch_size": 1 + i % 64, "steps": 0, "topk": 0,
                                   "num_draft_tokens": 0, "acc_length": 1.0,
                                   "step_time": 0.01}) for i in range(n))
    refused(parse_bytes("bench.jsonl", sglang.encode()), "records", "MAX_ROWS")
    batches = n // 4 + 1
    dyn = {"max_num_speculative_tokens": 3, "acceptance_rate_per_pos": [0.8, 0.6, 0.4],
           "batch_stats": {str(b): {str(k): 5.0 + k for k in range(4)}
                           for b in range(1, batches + 1)}}
    refused(parse_bytes("dynamic.json", json.dumps(dyn).encode()), "MAX_MEASURED_ROWS")
    with pytest.raises(ValueError, match="at most"):
        StepTimings(batch=(1,) * n, draft_len=(0,) * n, step_time_s=(0.01,) * n)


def test_a_dynamic_config_with_many_bad_latencies_lists_a_page():
    dyn = {"max_num_speculative_tokens": 1, "acceptance_rate_per_pos": [0.5],
           "batch_stats": {str(b): {"0": "x", "1": None} for b in range(1, 5_001)}}
    result = parse_bytes("dynamic.json", json.dumps(dyn).encode())
    refused(result, "latency must be a number", "and 9950 more problems")
    assert len(result.problems) == MAX_PROBLEMS + 1


# --- times and AL: one rule for parsers and types ---------------------------------------------

@pytest.mark.parametrize("cell,unit", [("4.9e-324", "ms"), ("1e-320", "us"), ("1e-13", "s"),
                                       ("3600.5", "s"), ("4e9", "us")])
def test_times_outside_the_measurable_range_are_refused_naming_row_and_field(cell, unit):
    for column, data in (
            (f"time_{unit}", f"kind,m,n,k,dtype,time_{unit}\ngemm,1,4096,4096,bf16,{cell}\n"),
            (f"step_time_{unit}", f"batch,draft_len,step_time_{unit}\n1,0,{cell}\n1,1,0.5\n")):
        result = parse_bytes("t.csv", data.encode())
        refused(result, "MIN_TIME_S, MAX_TIME_S")
        bad = next(p for p in result.errors if "MIN_TIME_S" in p.message)
        assert (bad.row, bad.field) == (1, column)
    with pytest.raises(ValueError, match="time_s"):
        GemmTimings.from_columns([1], [4096], [4096], "bf16", [MIN_TIME_S / 2])
    with pytest.raises(ValueError, match="time_s"):
        GemmTimings.from_columns([1], [4096], [4096], "bf16", [MAX_TIME_S * 2])


def test_the_ends_of_the_time_range_are_used():
    used(parse_bytes("k.csv", f"kind,m,n,k,dtype,time_s\ngemm,1,4096,4096,bf16,{MIN_TIME_S}\n"
                              f"gemm,2,4096,4096,bf16,{MAX_TIME_S}\n".encode()))


def test_al_within_the_float_tolerance_is_one_rule_and_stored_as_1_plus_d():
    ok = used(parse_bytes("al.csv", b"mechanism,D,AL\neagle3,1,2.0000000005\n"))
    assert ok.curves[0].acceptance_lengths == (2.0,)
    over = 2.0 + 2 * AL_BOUND_TOLERANCE
    refused(parse_bytes("al.csv", f"mechanism,D,AL\neagle3,1,{over!r}\n".encode()), "outside")
    # the scenario's fixed AL follows the same rule
    Scenario(draft_len=1, acceptance=Acceptance(kind="fixed", fixed_al=2.0 + 5e-10))
    with pytest.raises(ValueError, match="fixed_al"):
        Scenario(draft_len=1, acceptance=Acceptance(kind="fixed", fixed_al=over))


# --- messages ---------------------------------------------------------------------------------

def test_quote_is_a_short_escaped_prefix():
    assert quote("\x1b]0;x\x07" + "y" * 100) == "'\\x1b]0;x\\x07" + "y" * (
        MAX_QUOTE_CHARS - 6) + "…'"
    assert quote(list(range(2_000_000))) == "'[0, 1, 2, 3, ...]'"
    assert escape_controls(escape_controls("\u202e\n")) == "\\u202e\\n"


def test_problem_messages_and_fields_are_bounded_and_escaped_whoever_makes_them():
    p = Problem(message="\x1b[31m" + "m" * 100_000, field="\x07" * 500)
    assert len(p.message) == MAX_MESSAGE_CHARS and p.message.startswith("\\x1b[31m")
    assert "\x07" not in (p.field or "")


def test_a_page_of_problems_then_and_n_more_errors_first():
    rows = "".join(f"eagle3,{i % 9 + 1},x\n" for i in range(5_000))
    result = parse_bytes("al.csv", f"mechanism,D,AL\n{rows}".encode())
    refused(result, "and 4950 more problems", "4950 errors")
    assert len(result.problems) == MAX_PROBLEMS + 1
    assert result.summary.endswith("5000 errors to fix")


def test_cell_text_in_messages_is_escaped():
    result = parse_bytes("e.csv", b"mechanism,dataset,D,AL\n\x1b[2Jx,\x1b]0;t\x07,1,1.5\n")
    text = refused(result, "\\x1b[2J")
    assert "\x1b" not in text and "\x07" not in text
    ok = used(parse_bytes("e.csv", b"mechanism,dataset,D,AL\neagle3,\x1b]0;t\x07,1,1.5\n"))
    assert "\x1b" not in ok.curves[0].label and "\\x1b]0;t\\x07" in ok.curves[0].label


# --- files that are not files -----------------------------------------------------------------

def _within(seconds: float, fn):  # type: ignore[no-untyped-def]
    out: list[ParseResult] = []
    worker = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert out, f"did not return within {seconds} s"
    return out[0]


def test_non_regular_files_are_refused_at_once(tmp_path: Path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    text = refused(_within(5, lambda: validate_path(fifo)), "FIFO")
    assert "pipe.csv" in text
    refused(_within(5, lambda: validate_path(tmp_path)), "directory")
    refused(_within(5, lambda: validate_path("/dev/zero")), "character device")
    refused(validate_path(tmp_path / "missing.csv"), "cannot read")


# --- derived work -----------------------------------------------------------------------------

def test_calibration_is_cached_bounded_and_refuses_unknown_dtypes_clearly():
    hw = hardware_presets()["h200"]
    n = MAX_CALIBRATION_ROWS * 2 + 7
    table = GemmTimings.from_columns([1 + i % 4096 for i in range(n)], 4096, 4096, "bf16",
                                     [1e-5 + 1e-9 * i for i in range(n)])
    cal = fit_kernel_efficiencies(hw, table, None)
    assert cal.n_gemm == MAX_CALIBRATION_ROWS and cal.source_row.max() == n - 1
    assert any("sample" in note and "MAX_CALIBRATION_ROWS" in note for note in cal.notes)
    assert fit_kernel_efficiencies(hw, table, None) is cal  # cached per (hardware, table)
    unknown = GemmTimings.from_columns([1], 4096, 4096, "int4_wo", [1e-5])
    with pytest.raises(CalibrationError, match="int4_wo"):
        fit_kernel_efficiencies(hw, unknown, None)


def test_step_fit_and_draft_back_out_are_bounded_by_the_same_row_cap():
    from explorer.calibration import back_out_draft_cost, fit_step_overheads
    from explorer.model.grid import scenario_model

    model = scenario_model(Scenario())
    n = MAX_CALIBRATION_ROWS + 1_000
    batch = [1 + i % 256 for i in range(n)]
    width = [1 + i % 4 for i in range(n)]
    times = [0.01 + 1e-6 * i for i in range(n)]
    step = fit_step_overheads(model, batch, width, 4096, times)
    assert step.measured_s.size == MAX_CALIBRATION_ROWS
    assert any("MAX_CALIBRATION_ROWS" in note for note in step.notes)
    out = back_out_draft_cost(model, batch, [w - 1 for w in width], 4096, times)
    assert out.batch.size == MAX_CALIBRATION_ROWS and "MAX_CALIBRATION_ROWS" in out.summary

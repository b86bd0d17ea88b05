"""`kernel gemm|attention` over lists and ranges, one row or JSON object per point with the
source of each time; the list/range parser's invariants."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from explorer.interfaces.cli.options import UsageError, parse_int_list
from tests.unit.test_cli import run


@given(st.integers(1, 5000), st.integers(0, 5000), st.integers(2, 9),
       st.integers(1, 400), st.lists(st.integers(1, 10_000), max_size=5))
def test_parsed_lists_are_sorted_unique_and_within_the_spec(start, span, factor, step, extra):
    stop = start + span
    for text, expect in (
        (f"{start}:{stop}:x{factor}", None),
        (f"{start}:{stop}:+{step}", set(range(start, stop + 1, step))),
        (f"{start}:{stop}:{step}", set(range(start, stop + 1, step))),
    ):
        text_all = ",".join([text, *map(str, extra)])
        values = parse_int_list(text_all, "--m", 1, 20_000)
        assert values == sorted(set(values))
        assert all(1 <= v <= 20_000 for v in values)
        assert set(extra) <= set(values)
        ranged = set(values) - set(extra)
        if expect is not None:
            assert ranged == expect - set(extra)
        else:  # geometric: start·factor^i up to stop, and nothing else
            geo = {start * factor**i for i in range(64) if start * factor**i <= stop}
            assert ranged == geo - set(extra)


@pytest.mark.parametrize("text", ["1:x2", "1:512:x1", "1:512:x", "8:1", "1:512:+0",
                                  "1:2:3:4", "a", "", "1,,2", "0:64:x2", "1:64:-2"])
def test_bad_range_text_is_refused_naming_the_flag(text):
    with pytest.raises(UsageError, match="--batch"):
        parse_int_list(text, "--batch", 0, 4096)


def test_out_of_bounds_and_huge_ranges_are_refused():
    with pytest.raises(UsageError, match="outside"):
        parse_int_list("1,99999", "--m", 1, 4096)
    with pytest.raises(UsageError, match="more than"):
        parse_int_list("1:100000000", "--m", 1, 10**9)


def test_kernel_gemm_prints_one_json_object_per_point_with_its_source():
    code, out, _ = run("kernel", "gemm", "--m", "1,8,64,1:4:x2", "--n", "4096", "--k",
                       "4096:8192:+4096", "--hardware", "h100", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [(r["m"], r["k"]) for r in rows] == [(m, k) for m in (1, 2, 4, 8, 64)
                                                for k in (4096, 8192)]
    # H100 has vLLM bf16 tables covering these shapes: each time names its table.
    assert all(r["source"].startswith("table aiconfigurator-core") and "h100_sxm" in r["source"]
               and "vllm" in r["source"] for r in rows)
    assert all(r["time_s"] > 0 and r["roofline_time_s"] > 0 for r in rows)
    assert rows[0]["time_s"] < rows[-1]["time_s"]


def test_kernel_gemm_without_a_table_says_roofline():
    code, out, _ = run("kernel", "gemm", "--m", "8", "--n", "4096", "--k", "4096",
                       "--hardware", "mi300x", "--json")
    row = json.loads(out)
    assert code == 0 and isinstance(row, dict)  # one point: one object, as before
    assert row["source"].startswith("roofline") and "MI300X" in row["source"]
    assert row["time_s"] == row["roofline_time_s"]


def test_kernel_attention_rows_per_point_and_the_tile_increment():
    code, out, _ = run("kernel", "attention", "--batch", "1:64:x8", "--context", "4096",
                       "--q-heads", "32", "--kv-heads", "8", "--q-len", "1,4",
                       "--hardware", "h100")
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == 3 * 2
    assert all("generation_attention" in ln for ln in lines)
    assert sum("tile increment" in ln for ln in lines) == 3  # the q_len = 4 rows


@pytest.mark.parametrize(("argv", "flag"), [
    (["kernel", "gemm", "--m", "1:x2", "--n", "8", "--k", "8"], "--m"),
    (["kernel", "gemm", "--m", "1", "--n", "8,0", "--k", "8"], "--n"),
    (["kernel", "attention", "--batch", "1", "--context", "64:1", "--q-heads", "8",
      "--kv-heads", "1"], "--context"),
    (["kernel", "attention", "--batch", "1", "--context", "64", "--q-heads", "8",
      "--kv-heads", "3"], "--kv-heads"),
    (["kernel", "gemm", "--m", "1", "--n", "8", "--k", "8", "--dtype", "int3"], "--dtype"),
])
def test_bad_kernel_input_exits_2_naming_the_flag(argv, flag):
    code, _, err = run(*argv)
    assert code == 2 and flag in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("argv", "says"), [
    (["--dtype", "bf16", "--hardware", "l40s", "--engine", "trtllm", "--n", "2048",
      "--k", "2048"], "raised to the DRAM read of its weights"),
    (["--dtype", "fp8", "--hardware", "h100", "--engine", "trtllm", "--n", "4096",
      "--k", "4096"], "fp8 static: the measured dynamic-quant fp8 time less"),
    (["--dtype", "fp8-block", "--hardware", "h100", "--engine", "vllm", "--n", "2048",
      "--k", "2048"], "standing in for vllm's own table"),
])
def test_each_point_says_how_its_table_was_read_for_a_serving_step(argv, says):
    code, out, _ = run("kernel", "gemm", "--m", "8", *argv, "--json")
    assert code == 0
    assert says in json.loads(out)["source"]
    code, out, _ = run("kernel", "gemm", "--m", "8", "--n", "4096", "--k", "4096",
                       "--hardware", "h100", "--engine", "vllm", "--json")
    assert code == 0 and "; " not in json.loads(out)["source"]  # bf16 on H100: as measured

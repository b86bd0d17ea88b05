"""Nothing crashes the parsers; whatever they accept is within every declared limit and runs
through evaluate, calibration and the step fits; whatever they refuse gets a page of bounded,
escaped messages. A few hundred generated files per format, near-valid ones with hostile values
(denormal and huge times, AL at 1 + D ± float noise, D past the caps, control characters)."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from explorer.base.limits import AL_BOUND_TOLERANCE, MAX_CURVE_POINTS, MAX_MEASURED_DRAFT_LEN
from explorer.measured import ParseResult, parse_bytes
from tests.support.measured_contract import check_result, use_everywhere

NAMES = [
    "upload",
    "a.csv",
    "data.json",
    "bench.jsonl",
    "metrics.txt",
    "speed_bench_report_D3.csv",
    "speculation_profile.json",
    "dynamic_speculative_config.json",
]
HEADERS = [
    "D",
    "AL",
    "draft_len",
    "acceptance_length",
    "mechanism",
    "dataset",
    "model",
    "temperature",
    "drafter",
    "source",
    "position",
    "rate",
    "kind",
    "conditional",
    "marginal",
    "batch",
    "step_time",
    "step_time_ms",
    "step_time_s",
    "verify_tokens",
    "time",
    "time_us",
    "time_ms",
    "latency_ms",
    "m",
    "n",
    "k",
    "dtype",
    "context",
    "q_heads",
    "kv_heads",
    "head_dim",
    "q_len",
    "Model",
    "Overall",
    "coding",
    "math",
    "draft_style",
    "max_supported_draft_len",
    "",
]
CELLS = [
    "",
    "0",
    "1",
    "2",
    "3",
    "7",
    "-1",
    "1.5",
    "2.7",
    "9.9",
    "0.5",
    "1e3",
    "nan",
    "inf",
    "-inf",
    "abc",
    "eagle3",
    "mtp",
    "dflash",
    "dspark",
    "ngram",
    "medusa",
    "gemm",
    "attention",
    "conditional",
    "marginal",
    "chain",
    "block",
    "bf16",
    '"',
    "µs",
    "1,5",
    " 3 ",
]
JSON_KEYS = [
    "schema_version",
    "measured",
    "method",
    "num_speculative_tokens",
    "max_supported_k",
    "conditional_accept_rates",
    "marginal_accept_rates",
    "mean_accept_length",
    "accept_length_model",
    "accept_length_by_k",
    "per_category",
    "measurement_conditions",
    "max_num_speculative_tokens",
    "acceptance_rate_per_pos",
    "batch_stats",
    "batch_size",
    "steps",
    "topk",
    "num_draft_tokens",
    "acc_length",
    "step_time",
    "speed",
    "target_model",
]
METRICS = [
    "vllm:spec_decode_num_drafts_total",
    "vllm:spec_decode_num_draft_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_total",
    "vllm:spec_decode_num_accepted_tokens",
    "vllm:spec_decode_num_accepted_tokens_per_pos_total",
    "vllm:spec_decode_num_drafts_created",
    "vllm:num_requests_running",
]

# Values at and past the declared limits: denormal times (0 s after unit conversion), the time
# range's ends, float noise above 1 + D, sizes around the caps; text a terminal must not run.
HOSTILE_FLOATS = [4.9e-324, 1e-320, 1e-300, 1e-13, 1e-12, 3600.0, 3600.5, 1e300, 1.7e308,
                  2.0 ** 53, -0.0, 1.0 + 5e-10, 2.0 + AL_BOUND_TOLERANCE / 2]
hostile_float = st.one_of(st.sampled_from(HOSTILE_FLOATS), st.floats(allow_nan=True,
                                                                   allow_infinity=True))
CONTROL_TEXT = ["\x1b]0;PWNED\x07", "\x1b[2J\x1b[31mOK", "\u202eevil", "a\rb", "\x00", "\x85"]
hostile_text = st.one_of(st.sampled_from(CONTROL_TEXT),
                         st.text(alphabet=st.characters(codec="utf-8"), max_size=8),
                         st.integers(41, 3000).map(lambda n: "x" * n))

cell = st.one_of(
    st.sampled_from(CELLS),
    hostile_float.map(repr),
    hostile_text,
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-5, max_value=300).map(str),
    st.text(max_size=6),
)
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 300),
    st.text(max_size=6),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-2, max_value=12),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.dictionaries(
            st.sampled_from(["0", "1", "3", "7", "x", "coding", "id"]), inner, max_size=4
        ),
    ),
    max_leaves=12,
)


def check_invariants(result: ParseResult) -> None:
    """The contract (tests/support/measured_contract.py): refused with a page of bounded,
    escaped messages, or within every limit and usable by evaluate, calibration and the fits."""
    check_result(result)
    if currently_in_test_context():  # --hypothesis-show-statistics: how many were accepted
        event("accepted" if result.ok else "refused")
    use_everywhere(result)


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

@FUZZ
@given(st.sampled_from(NAMES), st.binary(max_size=3000))
def test_random_bytes(name: str, data: bytes) -> None:
    check_invariants(parse_bytes(name, data))


@FUZZ
@given(
    st.sampled_from(NAMES),
    st.lists(st.sampled_from(HEADERS), min_size=1, max_size=8, unique=True),
    st.lists(st.lists(cell, min_size=0, max_size=9), max_size=12),
)
def test_random_csv(name: str, header: list[str], rows: list[list[str]]) -> None:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(row)
    check_invariants(parse_bytes(name, buf.getvalue().encode("utf-8", "surrogatepass")))


@FUZZ
@given(
    st.sampled_from(NAMES),
    st.lists(
        st.sampled_from(["D", "AL", "mechanism", "dataset"]), min_size=2, max_size=4, unique=True
    ),
    st.lists(
        st.tuples(
            st.sampled_from(["eagle3", "mtp", "dflash", "", "ngram"]),
            st.one_of(st.integers(0, 9), st.sampled_from([64, 65, 1024, 1025, 2**53])),
            st.one_of(st.floats(0.0, 12.0), hostile_float, st.just(-1.0)),
            st.one_of(st.just("x"), hostile_text),
        ),
        min_size=1,
        max_size=15,
    ),
)
def test_random_al_tables(name: str, header: list[str],
                          rows: list[tuple[str, int, float, str]]) -> None:
    header = sorted(set(header) | {"D", "AL"})
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for mech, d, al, dataset in rows:
        # -1.0 stands for "exactly 1 + D plus float noise", the tolerance's edge
        al = 1.0 + d + AL_BOUND_TOLERANCE / 2 if al == -1.0 else al
        values = {"D": str(d), "AL": repr(al), "mechanism": mech, "dataset": dataset}
        writer.writerow([values[h] for h in header])
    check_invariants(parse_bytes(name, buf.getvalue().encode()))


@FUZZ
@given(st.sampled_from(NAMES), st.dictionaries(st.sampled_from(JSON_KEYS), json_value, max_size=10))
def test_random_json(name: str, obj: dict[str, object]) -> None:
    check_invariants(parse_bytes(name, json.dumps(obj).encode()))
    check_invariants(parse_bytes(name, (json.dumps(obj) + "\n" + json.dumps(obj)).encode()))


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.sampled_from(METRICS),
            st.sampled_from(
                [
                    "",
                    'model_name="a"',
                    'model_name="a",position="0"',
                    'model_name="a",position="1"',
                    'position="x"',
                    'engine="1"',
                ]
            ),
            st.one_of(
                st.sampled_from(["0", "1", "-1", "NaN", "+Inf", "1e309", "abc"]),
                st.floats(0, 1e6).map(repr),
            ),
        ),
        max_size=12,
    )
)
def test_random_metrics(lines: list[tuple[str, str, str]]) -> None:
    text = "\n".join(f"{m}{{{labels}}} {v}" if labels else f"{m} {v}" for m, labels, v in lines)
    check_invariants(parse_bytes("metrics.txt", ("# TYPE x counter\n" + text).encode()))


def test_huge_single_line_does_not_break_anything() -> None:
    for prefix in (b"D,AL\n", b"", b"{", b"vllm:spec_decode_num_drafts_total "):
        check_invariants(parse_bytes("x.csv", prefix + b"9" * 2_000_000))
    check_invariants(parse_bytes("x.json", b"[" * 100_000))


def test_100k_row_kernel_timings_load() -> None:
    rng = np.random.default_rng(7)
    n = 100_000
    half = n // 2
    m = rng.integers(1, 8192, half)
    t_gemm = rng.uniform(5.0, 2000.0, half)
    b = rng.integers(1, 256, n - half)
    ctx = rng.integers(128, 131072, n - half)
    t_attn = rng.uniform(5.0, 5000.0, n - half)
    lines = ["kind,m,n,k,dtype,batch,context,q_heads,kv_heads,head_dim,q_len,time_us"]
    lines += [f"gemm,{m[i]},4096,4096,bfloat16,,,,,,,{t_gemm[i]:.3f}" for i in range(half)]
    lines += [
        f"attention,,,,bfloat16,{b[i]},{ctx[i]},32,8,128,{1 + i % 8},{t_attn[i]:.3f}"
        for i in range(n - half)
    ]
    result = parse_bytes("kernels.csv", ("\n".join(lines) + "\n").encode())
    assert result.ok, [str(p) for p in result.problems[:5]]
    kt = result.kernel_timings
    assert kt is not None
    assert len(kt.gemm.m) == half and len(kt.attention.batch) == n - half
    assert kt.gemm.m[0] == int(m[0])
    assert kt.gemm.time_s[0] == float(f"{t_gemm[0]:.3f}") / 1e6
    assert kt.attention.q_len[:8] == tuple(range(1, 9))


# ---------------------------------------------------------------- near-valid files per format

rate = st.one_of(st.floats(-0.2, 1.2), st.sampled_from([0.0, 1.0]))
small_float = st.floats(-1.0, 20.0)


long_rates = st.one_of(
    st.lists(rate, min_size=1, max_size=8),
    st.integers(MAX_CURVE_POINTS - 1, MAX_CURVE_POINTS + 1).map(lambda n: [0.97] * n),
)


@FUZZ
@given(
    long_rates,
    st.sampled_from(["conditional", "marginal"]),
    st.sampled_from(["eagle3", "dflash", "", "mtp"]),
    st.one_of(st.none(), small_float),
)
def test_near_valid_position_csv(
    rates: list[float], kind: str, mech: str, al: float | None
) -> None:
    rows = [
        f"{mech},{i + 1},{r!r},{kind},{'' if al is None else repr(al)}" for i, r in enumerate(rates)
    ]
    text = "mechanism,position,rate,kind,AL\n" + "\n".join(rows) + "\n"
    check_invariants(parse_bytes("pos.csv", text.encode()))


@FUZZ
@given(
    st.one_of(st.none(), st.lists(rate, min_size=1, max_size=6)),
    st.one_of(st.none(), st.lists(rate, min_size=1, max_size=6)),
    st.one_of(st.none(), small_float),
    st.sampled_from(["eagle3", "dflash", "dspark", "draft_model", "eagle", None]),
    st.sampled_from(["chain_analytic", "measured_per_k", "other", None]),
    st.one_of(st.none(), st.integers(-1, 8)),
    st.dictionaries(st.sampled_from(["1", "3", "7", "0", "x"]), small_float, max_size=3),
    st.dictionaries(
        st.sampled_from(["math", "code"]),
        st.one_of(small_float, st.fixed_dictionaries({"mean_accept_length": small_float})),
        max_size=2,
    ),
)
def test_near_valid_specdec_profile(
    cond: list[float] | None,
    marg: list[float] | None,
    mean: float | None,
    method: str | None,
    model: str | None,
    k: int | None,
    by_k: dict[str, float],
    per_cat: dict[str, object],
) -> None:
    obj = {
        "schema_version": "1.0",
        "measured": True,
        "method": method,
        "conditional_accept_rates": cond,
        "marginal_accept_rates": marg,
        "mean_accept_length": mean,
        "accept_length_model": model,
        "num_speculative_tokens": k,
        "max_supported_k": k,
        "accept_length_by_k": by_k,
        "per_category": per_cat,
    }
    check_invariants(parse_bytes("speculation_profile.json", json.dumps(obj).encode()))


@FUZZ
@given(
    st.integers(0, 1000),
    st.integers(0, 5000),
    st.integers(0, 5000),
    st.one_of(st.lists(st.integers(0, 1200), max_size=6),
              st.integers(MAX_CURVE_POINTS - 1, MAX_CURVE_POINTS + 1).map(lambda n: [1] * n)),
)
def test_near_valid_vllm_metrics(drafts: int, tokens: int, accepted: int, per: list[int]) -> None:
    lab = 'engine="0",model_name="m"'
    lines = [
        f"vllm:spec_decode_num_drafts_total{{{lab}}} {drafts}",
        f"vllm:spec_decode_num_draft_tokens_total{{{lab}}} {tokens}",
        f"vllm:spec_decode_num_accepted_tokens_total{{{lab}}} {accepted}",
    ]
    lines += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{lab},position="{p}"}} {v}'
        for p, v in enumerate(per)
    ]
    check_invariants(parse_bytes("metrics.txt", "\n".join(lines).encode()))


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.integers(0, 64),
            st.integers(0, 8),
            st.integers(0, 4),
            st.integers(0, 16),
            st.one_of(small_float, st.sampled_from(HOSTILE_FLOATS)),
            st.one_of(st.floats(-0.01, 2.0), st.sampled_from(HOSTILE_FLOATS)),
        ),
        min_size=1,
        max_size=10,
    )
)
def test_near_valid_sglang(records: list[tuple[int, int, int, int, float, float]]) -> None:
    keys = ("batch_size", "steps", "topk", "num_draft_tokens", "acc_length", "step_time")
    text = "\n".join(json.dumps(dict(zip(keys, r, strict=True))) for r in records)
    check_invariants(parse_bytes("bench.jsonl", text.encode()))


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.integers(0, 64),
            st.one_of(st.integers(-1, 8), st.just(MAX_MEASURED_DRAFT_LEN + 1)),
            st.one_of(st.floats(-1.0, 3000.0), st.sampled_from(HOSTILE_FLOATS)),
            st.one_of(st.none(), small_float),
        ),
        min_size=1,
        max_size=10,
    ),
    st.sampled_from(["step_time", "step_time_ms", "step_time_us", "step_time_s"]),
)
def test_near_valid_step_times(
    rows: list[tuple[int, int, float, float | None]], time_col: str
) -> None:
    body = "\n".join(f"{b},{d},{t!r},{'' if a is None else repr(a)}" for b, d, t, a in rows)
    text = f"batch,draft_len,{time_col},acceptance_length\n{body}\n"
    check_invariants(parse_bytes("steps.csv", text.encode()))


@FUZZ
@given(
    st.lists(
        st.lists(
            st.one_of(small_float.map(lambda v: f"{v:.2f}"), st.just("")), min_size=3, max_size=3
        ),
        min_size=1,
        max_size=4,
    ),
    st.sampled_from(["speed_bench_report.csv", "speed_bench_report_D3.csv", "r_k1.csv"]),
)
def test_near_valid_speed_bench(rows: list[list[str]], name: str) -> None:
    body = "\n".join(f"model{i}," + ",".join(r) for i, r in enumerate(rows))
    text = "Model,coding,math,Overall\n" + body + "\n"
    check_invariants(parse_bytes(name, text.encode()))


@FUZZ
@given(
    st.one_of(st.integers(-1, 8), st.just(-2)),
    st.lists(rate, max_size=8),
    st.dictionaries(
        st.sampled_from(["1", "4", "x", "0"]),
        st.one_of(
            st.dictionaries(st.sampled_from(["0", "1", "3", "9", "y"]),
                            st.one_of(st.floats(-5.0, 3000.0), st.sampled_from(HOSTILE_FLOATS),
                                      st.just("2.5"), st.just("abc"), st.none()), max_size=4),
            st.just(7),
        ),
        max_size=3,
    ),
)
def test_near_valid_vllm_dynamic(
    k: int, rates: list[float], stats: dict[str, dict[str, float]]
) -> None:
    if k == -2:  # as many positions as one curve holds, and one more
        rates = [0.9] * (MAX_CURVE_POINTS + len(rates) % 2)
        k = len(rates)
    obj = {"max_num_speculative_tokens": k, "acceptance_rate_per_pos": rates, "batch_stats": stats}
    check_invariants(parse_bytes("dynamic_speculative_config.json", json.dumps(obj).encode()))


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["gemm", "attention", "generation_attention (q_len=1)", "mm", "x"]),
            st.integers(0, 9000),
            st.sampled_from(["bf16", "bfloat16", "fp8", "int4_wo", "fp4", ""]),
            st.one_of(st.floats(0.0, 5000.0), st.sampled_from(HOSTILE_FLOATS)),
            st.integers(0, 9),
        ),
        min_size=1,
        max_size=10,
    ),
    st.sampled_from(["time_us", "time_ms", "time_s", "latency_ms", "time"]),
)
def test_near_valid_kernel_timings(rows: list[tuple[str, int, str, float, int]],
                                   time_col: str) -> None:
    head = f"kind,m,n,k,dtype,batch,context,q_heads,kv_heads,head_dim,q_len,{time_col}"
    body = "\n".join(
        f"{kind},{m},4096,4096,{dt},{1 + m % 64},{128 * (1 + m % 9)},32,8,128,{q},{t!r}"
        for kind, m, dt, t, q in rows)
    check_invariants(parse_bytes("kernels.csv", f"{head}\n{body}\n".encode()))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(MAX_CURVE_POINTS - 2, MAX_CURVE_POINTS + 1), st.floats(0.5, 0.999),
       st.sampled_from(["eagle3", "dflash", "mtp", ""]))
def test_curves_at_the_point_cap_are_used_or_refused_cleanly(n: int, alpha: float,
                                                            mech: str) -> None:
    """The curve cap's edge: accepted curves evaluate at every D the model runs."""
    als = [(1 - alpha ** (d + 1)) / (1 - alpha) for d in range(1, n + 1)]
    text = "mechanism,D,AL\n" + "".join(f"{mech},{d},{a!r}\n" for d, a in
                                          enumerate(als, start=1))
    result = parse_bytes("al.csv", text.encode())
    assert result.ok == (n <= MAX_CURVE_POINTS), [str(p) for p in result.problems]
    check_invariants(result)

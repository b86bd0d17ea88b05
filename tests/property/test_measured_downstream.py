"""Whatever a parser accepts is valid for every downstream use: files built valid, with values
drawn over the whole declared range (times from MIN_TIME_S to MAX_TIME_S, AL from 1 to 1 + D
and the float noise above it, D to MAX_MEASURED_DRAFT_LEN, curves to MAX_CURVE_POINTS), must be
accepted, and their datasets run through evaluate, calibration, the step fit and the draft
back-out without an exception (tests/support/measured_contract.py)."""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.base.limits import (
    AL_BOUND_TOLERANCE,
    MAX_CURVE_POINTS,
    MAX_MEASURED_DRAFT_LEN,
    MAX_TIME_S,
    MIN_TIME_S,
)
from explorer.measured import ParseResult, parse_bytes
from tests.support.measured_contract import check_result, use_everywhere

EXAMPLES = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
UNITS = {"s": 1.0, "ms": 1e3, "us": 1e6}
MECHANISMS = ["eagle3", "mtp", "external", "ngram", "dflash", "dspark", ""]

# Seconds over the declared range, log-uniform, ends included (a hair inside, so writing them
# in ms or µs and dividing back cannot round past the bound).
seconds = st.one_of(
    st.floats(math.log10(MIN_TIME_S) + 1e-9, math.log10(MAX_TIME_S) - 1e-9).map(
        lambda e: 10.0 ** e),
    st.sampled_from([MIN_TIME_S * 1.000001, MAX_TIME_S * 0.999999, 1e-5, 0.02]),
)
fraction = st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 1.0]))


def accepted(result: ParseResult) -> None:
    assert result.ok, [str(p) for p in result.problems]
    check_result(result)
    use_everywhere(result)


def al_at(d: int, u: float) -> float:
    """AL in [1, 1 + D]; u = 1 also adds the float noise the tolerance allows."""
    return 1.0 + u * d + (AL_BOUND_TOLERANCE / 2 if u == 1.0 else 0.0)


@EXAMPLES
@given(
    st.lists(st.one_of(st.integers(1, 70), st.integers(1, MAX_MEASURED_DRAFT_LEN)),
             min_size=1, max_size=12, unique=True),
    st.lists(fraction, min_size=12, max_size=12),
    st.sampled_from(MECHANISMS),
    st.booleans(),
)
def test_al_curves_are_used(ds: list[int], us: list[float], mech: str, long_curve: bool) -> None:
    ds = list(range(1, MAX_CURVE_POINTS + 1)) if long_curve else sorted(ds)
    us = (us * (len(ds) // len(us) + 1))[: len(ds)]
    rows = "".join(f"{mech},ds,{d},{al_at(d, u)!r}\n" for d, u in zip(ds, us, strict=True))
    accepted(parse_bytes("al.csv", f"mechanism,dataset,D,AL\n{rows}".encode()))


@EXAMPLES
@given(st.lists(st.tuples(st.integers(1, 1 << 20), st.integers(0, MAX_MEASURED_DRAFT_LEN),
                          seconds, fraction), min_size=1, max_size=12),
       st.sampled_from(list(UNITS)))
def test_step_tables_are_used(rows: list[tuple[int, int, float, float]], unit: str) -> None:
    body = "".join(f"{b},{d},{t * UNITS[unit]!r},{al_at(d, u)!r}\n" for b, d, t, u in rows)
    accepted(parse_bytes("steps.csv",
                         f"batch,draft_len,step_time_{unit},acceptance_length\n{body}".encode()))


@EXAMPLES
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 1 << 16), st.integers(1, 1 << 16),
                          st.sampled_from(["bf16", "fp8", "fp4", "torch.bfloat16", "int4_wo"]),
                          st.integers(1, 64), seconds), min_size=1, max_size=12),
       st.sampled_from(list(UNITS)))
def test_kernel_tables_are_used(rows: list[tuple[bool, int, int, str, int, float]],
                                unit: str) -> None:
    head = f"kind,m,n,k,dtype,batch,context,q_heads,kv_heads,head_dim,q_len,time_{unit}"
    body = "".join(
        f"gemm,{m},{n},{n},{dt},,,,,,,{t * UNITS[unit]!r}\n" if gemm else
        f"attention,,,,{dt if dt != 'fp4' else 'fp8'},{q},{m},64,8,128,{q},{t * UNITS[unit]!r}\n"
        for gemm, m, n, dt, q, t in rows)
    accepted(parse_bytes("kernels.csv", f"{head}\n{body}".encode()))


def _marginals(conditional: list[float]) -> list[float]:
    out, m = [], 1.0
    for c in conditional:
        m *= c
        out.append(m)
    return out


conditionals = st.one_of(
    st.lists(fraction, min_size=1, max_size=10),
    st.integers(MAX_CURVE_POINTS - 1, MAX_CURVE_POINTS).map(lambda n: [0.99] * n),
)


@EXAMPLES
@given(conditionals, st.sampled_from(MECHANISMS), st.booleans())
def test_position_tables_are_used(cond: list[float], mech: str, marginal: bool) -> None:
    rates = _marginals(cond) if marginal else cond
    kind = "marginal" if marginal else "conditional"
    body = "".join(f"{mech},{i},{r!r},{kind}\n" for i, r in enumerate(rates, start=1))
    accepted(parse_bytes("pos.csv", f"mechanism,position,rate,kind\n{body}".encode()))


@EXAMPLES
@given(conditionals, st.sampled_from(["eagle3", "dflash", "mtp", "draft_model"]),
       st.dictionaries(st.sampled_from(["math", "code", "qa"]), fraction, max_size=3))
def test_specdec_profiles_are_used(cond: list[float], method: str,
                                   categories: dict[str, float]) -> None:
    marg = _marginals(cond)
    k = len(cond)
    obj = {"schema_version": "1.0", "measured": True, "method": method,
           "num_speculative_tokens": k, "conditional_accept_rates": cond,
           "marginal_accept_rates": marg, "mean_accept_length": 1.0 + sum(marg),
           "per_category": {c: al_at(k, u) for c, u in categories.items()}}
    accepted(parse_bytes("speculation_profile.json", json.dumps(obj).encode()))


@EXAMPLES
@given(conditionals, st.integers(1, 10**9), st.sampled_from(["m", "a/b", "x\x1by"]))
def test_vllm_metrics_are_used(cond: list[float], drafts: int, model: str) -> None:
    marg = _marginals(cond)
    per = [round(m * drafts) for m in marg]
    lab = f'engine="0",model_name="{model}"'
    lines = [f"vllm:spec_decode_num_drafts_total{{{lab}}} {drafts}",
             f"vllm:spec_decode_num_draft_tokens_total{{{lab}}} {drafts * len(cond)}",
             f"vllm:spec_decode_num_accepted_tokens_total{{{lab}}} {sum(per)}"]
    lines += [f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{lab},position="{p}"}} {v}'
              for p, v in enumerate(per)]
    accepted(parse_bytes("metrics.txt", ("\n".join(lines) + "\n").encode()))


@EXAMPLES
@given(st.lists(st.tuples(st.integers(1, 4096), st.integers(0, 16), seconds, fraction),
                min_size=1, max_size=12))
def test_sglang_records_are_used(rows: list[tuple[int, int, float, float]]) -> None:
    body = "\n".join(json.dumps({
        "batch_size": b, "steps": d, "topk": 1 if d else 0, "num_draft_tokens": d + 1 if d else 0,
        "acc_length": al_at(d, u), "step_time": t}) for b, d, t, u in rows)
    accepted(parse_bytes("bench.jsonl", body.encode()))


@EXAMPLES
@given(conditionals, st.dictionaries(st.integers(1, 4096).map(str),
                                     st.lists(seconds, min_size=2, max_size=5), min_size=1,
                                     max_size=6))
def test_vllm_dynamic_configs_are_used(cond: list[float], stats: dict[str, list[float]]) -> None:
    marg = _marginals(cond)
    obj = {"max_num_speculative_tokens": len(marg), "acceptance_rate_per_pos": marg,
           "batch_stats": {b: {str(k): t * 1e3 for k, t in enumerate(ts)}
                           for b, ts in stats.items()}}
    accepted(parse_bytes("dynamic_speculative_config.json", json.dumps(obj).encode()))


@EXAMPLES
@given(st.lists(st.lists(fraction, min_size=3, max_size=3), min_size=1, max_size=6),
       st.integers(1, MAX_MEASURED_DRAFT_LEN))
def test_speed_bench_reports_are_used(rows: list[list[float]], d: int) -> None:
    def cell(u: float) -> str:
        return f"{min(1.1 + 18.9 * u, 1.0 + d):.2f}"  # all <= 1: a rate report; > 20: throughput

    body = "".join(f"model{i},{d},{cell(r[0])},{cell(r[1])},{cell(r[2])},\n"
                   for i, r in enumerate(rows))
    accepted(parse_bytes("report.csv", f"Model,D,coding,math,qa,Overall\n{body}".encode()))

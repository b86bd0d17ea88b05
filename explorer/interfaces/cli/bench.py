"""`bench-plan` and `bench-compare`: the runs that check a prediction on the user's engine, and
their result files read back against it (explorer/export/bench_plan.py, bench_compare.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from explorer.base.quoting import escape_controls
from explorer.calibration.bench_backout import BenchBackOut
from explorer.export.bench_compare import applied, back_out, compare
from explorer.export.bench_plan import PLAN_KEYS, bench_plan, bench_script
from explorer.interfaces.cli.options import (
    UsageError,
    add_scenario_options,
    print_json,
    scenario_from_args,
)
from explorer.measured.bench_results import BenchFile, read_bench_path


def add_parsers(sub: Any) -> None:
    bp = sub.add_parser("bench-plan", help="benchmark runs with forced acceptance that check "
                        "the prediction on your engine (--engine vllm|sglang|trtllm)")
    add_scenario_options(bp, lists=False)
    bp.add_argument("--script", metavar="FILE.sh", help="also write every run as one script")
    bc = sub.add_parser("bench-compare", help="benchmark result files (vllm bench serve, "
                        "sglang.bench_serving, trtllm-bench, AIPerf) vs the prediction, and the "
                        "step-cost terms backed out of them")
    bc.add_argument("files", nargs="+", metavar="FILE")
    add_scenario_options(bc, lists=False)
    bc.add_argument("--applied-scenario", metavar="FILE.json",
                    help="write the scenario with the backed-out terms applied (use it with "
                    "--scenario, or save it with `scenario save`)")


def cmd_bench_plan(args: argparse.Namespace) -> int:
    scenario = scenario_from_args(args)
    try:  # --mechanism given: that mechanism at its best D; else the recommendation
        plan = bench_plan(scenario, getattr(args, "mechanism", None))
    except ValueError as exc:
        raise UsageError(f"argument --mechanism: {exc}") from None
    if args.script:
        try:
            Path(args.script).write_text(bench_script(plan), encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"argument --script: cannot write '{args.script}': "
                             f"{exc.strerror or exc}") from None
    if args.json:
        out = plan.model_dump()
        out["runs"] = [{k: r[k] for k in PLAN_KEYS} for r in out["runs"]]
        print_json(out)
        return 0
    print(f"{plan.mechanism_name} D={plan.draft_len} vs D=0 on {plan.engine} — {plan.model}, "
          f"{plan.hardware} TP{plan.tp}, {plan.input_len} in / {plan.output_len} out tokens")
    print(f"flags checked against: {plan.engine_version['engine']}")
    for r in plan.runs:
        al = "" if r.forced_acceptance_length is None else \
            f" AL={r.forced_acceptance_length:.2f}"
        print(f"\nB={r.batch} D={r.draft_len}{al}: expect {r.expected_output_tokens_per_s:.0f} "
              f"output tok/s [{r.expected_low:.0f}–{r.expected_high:.0f}], TPOT "
              f"{r.expected_tpot_s * 1e3:.2f} ms")
        print(f"  server: {r.server_command}")
        print(f"  client: {r.client_command}")
    for n in plan.notes:
        print(f"note: {n}")
    return 0


def _read(paths: list[str]) -> list[BenchFile]:
    files = []
    for path in paths:
        f = read_bench_path(path)
        if not f.ok:
            first = f.errors[0]
            where = ", ".join(x for x in (first.row is not None and f"line {first.row}",
                                          first.field and f"field '{first.field}'") if x)
            more = f" (and {len(f.errors) - 1} more)" if len(f.errors) > 1 else ""
            raise UsageError(f"argument FILE: '{escape_controls(path)}' ({f.format}): "
                             f"{where + ': ' if where else ''}{first.message}{more}")
        files.append(f)
    return files


def _backout_json(b: BenchBackOut) -> dict[str, Any]:
    return {
        "terms": {"step_overhead_s": b.step_overhead_s,
                  "step_overhead_before_s": b.step_overhead_before_s,
                  "step_cost_per_token_s": b.step_cost_per_token_s,
                  "verify_growth_scale": b.verify_growth_scale,
                  "draft_cost_scale": b.draft_cost_scale},
        "mape_before": b.mape_before, "mape_after": b.mape_after,
        "steps": [{"batch": int(x), "draft_len": int(d), "acceptance_length": float(a),
                   "measured_s": float(m), "model_before_s": float(p0),
                   "model_after_s": float(p1), "prefill_after_s": float(pf)}
                  for x, d, a, m, p0, p1, pf in zip(b.batch, b.draft_len, b.acceptance_length,
                                                    b.measured_s, b.predicted_before_s,
                                                    b.predicted_after_s, b.prefill_after_s,
                                                    strict=True)],
        "notes": list(b.notes), "summary": b.summary,
    }


def cmd_bench_compare(args: argparse.Namespace) -> int:
    files = _read(args.files)
    scenario = scenario_from_args(args)
    result = compare(scenario, files)
    engines = sorted({r.engine for r in result.rows})
    backouts = {e: back_out(scenario, result, e) for e in engines}
    if args.applied_scenario:
        mine = backouts.get(scenario.engine) or next(iter(backouts.values()))
        engine = scenario.engine if scenario.engine in backouts else engines[0]
        out_sc = applied(scenario.model_copy(update={"engine": engine}), mine)
        try:
            Path(args.applied_scenario).write_text(out_sc.model_dump_json(indent=2),
                                                   encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"argument --applied-scenario: cannot write "
                             f"'{args.applied_scenario}': {exc.strerror or exc}") from None
    if args.json:
        out = result.model_dump()
        out["back_out"] = {e: _backout_json(b) for e, b in backouts.items()}
        print_json(out)
        return 0
    print(f"{'engine':7} {'B':>4} {'D':>2} {'AL':>5} {'in/out':>11}  {'tok/s pred [80%]':>24} "
          f"{'meas':>8} {'err':>6}  {'TPOT ms p/m':>13}  {'speedup p/m':>11}  file")
    for r in result.rows:
        p, m = r.predicted, r.measured
        sp = "—" if p.speedup is None or m.speedup is None else \
            f"{p.speedup:.2f}/{m.speedup:.2f}"
        al = "—" if r.acceptance_length is None else f"{r.acceptance_length:.2f}"
        flag = "" if r.in_interval else " !"
        io = f"{r.input_len:.0f}/{r.output_len:.0f}"
        print(f"{r.engine:7} {r.batch:>4} {r.draft_len:>2} {al:>5} {io:>11}  "
              f"{p.output_tokens_per_s:>7.0f} [{p.low:>6.0f}–{p.high:<6.0f}] "
              f"{m.output_tokens_per_s:>8.0f} {(r.error['output_tokens_per_s'] or 0):>+6.1%}  "
              f"{p.tpot_s * 1e3:>6.2f}/{m.tpot_s * 1e3:<6.2f}  {sp:>11}  "
              f"{escape_controls(r.file)}{flag}")
    print(f"\noutput tok/s MAPE {result.mape_output_tokens_per_s:.1f}%; "
          f"{result.in_interval_share:.0%} of runs within the 80% interval")
    for e, b in backouts.items():
        print(f"{e}: {b.summary}")
        for n in b.notes:
            print(f"  note: {n}")
    for n in result.notes:
        print(f"note: {n}")
    return 0


COMMANDS = {"bench-plan": cmd_bench_plan, "bench-compare": cmd_bench_compare}


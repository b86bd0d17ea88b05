"""The commands: evaluate, recommend, sweep, kernel, presets, schema, validate (`scenario …` is
in scenario.py). Each is a thin caller of the Python API."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from explorer.analysis.codesign import GroupAt, codesign
from explorer.analysis.evaluate import evaluate
from explorer.analysis.hardware_catalogue import hardware_catalogue
from explorer.analysis.kernel_points import attention_points, gemm_points, moe_points
from explorer.analysis.recommend import recommend
from explorer.analysis.sweep import sweep
from explorer.base.dtypes import normalize_dtype
from explorer.base.engines import DEFAULT_ENGINE, SERVING_ENGINES
from explorer.base.errors import ScenarioError
from explorer.base.quoting import escape_controls
from explorer.interfaces.cli import bench as bench_commands
from explorer.interfaces.cli import deploy as deploy_commands
from explorer.interfaces.cli import scenario as scenario_commands
from explorer.interfaces.cli.options import (
    DESIGN_FLAGS,
    Parser,
    UsageError,
    add_design_options,
    add_scenario_options,
    design_axes,
    parse_int_list,
    print_json,
    scenario_from_args,
    sweep_axes,
)
from explorer.measured import validate_path
from explorer.presets import hardware_presets, mechanism_presets, model_presets, sample_curves
from explorer.specs.deployment import profile_json_schema
from explorer.specs.hardware import HardwareSpec
from explorer.specs.scenario import scenario_json_schema
from explorer.specs.settings import DTYPE_OPTIONS, KV_DTYPE_OPTIONS

MAX_GRID_POINTS = 2_000_000


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m explorer", description="SpecDec Explorer command line")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    ev = sub.add_parser("evaluate", help="evaluate one scenario")
    add_scenario_options(ev, lists=False)
    scenario_commands.add_scenario_id_option(ev)
    scenario_commands.add_parser(sub)
    add_scenario_options(sub.add_parser("recommend", help="rank mechanisms × D"), lists=False)
    sw = sub.add_parser("sweep", help="grid over B, D, G, S, mechanism → CSV/Parquet")
    add_scenario_options(sw, lists=True)
    sw.add_argument("--out", help="write to FILE (.parquet or .csv) instead of CSV on stdout")
    add_design_options(sw)
    sub.add_parser("presets", help="list preset names").add_argument("--json", action="store_true")
    sub.add_parser("schema", help="print the scenario JSON schema").add_argument(
        "--profile", action="store_true", help="the deployment profile's schema instead")
    deploy_commands.add_parsers(sub)
    bench_commands.add_parsers(sub)
    v = sub.add_parser("validate", help="recognise and check a measured-data file")
    v.add_argument("file")
    v.add_argument("--json", action="store_true")
    k = sub.add_parser("kernel", help="a kernel's time at each point of lists or ranges, with "
                       "its source (measured table or roofline)")
    ksub = k.add_subparsers(dest="kernel", required=True, parser_class=Parser)
    kg = ksub.add_parser("gemm")
    for flag in ("--m", "--n", "--k"):
        kg.add_argument(flag, required=True, help=LIST_HELP)
    kg.add_argument("--dtype", choices=list(DTYPE_OPTIONS), type=normalize_dtype,
                    default="bf16")
    ka = ksub.add_parser("attention")
    for flag, default in (("--batch", None), ("--context", None), ("--q-heads", None),
                          ("--kv-heads", None), ("--head-dim", "128"), ("--q-len", "1")):
        ka.add_argument(flag, required=default is None, default=default, help=LIST_HELP)
    ka.add_argument("--kv-dtype", choices=list(KV_DTYPE_OPTIONS), type=normalize_dtype,
                    default="bf16")
    km = ksub.add_parser("moe", help="one routed-expert layer (--inter: the full expert "
                         "width; --tp shards it)")
    for flag, default in (("--tokens", None), ("--hidden", None), ("--inter", None),
                          ("--topk", None), ("--experts", None), ("--tp", "1")):
        km.add_argument(flag, required=default is None, default=default, help=LIST_HELP)
    km.add_argument("--dtype", choices=list(DTYPE_OPTIONS), type=normalize_dtype,
                    default="bf16", help="the experts' dtype")
    for kp in (kg, ka, km):
        kp.add_argument("--hardware", default="h200")
        kp.add_argument("--engine", choices=list(SERVING_ENGINES), default=DEFAULT_ENGINE,
                        help="whose measured kernel tables price the covered points")
        kp.add_argument("--json", action="store_true",
                        help="one JSON object for one point, a list of them for several")
    return p


def cmd_validate(args: argparse.Namespace) -> int:
    result = validate_path(args.file)
    if args.json:
        print_json(result.model_dump(include={"format", "summary", "problems"}))
    else:
        # Messages and summaries are escaped by their types; the path is escaped here, so no
        # line this prints can carry a terminal escape sequence.
        print(f"{escape_controls(args.file)}: {result.format} — {result.summary}")
        for p in result.problems:
            where = ", ".join(x for x in (p.row is not None and f"row {p.row}",
                                          p.field and f"field {p.field}") if x)
            print(f"  {p.severity}: {where + ': ' if where else ''}{p.message}")
    return 0 if result.ok else 2


def fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def cmd_evaluate(args: argparse.Namespace) -> int:
    base = scenario_commands.stored_scenario_base(args) if args.scenario_id else None
    ev = evaluate(scenario_from_args(args, base=base))
    if args.json:
        print_json(ev.model_dump())
        return 0
    print(f"speedup            {fmt(ev.speedup)}×  [80%: {fmt(ev.speedup_low)}–"
          f"{fmt(ev.speedup_high)}]  (launch-bound ≈ {fmt(ev.speedup_launch_bound)}×)")
    extended = " (model-extended)" if ev.acceptance_extrapolated else ""
    print(f"acceptance length  {fmt(ev.acceptance_length)}{extended}  [{ev.acceptance_source}]")
    print(f"T_verif base/spec  {ev.t_verif_base_s * 1e3:.3f} / {ev.t_verif_spec_s * 1e3:.3f} ms")
    print(f"T_draft            {ev.t_draft_s * 1e3:.3f} ms")
    print("prompt prefill     " + (
        f"{ev.t_prefill_s * 1e3:.3f} ms a plain step (whole requests of N = {ev.output_tokens} "
        f"tokens; ×{ev.prefill_factor:.3f} on the decode steps' speedup)" if ev.output_tokens
        else "not charged: decode steps only (--output-tokens N prices whole requests)"))
    print(f"tokens/s per user  {fmt(ev.tokens_per_s_per_user)}  "
          f"(no spec {ev.baseline_tokens_per_s_per_user:.1f})")
    print(f"tokens/s per GPU   {fmt(ev.tokens_per_s_per_gpu)}  "
          f"(no spec {ev.baseline_tokens_per_s_per_gpu:.1f})")
    print(f"attention fraction {ev.attention_fraction:.1%}")
    print(f"memory per GPU     {ev.memory_bytes / 1e9:.1f} / {ev.hbm_bytes / 1e9:.0f} GB"
          f"  ({'fits' if ev.fits_in_memory else 'DOES NOT FIT'})")
    return 0


def cmd_recommend(args: argparse.Namespace) -> int:
    scenario = scenario_from_args(args)
    rec = recommend(scenario)
    if args.json:
        print_json({
            "sources": evaluate(scenario).sources,
            "best": rec.best.model_dump() if rec.best else None,
            "best_if_trained": rec.best_if_trained.model_dump() if rec.best_if_trained else None,
            "worth_training": rec.worth_training.model_dump() if rec.worth_training else None,
            "ranking": [o.model_dump() for o in rec.ranking],
            "guidelines": [g.model_dump() for g in rec.guidelines],
            "explanation": rec.explanation,
            "unavailable": rec.unavailable,
            "max_fitting_batch": rec.max_fitting_batch,
            "fit_hints": rec.fit_hints,
            "confidence": rec.confidence,
            "confidence_text": rec.confidence_text,
        })
        return 0
    for g in rec.guidelines:
        print(f"[{g.id}] {g.text}")
    print()
    print(rec.explanation)
    if rec.worth_training is not None:  # a question apart from the headline
        print(rec.worth_training.text)
    for o in rec.ranking[:10]:
        band = f"[{fmt(o.speedup_low)}–{fmt(o.speedup_high)}]"
        print(f"  {o.mechanism:<9} D={o.draft_len:<3} {o.speedup:6.3f}× {band:<15}"
              f"  AL {o.acceptance_length:.2f}{'*' if o.acceptance_model_extended else ' '}"
              f"  draft {o.draft_overhead_fraction:.0%}  {o.acceptance_evidence}; {o.availability}")
    for slug, why in rec.unavailable.items():
        print(f"  {slug:<9} unavailable: {why}")
    if any(o.acceptance_model_extended for o in rec.ranking[:10]):
        print("  * AL model-extended past the published/measured D (an acceptance model, not data)")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    axes = sweep_axes(args)
    designs = design_axes(args)
    n_points = int(np.prod([len(v) for v in axes.values()]))
    if n_points > MAX_GRID_POINTS:
        raise UsageError(f"the grid has {n_points} points; the limit is {MAX_GRID_POINTS}")
    if designs and n_points > 1:
        raise UsageError("argument --design-*: a co-design sweep runs at one operating point; "
                         "give --batch, --draft-len, --group, --context and --mechanism one "
                         "value each")
    scenario = scenario_from_args(args, {field: v[0] for field, v in axes.items()})
    if designs:
        group_at: GroupAt = "fixed_kv" if args.design_at == "fixed-kv" else "fixed_params"
        try:
            df = codesign(scenario, designs, group_at)
        except ScenarioError as exc:
            flag = next((f for f, (axis, _, _) in DESIGN_FLAGS.items() if axis == exc.field),
                        "--design-rho" if exc.field == "rho" else f"--design-{exc.field}")
            raise UsageError(f"argument {flag}: {exc.message}") from None
    else:
        df = sweep(scenario, **axes)  # the axes are named like the Scenario fields
    if args.out:
        out = Path(args.out)
        if out.suffix == ".parquet":
            df.to_parquet(out, index=False)
        else:
            df.to_csv(out, index=False)
        print(f"wrote {len(df)} rows to {out}", file=sys.stderr)
    else:
        df.to_csv(sys.stdout, index=False)
    return 0


def cmd_presets(args: argparse.Namespace) -> int:
    catalogue = hardware_catalogue()  # in the selector's group order
    data: dict[str, Any] = {
        "hardware": {e.slug: e.name for e in catalogue},
        "models": {k: f"{v.name} ({v.role})" for k, v in model_presets().items()},
        "mechanisms": {k: v.name for k, v in mechanism_presets().items()},
        "al_curves": list(sample_curves()),
        # What is measured and what is modelled per GPU, and the engines that run on it.
        "hardware_kernels": {e.slug: {"group": e.group, "engines": list(e.engines),
                                      "measured": e.measured, "kernels": e.kernels}
                             for e in catalogue},
    }
    if args.json:
        print_json(data)
        return 0
    print("hardware:")
    group = None
    for e in catalogue:
        if e.group != group:
            group = e.group
            print(f"  [{group}]")
        print(f"  {e.slug:<18} {e.name} (engines: {', '.join(e.engines)}; {e.kernels})")
    for name in ("models", "mechanisms", "al_curves"):
        items = data[name]
        print(f"{name}:")
        if isinstance(items, dict):
            for slug, text in items.items():
                print(f"  {slug:<18} {text}")
        else:
            for key in items:
                print(f"  {key}")
    return 0


def _hardware(slug: str) -> HardwareSpec:
    hw = hardware_presets().get(slug)
    if hw is None:
        raise UsageError(f"argument --hardware: unknown '{slug}'; known: "
                         + ", ".join(hardware_presets()))
    return hw


# Bounds of the kernel command's shape values (a GEMM dimension or head count of any model).
KERNEL_DIM_MAX = 1 << 24
MAX_KERNEL_POINTS = 100_000
LIST_HELP = "a value, comma list or range: 1,8,64 or 1:512:x2 or 0:64:+8"


def _kernel_lists(args: argparse.Namespace, flags: tuple[str, ...]) -> dict[str, list[int]]:
    lists = {f: parse_int_list(str(getattr(args, f)), "--" + f.replace("_", "-"), 1,
                               KERNEL_DIM_MAX) for f in flags}
    points = int(np.prod([len(v) for v in lists.values()]))
    if points > MAX_KERNEL_POINTS:
        raise UsageError(f"argument --{flags[0]}: {points} points (the lists' product) exceed "
                         f"{MAX_KERNEL_POINTS}")
    return lists


def cmd_kernel(args: argparse.Namespace) -> int:
    hw = _hardware(args.hardware)
    problem = hw.engine_problem(args.engine)  # data/hardware.csv `engines`
    if problem is not None:
        raise UsageError(f"argument --engine: {problem}")
    if args.kernel == "gemm":
        v = _kernel_lists(args, ("m", "n", "k"))
        points = gemm_points(hw, args.engine, v["m"], v["n"], v["k"], args.dtype)
    elif args.kernel == "moe":
        v = _kernel_lists(args, ("tokens", "hidden", "inter", "topk", "experts", "tp"))
        points = moe_points(hw, args.engine, v["tokens"], v["hidden"], v["inter"], v["topk"],
                            v["experts"], v["tp"], args.dtype)
    else:
        v = _kernel_lists(args, ("batch", "context", "q_heads", "kv_heads", "head_dim",
                                 "q_len"))
        for q in v["q_heads"]:
            bad = [kv for kv in v["kv_heads"] if q % kv]
            if bad:
                raise UsageError(f"argument --kv-heads: {bad[0]} does not divide --q-heads {q}")
        points = attention_points(hw, args.engine, v["batch"], v["context"], v["q_heads"],
                                  v["kv_heads"], v["head_dim"], v["q_len"], args.kv_dtype)
    rows = [p.as_dict(args.kernel, hw.slug, args.engine) for p in points]
    if args.json:
        print_json(rows[0] if len(rows) == 1 else rows)
        return 0
    for p, out in zip(points, rows, strict=True):
        where = " ".join(f"{k}={val}" for k, val in p.shape.items())
        print(f"{args.kernel} on {hw.name} {where}: {p.time_s * 1e6:.2f} µs, "
              f"{out['achieved_tflops']:.1f} TFLOP/s, {out['achieved_bytes_per_s'] / 1e12:.2f} "
              f"TB/s, {out['bound']}-bound"
              + (" (at the kernel floor)" if p.at_floor and not p.measured else "")
              + f" — {p.source}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    print(profile_json_schema() if args.profile else scenario_json_schema())
    return 0


COMMANDS = {"validate": cmd_validate, "evaluate": cmd_evaluate, "recommend": cmd_recommend,
            "sweep": cmd_sweep, "presets": cmd_presets, "kernel": cmd_kernel,
            "scenario": scenario_commands.cmd_scenario, "schema": cmd_schema,
            **deploy_commands.COMMANDS, **bench_commands.COMMANDS}

"""Command-line interface: a thin caller of the Python API (`python -m explorer --help`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
from pydantic import ValidationError

from explorer.analysis.evaluate import evaluate
from explorer.analysis.recommend import recommend
from explorer.analysis.sweep import sweep
from explorer.base.errors import ScenarioError
from explorer.base.limits import MAX_DRAFT_LEN
from explorer.calibration import fit_kernel_efficiencies, fit_step_overheads
from explorer.measured import ParseResult, validate_path
from explorer.model.grid import scenario_model
from explorer.model.kernels import attention_time, gemm_time
from explorer.presets import hardware_presets, mechanism_presets, model_presets, sample_curves
from explorer.specs.hardware import HardwareSpec
from explorer.specs.scenario import Acceptance, Scenario, scenario_json_schema

# Scenario field → the flag that sets it, so errors name what the user typed.
FLAG_OF_FIELD = {
    "hardware": "--hardware", "model": "--model", "mechanism": "--mechanism",
    "draft_model": "--draft-model", "batch": "--batch", "draft_len": "--draft-len",
    "group": "--group", "layers": "--layers", "rho": "--rho", "context": "--context",
    "tp": "--tp", "dtype": "--dtype", "kv_dtype": "--kv-dtype", "verify_width": "--verify-width",
    "acceptance": "--alpha/--al", "alpha": "--alpha", "fixed_al": "--al",
    "al_file": "--al-file", "timings_file": "--timings-file",
}
MAX_GRID_POINTS = 2_000_000


class UsageError(Exception):
    """A bad flag or value: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def parse_int_list(text: str, flag: str, lo: int, hi: int) -> list[int]:
    """'1,8,64' or '0:32' (inclusive) or '1:4096:x2' (geometric) or '0:32:4' (step)."""
    out: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if ":" in part:
                bits = part.split(":")
                start, stop = int(bits[0]), int(bits[1])
                step = bits[2] if len(bits) > 2 else "1"
                if step.startswith("x"):
                    factor = int(step[1:])
                    if factor < 2:
                        raise ValueError
                    v = start
                    while v <= stop:
                        out.append(v)
                        v *= factor
                else:
                    if int(step) < 1:
                        raise ValueError
                    out.extend(range(start, stop + 1, int(step)))
            else:
                out.append(int(part))
    except ValueError:
        raise UsageError(
            f"argument {flag}: invalid list or range '{text}' (use 1,8,64 or 0:32 or 1:4096:x2)"
        ) from None
    if not out:
        raise UsageError(f"argument {flag}: empty list '{text}'")
    bad = [v for v in out if not lo <= v <= hi]
    if bad:
        raise UsageError(f"argument {flag}: value {bad[0]} is outside [{lo}, {hi}]")
    return sorted(set(out))


def _add_scenario_options(p: argparse.ArgumentParser, lists: bool) -> None:
    kind = str if lists else None
    p.add_argument("--scenario", metavar="FILE.json", help="scenario JSON; flags override it")
    p.add_argument("--hardware", help="hardware preset (h100, h200, b200, gb200, mi300x, …)")
    p.add_argument("--model", help="target model preset (llama-3.1-70b, …)")
    p.add_argument("--mechanism", help="external, mtp, eagle3, dflash, dspark, ngram"
                   + (" (comma list)" if lists else ""))
    p.add_argument("--draft-model", help="draft model preset for the external mechanism")
    p.add_argument("--dtype", choices=["bf16", "fp8", "fp4"])
    p.add_argument("--kv-dtype", choices=["bf16", "fp8"])
    p.add_argument("--batch", type=kind or int, help="B" + (": list or range" if lists else ""))
    p.add_argument("--draft-len", type=kind or int, help="D" + (": list/range" if lists else ""))
    p.add_argument("--group", type=kind or int, help="G override" + (": list" if lists else ""))
    p.add_argument("--context", type=kind or int, help="S, KV tokens" + (": list" if lists else ""))
    p.add_argument("--layers", type=int, help="L_target override")
    p.add_argument("--rho", type=float, help="ρ = L_draft/L_target override")
    p.add_argument("--tp", type=int, help="tensor-parallel degree")
    p.add_argument("--verify-width", type=int, help="W, tokens verified per sequence (trees)")
    acc = p.add_mutually_exclusive_group()
    acc.add_argument("--alpha", type=float, help="i.i.d. acceptance rate α in [0, 1]")
    acc.add_argument("--al", type=float, help="a fixed AL at the given D (1 ≤ AL ≤ 1+D)")
    p.add_argument("--al-file", metavar="FILE",
                   help="measured AL data (any format `validate` knows): the curve for the "
                   "mechanism becomes the AL source")
    p.add_argument("--timings-file", metavar="FILE",
                   help="measured kernel or step timings: calibrates the hardware preset")
    p.add_argument("--json", action="store_true", help="print JSON")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m explorer", description="SpecDec Explorer command line")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    ev = sub.add_parser("evaluate", help="evaluate one scenario")
    _add_scenario_options(ev, lists=False)
    from explorer.interfaces import cli_scenario

    cli_scenario.add_scenario_id_option(ev)
    cli_scenario.add_parser(sub)
    _add_scenario_options(sub.add_parser("recommend", help="rank mechanisms × D"), lists=False)
    sw = sub.add_parser("sweep", help="grid over B, D, G, S, mechanism → CSV/Parquet")
    _add_scenario_options(sw, lists=True)
    sw.add_argument("--out", help="write to FILE (.parquet or .csv) instead of CSV on stdout")
    sub.add_parser("presets", help="list preset names").add_argument("--json", action="store_true")
    sub.add_parser("schema", help="print the scenario JSON schema")
    v = sub.add_parser("validate", help="recognise and check a measured-data file")
    v.add_argument("file")
    v.add_argument("--json", action="store_true")
    k = sub.add_parser("kernel", help="one kernel's predicted time")
    ksub = k.add_subparsers(dest="kernel", required=True, parser_class=_Parser)
    kg = ksub.add_parser("gemm")
    for flag in ("--m", "--n", "--k"):
        kg.add_argument(flag, type=int, required=True)
    kg.add_argument("--dtype", choices=["bf16", "fp8", "fp4"], default="bf16")
    ka = ksub.add_parser("attention")
    for flag, default in (("--batch", None), ("--context", None), ("--q-heads", None),
                          ("--kv-heads", None), ("--head-dim", 128), ("--q-len", 1)):
        ka.add_argument(flag, type=int, required=default is None, default=default)
    ka.add_argument("--kv-dtype", choices=["bf16", "fp8"], default="bf16")
    for kp in (kg, ka):
        kp.add_argument("--hardware", default="h200")
        kp.add_argument("--json", action="store_true")
    return p


def _flag_for(loc: tuple[Any, ...]) -> str:
    for part in reversed(loc):
        if isinstance(part, str) and part in FLAG_OF_FIELD:
            return FLAG_OF_FIELD[part]
    return "--scenario" if not loc else ".".join(str(x) for x in loc)


def scenario_from_args(args: argparse.Namespace, overrides: dict[str, object] | None = None
                       ) -> Scenario:
    base: dict[str, Any] = {}
    if getattr(args, "scenario_id", None):
        from explorer.interfaces.cli_scenario import stored_scenario_base

        base = stored_scenario_base(args)
    if args.scenario:
        try:
            base = json.loads(Path(args.scenario).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"argument --scenario: cannot read '{args.scenario}': {exc}") from None
        except json.JSONDecodeError as exc:
            raise UsageError(f"argument --scenario: '{args.scenario}' is not JSON: {exc}") from None
        if not isinstance(base, dict):
            raise UsageError("argument --scenario: the file must hold a JSON object")
    for field in ("hardware", "model", "mechanism", "draft_model", "dtype", "kv_dtype", "batch",
                  "draft_len", "group", "context", "layers", "rho", "tp", "verify_width"):
        value = getattr(args, field, None)
        if value is not None:
            base[field] = value
    if overrides:
        base.update(overrides)
    if args.alpha is not None:
        base["acceptance"] = {"kind": "iid", "alpha": args.alpha}
    elif args.al is not None:
        base["acceptance"] = {"kind": "fixed", "fixed_al": args.al}
    try:
        scenario = Scenario.model_validate(base)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = str(err["msg"]).removeprefix("Value error, ")
        field, sep, rest = msg.partition(": ")
        if not err["loc"] and sep and field in FLAG_OF_FIELD:  # model-level checks name a field
            raise UsageError(f"argument {FLAG_OF_FIELD[field]}: {rest}") from None
        raise UsageError(f"argument {_flag_for(tuple(err['loc']))}: {msg}") from None
    if getattr(args, "al_file", None):
        scenario = _with_al_file(scenario, args.al_file)
    if getattr(args, "timings_file", None):
        scenario = _with_timings_file(scenario, args.timings_file)
    return scenario


def _load(path: str, flag: str) -> ParseResult:
    result = validate_path(path)
    if not result.ok:
        errors = [p for p in result.problems if p.severity == "error"]
        first = errors[0] if errors else None
        where = f" (row {first.row}, field {first.field})" if first else ""
        raise UsageError(f"argument {flag}: '{path}' is not valid {result.format}: "
                         f"{len(errors)} problem(s){where}: "
                         f"{first.message if first else result.summary}; run `validate` for all")
    return result


def _with_al_file(scenario: Scenario, path: str) -> Scenario:
    result = _load(path, "--al-file")
    curves = [c for c in result.curves if c.mechanism == scenario.mechanism] or [
        c for c in result.curves if c.mechanism is None]
    if not curves:
        have = sorted({c.mechanism or "?" for c in result.curves})
        raise UsageError(f"argument --al-file: no curve for mechanism '{scenario.mechanism}' in "
                         f"'{path}' (it has: {', '.join(have) or 'no curves'})")
    return scenario.model_copy(update={"acceptance": Acceptance(kind="curve", curve=curves[0])})


def _with_timings_file(scenario: Scenario, path: str) -> Scenario:
    result = _load(path, "--timings-file")
    model = scenario_model(scenario)
    if result.kernel_timings is not None:
        t = result.kernel_timings
        cal = fit_kernel_efficiencies(model.r.hardware, t.gemm, t.attention)
        label = f"{cal.overrides.label} from {path}; MAPE {cal.mape_before:.1f}% → " \
                f"{cal.mape_after:.1f}%"
        overrides = cal.overrides.model_copy(update={"label": label[:200]})
        # Calibrated efficiencies cover every kernel; measured shapes are used as measured.
        scenario = scenario.model_copy(update={"measured_kernels": t})
    elif result.step_timings is not None:
        s = result.step_timings
        d = np.asarray(s.draft_len)
        width = np.asarray(s.verify_tokens) if s.verify_tokens else 1 + d
        step = fit_step_overheads(model, np.asarray(s.batch), width, scenario.context,
                                  np.asarray(s.step_time_s))
        label = f"step overhead fitted to {len(d)} step times from {path}; MAPE " \
                f"{step.mape_before:.1f}% → {step.mape_after:.1f}%"
        overrides = step.overrides.model_copy(update={"label": label[:200]})
        scenario = scenario.model_copy(update={"measured_steps": s})
    else:
        raise UsageError(f"argument --timings-file: '{path}' holds no timings ({result.format})")
    return scenario.model_copy(update={"hardware_overrides": overrides})


def cmd_validate(args: argparse.Namespace) -> int:
    result = validate_path(args.file)
    if args.json:
        _print_json(result.model_dump(include={"format", "summary", "problems"}))
    else:
        print(f"{args.file}: {result.format} — {result.summary}")
        for p in result.problems:
            where = ", ".join(x for x in (p.row is not None and f"row {p.row}",
                                          p.field and f"field {p.field}") if x)
            print(f"  {p.severity}: {where + ': ' if where else ''}{p.message}")
    return 0 if result.ok else 2


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, allow_nan=False, default=str))


def fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def cmd_evaluate(args: argparse.Namespace) -> int:
    ev = evaluate(scenario_from_args(args))
    if args.json:
        _print_json(ev.model_dump())
        return 0
    print(f"speedup            {fmt(ev.speedup)}×"
          f"  (launch-bound ≈ {fmt(ev.speedup_launch_bound)}×)")
    print(f"acceptance length  {fmt(ev.acceptance_length)}  [{ev.acceptance_source}]")
    print(f"T_verif base/spec  {ev.t_verif_base_s * 1e3:.3f} / {ev.t_verif_spec_s * 1e3:.3f} ms")
    print(f"T_draft            {ev.t_draft_s * 1e3:.3f} ms")
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
        _print_json({
            "sources": evaluate(scenario).sources,
            "best": rec.best.model_dump() if rec.best else None,
            "ranking": [o.model_dump() for o in rec.ranking],
            "guidelines": [g.model_dump() for g in rec.guidelines],
            "explanation": rec.explanation,
            "unavailable": rec.unavailable,
        })
        return 0
    for g in rec.guidelines:
        print(f"[{g.id}] {g.text}")
    print()
    print(rec.explanation)
    for o in rec.ranking[:10]:
        print(f"  {o.mechanism:<9} D={o.draft_len:<3} {o.speedup:6.3f}×"
              f"  AL {o.acceptance_length:.2f}"
              f"  draft {o.draft_overhead_fraction:.0%}  {o.training}")
    for slug, why in rec.unavailable.items():
        print(f"  {slug:<9} unavailable: {why}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    lists: dict[str, list[int] | None] = {
        "batch": parse_int_list(args.batch, "--batch", 1, 65536) if args.batch else None,
        "draft_len": parse_int_list(args.draft_len, "--draft-len", 0, MAX_DRAFT_LEN)
        if args.draft_len else None,
        "group": parse_int_list(args.group, "--group", 1, 256) if args.group else None,
        "context": parse_int_list(args.context, "--context", 1, 2_000_000)
        if args.context else None,
    }
    mechs = [m.strip() for m in args.mechanism.split(",")] if args.mechanism else None
    if mechs:
        for m in mechs:
            if m not in mechanism_presets():
                raise UsageError(f"argument --mechanism: unknown '{m}'; known: "
                                 + ", ".join(mechanism_presets()))
    n_points = int(np.prod([len(v) for v in lists.values() if v])) * len(mechs or [1])
    if n_points > MAX_GRID_POINTS:
        raise UsageError(f"the grid has {n_points} points; the limit is {MAX_GRID_POINTS}")
    firsts: dict[str, object] = {k: v[0] for k, v in lists.items() if v}
    if mechs:
        firsts["mechanism"] = mechs[0]
    args.batch = args.draft_len = args.group = args.context = args.mechanism = None
    scenario = scenario_from_args(args, firsts)
    df = sweep(scenario, batch=lists["batch"], draft_len=lists["draft_len"],
               group=[float(g) for g in lists["group"]] if lists["group"] else None,
               context=lists["context"], mechanism=mechs)
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
    data = {
        "hardware": {k: v.name for k, v in hardware_presets().items()},
        "models": {k: f"{v.name} ({v.role})" for k, v in model_presets().items()},
        "mechanisms": {k: v.name for k, v in mechanism_presets().items()},
        "al_curves": list(sample_curves()),
    }
    if args.json:
        _print_json(data)
        return 0
    for group, items in data.items():
        print(f"{group}:")
        if isinstance(items, dict):
            for slug, name in items.items():
                print(f"  {slug:<18} {name}")
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


def cmd_kernel(args: argparse.Namespace) -> int:
    hw = _hardware(args.hardware)
    if args.kernel == "gemm":
        for flag in ("m", "n", "k"):
            if getattr(args, flag) < 1:
                raise UsageError(f"argument --{flag}: must be ≥ 1")
        kt = gemm_time(hw, args.m, args.n, args.k, args.dtype)
        shape = {"m": args.m, "n": args.n, "k": args.k, "dtype": args.dtype}
    else:
        for flag in ("batch", "context", "q_heads", "kv_heads", "head_dim", "q_len"):
            if getattr(args, flag) < 1:
                raise UsageError(f"argument --{flag.replace('_', '-')}: must be ≥ 1")
        if args.q_heads % args.kv_heads:
            raise UsageError("argument --kv-heads: must divide --q-heads")
        group = args.q_heads / args.kv_heads
        kt = attention_time(hw, args.batch, args.context, args.kv_heads, group, args.q_len,
                            args.head_dim, kv_dtype=args.kv_dtype)
        shape = {"batch": args.batch, "context": args.context, "q_heads": args.q_heads,
                 "kv_heads": args.kv_heads, "head_dim": args.head_dim, "q_len": args.q_len}
    t = float(kt.time_s)
    out = {
        "kernel": args.kernel, "hardware": hw.slug, **shape, "time_s": t,
        "achieved_tflops": float(kt.flops) / t / 1e12,
        "achieved_bytes_per_s": float(kt.bytes) / t,
        "bound": "compute" if bool(kt.compute_bound) else "memory",
        "at_kernel_floor": bool(kt.at_floor),
    }
    if args.json:
        _print_json(out)
    else:
        print(f"{args.kernel} on {hw.name}: {t * 1e6:.2f} µs, {out['achieved_tflops']:.1f} TFLOP/s,"
              f" {out['achieved_bytes_per_s'] / 1e12:.2f} TB/s, {out['bound']}-bound"
              + (" (at the kernel floor)" if out["at_kernel_floor"] else ""))
    return 0


def cmd_scenario(args: argparse.Namespace) -> int:
    from explorer.interfaces.cli_scenario import cmd_scenario as run  # it imports this module

    return run(args)


COMMANDS = {"validate": cmd_validate, "evaluate": cmd_evaluate, "recommend": cmd_recommend,
            "sweep": cmd_sweep, "presets": cmd_presets, "kernel": cmd_kernel,
            "scenario": cmd_scenario}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.command == "schema":
            print(scenario_json_schema())
            return 0
        return COMMANDS[args.command](args)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ScenarioError as exc:
        print(f"error: argument {FLAG_OF_FIELD.get(exc.field, exc.field)}: {exc.message}",
              file=sys.stderr)
        return 2


"""The command line's parser and scenario options, derived from the setting declarations
(explorer/specs/settings.py): each setting with a flag is an option, its field's errors name
that flag, and the settings the sweep lists take lists and ranges."""

from __future__ import annotations

import argparse
import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any, NoReturn

from pydantic import ValidationError

from explorer.base.quoting import quote
from explorer.base.reading import read_json_file
from explorer.calibration.measured_file import (
    TIMING_USES,
    MeasuredFileError,
    MeasuredUse,
    apply_measured_file,
)
from explorer.measured import ParseResult, validate_path
from explorer.measured.hf_config import HfModelConfig, read_config_file
from explorer.presets import preset_table
from explorer.specs.scenario import Scenario
from explorer.specs.settings import SETTINGS, Setting, rejected_field

# Settings of the Scenario with a flag (evaluate, recommend, sweep, scenario save), and view-only
# ones with a flag (scenario save: they go into the saved view).
SCENARIO_SETTINGS: tuple[Setting, ...] = tuple(s for s in SETTINGS if s.field and s.flag)
VIEW_SETTINGS: tuple[Setting, ...] = tuple(s for s in SETTINGS if s.field is None and s.flag)
SWEEP_SETTINGS: tuple[Setting, ...] = tuple(s for s in SCENARIO_SETTINGS if s.sweep)

# Scenario field → the flag that sets it, so errors name what the user typed. Acceptance and
# measured data have the CLI's own flags.
FLAG_OF_FIELD: dict[str, str] = {
    **{s.field: s.flag for s in SETTINGS if s.field and s.flag},
    "acceptance": "--alpha/--al", "alpha": "--alpha", "fixed_al": "--al",
    "al_file": "--al-file", "timings_file": "--timings-file",
    "custom_model": "--model-config", "custom_drafter": "--draft-config",
}


# Values one list or range flag may expand to (a typo such as 1:10000000 stays a message).
MAX_LIST_VALUES = 100_000


class UsageError(Exception):
    """A bad flag or value: printed as one line, exit code 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, allow_nan=False, default=str))


def parse_int_list(text: str, flag: str, lo: int, hi: int) -> list[int]:
    """'1,8,64', '0:32' (inclusive), '1:4096:x2' (geometric), '0:32:4' or '0:32:+4' (step),
    and commas of these: the values sorted and unique, each checked against [lo, hi]."""
    out: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if ":" in part:
                bits = part.split(":")
                if len(bits) > 3:
                    raise ValueError
                start, stop = int(bits[0]), int(bits[1])
                step = bits[2].strip() if len(bits) > 2 else "1"
                if start > stop:
                    raise ValueError
                if step.startswith("x"):
                    factor = int(step[1:])
                    if factor < 2 or start < 1:
                        raise ValueError
                    v = start
                    while v <= stop:
                        out.append(v)
                        v *= factor
                else:
                    stride = int(step.removeprefix("+"))
                    if stride < 1:
                        raise ValueError
                    if (stop - start) // stride >= MAX_LIST_VALUES:
                        raise UsageError(f"argument {flag}: '{part}' has more than "
                                         f"{MAX_LIST_VALUES} values")
                    out.extend(range(start, stop + 1, stride))
            else:
                out.append(int(part))
    except ValueError:
        raise UsageError(
            f"argument {flag}: invalid list or range '{text}' (use 1,8,64 or 0:32 or 1:4096:x2 "
            "or 0:32:+4)"
        ) from None
    if not out:
        raise UsageError(f"argument {flag}: empty list '{text}'")
    bad = [v for v in out if not lo <= v <= hi]
    if bad:
        raise UsageError(f"argument {flag}: value {bad[0]} is outside [{lo}, {hi}]")
    return sorted(set(out))


def _help(s: Setting, listed: bool) -> str:
    text = s.description + (f" [{s.unit}]" if s.unit else "")
    if s.presets is not None:
        text += " (see `presets`)"
    if listed:
        text += ": list or range" if s.value_type is int else ": comma list"
    return text


def add_scenario_options(p: argparse.ArgumentParser, lists: bool) -> None:
    """--scenario FILE, one flag per declared setting, the acceptance and measured-data flags,
    --json. With `lists` (sweep), the sweep's settings take lists."""
    p.add_argument("--scenario", metavar="FILE.json", help="scenario JSON; flags override it")
    for s in SCENARIO_SETTINGS:
        listed = lists and s.sweep
        if listed:
            p.add_argument(str(s.flag), help=_help(s, listed))
        elif s.value_type is str and s.options:  # a str setting's options are its Literal
            choices = [o for o in s.options if o != s.none_value]
            p.add_argument(str(s.flag), choices=choices, type=s.parse or str,
                           help=_help(s, listed))
        else:
            p.add_argument(str(s.flag), type=s.value_type, help=_help(s, listed))
    acc = p.add_mutually_exclusive_group()
    acc.add_argument("--alpha", type=float, help="i.i.d. acceptance rate α in [0, 1]")
    acc.add_argument("--al", type=float, help="a fixed AL at the given D (1 ≤ AL ≤ 1+D)")
    p.add_argument("--al-file", metavar="FILE",
                   help="measured AL data (any format `validate` knows): the curve for the "
                   "mechanism becomes the AL source")
    p.add_argument("--timings-file", metavar="FILE",
                   help="measured kernel or step timings: calibrates the hardware preset")
    p.add_argument("--model-config", metavar="FILE",
                   help="the target's Hugging Face config.json (an hf_quant_config.json beside "
                   "it is read too): replaces --model; its quantization sets --dtype")
    p.add_argument("--draft-config", metavar="FILE",
                   help="a drafter's config.json: an EAGLE-3 or DFlash/DSpark head (sets the "
                   "mechanism) or a draft model (mechanism external)")
    p.add_argument("--json", action="store_true", help="print JSON")


def _config_error(flag: str, path: str, result: HfModelConfig) -> UsageError:
    errors = [p for p in result.problems if p.severity == "error"]
    first = errors[0] if errors else None
    where = f"field {first.field}: " if first is not None and first.field else ""
    return UsageError(f"argument {flag}: {quote(path, 200)} is not a usable config.json: {where}"
                      f"{first.message if first else result.summary}")


def _with_configs(args: argparse.Namespace, fields: dict[str, Any]) -> None:
    """--model-config / --draft-config: the parsed specs go into the scenario itself."""
    model_path = getattr(args, "model_config", None)
    if model_path:
        if getattr(args, "model", None):
            raise UsageError("argument --model-config: give --model or --model-config, not both")
        res = read_config_file(model_path)
        if res.model is None:
            raise _config_error("--model-config", model_path, res)
        fields["custom_model"] = res.model.model_dump()
        fields["model"] = res.model.slug
        if getattr(args, "dtype", None) is None and res.weights_dtype is not None:
            fields["dtype"] = res.weights_dtype
        if getattr(args, "kv_dtype", None) is None and res.kv_dtype is not None:
            fields["kv_dtype"] = res.kv_dtype
    draft_path = getattr(args, "draft_config", None)
    if draft_path:
        res = read_config_file(draft_path, drafter=True)
        if res.drafter is None:
            raise _config_error("--draft-config", draft_path, res)
        fields["custom_drafter"] = res.drafter.model_dump()
        if getattr(args, "mechanism", None) is None:
            fields["mechanism"] = res.drafter.kind


# Co-design axes of `sweep` (explorer/analysis/codesign.py): flag → (axis, bounds).
DESIGN_FLAGS: dict[str, tuple[str, int, int]] = {
    "--design-group": ("group", 1, 256), "--design-layers": ("layers", 1, 1000),
    "--design-kv-heads": ("kv_heads", 1, 4096), "--design-head-dim": ("head_dim", 1, 4096),
    "--design-experts": ("experts", 1, 65536), "--design-top-k": ("top_k", 1, 65536),
    "--design-draft-layers": ("draft_layers", 0, 1000),
}


def add_design_options(p: argparse.ArgumentParser) -> None:
    """`sweep`'s co-design axes: each a list or range; any of them makes the sweep one row per
    design with its best D and speedup at the scenario's operating point."""
    for flag, (axis, _, _) in DESIGN_FLAGS.items():
        p.add_argument(flag, metavar="LIST", help=f"co-design axis: the target's {axis}"
                       if axis != "draft_layers" else "co-design axis: the drafter's layers "
                       "(eagle3, dflash, dspark)")
    p.add_argument("--design-rho", metavar="LIST",
                   help="co-design axis: ρ = L_draft/L_target (comma list)")
    p.add_argument("--design-at", choices=["fixed-kv", "fixed-params"], default="fixed-kv",
                   help="G at fixed KV bytes (q heads = G·KV heads) or at fixed parameters "
                   "(KV heads = q heads / G)")


def design_axes(args: argparse.Namespace) -> dict[str, Sequence[float]]:
    axes: dict[str, Sequence[float]] = {}
    for flag, (axis, lo, hi) in DESIGN_FLAGS.items():
        text = getattr(args, flag.removeprefix("--").replace("-", "_"), None)
        if text:
            axes[axis] = parse_int_list(text, flag, lo, hi)
    rho = getattr(args, "design_rho", None)
    if rho:
        try:
            values = [float(x) for x in rho.split(",")]
        except ValueError:
            raise UsageError(f"argument --design-rho: invalid list '{rho}' (use 0.05,0.1)") \
                from None
        bad = [v for v in values if not 0 <= v <= 4]
        if bad:
            raise UsageError(f"argument --design-rho: value {bad[0]} is outside [0, 4]")
        axes["rho"] = values
    return axes


def add_view_options(p: argparse.ArgumentParser) -> None:
    """The view-only settings with a flag (SLO, GPU price), for a saved scenario's view."""
    for s in VIEW_SETTINGS:
        p.add_argument(str(s.flag), type=s.value_type, help=s.description)


def flag_for(loc: tuple[Any, ...]) -> str:
    for part in reversed(loc):
        if isinstance(part, str) and part in FLAG_OF_FIELD:
            return FLAG_OF_FIELD[part]
    return "--scenario" if not loc else ".".join(str(x) for x in loc)


def sweep_axes(args: argparse.Namespace) -> dict[str, Any]:
    """The sweep's listed settings (field → values, checked); their flags are cleared, so the
    scenario is built from the other flags and each axis' first value."""
    axes: dict[str, Any] = {}  # field → list of values
    for s in SWEEP_SETTINGS:
        text = getattr(args, s.dest, None)
        setattr(args, s.dest, None)
        if not text or s.field is None:
            continue
        if s.value_type is int:
            lo, hi = s.bounds
            if isinstance(s.none_value, int):  # `--output-tokens 0,1024`: 0 = unset, as alone
                lo = min(int(lo or 0), s.none_value)
            axes[s.field] = [s.to_field(v) for v in
                             parse_int_list(text, str(s.flag), int(lo or 0), int(hi or 0))]
            continue
        items = [x.strip() for x in text.split(",")]
        known = preset_table(s.presets) if s.presets is not None else {}
        for x in items:
            if x not in known:
                raise UsageError(f"argument {s.flag}: unknown {quote(x)}; known: "
                                 + ", ".join(known))
        axes[s.field] = items
    return axes


def scenario_from_args(args: argparse.Namespace, overrides: dict[str, object] | None = None,
                       base: Mapping[str, Any] | None = None) -> Scenario:
    """The scenario of the flags over --scenario FILE (or `base`, a saved scenario)."""
    fields: dict[str, Any] = dict(base or {})
    if args.scenario:
        try:  # kind, size, nesting, numbers: the caps every JSON reader meets
            data = read_json_file(args.scenario)
        except ValueError as exc:
            raise UsageError(f"argument --scenario: {exc}") from None
        if not isinstance(data, dict):
            raise UsageError("argument --scenario: the file must hold a JSON object")
        fields = data
    for s in SCENARIO_SETTINGS:
        value = getattr(args, s.dest, None)
        if value is not None and s.field is not None:
            # as in links: a setting's none value (`--output-tokens 0`: decode steps only,
            # `--group 0`: the preset's) is the field left unset
            fields[s.field] = s.to_field(value)
    if overrides:
        fields.update(overrides)
    _with_configs(args, fields)
    if args.alpha is not None:
        fields["acceptance"] = {"kind": "iid", "alpha": args.alpha}
    elif args.al is not None:
        fields["acceptance"] = {"kind": "fixed", "fixed_al": args.al}
    try:
        scenario = Scenario.model_validate(fields)
    except ValidationError as exc:
        loc, msg = rejected_field(exc)  # checks across fields name theirs (W ≥ 1+D)
        raise UsageError(f"argument {flag_for(loc)}: {msg}") from None
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
        parts = [f"row {first.row}" if first and first.row is not None else "",
                 f"field {first.field}" if first and first.field is not None else ""]
        where = f" ({', '.join(x for x in parts if x)})" if any(parts) else ""
        raise UsageError(f"argument {flag}: {quote(path, 200)} is not valid {result.format}: "
                         f"{len(errors)} problem(s){where}: "
                         f"{first.message if first else result.summary}; run `validate` for all")
    return result


def _with_al_file(scenario: Scenario, path: str) -> Scenario:
    return _apply(scenario, path, "--al-file", {"curve"})


def _with_timings_file(scenario: Scenario, path: str) -> Scenario:
    return _apply(scenario, path, "--timings-file", TIMING_USES)


def _apply(scenario: Scenario, path: str, flag: str, uses: Collection[MeasuredUse]) -> Scenario:
    """What the file does to the scenario: the Measured-data page's decision too."""
    try:
        return apply_measured_file(scenario, _load(path, flag), path, uses)
    except MeasuredFileError as exc:
        raise UsageError(f"argument {flag}: {exc}") from None

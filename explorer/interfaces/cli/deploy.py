"""`deploy` (policies over a deployment profile) and `require` (the AL a drafter needs)."""

from __future__ import annotations

import argparse
import math
from typing import Any

from pydantic import ValidationError

from explorer.analysis.deploy import POLICY_NAMES, deploy
from explorer.analysis.inverse import required_al, required_to_beat
from explorer.base.errors import ScenarioError
from explorer.base.quoting import quote
from explorer.base.reading import read_json_file
from explorer.export.deploy_configs import export_policy
from explorer.interfaces.cli.options import (
    UsageError,
    add_scenario_options,
    print_json,
    scenario_from_args,
)
from explorer.presets import mechanism_presets
from explorer.specs.deployment import DEFAULT_PROFILE, DeploymentProfile, profile_error


def add_parsers(sub: Any) -> None:
    dp = sub.add_parser("deploy", help="draft-length policies over a deployment profile")
    add_scenario_options(dp, lists=False)
    dp.add_argument("--profile", metavar="FILE.json",
                    help="deployment profile JSON (schema: `schema --profile`); default: the "
                    "shipped assumptions")
    dp.add_argument("--policy", choices=list(POLICY_NAMES),
                    help="the policy to export (default: the simplest an engine can run, "
                         "within 2 %% of the fastest)")
    rq = sub.add_parser("require", help="the AL a drafter needs for a speedup at B")
    add_scenario_options(rq, lists=False)
    goal = rq.add_mutually_exclusive_group(required=True)
    goal.add_argument("--target-speedup", type=float, help="the speedup X to reach")
    goal.add_argument("--beat", metavar="MECHANISM",
                      help="match this mechanism's best speedup at B")


def load_profile(path: str | None) -> DeploymentProfile:
    if path is None:
        return DEFAULT_PROFILE
    try:  # kind, size, nesting, numbers: the caps every JSON reader meets
        data = read_json_file(path)
    except ValueError as exc:
        raise UsageError(f"argument --profile: {exc}") from None
    try:
        return DeploymentProfile.model_validate(data)
    except ValidationError as exc:
        raise UsageError(f"argument --profile: {profile_error(exc)}") from None


def cmd_deploy(args: argparse.Namespace) -> int:
    scenario = scenario_from_args(args)
    profile = load_profile(args.profile)
    try:
        result = deploy(scenario, profile)
    except ScenarioError as exc:
        if exc.field.startswith("workload"):
            raise UsageError(f"argument --profile: {exc.field}: {exc.message}") from None
        raise
    export = export_policy(scenario, result, args.policy)
    if args.json:
        print_json({**result.model_dump(), "profile": profile.model_dump(mode="json"),
                    "export": export.model_dump()})
        return 0
    print(f"{'policy':<24} {'tok/s/GPU':>10} {'user p50':>9} {'user p90':>9} {'gap':>7}")
    for p in result.policies:
        print(f"{p.name:<24} {p.tokens_per_s_per_gpu:10.1f} {p.tokens_per_s_per_user_p50:9.1f} "
              f"{p.tokens_per_s_per_user_p90:9.1f} {p.gap_to_oracle:7.1%}")
    s = result.schedule
    print("D*(B): " + ", ".join(f"B={b}→{d}" for b, d in zip(s.batch, s.batch_draft_len,
                                                            strict=True)))
    print(f"exported: {export.policy} as {export.exported_as}; schedule {export.schedule}")
    for note in [*([result.memory_note] if result.memory_note else []), *export.notes,
                 *result.notes]:
        print(f"  note: {note}")
    return 0


def cmd_require(args: argparse.Namespace) -> int:
    d = args.draft_len  # given: at that D; not given: the best D
    scenario = scenario_from_args(args)
    if d == 0:
        raise UsageError("argument --draft-len: needs D ≥ 1 (D = 0 is plain decoding)")
    if args.beat is not None:
        if args.beat not in mechanism_presets():
            raise UsageError(f"argument --beat: unknown mechanism {quote(args.beat)}; known: "
                             + ", ".join(mechanism_presets()))
        req = required_to_beat(scenario, args.beat, d)
    else:
        if not (math.isfinite(args.target_speedup) and args.target_speedup > 0):
            raise UsageError(f"argument --target-speedup: must be a finite number > 0, got "
                             f"{args.target_speedup:g}")
        req = required_al(scenario, args.target_speedup, d)
    if args.json:
        print_json(req.model_dump())
        return 0
    goal = f"beat {req.beat} ({req.target_speedup:.2f}×)" if req.beat else \
        f"{req.target_speedup:g}×"
    alpha = f", i.i.d. α ≥ {req.acceptance_rate:.3f}" if req.acceptance_rate is not None else ""
    print(f"to {goal} at B={req.batch}, S={req.context}: AL ≥ {req.acceptance_length:.3f} at "
          f"D={req.draft_len}{alpha} — {req.note}")
    return 0


COMMANDS = {"deploy": cmd_deploy, "require": cmd_require}

"""NVIDIA specdec_bench ``speculation_profile.json``.

Source checked: NVIDIA/Model-Optimizer examples/specdec_bench/specdec_bench/
speculation_profile.py @095124e9d582 (build_profile, SCHEMA_VERSION "1.0"), its test
examples/specdec_bench/tests/test_speculation_profile.py @095124e, and the writer
specdec_bench/metrics/acceptance_rate.py (per_category = AcceptanceRate.out["Category_AL"],
a {category: per-request mean AL} map).

Keys used: schema_version, measured, method, draft_checkpoint, target_model,
num_speculative_tokens (K), max_supported_k, verification_method, conditional_accept_rates,
marginal_accept_rates (both dense, length K), mean_accept_length (per-step mean, the one the
vectors describe), accept_length_model (chain_analytic = chain, extrapolates over D <= K;
measured_per_k = block, valid only at measured K), accept_length_by_k, per_category,
measurement_conditions. The inner shape of draft_checkpoint / target_model /
measurement_conditions is not fixed upstream; strings or dicts with id/name/path/dataset/
temperature keys are read.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from explorer.base.quoting import quote
from explorer.measured._curves import (
    RATE_CONSISTENCY_TOL,
    build_curve,
    check_al_consistency,
    check_rates,
    conditional_rates_of,
    join_nonempty,
    warn_if_marginals_increase,
)
from explorer.measured._json import int_key, json_number, load_json
from explorer.measured._mechanisms import (
    normalize_mechanism,
    parse_draft_style,
    unknown_mechanism_message,
)
from explorer.measured._problems import Collector, finish
from explorer.measured.schemas import SpeculationProfileFile, validate_json_object
from explorer.model.acceptance import al_from_marginal, marginal_from_conditional
from explorer.specs.measured import AcceptanceCurve, DraftStyle, ParseResult, Provenance

FORMAT = "specdec_bench_profile"


def _ident(value: str | dict[str, Any] | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value or None
    for key in ("id", "name", "model", "checkpoint", "path", "hf_id"):
        v = value.get(key)
        if isinstance(v, str) and v:
            return v
    return None


def _condition(conditions: dict[str, Any] | None, *keys: str) -> object:
    if not conditions:
        return None
    for key in keys:
        if key in conditions:
            return conditions[key]
    return None


def parse_text(name: str, text: str) -> ParseResult:
    col = Collector()
    obj = load_json(text, col)
    if obj is None:
        return finish(FORMAT, "", col)
    prof = validate_json_object(SpeculationProfileFile, obj, col, "speculation_profile.json")
    if prof is None:
        return finish(FORMAT, "", col)
    if not prof.measured:
        col.error(
            "this is a stub profile (measured: false): it holds no measurement; run "
            "specdec_bench with --save_dir to produce a measured one",
            field="measured",
        )
        return finish(FORMAT, "", col)
    if not prof.schema_version.startswith("1."):
        col.warn(
            f"schema_version {prof.schema_version} is newer than the 1.x this reader knows; "
            f"fields were read by their 1.0 names",
            field="schema_version",
        )

    mech_raw = prof.method or ""
    mech, mech_style, known = normalize_mechanism(mech_raw)
    if not known:
        col.error(unknown_mechanism_message(mech_raw), field="method")

    cond = prof.conditional_accept_rates
    marg = prof.marginal_accept_rates
    if not cond and not marg:
        col.error(
            "no conditional_accept_rates or marginal_accept_rates: nothing to build a curve from",
            field="marginal_accept_rates",
        )
        return finish(FORMAT, "", col)
    k = prof.num_speculative_tokens or len(marg or cond or [])
    lengths_ok = True
    for key, vec in (("conditional_accept_rates", cond), ("marginal_accept_rates", marg)):
        if vec is None:
            continue
        check_rates(col, vec, field=key, what=key.split("_")[0] + " rate")
        if len(vec) != k:
            col.error(
                f"{key} has {len(vec)} entries but num_speculative_tokens is {k}",
                field=key,
            )
            lengths_ok = False
    if not lengths_ok:
        return finish(FORMAT, "", col)
    if cond and marg:
        implied = marginal_from_conditional(cond)
        for i, (a, b) in enumerate(zip(implied, marg, strict=True)):
            if abs(a - b) > RATE_CONSISTENCY_TOL:
                col.error(
                    f"marginal rate {b:g} at position {i + 1} disagrees with the product of "
                    f"conditional rates {a:.6g}",
                    field=f"marginal_accept_rates[{i}]",
                )
    m = (
        np.asarray(marg, dtype=np.float64)
        if marg
        else marginal_from_conditional(np.asarray(cond, dtype=np.float64))
    )
    c = np.asarray(cond if cond else conditional_rates_of(m), dtype=np.float64)
    if marg:
        warn_if_marginals_increase(col, marg, label="profile", field="marginal_accept_rates")

    mean_al = prof.mean_accept_length
    if mean_al is not None:
        if not math.isfinite(mean_al):
            col.error("mean_accept_length is not a finite number", field="mean_accept_length")
        else:
            check_al_consistency(
                col, mean_al, m.tolist(), label="profile", field="mean_accept_length"
            )

    style: DraftStyle | None
    if prof.accept_length_model is not None:
        style, known_style = parse_draft_style(prof.accept_length_model)
        if not known_style:
            col.warn(
                f"accept_length_model {quote(prof.accept_length_model)} is neither chain_analytic "
                f"nor measured_per_k; the draft style is taken from the method",
                field="accept_length_model",
            )
            style = mech_style
    else:
        style = mech_style
    if prof.verification_method not in (None, "longest_prefix"):
        col.warn(
            f"verification_method {quote(prof.verification_method)}: the per-position vectors "
            f"describe longest-prefix verification and may not describe this one",
            field="verification_method",
        )

    model = _ident(prof.target_model)
    drafter = _ident(prof.draft_checkpoint)
    conditions = prof.measurement_conditions
    dataset_v = _condition(conditions, "dataset", "dataset_name", "dataset_path")
    dataset = str(dataset_v) if dataset_v not in (None, "") else None
    temp_v = json_number(_condition(conditions, "temperature", "temp"))
    temperature = temp_v if temp_v is not None and math.isfinite(temp_v) and temp_v >= 0 else None
    source_v = _condition(conditions, "source", "engine")
    source = str(source_v) if source_v not in (None, "") else None

    def prov(ds: str | None) -> Provenance:
        return Provenance(
            file=name,
            source=source,
            model=model,
            drafter=drafter,
            dataset=ds,
            temperature=temperature,
            format=FORMAT,
        )

    max_k = prof.max_supported_k
    conditional = [float(x) for x in np.clip(c, 0.0, 1.0)]
    curves: list[AcceptanceCurve] = []
    base_label = join_nonempty([mech or mech_raw or "mechanism ?", model, drafter])
    al_chain = al_from_marginal(m)
    by_k: dict[int, float] = {}
    for key, al_value in (prof.accept_length_by_k or {}).items():
        kk = int_key(key)
        if kk is None or kk < 1:
            col.error(
                f"accept_length_by_k key {quote(key)} is not a draft length >= 1",
                field=f"accept_length_by_k.{key}",
            )
        else:
            by_k[kk] = float(al_value)
    if style == "block":
        if not by_k:
            by_k = {k: float(mean_al) if mean_al is not None else float(al_chain[-1])}
        ds = sorted(by_k)
        curve = build_curve(
            col,
            label=join_nonempty([base_label, dataset]),
            mechanism=mech,
            draft_style=style,
            draft_lens=ds,
            als=[by_k[d] for d in ds],
            provenance=prov(dataset),
            conditional=conditional,
            max_supported=max_k,
            fields=[f"accept_length_by_k.{d}" for d in ds],
        )
    else:
        for kk, al_value in by_k.items():
            if kk <= k and abs(al_value - al_chain[kk - 1]) > 0.02:
                col.error(
                    f"accept_length_by_k[{kk}] = {al_value:g} disagrees with 1 + sum of the first "
                    f"{kk} marginal rates = {al_chain[kk - 1]:.6g}",
                    field=f"accept_length_by_k.{kk}",
                )
        curve = build_curve(
            col,
            label=join_nonempty([base_label, dataset]),
            mechanism=mech,
            draft_style=style,
            draft_lens=list(range(1, k + 1)),
            als=[float(a) for a in al_chain],
            provenance=prov(dataset),
            conditional=conditional,
            max_supported=max_k,
            fields=[f"marginal_accept_rates[{i}]" for i in range(k)],
        )
    if curve is not None:
        curves.append(curve)

    for category, entry in (prof.per_category or {}).items():
        value: float | None = (
            entry
            if isinstance(entry, float)
            else json_number(entry.get("mean_accept_length") if isinstance(entry, dict) else None)
        )
        field = f"per_category.{category}"
        if value is None:
            col.error("per-category entry has no mean accept length", field=field)
            continue
        cat_curve = build_curve(
            col,
            label=join_nonempty([base_label, str(category), "per-request mean"]),
            mechanism=mech,
            draft_style=style,
            draft_lens=[k],
            als=[value],
            provenance=prov(str(category)),
            max_supported=max_k,
            fields=[field],
        )
        if cat_curve is not None:
            curves.append(cat_curve)

    summary = (
        f"specdec_bench profile: {mech or mech_raw or 'unknown method'}, K={k}, "
        f"AL {al_chain[-1]:.3f}, {len(curves)} curve{'s' if len(curves) != 1 else ''} "
        f"from {name}"
    )
    return finish(FORMAT, summary, col, curves=curves)

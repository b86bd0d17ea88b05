"""vLLM dynamic speculative decoding config (dynamic_speculative_config.json).

Source checked: vllm-project/vllm vllm/v1/spec_decode/dynamic/generate_config.py
@116e76b5f78f (writes DynamicSpeculativeConfig(is_online, max_num_speculative_tokens,
acceptance_rate_per_pos, batch_stats).model_dump() with json.dump) and
vllm/v1/spec_decode/dynamic/manager.py @594dc0f84996 (reads it): batch_stats is
{batch_size: {num_drafts: median ITL in ms}} from `vllm bench sweep serve` (num_drafts 0 =
vanilla), acceptance_rate_per_pos is marginal (AL(k) = 1 + sum(rates[:k])), and vLLM asserts
len(acceptance_rate_per_pos) == max_num_speculative_tokens, rates in [0, 1], batch size 1
present, and draft 0 and 1 present for every batch size. This lives on vLLM's dynamic-SD
development line; other revisions add num_speculative_tokens_per_batch_size and
use_online_acceptance_rate, which are accepted and ignored.

The median inter-token latency of a streamed speculative run is read as the step time (one
chunk per verify step), which is how the manager uses it (goodput = AL / ITL).
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import TypeAdapter, ValidationError

from explorer.base.limits import MAX_MEASURED_ROWS
from explorer.base.quoting import quote
from explorer.measured._bounds import over_cap
from explorer.measured._curves import (
    build_curve,
    check_rates,
    conditional_rates_of,
    warn_if_marginals_increase,
)
from explorer.measured._json import int_key, load_json
from explorer.measured._problems import Collector, finish
from explorer.measured._time_units import TimeColumn, check_time_units, out_of_range_message
from explorer.measured.schemas import VllmDynamicSdConfigFile, validate_json_object
from explorer.model.acceptance import al_from_marginal
from explorer.specs.measured import (
    AcceptanceCurve,
    ParseResult,
    Provenance,
    StepTimings,
    times_within_bounds,
)

FORMAT = "vllm_dynamic_sd_config"
_LATENCY = TypeAdapter(float)


def _check_batch_stats(obj: object, col: Collector) -> bool:
    """batch_stats, the one nested table, is checked here first: its size against the step-row
    cap, and its shape, so that pydantic never reports (and holds) one error per entry."""
    stats = obj.get("batch_stats") if isinstance(obj, dict) else None
    if not isinstance(stats, dict):
        return True  # absent or not an object: the schema check names it
    entries = sum(len(v) for v in stats.values() if isinstance(v, dict))
    if entries > MAX_MEASURED_ROWS:
        over_cap(col, "batch_stats", entries, MAX_MEASURED_ROWS, "latencies (step rows)",
                 "MAX_MEASURED_ROWS", field="batch_stats")
        return False
    for bs_key, per_k in stats.items():
        if not isinstance(per_k, dict):
            col.error(f"expected an object {{num drafts: latency in ms}}, got {quote(per_k)}",
                      field=f"batch_stats.{bs_key}")
            continue
        for k_key, itl in per_k.items():
            if type(itl) in (float, int):
                continue  # the common case, without the per-entry check's cost
            try:
                _LATENCY.validate_python(itl)  # what the schema accepts, one entry at a time
            except ValidationError:
                col.error(f"latency must be a number of ms, got {quote(itl)}",
                          field=f"batch_stats.{bs_key}.{k_key}")
    return not col.has_errors


def parse_text(name: str, text: str) -> ParseResult:
    col = Collector()
    obj = load_json(text, col)
    if obj is None or not _check_batch_stats(obj, col):
        return finish(FORMAT, "", col)
    cfg = validate_json_object(VllmDynamicSdConfigFile, obj, col, "dynamic SD config")
    if cfg is None:
        return finish(FORMAT, "", col)
    rates = cfg.acceptance_rate_per_pos
    k = cfg.max_num_speculative_tokens
    if not rates:
        col.error("acceptance_rate_per_pos is empty", field="acceptance_rate_per_pos")
    elif len(rates) != k:
        col.error(
            f"acceptance_rate_per_pos has {len(rates)} entries but max_num_speculative_tokens "
            f"is {k} (vLLM requires them equal)",
            field="acceptance_rate_per_pos",
        )
    check_rates(col, rates, field="acceptance_rate_per_pos", what="acceptance rate")

    batch: list[int] = []
    drafts: list[int] = []
    times_ms: list[float] = []
    where_of: list[tuple[str, str]] = []
    for bs_key, per_k in cfg.batch_stats.items():
        bs = int_key(bs_key)
        if bs is None or bs < 1:
            col.error(
                f"batch size key {quote(bs_key)} is not a whole number >= 1",
                field=f"batch_stats.{bs_key}",
            )
            continue
        keys = []
        for k_key, itl in per_k.items():
            kk = int_key(k_key)
            where = f"batch_stats.{bs_key}.{k_key}"
            if kk is None or kk < 0:
                col.error(f"draft count key {quote(k_key)} is not a whole number >= 0", field=where)
                continue
            if not math.isfinite(itl):
                col.error(f"latency must be a finite number of ms, got {itl}", field=where)
                continue
            if itl <= 0:
                col.error(
                    f"latency is {'negative' if itl < 0 else 'zero'}: {itl:g} ms", field=where
                )
                continue
            if kk > k:
                col.warn(f"k = {kk} exceeds max_num_speculative_tokens = {k}", field=where)
            keys.append(kk)
            batch.append(bs)
            drafts.append(kk)
            times_ms.append(float(itl))
            where_of.append((bs_key, k_key))
        for required in (0, 1):
            if required not in keys:
                col.warn(
                    f"batch size {bs} has no k = {required} latency (vLLM's manager requires "
                    f"k = 0 and k = 1 for every batch size)",
                    field=f"batch_stats.{bs_key}",
                )
        if keys != sorted(keys):
            col.warn(
                f"batch size {bs}: draft keys are not sorted (vLLM requires sorted keys)",
                field=f"batch_stats.{bs_key}",
            )
    seconds = np.asarray(times_ms, dtype=np.float64) / 1e3
    col.add_each("error", np.flatnonzero(~times_within_bounds(seconds)), lambda i: (
        out_of_range_message("latency", f"{times_ms[i]!r} ms", float(seconds[i])), None,
        "batch_stats.{}.{}".format(*where_of[i])))
    if cfg.batch_stats and 1 not in {int_key(b) for b in cfg.batch_stats}:
        col.warn("no batch size 1 in batch_stats (vLLM's manager requires it)", field="batch_stats")
    if not times_ms and not col.has_errors:
        col.error("batch_stats holds no latencies", field="batch_stats")
    if col.has_errors:
        return finish(FORMAT, "", col)

    warn_if_marginals_increase(col, rates, label="config", field="acceptance_rate_per_pos")
    prov = Provenance(file=name, source="vLLM dynamic speculative decoding config", format=FORMAT)
    m = np.asarray(rates, dtype=np.float64)
    curves: list[AcceptanceCurve] = []
    curve = build_curve(
        col,
        label="vLLM dynamic-SD acceptance",
        mechanism=None,
        draft_style=None,
        draft_lens=list(range(1, k + 1)),
        als=[float(a) for a in al_from_marginal(m)],
        provenance=prov,
        conditional=conditional_rates_of(m),
        max_supported=k,
        fields=[f"acceptance_rate_per_pos[{i}]" for i in range(k)],
    )
    if curve is not None:
        curves.append(curve)
    check_time_units(
        seconds,
        TimeColumn("batch_stats", "batch_stats", "ms", 1e3),
        "step",
        col,
        "median inter-token latencies",
    )
    table = StepTimings(
        batch=tuple(batch),
        draft_len=tuple(drafts),
        step_time_s=tuple(seconds.tolist()),
        includes_draft=True,  # inter-token latencies of the speculating engine: whole rounds
        provenance=prov,
    )
    summary = (
        f"vLLM dynamic-SD config: K={k}, AL(K) {float(al_from_marginal(m)[-1]):.3f}, "
        f"{len(times_ms)} step latencies over batch {min(batch)}-{max(batch)} from {name}"
    )
    return finish(FORMAT, summary, col, curves=curves, step_timings=table)

"""The recommendation as serving-engine configuration: vLLM, SGLang and TensorRT-LLM.

`engine_configs(scenario)` takes the recommended mechanism and D at the scenario's batch and
turns them, with a batch-size → draft-length schedule (the best D at each B), into each engine's
speculative-decoding options. Every option name was checked against the engine's public source or
docs; the source sits in a comment beside each mapping and in the `source` field of the output.
Where an engine cannot express something, the output says so in a note instead of inventing a flag.

Core module: numpy, pydantic and PyYAML only (no streamlit, no plotly).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import yaml
from pydantic import BaseModel, ConfigDict

from explorer.analysis.candidate import candidate
from explorer.analysis.frontier import DEFAULT_BATCHES, best_draft_len
from explorer.analysis.recommend import RankedOption, recommend
from explorer.base.mechanisms import MECHANISM_KINDS, mechanism_kind
from explorer.model.resolve import Resolved, resolve, target_model
from explorer.presets import draft_heads, mechanism_presets
from explorer.specs.engine import SGLANG, TRTLLM
from explorer.specs.scenario import Scenario

# The schedule spans the Explorer page's batch axis (1 … 4096), at every integer B.
DEFAULT_MAX_BATCH = int(DEFAULT_BATCHES[-1])
YAML_LINE_WIDTH = 1 << 16  # characters

# --- where each option name comes from -------------------------------------------------------
VLLM_SOURCE = (
    "github.com/vllm-project/vllm vllm/config/speculative.py "
    "@002e77c1f0ef9b19cff8b9e21cfbd6feb3d6b443 (SpeculativeConfig: method, model, "
    "num_speculative_tokens, num_speculative_tokens_per_batch_size; SpeculativeMethod values); "
    "vllm/v1/spec_decode/dynamic/utils.py @14b450ca590cbff96e7004bdb147a5d3acf5a4f6 "
    "(schedule entries (bs_lo, bs_hi, K), first range starts at 1, K ≥ 0, K clamped to "
    "num_speculative_tokens, the last entry's K holds for larger batches); CLI flag "
    "--speculative-config takes the same keys as JSON"
)
SGLANG_SOURCE = (
    "github.com/sgl-project/sglang python/sglang/srt/server_args.py "
    "@001067fffe33427bee0ed2f007fb7551a1d76b44 (--speculative-algorithm builtins EAGLE, EAGLE3, "
    "NEXTN, STANDALONE, NGRAM, DFLASH, DSPARK; --speculative-draft-model-path, "
    "--speculative-num-steps, --speculative-eagle-topk, --speculative-num-draft-tokens, "
    "--speculative-dspark-block-size, --speculative-ngram-max-bfs-breadth); "
    "docs/advanced_features/speculative_decoding.md @067ad4d335bbd6da15d4a83a6f257cfa9e0f6be0 "
    "(topk 1 ⇒ num_draft_tokens = num_steps + 1; NEXTN is an alias of EAGLE; NGRAM is CUDA-only)"
)
TRTLLM_SOURCE = (
    "github.com/NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py "
    "@0004396720054fd8e205cbf616f21f0b57c6b412 (DecodingBaseConfig: max_draft_len, "
    "speculative_model, draft_len_schedule — keys are inclusive batch-size upper bounds, the "
    "smallest key must map to max_draft_len, batches above the largest key use 0; "
    "max_concurrency; DFlash/DSpark/MTP/Eagle3/NGram decoding configs); "
    "docs/source/features/speculative-decoding.md @04c8822cc42ffd1f5b6270874e5b9a64a20e7a58 "
    "(trtllm-serve --config YAML: speculative_config.decoding_type MTP, Eagle3, NGram, "
    "DraftTarget, PARD, DFlash, SA); tensorrt_llm/_torch/speculative/interface.py "
    "@00b6d5a25c30b4382d24fbdf52956d601b3ffd24 (support_dynamic_draft_len excludes DSpark)"
)

# Each mechanism's names in each engine are in its declaration (explorer/specs/mechanism.py:
# MechanismKind.vllm / .sglang / .trtllm, with the source of each name beside it); what a
# mechanism *is* (does it need draft weights, the target's MTP layers, …) comes from its
# MechanismSpec (data/mechanisms.csv) and what a GPU is from its HardwareSpec (data/hardware.csv).
# A mechanism whose declaration names no method for an engine gets "not supported" there.

# Read-only views of the declarations by slug, for readers that list them (the writers below ask
# mechanism_kind(slug), so a mechanism registered later needs no entry here).
_KINDS = tuple(MECHANISM_KINDS.values())
VLLM_METHOD: dict[str, str] = {k.slug: k.vllm.method for k in _KINDS if k.vllm}
VLLM_NOTES: dict[str, str] = {k.slug: k.vllm.note for k in _KINDS if k.vllm and k.vllm.note}
SGLANG_ALGORITHM: dict[str, str] = {k.slug: k.sglang.algorithm for k in _KINDS if k.sglang}
SGLANG_DRAFT_LEN_FLAGS: dict[str, Callable[[int], list[str]]] = {
    k.slug: k.sglang.flags for k in _KINDS if k.sglang}
SGLANG_NVIDIA_ONLY: dict[str, str] = {
    k.slug: k.sglang.nvidia_only for k in _KINDS if k.sglang and k.sglang.nvidia_only}
TRTLLM_DECODING_TYPE: dict[str, str] = {
    k.slug: k.trtllm.decoding_type for k in _KINDS if k.trtllm}
TRTLLM_SCHEDULE_UNSUPPORTED = frozenset(
    k.slug for k in _KINDS if k.trtllm and not k.trtllm.dynamic_draft_len)
TRTLLM_NOTES: dict[str, str] = {
    k.slug: k.trtllm.note for k in _KINDS if k.trtllm and k.trtllm.note}


class VllmConfig(BaseModel):
    """vLLM: the `speculative_config` dict (LLM(speculative_config=…)) and its CLI form."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    speculative_config: dict[str, Any] | None
    cli: str
    notes: list[str]
    source: str = VLLM_SOURCE


class SglangConfig(BaseModel):
    """SGLang: `python -m sglang.launch_server` flags."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    flags: list[str]
    cli: str
    notes: list[str]
    source: str = SGLANG_SOURCE


class TensorRTLLMConfig(BaseModel):
    """TensorRT-LLM: the `--config` YAML of trtllm-serve / trtllm-bench (LLM API kwargs)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    config: dict[str, Any] | None
    yaml: str
    notes: list[str]
    source: str = TRTLLM_SOURCE


class EngineConfigs(BaseModel):
    """The recommendation as engine options, with the batch-size schedule behind them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mechanism: str
    mechanism_name: str
    target_model: str
    batch: int
    draft_len: int  # D the engines are configured with (num_speculative_tokens, max_draft_len)
    recommended_draft_len: int | None  # the recommendation's D at this batch
    speedup_at_batch: float | None
    speculate_at_batch: bool
    schedule: list[tuple[int, int]]  # (max_batch, draft_len): D for B ≤ max_batch (after the last)
    switch_off_batch: int | None  # speculate for B ≤ this; 0 = never; None = across the range
    break_even_batch: int | None
    max_batch_in_memory: int | None
    max_batch_evaluated: int
    vllm: VllmConfig
    sglang: SglangConfig
    tensorrt_llm: TensorRTLLMConfig
    notes: list[str]


def draft_len_at(schedule: list[tuple[int, int]], batch: int) -> int:
    """D the schedule gives at a batch (the TensorRT-LLM reading: 0 above the largest key)."""
    for max_batch, d in schedule:
        if batch <= max_batch:
            return d
    return 0


def _runs(batches: npt.NDArray[np.int64], values: npt.NDArray[np.int64]) -> list[tuple[int, int]]:
    """Consecutive equal values → (last batch of the run, value)."""
    change = np.nonzero(np.diff(values))[0]
    ends = [*change.tolist(), len(values) - 1]
    return [(int(batches[i]), int(values[i])) for i in ends]


def _resolved(scenario: Scenario, slug: str) -> Resolved:
    """The presets behind `slug` at this operating point (what the mechanism and GPU are)."""
    return resolve(candidate(scenario, slug))


def _placeholder(r: Resolved) -> str:
    """Where the user puts the draft weights' path: named after the model the cost model used."""
    mech = r.mechanism
    if mech.needs_draft_model:
        draft = r.draft_model
        name = draft.name if draft is not None else f"draft model for {r.model.name}"
        return f"<{name}: local path or Hugging Face id>"
    published = published_checkpoint(r)
    if published is not None:
        return published
    what = mech.draft_checkpoint or "draft weights"
    return f"<{what} for {r.model.name}: local path or Hugging Face id>"


def published_checkpoint(r: Resolved) -> str | None:
    """The first checkpoint of the drafter catalogue (data/draft_heads.csv) trained for this
    target and mechanism, or None (the export then leaves a placeholder)."""
    heads = draft_heads().get((r.model.slug, r.mechanism.slug), ())
    own = [h for h in heads if h.same_weights and "/" in h.checkpoint]
    return own[0].checkpoint if own else None


def vllm_config(slug: str, draft_len: int, schedule: list[tuple[int, int]], scenario: Scenario,
                enabled: bool = True) -> VllmConfig:
    """vLLM `--speculative-config` for a mechanism; a note instead where vLLM has no method."""
    kind = mechanism_kind(slug)
    names = kind.vllm if kind is not None else None
    if names is None:
        return VllmConfig(speculative_config=None, cli="",
                          notes=[f"'{slug}' is not supported by vLLM (no speculative method)."])
    if not enabled or draft_len < 1:
        return VllmConfig(speculative_config=None, cli="", notes=[
            "Speculation does not pay here: leave --speculative-config unset."])
    r = _resolved(scenario, slug)
    mech = r.mechanism
    method = names.method
    cfg: dict[str, Any] = {"method": method}
    if mech.needs_draft_weights:
        cfg["model"] = _placeholder(r)
    cfg["num_speculative_tokens"] = draft_len
    notes: list[str] = []
    if any(d != draft_len for _, d in schedule):
        # vllm/v1/spec_decode/dynamic/utils.py @14b450c: [[bs_lo, bs_hi, K], …] inclusive ranges
        # from 1, sorted, non-overlapping; the last K holds above the last bs_hi.
        ranges: list[list[int]] = []
        lo = 1
        for hi, d in schedule:
            ranges.append([lo, hi, d])
            lo = hi + 1
        cfg["num_speculative_tokens_per_batch_size"] = ranges
        notes.append("num_speculative_tokens_per_batch_size (dynamic speculative decoding) is in "
                     "recent vLLM main (checked @002e77c); older releases reject the key — drop "
                     "it there and speculate at a fixed D.")
    if names.note:
        notes.append(names.note)
    if mech.uses_target_mtp_layers:
        notes.append(f"method '{method}' without 'model' reuses the target checkpoint's MTP "
                     "layers.")
    cli = "--speculative-config " + shlex.quote(json.dumps(cfg, separators=(",", ":")))
    return VllmConfig(speculative_config=cfg, cli=cli, notes=notes)


def sglang_config(slug: str, draft_len: int, switch_off: int | None, scenario: Scenario,
                  enabled: bool = True) -> SglangConfig:
    """SGLang launch flags for a mechanism; notes for what SGLang cannot express."""
    kind = mechanism_kind(slug)
    names = kind.sglang if kind is not None else None
    if names is None:
        return SglangConfig(flags=[], cli="", notes=[
            f"'{slug}' is not supported by SGLang (no speculative algorithm)."])
    algorithm = names.algorithm
    r = _resolved(scenario, slug)
    problem = r.hardware.engine_problem(SGLANG.slug)  # data/hardware.csv `engines`
    if problem is not None:
        return SglangConfig(flags=[], cli="", notes=[
            f"{scenario.hardware} is not supported by SGLang: {problem}."])
    vendor = r.hardware.vendor
    if names.nvidia_only and vendor != "nvidia":
        return SglangConfig(flags=[], cli="", notes=[
            f"{algorithm} is not supported by SGLang on {vendor.upper()} GPUs "
            f"({names.nvidia_only})."])
    if not enabled or draft_len < 1:
        return SglangConfig(flags=[], cli="",
                            notes=["Speculation does not pay here: leave --speculative-* unset."])
    mech = r.mechanism
    flags = ["--speculative-algorithm", algorithm]
    if mech.needs_draft_weights:
        flags += ["--speculative-draft-model-path", _placeholder(r)]
    flags += names.flags(draft_len)
    notes = ["A batch-size → draft-length schedule and a batch cut-off for speculation are not "
             "supported by SGLang (server_args.py @001067f has only --speculative-adaptive, "
             f"which tunes steps by acceptance rate, not by batch): D is fixed at {draft_len}."]
    if switch_off:
        notes.append(f"Speculation stops paying above B = {switch_off}: cap this deployment at "
                     f"--max-running-requests {switch_off}, or serve larger batches from a "
                     "deployment without speculation.")
    if mech.uses_target_mtp_layers:
        notes.append(f"{algorithm} needs a target checkpoint that ships MTP layers (no draft "
                     "path).")
    return SglangConfig(flags=flags, cli=" ".join(shlex.quote(f) for f in flags), notes=notes)


def trtllm_config(slug: str, draft_len: int, schedule: list[tuple[int, int]],
                  scenario: Scenario, enabled: bool = True) -> TensorRTLLMConfig:
    """TensorRT-LLM `speculative_config` (YAML for trtllm-serve --config) with the schedule."""
    kind = mechanism_kind(slug)
    names = kind.trtllm if kind is not None else None
    if names is None:
        return TensorRTLLMConfig(config=None, yaml="", notes=[
            f"'{slug}' is not supported by TensorRT-LLM (no decoding_type)."])
    decoding_type = names.decoding_type
    r = _resolved(scenario, slug)
    problem = r.hardware.engine_problem(TRTLLM.slug)  # data/hardware.csv `engines`
    if problem is not None:
        return TensorRTLLMConfig(config=None, yaml="", notes=[
            f"{scenario.hardware} is not supported by TensorRT-LLM: {problem}."])
    if not enabled or draft_len < 1:
        return TensorRTLLMConfig(config=None, yaml="", notes=[
            "Speculation does not pay here: leave speculative_config unset."])
    mech = r.mechanism
    spec: dict[str, Any] = {"decoding_type": decoding_type, "max_draft_len": draft_len}
    if mech.needs_draft_weights:
        spec["speculative_model"] = _placeholder(r)
    notes: list[str] = []
    positive = {mb: d for mb, d in schedule if d > 0}
    if not names.dynamic_draft_len:
        notes.append(f"draft_len_schedule (and the max_concurrency cut-off it implements) is not "
                     f"supported by TensorRT-LLM for {decoding_type} (support_dynamic_draft_len, "
                     f"interface.py @00b6d5a): D is fixed at {draft_len}.")
    elif positive:
        # llm_args.py @0004396: {max_batch: draft_len}, keys are inclusive upper bounds, the
        # smallest key maps to max_draft_len, above the largest key speculation is off.
        # Releases that validate the schedule require a key 1 mapping to max_draft_len
        # (llm_args.py: "draft_len_schedule must include batch_size=1 … Add {1:
        # <max_draft_len>}"); with upper-bound keys it changes nothing (B = 1 is within the
        # first bound, which runs max_draft_len).
        spec["draft_len_schedule"] = {1: draft_len, **positive} if 1 not in positive \
            else positive
        notes.append("draft_len_schedule keys are batch-size upper bounds (llm_args.py @0004396); "
                     "releases before that read them as lower thresholds — check yours.")
    if mech.uses_target_mtp_layers:
        notes.append(f"{decoding_type} needs a target checkpoint that ships MTP layers (docs: "
                     "DeepSeek).")
    if names.note:
        notes.append(names.note)
    config = {"speculative_config": spec}
    return TensorRTLLMConfig(config=config, yaml=to_yaml(config), notes=notes)


def to_yaml(obj: dict[Any, Any]) -> str:
    """Block-style YAML that `yaml.safe_load` reads back to `obj` (keys kept in order)."""
    # width: never fold a long placeholder string over two lines.
    return yaml.safe_dump(obj, sort_keys=False, default_flow_style=False, allow_unicode=True,
                          width=YAML_LINE_WIDTH)


def _best_for(options: list[RankedOption], slug: str) -> RankedOption | None:
    for o in options:  # recommend() sorts fitting first, then by speedup
        if o.mechanism == slug:
            return o if o.fits_in_memory else None
    return None


def engine_configs(scenario: Scenario, mechanism: str | None = None,
                   max_batch: int = DEFAULT_MAX_BATCH) -> EngineConfigs:
    """Engine options for the recommended mechanism (or `mechanism`) at the scenario's batch.

    The schedule is the best D at every integer B in 1..max(max_batch, B) by speed alone (memory
    is reported on its own, as for the break-even batch), made non-increasing in B by its upper
    envelope, pinned to the recommendation at the scenario's B, and capped at the configured D.
    """
    rec = recommend(scenario, [mechanism] if mechanism else None)
    slug = mechanism or (rec.best.mechanism if rec.best else scenario.mechanism)
    best = _best_for(rec.ranking, slug)
    pays = best is not None and best.speedup > 1.0
    top = max(max_batch, scenario.batch)
    batches = np.arange(1, top + 1, dtype=np.int64)
    # One home for best D per B, the break-even batch and the memory limit: the Explorer page's.
    frontier = best_draft_len(candidate(scenario, slug), batches)
    raw = np.asarray(frontier.speed_best_draft_len, dtype=np.int64)
    if best is not None:  # = recommend() where it fits; where memory binds, speed alone
        raw[scenario.batch - 1] = best.draft_len if pays else 0
    envelope = np.maximum.accumulate(raw[::-1])[::-1]
    cap = best.draft_len if (pays and best is not None) else int(envelope.max())
    sched_values = np.minimum(envelope, cap)
    schedule = _runs(batches, sched_values)
    on = np.nonzero(sched_values > 0)[0]
    switch_off: int | None
    if not on.size:
        switch_off = 0
    elif on[-1] == len(batches) - 1:
        switch_off = None
    else:
        switch_off = int(batches[on[-1]])
    break_even = frontier.break_even_batch
    max_fit = frontier.max_batch_in_memory
    enabled = switch_off != 0 and cap > 0

    mech = mechanism_presets().get(slug)
    mech_name = mech.name if mech else slug
    target_spec = target_model(scenario)  # a preset or the scenario's own config.json model
    target = target_spec.name if target_spec is not None else scenario.model
    notes: list[str] = []
    if best is not None and pays:
        notes.append(f"Recommended: {mech_name} at D = {best.draft_len} for B = {scenario.batch} "
                     f"({best.speedup:.2f}×, AL {best.acceptance_length:.2f}).")
    elif best is not None:
        notes.append(f"At B = {scenario.batch} speculation with {mech_name} does not pay (best "
                     f"D = {best.draft_len}: {best.speedup:.2f}×); the configs below only "
                     "speculate where the schedule says so.")
    elif slug in rec.unavailable:
        notes.append(f"{mech_name} is unavailable for {target}: {rec.unavailable[slug]}")
    else:
        notes.append(f"At B = {scenario.batch} no {mech_name} configuration fits in memory.")
    if enabled:
        where = ("across B = 1…" + str(top) if switch_off is None
                 else f"for B ≤ {switch_off}, off above")
        notes.append(f"Schedule: best D at each B by speed alone (cost model), non-increasing "
                     f"in B, capped at D = {cap}; speculation on {where}.")
        if int(envelope.max()) > cap:
            prefer = int(envelope.max())
            upto = int(batches[np.nonzero(envelope > cap)[0][-1]])
            notes.append(f"At B ≤ {upto} the model prefers D up to {prefer}: configure "
                         f"num_speculative_tokens / max_draft_len = {prefer} to let the engine's "
                         "schedule use it (more draft and CUDA-graph memory).")
    else:
        notes.append(f"Speculation does not pay at any batch in 1…{top}: serve without it.")
    if max_fit is None:
        notes.append(f"{mech_name} does not fit in memory at S = {scenario.context} for any B.")
    elif max_fit < top:
        notes.append(f"{mech_name} fits in memory up to B = {max_fit} at S = "
                     f"{scenario.context}; schedule entries above that are by speed alone.")
    if scenario.verify_width is not None and scenario.verify_width > 1 + scenario.draft_len:
        notes.append(f"Tree verification (W = {scenario.verify_width}) is not mapped: the configs "
                     "use chain drafting (top-k 1).")
    heads = [h for h in draft_heads().get((target_spec.slug if target_spec else "", slug), ())
             if h.same_weights and "/" in h.checkpoint]
    if mech is not None and mech.needs_draft_weights and heads:
        notes.append("Draft weights: " + "; ".join(f"{h.summary} [{h.source}]" for h in heads)
                     + " (data/draft_heads.csv; the configs name the first).")
    elif mech is not None and mech.needs_draft_weights:
        notes.append("Replace the <…> placeholders with the draft weights' local path or Hugging "
                     "Face id: the presets name no checkpoints.")

    return EngineConfigs(
        mechanism=slug, mechanism_name=mech_name, target_model=target, batch=scenario.batch,
        draft_len=cap, recommended_draft_len=best.draft_len if best else None,
        speedup_at_batch=best.speedup if best else None, speculate_at_batch=pays,
        schedule=schedule, switch_off_batch=switch_off, break_even_batch=break_even,
        max_batch_in_memory=max_fit, max_batch_evaluated=top,
        vllm=vllm_config(slug, cap, schedule, scenario, enabled),
        sglang=sglang_config(slug, cap, switch_off, scenario, enabled),
        tensorrt_llm=trtllm_config(slug, cap, schedule, scenario, enabled),
        notes=notes,
    )

"""A deployment policy (explorer/analysis/deploy.py) as each engine's configuration.

The engines key a draft length on the batch size only (vLLM num_speculative_tokens_per_batch_size,
TensorRT-LLM draft_len_schedule; SGLang has a fixed D), so:

- `off`, `static`, `batch_schedule` map directly (SGLang: the schedule's largest D, fixed, and a
  batch cap where speculation stops paying);
- `batch_context_schedule` cannot be expressed (no engine keys D on context): it is exported as
  its batch schedule, D*(B) over the context mix;
- `al_threshold` cannot be expressed as a threshold on observed AL by vLLM or TensorRT-LLM; SGLang's
  --speculative-adaptive tunes its steps by acceptance rate, not at a set threshold: it is
  exported as its batch schedule;
- `oracle` is a bound, not a policy an engine runs: exported as the batch schedule.

The option mappings and their sources are engine_configs.py's (one home per engine flag).
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict

from explorer.analysis.deploy import DeployResult, simplest_within
from explorer.export.engine_configs import (
    SglangConfig,
    TensorRTLLMConfig,
    VllmConfig,
    _runs,
    sglang_config,
    trtllm_config,
    vllm_config,
)
from explorer.specs.scenario import Scenario

EXPRESSIBLE = ("off", "static", "batch_schedule")
FALLBACK_NOTES: dict[str, str] = {
    "batch_context_schedule": "No engine keys D on the context length: exported as the batch "
    "schedule D*(B) over the context mix (vLLM, SGLang and TensorRT-LLM take a batch-size key "
    "at most). To approach D*(B, S), route long- and short-context requests to separate "
    "deployments, each with its own schedule.",
    "al_threshold": "A switch-off at a threshold of observed AL is not an option of vLLM or "
    "TensorRT-LLM; SGLang's --speculative-adaptive tunes steps by acceptance rate, not at a set "
    "threshold: exported as the batch schedule, with the switched-off workloads named.",
    "oracle": "The oracle is the bound (best D in every state, workload included), not a "
    "policy an engine runs: exported as the batch schedule.",
}


class PolicyExport(BaseModel):
    """The chosen policy in each engine's form, and where it had to fall back."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    policy: str
    exported_as: str  # the policy the configs implement (a fallback for the inexpressible)
    draft_len: int  # num_speculative_tokens / max_draft_len (the schedule's largest D)
    schedule: list[tuple[int, int]]  # (max_batch, draft_len), as engine_configs.EngineConfigs
    switch_off_batch: int | None  # speculate for B ≤ this; 0 = never; None = across the range
    vllm: VllmConfig
    sglang: SglangConfig
    tensorrt_llm: TensorRTLLMConfig
    notes: list[str]


def chosen_policy(result: DeployResult) -> str:
    """The simplest policy an engine can run within 2 % of the fastest such one
    (analysis/deploy.py simplest_within says why)."""
    return simplest_within(result, EXPRESSIBLE)[0]


def _batch_draft_lens(result: DeployResult, policy: str) -> list[int]:
    s = result.schedule
    if policy == "off":
        return [0] * len(s.batch)
    if policy == "static":
        return [s.static_draft_len] * len(s.batch)
    return list(s.batch_draft_len)


def export_policy(scenario: Scenario, result: DeployResult, policy: str | None = None
                  ) -> PolicyExport:
    """`policy` (default: `chosen_policy`) as vLLM, SGLang and TensorRT-LLM configs."""
    name = policy or chosen_policy(result)
    exported = name if name in EXPRESSIBLE else "batch_schedule"
    notes = [FALLBACK_NOTES[name]] if name in FALLBACK_NOTES else []
    if name == "al_threshold":
        s = result.schedule
        off = [w for k, w in enumerate(s.workloads) if any(row[k] for row in s.al_threshold_off)]
        if off:
            notes.append(f"The threshold (AL < {s.al_threshold:.2f}) switches speculation off "
                         f"for: {', '.join(off)} — serve them from a deployment without "
                         "speculation to follow it.")
    batches = np.asarray(result.schedule.batch, dtype=np.int64)
    raw = np.asarray(_batch_draft_lens(result, exported), dtype=np.int64)
    # vLLM takes any K per batch range; TensorRT-LLM maps its smallest key to max_draft_len, so
    # it gets the upper envelope (non-increasing in B).
    envelope = np.maximum.accumulate(raw[::-1])[::-1]
    schedule = _runs(batches, raw)
    trt_schedule = _runs(batches, envelope)
    if (envelope != raw).any():
        notes.append("TensorRT-LLM gets the schedule made non-increasing in B (its upper "
                     "envelope: draft_len_schedule maps its smallest key to max_draft_len); "
                     "vLLM gets it as computed.")
    cap = int(raw.max()) if raw.size else 0
    on = np.nonzero(raw > 0)[0]
    switch_off: int | None = 0 if not on.size else (
        None if on[-1] == len(raw) - 1 else int(batches[on[-1]]))
    enabled = cap > 0
    notes.append(f"Schedule keys are the profile's concurrency buckets (B = {int(batches[0])}…"
                 f"{int(batches[-1])}); above the largest, vLLM keeps its last D and "
                 "TensorRT-LLM switches speculation off.")
    return PolicyExport(
        policy=name, exported_as=exported, draft_len=cap, schedule=schedule,
        switch_off_batch=switch_off,
        vllm=vllm_config(scenario.mechanism, cap, schedule, scenario, enabled),
        sglang=sglang_config(scenario.mechanism, cap, switch_off, scenario, enabled),
        tensorrt_llm=trtllm_config(scenario.mechanism, cap, trt_schedule, scenario, enabled),
        notes=notes)

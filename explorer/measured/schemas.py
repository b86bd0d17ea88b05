"""Pydantic descriptions of each accepted file: one model per JSON file, one per CSV/JSONL row.

``templates.json_schema(format)`` publishes these; the JSON parsers also use them for type
checks (turning pydantic's errors into problems that name the JSON path). Field descriptions
say where each name comes from upstream.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from explorer.base.dtypes import WEIGHT_DTYPES, spellings_of
from explorer.base.limits import (
    MAX_CATEGORIES,
    MAX_CURVE_POINTS,
    MAX_MEASURED_DRAFT_LEN,
    MAX_MEASURED_ROWS,
)
from explorer.base.quoting import quote
from explorer.measured._problems import Collector


class _FileModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# ---------------------------------------------------------------- CSV / JSONL rows


class AlCurveRow(_FileModel):
    """One row of the AL-vs-D CSV (one curve per mechanism, dataset, model, temperature)."""

    mechanism: str | None = Field(
        None,
        description="external, mtp, eagle3, dflash, dspark or ngram (engine spellings "
        "such as EAGLE3, draft_model, eagle3_chain are recognised)",
    )
    dataset: str | None = Field(None, description="workload; 'category' is accepted too")
    D: int = Field(ge=1, description="draft length (tokens proposed per target step)")
    AL: float = Field(
        ge=1.0, description="acceptance length: tokens per target step incl. bonus, <= 1 + D"
    )
    model: str | None = Field(None, description="target model")
    temperature: float | None = Field(None, ge=0.0)
    drafter: str | None = Field(None, description="draft model / head checkpoint")
    source: str | None = Field(None, description="where the number was published or measured")
    draft_style: Literal["chain", "block", "tree"] | None = Field(
        None, description="inferred from the mechanism when absent"
    )


class PositionAcceptanceRow(_FileModel):
    """One row of the per-position acceptance CSV (long layout)."""

    mechanism: str | None = None
    dataset: str | None = None
    model: str | None = None
    position: int = Field(ge=1, description="draft position, 1 = first drafted token")
    rate: float = Field(ge=0.0, le=1.0)
    kind: Literal["conditional", "marginal"] = Field(
        description="conditional: P(pos i accepted | 1..i-1 accepted); marginal: P(1..i all "
        "accepted) — vLLM's per-position rate. 'unconditional', 'joint', 'cumulative' = marginal"
    )
    AL: float | None = Field(
        None, ge=1.0, description="optional measured mean AL at D = n, checked vs 1 + Σ marginal"
    )
    temperature: float | None = Field(None, ge=0.0)
    drafter: str | None = None
    source: str | None = None


class SglangBenchSpeculativeRecord(_FileModel):
    """One line of sglang scripts/playground/bench_speculative.py --output (JSONL)."""

    batch_size: int = Field(ge=1, description="max concurrency of the run")
    steps: int = Field(ge=0, description="--speculative-num-steps (draft depth); 0 = no spec")
    topk: int = Field(ge=0, description="--speculative-eagle-topk; 1 = chain")
    num_draft_tokens: int = Field(ge=0, description="--speculative-num-draft-tokens (verified)")
    acc_length: float = Field(ge=1.0, description="mean accept length incl. bonus token")
    step_time: float = Field(gt=0.0, description="20th-percentile decode step time, seconds")
    speed: float | None = Field(None, description="acc_length / step_time, tokens/s per request")
    completion_tokens: float | None = Field(None, description="mean output tokens per request")


class SpeedBenchReportRow(BaseModel):
    """One row of aiperf speed-bench-report's speed_bench_report.csv.

    The upstream columns are Model, one column per SPEED-Bench category (or dataset) present in
    the runs, and Overall (mean of the row). Category columns are whatever the runs used, so
    this model alone allows extra columns. ``D`` is this project's addition: the draft length
    the server ran with (the upstream CSV does not record it); without the column, put it in
    the file name (e.g. speed_bench_report_D3.csv).
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    Model: str
    D: int | None = Field(None, ge=1, description="draft length (num_speculative_tokens)")
    mechanism: str | None = None
    coding: float | None = None
    humanities: float | None = None
    math: float | None = None
    multilingual: float | None = None
    qa: float | None = None
    rag: float | None = None
    reasoning: float | None = None
    roleplay: float | None = None
    stem: float | None = None
    summarization: float | None = None
    writing: float | None = None
    Overall: float | None = None


class KernelTimingRow(_FileModel):
    """One row of the kernel timings CSV: a GEMM or an attention measurement.

    The time column may be named time_s, time_ms or time_us (latency_* also accepted).
    """

    kind: Literal["gemm", "attention"]
    m: int | None = Field(None, ge=1, description="gemm: rows (tokens)")
    n: int | None = Field(None, ge=1, description="gemm: output features")
    k: int | None = Field(None, ge=1, description="gemm: input features")
    dtype: str | None = Field(
        None,
        description="gemm: dtype; attention: KV-cache dtype. Spellings read as "
        + "; ".join(f"{dt}: {', '.join(spellings_of(dt))}" for dt in WEIGHT_DTYPES)
        + " (any case); other dtypes are kept but have no roofline",
    )
    batch: int | None = Field(None, ge=1, description="attention: sequences")
    context: int | None = Field(None, ge=1, description="attention: KV length per sequence")
    q_heads: int | None = Field(None, ge=1)
    kv_heads: int | None = Field(None, ge=1)
    head_dim: int | None = Field(None, ge=1)
    q_len: int | None = Field(None, ge=1, description="query tokens per sequence (1 + D)")
    time_s: float = Field(gt=0.0)


class StepTimeRow(_FileModel):
    """One row of the step-time CSV (time column: step_time_s, step_time_ms or step_time_us)."""

    batch: int = Field(ge=1)
    draft_len: int | None = Field(None, ge=0, description="0 = no speculation")
    verify_tokens: int | None = Field(None, ge=1, description="tokens verified per sequence")
    step_time_s: float = Field(gt=0.0)
    acceptance_length: float | None = Field(None, ge=1.0)


# ---------------------------------------------------------------- JSON files


class SpeculationProfileFile(_FileModel):
    """NVIDIA specdec_bench speculation_profile.json (schema_version 1.0).

    Field names from Model-Optimizer examples/specdec_bench/specdec_bench/
    speculation_profile.py (build_profile).
    """

    schema_version: str
    measured: bool = True
    method: str | None = None
    draft_checkpoint: str | dict[str, Any] | None = None
    target_model: str | dict[str, Any] | None = None
    num_speculative_tokens: int | None = Field(None, ge=1, le=MAX_MEASURED_DRAFT_LEN)
    block_size: int | None = None
    max_supported_k: int | None = Field(None, ge=1, le=MAX_MEASURED_DRAFT_LEN)
    verification_method: str | None = None
    conditional_accept_rates: list[float] | None = Field(None, max_length=MAX_MEASURED_DRAFT_LEN)
    marginal_accept_rates: list[float] | None = Field(None, max_length=MAX_MEASURED_DRAFT_LEN)
    mean_accept_length: float | None = None
    mean_accept_length_per_request: float | None = None
    accept_length_model: str | None = Field(
        None, description="chain_analytic (extrapolates over K) or measured_per_k (block)"
    )
    accept_length_by_k: dict[str, float] | None = Field(None, max_length=MAX_CURVE_POINTS)
    acceptance_length_histogram: dict[str, float] | None = Field(
        None, max_length=MAX_MEASURED_DRAFT_LEN + 1)
    per_category: dict[str, float | dict[str, Any]] | None = Field(
        None, max_length=MAX_CATEGORIES)
    measurement_conditions: dict[str, Any] | None = None
    validation: dict[str, Any] | None = None
    note: str | None = None


class VllmDynamicSdConfigFile(_FileModel):
    """vLLM dynamic speculative decoding config (dynamic_speculative_config.json).

    Field names from vllm-project/vllm vllm/v1/spec_decode/dynamic/generate_config.py
    (DynamicSpeculativeConfig.model_dump()) and manager.py.
    """

    max_num_speculative_tokens: int = Field(ge=1, le=MAX_MEASURED_DRAFT_LEN)
    acceptance_rate_per_pos: list[float] = Field(
        max_length=MAX_MEASURED_DRAFT_LEN,
        description="marginal (unconditional) acceptance per position; AL(k) = 1 + Σ_{i<k}",
    )
    batch_stats: dict[str, dict[str, float]] = Field(
        max_length=MAX_MEASURED_ROWS,
        description="{batch size: {num drafts k: median ITL in ms}}; k = 0 is no speculation",
    )
    is_online: bool | None = None
    use_online_acceptance_rate: bool | None = None
    num_speculative_tokens_per_batch_size: dict[str, int] | None = None


class VllmMetricsFile(_FileModel):
    """The counters read from vLLM's Prometheus /metrics text (vllm/v1/spec_decode/metrics.py).

    Counter names are exposed with a _total suffix (prometheus_client); both forms are read.
    Series are summed over the engine label and kept apart by model_name.
    """

    spec_decode_num_drafts: float = Field(
        ge=0, description="vllm:spec_decode_num_drafts(_total): number of drafts (steps)"
    )
    spec_decode_num_draft_tokens: float = Field(
        ge=0, description="vllm:spec_decode_num_draft_tokens(_total)"
    )
    spec_decode_num_accepted_tokens: float = Field(
        ge=0, description="vllm:spec_decode_num_accepted_tokens(_total)"
    )
    spec_decode_num_accepted_tokens_per_pos: list[float] = Field(
        description='vllm:spec_decode_num_accepted_tokens_per_pos(_total){position="i"}, i = 0..K-1'
    )


M = TypeVar("M", bound=BaseModel)


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def validate_json_object(model: type[M], obj: object, col: Collector, what: str) -> M | None:
    """Type-check a parsed JSON object; unknown keys are warnings, type errors name the path."""
    if not isinstance(obj, dict):
        col.error(f"expected a JSON object ({what}), found {type(obj).__name__}")
        return None
    known = set(model.model_fields)
    data: dict[str, Any] = {}
    for key, value in obj.items():
        if key in known:
            data[key] = value
        else:
            col.warn(f"unknown key {quote(key)} ignored", field=str(key))
    if not _within_lengths(model, data, col, what):
        return None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        shown = errors[: col.room()]
        for err in shown:
            loc = _loc(tuple(err.get("loc", ())))
            col.error(f"{err.get('msg', 'invalid value')} ({what})", field=loc or None)
        col.skip("error", len(errors) - len(shown))
        return None


def _within_lengths(model: type[BaseModel], data: dict[str, Any], col: Collector, what: str
                    ) -> bool:
    """Containers over their field's max_length are refused before pydantic validates their
    items: it would report every bad item of a million-entry object (hundreds of MB)."""
    ok = True
    for key, value in data.items():
        if not isinstance(value, dict | list):
            continue
        cap = next((m.max_length for m in model.model_fields[key].metadata
                    if getattr(m, "max_length", None) is not None), None)
        if cap is not None and len(value) > cap:
            col.error(f"{key} has {len(value):,} entries; the limit is {cap:,} ({what})",
                      field=key)
            ok = False
    return ok

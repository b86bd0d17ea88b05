"""Downloadable templates, JSON schemas and the registry of accepted formats."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from explorer.base.mechanisms import DEFAULT_MECHANISM
from explorer.measured._entry import PARSERS, parse_as
from explorer.measured.schemas import (
    AlCurveRow,
    KernelTimingRow,
    PositionAcceptanceRow,
    SglangBenchSpeculativeRecord,
    SpeculationProfileFile,
    SpeedBenchReportRow,
    StepTimeRow,
    VllmDynamicSdConfigFile,
    VllmMetricsFile,
)
from explorer.specs.measured import ParseResult


@dataclass(frozen=True)
class FormatInfo:
    """One accepted file format: what it is, a template to fill in, and its parser."""

    name: str
    title: str
    description: str
    filename: str  # suggested name for the downloadable template
    media_type: str
    template: bytes
    schema_model: type[BaseModel]
    parse: Callable[[str, bytes], ParseResult]


_TRT_BLOG = '"TensorRT-LLM tech blog 1 (DeepSeek-R1 on B200), table Autoregressive MTP Layers"'
_AL_CURVE_CSV = "\n".join(
    [
        "mechanism,dataset,model,temperature,drafter,D,AL,source",
        f"mtp,ISL 1k / OSL 2k,DeepSeek-R1,0,native MTP layer,1,1.92,{_TRT_BLOG}",
        f"mtp,ISL 1k / OSL 2k,DeepSeek-R1,0,native MTP layer,2,2.58,{_TRT_BLOG}",
        f"mtp,ISL 1k / OSL 2k,DeepSeek-R1,0,native MTP layer,3,2.82,{_TRT_BLOG}",
        "",
    ]
)

_AMD_BLOG = "vLLM blog 2026-07-13 EAGLE-3 on AMD Instinct"
_POSITION_CSV = "\n".join(
    [
        "mechanism,dataset,model,position,rate,kind,source",
        f"eagle3,SPEED-Bench qualitative,MiniMax-M3,1,0.76,marginal,{_AMD_BLOG}",
        f"eagle3,SPEED-Bench qualitative,MiniMax-M3,2,0.56,marginal,{_AMD_BLOG}",
        f"eagle3,SPEED-Bench qualitative,MiniMax-M3,3,0.43,marginal,{_AMD_BLOG}",
        "",
    ]
)

# Numbers of NVIDIA specdec_bench's own test (histogram {1: 40, 2: 30, 3: 30}).
_SPECDEC_PROFILE: dict[str, Any] = {
    "schema_version": "1.0",
    "measured": True,
    "method": DEFAULT_MECHANISM,
    "draft_checkpoint": {"id": "org/draft-checkpoint"},
    "target_model": {"id": "org/target-model"},
    "num_speculative_tokens": 3,
    "block_size": None,
    "max_supported_k": 3,
    "verification_method": "longest_prefix",
    "conditional_accept_rates": [0.6, 0.5, 0.0],
    "marginal_accept_rates": [0.6, 0.3, 0.0],
    "mean_accept_length": 1.9,
    "mean_accept_length_per_request": 1.9,
    "accept_length_model": "chain_analytic",
    "accept_length_by_k": {"3": 1.9},
    "acceptance_length_histogram": {"1": 40, "2": 30, "3": 30},
    "per_category": None,
    "measurement_conditions": {"dataset": "mtbench", "temperature": 0},
}

_LABELS = 'engine="0",model_name="org/target-model"'
_VLLM_METRICS = "\n".join(
    [
        "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.",
        "# TYPE vllm:spec_decode_num_drafts_total counter",
        f"vllm:spec_decode_num_drafts_total{{{_LABELS}}} 1000.0",
        "# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.",
        "# TYPE vllm:spec_decode_num_draft_tokens_total counter",
        f"vllm:spec_decode_num_draft_tokens_total{{{_LABELS}}} 3000.0",
        "# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.",
        "# TYPE vllm:spec_decode_num_accepted_tokens_total counter",
        f"vllm:spec_decode_num_accepted_tokens_total{{{_LABELS}}} 1750.0",
        "# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft "
        "position.",
        "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter",
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{_LABELS},position="0"}} 760.0',
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{_LABELS},position="1"}} 560.0',
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{_LABELS},position="2"}} 430.0',
        "",
    ]
)

_SGLANG_RECORDS: list[dict[str, Any]] = [
    {
        "batch_size": 1,
        "steps": 0,
        "topk": 0,
        "num_draft_tokens": 0,
        "acc_length": 1.0,
        "step_time": 0.00702,
        "speed": 142.45,
        "completion_tokens": 512.0,
    },
    {
        "batch_size": 1,
        "steps": 3,
        "topk": 1,
        "num_draft_tokens": 4,
        "acc_length": 2.61,
        "step_time": 0.00912,
        "speed": 286.184,
        "completion_tokens": 512.0,
    },
]
_SGLANG_JSONL = "".join(json.dumps(r) + "\n" for r in _SGLANG_RECORDS)

_SPEED_BENCH_CSV = """\
Model,D,coding,math,writing,Overall
org/target-model,3,3.32,3.14,2.33,2.93
"""

_VLLM_DYNAMIC: dict[str, Any] = {
    "is_online": False,
    "max_num_speculative_tokens": 3,
    "acceptance_rate_per_pos": [0.68, 0.39, 0.2],
    "batch_stats": {
        "1": {"0": 6.87, "1": 7.97, "3": 9.41},
        "16": {"0": 7.3, "1": 8.39, "3": 9.95},
    },
}

_KERNEL_CSV = "\n".join(
    [
        "kind,m,n,k,dtype,batch,context,q_heads,kv_heads,head_dim,q_len,time_ms,source",
        "gemm,128,4096,4096,bfloat16,,,,,,,0.016099,aiconfigurator h100_sxm gemm_perf",
        "attention,,,,bfloat16,8,4095,32,8,128,1,0.068523,aiconfigurator h100_sxm "
        "generation_attention_perf",
        "",
    ]
)

_STEP_CSV = """\
batch,draft_len,verify_tokens,step_time_ms,acceptance_length,source
1,0,1,6.87,,your measurement
1,3,4,9.41,2.27,your measurement
"""


def _json_bytes(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, indent=2) + "\n").encode("utf-8")


_SPECS: tuple[tuple[str, str, str, str, str, bytes, type[BaseModel]], ...] = (
    (
        "al_curve_csv",
        "AL vs draft length (CSV)",
        "Acceptance length by draft length D, one curve per mechanism/dataset/model/temperature.",
        "al_curve_template.csv",
        "text/csv",
        _AL_CURVE_CSV.encode(),
        AlCurveRow,
    ),
    (
        "position_acceptance_csv",
        "Per-position acceptance (CSV)",
        "Acceptance rate of each draft position, conditional or marginal; AL(D) follows.",
        "position_acceptance_template.csv",
        "text/csv",
        _POSITION_CSV.encode(),
        PositionAcceptanceRow,
    ),
    (
        "specdec_bench_profile",
        "specdec_bench speculation_profile.json",
        "NVIDIA Model-Optimizer specdec_bench profile: conditional and marginal rates, mean AL, "
        "chain/block flag, max supported K, per-category AL.",
        "speculation_profile.json",
        "application/json",
        _json_bytes(_SPECDEC_PROFILE),
        SpeculationProfileFile,
    ),
    (
        "vllm_metrics",
        "vLLM /metrics (Prometheus text)",
        "A scrape of vLLM's /metrics: spec-decode counters give AL and per-position rates.",
        "vllm_metrics.txt",
        "text/plain",
        _VLLM_METRICS.encode(),
        VllmMetricsFile,
    ),
    (
        "sglang_bench_speculative",
        "SGLang bench_speculative.py output (JSONL)",
        "One JSON line per (batch size, steps, topk, draft tokens): accept length and step time.",
        "sglang_bench_speculative.jsonl",
        "application/jsonl",
        _SGLANG_JSONL.encode(),
        SglangBenchSpeculativeRecord,
    ),
    (
        "speed_bench_report",
        "AIPerf SPEED-Bench report (CSV)",
        "aiperf speed-bench-report acceptance-length matrix (Model x category); add the draft "
        "length as a D column or in the file name (…_D3.csv).",
        "speed_bench_report_D3.csv",
        "text/csv",
        _SPEED_BENCH_CSV.encode(),
        SpeedBenchReportRow,
    ),
    (
        "vllm_dynamic_sd_config",
        "vLLM dynamic speculative decoding config (JSON)",
        "Median step latency by batch size and draft length, and marginal acceptance per position.",
        "dynamic_speculative_config.json",
        "application/json",
        _json_bytes(_VLLM_DYNAMIC),
        VllmDynamicSdConfigFile,
    ),
    (
        "kernel_timings_csv",
        "Kernel timings (CSV)",
        "Measured GEMM and attention kernel latencies; time column in s, ms or µs by its suffix.",
        "kernel_timings_template.csv",
        "text/csv",
        _KERNEL_CSV.encode(),
        KernelTimingRow,
    ),
    (
        "step_times_csv",
        "Step times (CSV)",
        "Measured target step time by batch and draft length (0 = no speculation).",
        "step_times_template.csv",
        "text/csv",
        _STEP_CSV.encode(),
        StepTimeRow,
    ),
)

FORMATS: dict[str, FormatInfo] = {
    name: FormatInfo(
        name=name,
        title=title,
        description=desc,
        filename=filename,
        media_type=media,
        template=template,
        schema_model=schema,
        parse=functools.partial(parse_as, fmt=name),
    )
    for name, title, desc, filename, media, template, schema in _SPECS
}
assert set(FORMATS) == set(PARSERS), "every parser needs a registry entry"


def template(fmt: str) -> bytes:
    """The downloadable template for one format."""
    return _info(fmt).template


def json_schema(fmt: str) -> dict[str, Any]:
    """JSON schema of the file (JSON formats) or of one row/record (CSV, JSONL, metrics)."""
    return _info(fmt).schema_model.model_json_schema()


def _info(fmt: str) -> FormatInfo:
    try:
        return FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown format '{fmt}'; formats: {', '.join(FORMATS)}") from None

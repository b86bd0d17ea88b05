"""Parsed measurements → the scenario's self-contained tables (curve, kernels, steps)."""

from __future__ import annotations

from explorer.specs.measured import AcceptanceCurve, KernelTimingTable, StepTimingTable
from explorer.specs.scenario import (
    MeasuredAttention,
    MeasuredCurve,
    MeasuredGemm,
    MeasuredKernels,
    MeasuredSteps,
)


def provenance_text(curve: AcceptanceCurve) -> str:
    p = curve.provenance
    parts = (f"file {p.file}", f"format {p.format}", p.source, p.model and f"model {p.model}",
             p.dataset and f"dataset {p.dataset}",
             p.temperature is not None and f"temperature {p.temperature:g}")
    return "; ".join(x for x in parts if x)


def as_measured_curve(curve: AcceptanceCurve, prefix: str = "") -> MeasuredCurve:
    return MeasuredCurve(label=f"{prefix}{curve.label}"[:200], draft_lens=curve.draft_lens,
                         acceptance_lengths=curve.acceptance_lengths,
                         source=provenance_text(curve)[:500])


def as_measured_kernels(table: KernelTimingTable, name: str = "") -> MeasuredKernels:
    """Parsed kernel timings → the scenario's tables (they replace matching kernels)."""
    g, a = table.gemm, table.attention
    return MeasuredKernels(
        gemm=MeasuredGemm(m=g.m, n=g.n, k=g.k, dtype=g.dtype, time_s=g.time_s)
        if g.time_s else None,
        attention=MeasuredAttention(batch=a.batch, context=a.context, q_heads=a.q_heads,
                                    kv_heads=a.kv_heads, head_dim=a.head_dim, q_len=a.q_len,
                                    time_s=a.time_s) if a.time_s else None,
        source=(name or f"file {table.provenance.file}")[:500],
    )


# Formats whose step times cover the whole speculation round (drafting included); the plain
# step-times CSV holds the target's verify step.
WHOLE_STEP_FORMATS = ("sglang_bench_speculative", "vllm_dynamic_sd_config")


def as_measured_steps(table: StepTimingTable, name: str = "") -> MeasuredSteps:
    return MeasuredSteps(batch=table.batch, draft_len=table.draft_len,
                         step_time_s=table.step_time_s,
                         includes_draft=table.provenance.format in WHOLE_STEP_FORMATS,
                         source=(name or f"file {table.provenance.file}")[:500])

"""Evaluate one scenario: its figures, breakdown and the source of every number."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from explorer.analysis.availability import availability
from explorer.analysis.table_sanity import TableFlag, table_flags
from explorer.analysis.uncertainty import speedup_interval, timing_note
from explorer.model.grid import ScenarioModel, scenario_model
from explorer.model.layers import COMPONENTS, Breakdown
from explorer.specs.scenario import DEFAULT_OUTPUT_TOKENS, Scenario


class Evaluation(BaseModel):
    """One scenario's figures (seconds, tokens/s, bytes). JSON keys are an interface: keep them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    speedup: float | None
    acceptance_length: float | None
    acceptance_source: str
    acceptance_extrapolated: bool
    t_verif_base_s: float
    t_verif_spec_s: float
    t_draft_s: float
    speedup_launch_bound: float | None
    draft_overhead_launch_bound: float
    rho: float
    tokens_per_s_per_user: float | None
    tokens_per_s_per_gpu: float | None
    baseline_tokens_per_s_per_user: float
    baseline_tokens_per_s_per_gpu: float
    attention_fraction: float
    memory_bytes: float
    hbm_bytes: float
    fits_in_memory: bool
    group: float
    group_per_gpu: float  # G one rank's attention kernel sees (what the guidelines read)
    layers: int
    verify_width: int
    breakdown: dict[str, dict[str, float]]
    sources: dict[str, str]
    mechanism_available: bool = True  # False: a hypothetical (MTP on a target without MTP layers)
    availability: str = ""  # what exists for the target, or why the mechanism does not
    acceptance_evidence: str = ""  # measured, same model, same family, other family, none, user
    # speedup = AL × verify_cost_factor × draft_cost_factor × prefill_factor
    # (see recommend.RankedOption)
    verify_cost_factor: float = 1.0
    draft_cost_factor: float = 1.0
    prefill_factor: float = 1.0
    # whole requests (Scenario.output_tokens): the prompt prefill a plain step carries in steady
    # state (a speculative step carries AL times as much, its drafter's share on top); 0 when
    # the scenario prices decode steps only
    output_tokens: int | None = None
    t_prefill_s: float = 0.0
    # 80 % interval from the AL source's draws (equal to the value where it has no spread)
    speedup_low: float | None = None
    speedup_high: float | None = None
    acceptance_length_low: float | None = None
    acceptance_length_high: float | None = None
    acceptance_uncertainty: str = ""  # what the interval varies (or why there is none)
    acceptance_temperature: str = ""  # greedy / sampled, where the AL source says
    # measured kernel tables far off their siblings (another engine or a wider dtype, same GPU)
    table_flags: tuple[TableFlag, ...] = ()


def _scalar(x: npt.ArrayLike) -> float | None:
    v = float(np.asarray(x).reshape(-1)[0])
    return None if math.isnan(v) else v


def _bd(b: Breakdown) -> dict[str, float]:
    return {c: float(np.asarray(b[c]).reshape(-1)[0]) for c in COMPONENTS}


def sources_of(model: ScenarioModel, al_source: str) -> dict[str, str]:
    r = model.r
    return {
        "hardware": f"{r.hardware.name}: {r.hardware.spec_source}",
        "efficiencies": r.hardware.fit_source,
        "model": f"{r.model.name}: {r.model.source}",
        "mechanism": f"{r.mechanism.name}: {r.mechanism.source}",
        "acceptance_length": al_source,
        "measured_timings": model.measured_sources(),
        "kernel_times": model.kernel_sources(),
        "engine": model.engine_sources(),
        "assumptions": "; ".join(
            a for a in (*(r.hardware.no_native_peak(d) for d in dict.fromkeys(
                (r.scenario.dtype, r.scenario.expert_dtype))), r.hardware.assumptions,
                r.model.assumptions, r.mechanism.assumptions) if a
        ),
    }


def whole_request_speedup(scenario: Scenario, output_tokens: int = DEFAULT_OUTPUT_TOKENS
                          ) -> float | None:
    """The scenario's speedup over whole requests of `output_tokens` (prompt S), at its B, D."""
    sc = scenario.model_copy(update={"output_tokens": output_tokens})
    return _scalar(scenario_model(sc).grid(sc.batch, sc.draft_len).speedup)


def evaluate(scenario: Scenario) -> Evaluation:
    m = scenario_model(scenario)
    g = m.grid(scenario.batch, scenario.draft_len, with_breakdowns=True)
    av = availability(scenario)
    al = m.acceptance(scenario.draft_len)
    s_lo, s_hi = speedup_interval(g, al, scenario.draft_len, scenario.engine)
    a_lo, a_hi = al.interval()
    vf = float(np.ravel(g.t_verif_base_s / g.t_verif_spec_s)[0])
    df = float(np.ravel(g.t_verif_spec_s / (g.t_verif_spec_s + g.t_draft_s))[0])
    sp, al_v = _scalar(g.speedup), _scalar(g.acceptance_length)
    return Evaluation(
        speedup=_scalar(g.speedup),
        acceptance_length=_scalar(g.acceptance_length),
        acceptance_source=g.al_provenance,
        acceptance_extrapolated=bool(np.asarray(g.al_extrapolated).reshape(-1)[0]),
        t_verif_base_s=float(g.t_verif_base_s.reshape(-1)[0]),
        t_verif_spec_s=float(g.t_verif_spec_s.reshape(-1)[0]),
        t_draft_s=float(g.t_draft_s.reshape(-1)[0]),
        speedup_launch_bound=_scalar(g.speedup_launch_bound),
        draft_overhead_launch_bound=float(g.draft_overhead_launch_bound.reshape(-1)[0]),
        rho=m.rho,
        tokens_per_s_per_user=_scalar(g.tokens_per_s_per_user),
        tokens_per_s_per_gpu=_scalar(g.tokens_per_s_per_gpu),
        baseline_tokens_per_s_per_user=float(g.baseline_tokens_per_s_per_user.reshape(-1)[0]),
        baseline_tokens_per_s_per_gpu=float(g.baseline_tokens_per_s_per_gpu.reshape(-1)[0]),
        attention_fraction=float(g.attention_fraction.reshape(-1)[0]),
        memory_bytes=float(g.memory_bytes.reshape(-1)[0]),
        hbm_bytes=m.r.hardware.hbm_bytes,
        fits_in_memory=bool(g.fits_in_memory.reshape(-1)[0]),
        group=m.r.group,
        group_per_gpu=m.group_per_gpu,
        layers=m.r.layers,
        verify_width=scenario.width,
        breakdown={
            "verify_base": _bd(g.verify_base),
            "verify_spec": _bd(g.verify_spec),
            "draft": _bd(g.draft),
        },
        sources=sources_of(m, g.al_provenance),
        mechanism_available=av.available,
        availability=av.text,
        acceptance_evidence=al.evidence,
        speedup_low=_scalar(s_lo), speedup_high=_scalar(s_hi),
        acceptance_length_low=_scalar(a_lo), acceptance_length_high=_scalar(a_hi),
        acceptance_uncertainty=f"{al.uncertainty}; {timing_note(scenario.engine)}",
        acceptance_temperature=al.temperature,
        verify_cost_factor=vf, draft_cost_factor=df,
        prefill_factor=(sp / (al_v * vf * df)) if sp is not None and al_v else 1.0,
        output_tokens=scenario.output_tokens,
        t_prefill_s=float(np.ravel(g.t_prefill_s)[0]),
        table_flags=table_flags(scenario),
    )

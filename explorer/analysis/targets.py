"""An operator's targets on the frontier: a per-user speed SLO and a price per GPU-hour."""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict

from explorer.analysis.evaluate import Evaluation
from explorer.analysis.frontier import ParetoFrontier

SECONDS_PER_HOUR = 3600.0
TOKENS_PER_MILLION = 1e6


class OperatingPoint(BaseModel):
    """One (B, D) point with its speeds; D = 0 is plain decoding."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    batch: int
    draft_len: int
    tokens_per_s_per_user: float
    tokens_per_s_per_gpu: float


class SloAnswer(BaseModel):
    """The most tokens/s per GPU that still gives every user the SLO, with and without
    speculation (None: no point of that frontier reaches it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    slo_tokens_per_s_per_user: float
    with_speculation: OperatingPoint | None
    without_speculation: OperatingPoint | None


def best_meeting_slo(front: ParetoFrontier, slo_tokens_per_s_per_user: float
                     ) -> OperatingPoint | None:
    """The frontier point with the most tokens/s per GPU among those at ≥ the per-user SLO."""
    user = np.asarray(front.tokens_per_s_per_user, dtype=np.float64)
    gpu = np.asarray(front.tokens_per_s_per_gpu, dtype=np.float64)
    ok = np.nonzero(user >= slo_tokens_per_s_per_user)[0]
    if not ok.size:
        return None
    i = int(ok[int(np.argmax(gpu[ok]))])
    return OperatingPoint(batch=front.batch[i], draft_len=front.draft_len[i],
                          tokens_per_s_per_user=float(user[i]),
                          tokens_per_s_per_gpu=float(gpu[i]))


def slo_answer(with_spec: ParetoFrontier, without: ParetoFrontier,
               slo_tokens_per_s_per_user: float) -> SloAnswer:
    """`best_meeting_slo` on both frontiers of `frontier.pareto`."""
    return SloAnswer(
        slo_tokens_per_s_per_user=slo_tokens_per_s_per_user,
        with_speculation=best_meeting_slo(with_spec, slo_tokens_per_s_per_user),
        without_speculation=best_meeting_slo(without, slo_tokens_per_s_per_user),
    )


def usd_per_million_tokens(usd_per_gpu_hour: float, tokens_per_s_per_gpu: float | None
                           ) -> float | None:
    """$ per million generated tokens on a GPU rented at `usd_per_gpu_hour`; None without a
    positive speed to divide by."""
    if tokens_per_s_per_gpu is None or not math.isfinite(tokens_per_s_per_gpu) or (
            tokens_per_s_per_gpu <= 0):
        return None
    return usd_per_gpu_hour / SECONDS_PER_HOUR / tokens_per_s_per_gpu * TOKENS_PER_MILLION


class TokenCost(BaseModel):
    """$ per million tokens at one operating point, with and without speculation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    usd_per_gpu_hour: float
    with_speculation_usd_per_million_tokens: float | None  # None: no speedup at this D
    without_speculation_usd_per_million_tokens: float | None


def token_cost(usd_per_gpu_hour: float, evaluation: Evaluation) -> TokenCost | None:
    """The cost of the evaluated point at a GPU price; None when no price is set (≤ 0)."""
    if not usd_per_gpu_hour > 0:
        return None
    return TokenCost(
        usd_per_gpu_hour=usd_per_gpu_hour,
        with_speculation_usd_per_million_tokens=usd_per_million_tokens(
            usd_per_gpu_hour, evaluation.tokens_per_s_per_gpu),
        without_speculation_usd_per_million_tokens=usd_per_million_tokens(
            usd_per_gpu_hour, evaluation.baseline_tokens_per_s_per_gpu),
    )


def slo_cost(usd_per_gpu_hour: float, answer: SloAnswer) -> TokenCost | None:
    """The cost at the SLO answer's own points (with and without speculation, each at its B
    and D), not at the sidebar's point; None when no price is set (≤ 0)."""
    if not usd_per_gpu_hour > 0:
        return None
    spec, plain = answer.with_speculation, answer.without_speculation
    return TokenCost(
        usd_per_gpu_hour=usd_per_gpu_hour,
        with_speculation_usd_per_million_tokens=usd_per_million_tokens(
            usd_per_gpu_hour, spec.tokens_per_s_per_gpu if spec is not None else None),
        without_speculation_usd_per_million_tokens=usd_per_million_tokens(
            usd_per_gpu_hour, plain.tokens_per_s_per_gpu if plain is not None else None),
    )


def operating_point(evaluation: Evaluation) -> tuple[float, float] | None:
    """(tokens/s per user, tokens/s per GPU) of the evaluated point, for the Pareto charts;
    None where the speedup is undefined (no AL at this D)."""
    user, gpu = evaluation.tokens_per_s_per_user, evaluation.tokens_per_s_per_gpu
    return None if user is None or gpu is None else (user, gpu)

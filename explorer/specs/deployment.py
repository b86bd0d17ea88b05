"""A deployment profile: the distributions a real deployment serves, not one operating point.

A profile is three independent distributions, each with weights that are shares of serving
time (normalised here):

- concurrency B per engine instance (one TP group): a histogram of B with weights, or a
  24-hour curve of concurrency per hour (each hour 1/24 of the time);
- context length S (KV tokens per sequence): buckets with weights, or a log-normal given by its
  median and σ (of ln S), discretised into `buckets` points;
- a workload mix: weights over named AL sources — "scenario" (the scenario's own AL source) or
  a shipped sample curve's key (`python -m explorer presets`), e.g. the SPEED-Bench categories.

States are the product (B, S, workload), weighted by the product of the weights: the three are
assumed independent (no traffic trace in the presets says how they correlate).

The URL carries a profile compactly (`to_url` / `from_url`, key `dp`):
`<concurrency>~<context>~<workload>` with concurrency `h<B>-<w>_…` or `d<B0>_…_<B23>`, context
`b<S>-<w>_…` or `l<median>-<σ>-<buckets>`, and workload `s` (the scenario's source alone) or
`<name>*<w>|…`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Annotated, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from explorer.base.limits import MAX_NUMBER_CHARS

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
SCENARIO_SOURCE = "scenario"  # the workload entry that stands for the scenario's own AL source
MAX_BUCKETS = 64  # per axis: the profile is evaluated as a dense B × S × workload × D array
MAX_WORKLOADS = 32
MAX_BATCH = 65536
MAX_CONTEXT = 2_000_000
URL_MAX_CHARS = 1500

# Defaults — assumptions, labelled as such wherever they show (DEFAULT_NOTES).
# A diurnal curve: log2 B = 4 + 2·cos(2π(h − 14)/24), i.e. 4 at 02:00, 64 at 14:00.
DEFAULT_DAY: tuple[float, ...] = tuple(
    float(round(2.0 ** (4.0 + 2.0 * math.cos(2.0 * math.pi * (h - 14) / 24.0))))
    for h in range(24))
DEFAULT_CONTEXT_MEDIAN = 2048
DEFAULT_CONTEXT_SIGMA = 1.0
DEFAULT_CONTEXT_BUCKETS = 8
# Extra step time of a policy that changes D at run time, as a fraction of its speculative
# steps' time: an assumption (no engine's code gives a figure; see analysis/deploy.py).
DEFAULT_SWITCH_PENALTY = 0.01
DEFAULT_NOTES: tuple[str, ...] = (
    "Default concurrency: assumption — a diurnal curve per engine instance, B from 4 (02:00) to "
    "64 (14:00), log2 B = 4 + 2·cos(2π(h−14)/24); no traffic trace is in the presets.",
    "Default context: assumption — log-normal, median 2048 tokens, σ(ln S) = 1.0, 8 buckets.",
    "Default workload: the scenario's own AL source, weight 1.",
    "Default switching cost: assumption — +1 % on the speculative steps of a policy that changes "
    "D at run time (no engine publishes the cost of running a step below its captured D).",
    "B, S and workload are assumed independent.",
)


class ConcurrencyHistogram(BaseModel):
    """B per engine instance with shares of time."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["histogram"] = "histogram"
    batches: tuple[Annotated[int, Field(ge=1, le=MAX_BATCH)], ...] = Field(
        min_length=1, max_length=MAX_BUCKETS, description="B of each bucket (sequences)")
    weights: tuple[Annotated[float, Field(ge=0, allow_inf_nan=False)], ...] = Field(
        min_length=1, max_length=MAX_BUCKETS, description="share of time of each bucket")

    @model_validator(mode="after")
    def _check(self) -> ConcurrencyHistogram:
        _same_length("weights", self.batches, self.weights)
        return self


class ConcurrencyDay(BaseModel):
    """Concurrency per hour of a day (24 values; each hour is 1/24 of the time)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["day"] = "day"
    per_hour: tuple[Annotated[float, Field(ge=1, le=MAX_BATCH, allow_inf_nan=False)], ...] = \
        Field(default=DEFAULT_DAY, min_length=24, max_length=24,
              description="mean concurrency B in each hour 0..23")


class ContextBuckets(BaseModel):
    """Context lengths S with shares."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["buckets"] = "buckets"
    contexts: tuple[Annotated[int, Field(ge=1, le=MAX_CONTEXT)], ...] = Field(
        min_length=1, max_length=MAX_BUCKETS, description="S of each bucket (KV tokens)")
    weights: tuple[Annotated[float, Field(ge=0, allow_inf_nan=False)], ...] = Field(
        min_length=1, max_length=MAX_BUCKETS, description="share of each bucket")

    @model_validator(mode="after")
    def _check(self) -> ContextBuckets:
        _same_length("weights", self.contexts, self.weights)
        return self


class ContextLogNormal(BaseModel):
    """ln S ~ N(ln median, σ²), discretised into `buckets` points evenly spaced in ln S over
    ±2σ, each weighted by the normal density there (normalised)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["lognormal"] = "lognormal"
    median: int = Field(default=DEFAULT_CONTEXT_MEDIAN, ge=1, le=MAX_CONTEXT,
                        description="median S (KV tokens)")
    sigma: float = Field(default=DEFAULT_CONTEXT_SIGMA, ge=0, le=5, allow_inf_nan=False,
                         description="σ of ln S")
    buckets: int = Field(default=DEFAULT_CONTEXT_BUCKETS, ge=1, le=MAX_BUCKETS)


class WorkloadShare(BaseModel):
    """One workload: an AL source by name ("scenario" or a sample curve's key) and its share."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str = Field(min_length=1, max_length=200,
                        description="'scenario' or a sample curve key")
    weight: float = Field(ge=0, allow_inf_nan=False, description="share of requests")


Concurrency = Annotated[ConcurrencyHistogram | ConcurrencyDay, Field(discriminator="kind")]
Context = Annotated[ContextBuckets | ContextLogNormal, Field(discriminator="kind")]


def _same_length(name: str, a: tuple[object, ...], b: tuple[object, ...]) -> None:
    if len(a) != len(b):
        raise ValueError(f"{name}: {len(b)} weights for {len(a)} buckets")


def _sum_checked(name: str, weights: Sequence[float]) -> None:
    total = float(sum(weights))  # not fsum: it raises on overflow instead of giving inf
    if not (math.isfinite(total) and total > 0):
        raise ValueError(f"{name}: the weights sum to {total:g}; they must sum to a finite "
                         "number > 0")


def _normalised(name: str, w: FloatArray) -> FloatArray:
    total = float(w.sum())
    if not total > 0:
        raise ValueError(f"{name}: the weights sum to 0")
    return np.asarray(w / total, dtype=np.float64)


def _merged(values: IntArray, weights: FloatArray) -> tuple[IntArray, FloatArray]:
    """Equal values merged (their weights added), sorted ascending."""
    uniq, inv = np.unique(values, return_inverse=True)
    return uniq.astype(np.int64), np.bincount(inv, weights=weights).astype(np.float64)


class DeploymentProfile(BaseModel):
    """Concurrency, context and workload distributions of a deployment (see the module doc)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    concurrency: Concurrency = Field(default_factory=ConcurrencyDay)
    context: Context = Field(default_factory=ContextLogNormal)
    workload: tuple[WorkloadShare, ...] = Field(
        default=(WorkloadShare(source=SCENARIO_SOURCE, weight=1.0),),
        min_length=1, max_length=MAX_WORKLOADS)
    switch_penalty: float = Field(
        default=DEFAULT_SWITCH_PENALTY, ge=0, le=1, allow_inf_nan=False,
        description="extra step time (fraction) of speculative steps under a policy that "
        "changes D at run time: an assumption")

    @model_validator(mode="after")
    def _check(self) -> DeploymentProfile:
        names = [w.source for w in self.workload]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"workload: '{dup[0]}' is listed twice")
        # As a whole: each weight is finite (its field says so), and so must their sum be, or
        # normalising makes every share 0 (two weights of 1e308 sum to inf).
        _sum_checked("workload", [w.weight for w in self.workload])
        c = self.concurrency
        if isinstance(c, ConcurrencyHistogram):
            _sum_checked("concurrency.weights", c.weights)
        s = self.context
        if isinstance(s, ContextBuckets):
            _sum_checked("context.weights", s.weights)
        return self

    def link_problem(self) -> str | None:
        """Why a link (`dp`) cannot carry this profile (None: it can): its compact form is over
        URL_MAX_CHARS, or does not read back as a profile."""
        text = self.to_url()
        if len(text) > URL_MAX_CHARS:
            return (f"its link form is {len(text):,} characters; a link carries at most "
                    f"{URL_MAX_CHARS:,} (fewer buckets or shorter weights fit)")
        return url_problem(text)

    # -- the discretised distributions ------------------------------------------------------
    def batch_buckets(self) -> tuple[IntArray, FloatArray]:
        """Distinct B (ascending) and their shares of time."""
        c = self.concurrency
        if isinstance(c, ConcurrencyDay):
            b = np.maximum(np.rint(np.asarray(c.per_hour)), 1).astype(np.int64)
            w = np.full(24, 1.0 / 24.0)
        else:
            b = np.asarray(c.batches, dtype=np.int64)
            w = _normalised("concurrency.weights", np.asarray(c.weights, dtype=np.float64))
        return _merged(b, w)

    def context_buckets(self) -> tuple[IntArray, FloatArray]:
        """Distinct S (ascending) and their shares."""
        c = self.context
        if isinstance(c, ContextBuckets):
            return _merged(np.asarray(c.contexts, dtype=np.int64),
                           _normalised("context.weights",
                                       np.asarray(c.weights, dtype=np.float64)))
        if c.buckets == 1 or c.sigma == 0:
            return np.asarray([c.median], dtype=np.int64), np.ones(1)
        z = np.linspace(-2.0, 2.0, c.buckets)
        s = np.clip(np.rint(c.median * np.exp(c.sigma * z)), 1, MAX_CONTEXT).astype(np.int64)
        return _merged(s, _normalised("context", np.exp(-0.5 * z * z)))

    def workload_shares(self) -> tuple[tuple[str, ...], FloatArray]:
        names = tuple(w.source for w in self.workload)
        return names, _normalised("workload", np.asarray([w.weight for w in self.workload]))

    # -- URL ------------------------------------------------------------------------------
    def to_url(self) -> str:
        c = self.concurrency
        if isinstance(c, ConcurrencyDay):
            conc = "d" + "_".join(_num(x) for x in c.per_hour)
        else:
            conc = "h" + "_".join(f"{b}-{_num(w)}" for b, w in zip(c.batches, c.weights,
                                                                   strict=True))
        s = self.context
        if isinstance(s, ContextBuckets):
            ctx = "b" + "_".join(f"{x}-{_num(w)}" for x, w in zip(s.contexts, s.weights,
                                                                  strict=True))
        else:
            ctx = f"l{s.median}-{_num(s.sigma)}-{s.buckets}"
        if len(self.workload) == 1 and self.workload[0].source == SCENARIO_SOURCE:
            work = "s"
        else:
            work = "|".join(f"{w.source}*{_num(w.weight)}" for w in self.workload)
        parts = [conc, ctx, work]
        if self.switch_penalty != DEFAULT_SWITCH_PENALTY:
            parts.append(f"p{_num(self.switch_penalty)}")
        return "~".join(parts)


def _num(x: float) -> str:
    return f"{x:g}"


DEFAULT_PROFILE = DeploymentProfile()


def _pairs(text: str, what: str) -> tuple[list[str], list[str]]:
    keys, values = [], []
    for item in text.split("_"):
        k, sep, v = item.partition("-")
        if not sep:
            raise ValueError(f"{what}: '{item[:20]}' is not VALUE-WEIGHT")
        keys.append(k)
        values.append(v)
    return keys, values


def _float(text: str, what: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"{what}: '{text[:20]}…' is longer than {MAX_NUMBER_CHARS} characters "
                         "(MAX_NUMBER_CHARS)")
    try:
        x = float(text)
    except ValueError:
        raise ValueError(f"{what}: '{text[:20]}' is not a number") from None
    if not math.isfinite(x):
        raise ValueError(f"{what}: '{text[:20]}' is not a finite number")
    return x


def _int(text: str, what: str) -> int:
    # At most a few digits more than any bound here (MAX_CONTEXT): int() of a 5,000-digit text
    # raises its own error, and costs time long before that.
    if not text.isascii() or not text.isdigit() or len(text) > 12:
        raise ValueError(f"{what}: '{text[:20]}' is not a whole number of at most 12 digits")
    return int(text)


def profile_from_url(text: str) -> DeploymentProfile:
    """Parse the compact URL form; ValueError names the part that is wrong."""
    if len(text) > URL_MAX_CHARS:
        raise ValueError(f"too long ({len(text)} > {URL_MAX_CHARS} characters)")
    parts = text.split("~")
    if len(parts) not in (3, 4):
        raise ValueError("expected concurrency~context~workload")
    conc, ctx, work = parts[:3]
    data: dict[str, object] = {}
    if conc.startswith("d"):
        data["concurrency"] = {"kind": "day", "per_hour": [
            _float(x, "concurrency") for x in conc[1:].split("_")]}
    elif conc.startswith("h"):
        ks, vs = _pairs(conc[1:], "concurrency")
        data["concurrency"] = {"kind": "histogram",
                               "batches": [_int(k, "concurrency") for k in ks],
                               "weights": [_float(v, "concurrency") for v in vs]}
    else:
        raise ValueError("concurrency: starts with d (24 hours) or h (histogram)")
    if ctx.startswith("l"):
        bits = ctx[1:].split("-")
        if len(bits) != 3:
            raise ValueError("context: l<median>-<sigma>-<buckets>")
        data["context"] = {"kind": "lognormal", "median": _int(bits[0], "context"),
                           "sigma": _float(bits[1], "context"),
                           "buckets": _int(bits[2], "context")}
    elif ctx.startswith("b"):
        ks, vs = _pairs(ctx[1:], "context")
        data["context"] = {"kind": "buckets", "contexts": [_int(k, "context") for k in ks],
                           "weights": [_float(v, "context") for v in vs]}
    else:
        raise ValueError("context: starts with l (log-normal) or b (buckets)")
    if work != "s":
        shares = []
        for item in work.split("|"):
            name, sep, w = item.rpartition("*")
            if not sep:
                raise ValueError(f"workload: '{item[:20]}' is not NAME*WEIGHT")
            shares.append({"source": name, "weight": _float(w, "workload")})
        data["workload"] = shares
    if len(parts) == 4:
        if not parts[3].startswith("p"):
            raise ValueError("switch penalty: p<fraction>")
        data["switch_penalty"] = _float(parts[3][1:], "switch penalty")
    try:
        return DeploymentProfile.model_validate(data)
    except ValidationError as exc:
        raise ValueError(profile_error(exc)) from None


def profile_error(exc: ValidationError) -> str:
    """The first problem of a profile as 'field.path: message'."""
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err["loc"] if x not in ("histogram", "day", "buckets",
                                                           "lognormal"))
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{loc}: {msg}" if loc else msg


def url_problem(text: str) -> str | None:
    """Why a URL value is not a profile (None: it is)."""
    try:
        profile_from_url(text)
    except ValueError as exc:
        return str(exc)
    return None


DEFAULT_PROFILE_URL = DEFAULT_PROFILE.to_url()


def profile_json_schema() -> str:
    return json.dumps(DeploymentProfile.model_json_schema(), indent=2)

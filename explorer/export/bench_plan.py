"""The runs that check a prediction on the user's own engine, with forced acceptance.

`bench_plan(scenario)` takes the recommended mechanism and D at the scenario's batch and lays
out, for the scenario's serving engine, D = 0 and the recommended D at the scenario's B and a
ladder around it (B/2, B, 2B): each run with the engine's launch command (its speculative config
and the engine's own switch that forces the acceptance length, so the benchmark measures the step
costs the explorer predicts, whatever the drafter would accept on random prompts), the engine's
own serving benchmark with concurrency = B and fixed input/output lengths, and the output tokens/s
and TPOT the model expects over those whole requests (each step carrying the prefill of the
requests that replace finished ones), with an 80 % interval. `bench_script(plan)` is the same as
one shell script. Every flag was read in the engine's source at the commit named beside it (and
in the plan's `engine_version`); nothing here runs an engine.

What differs between engines (the launch command and its forced-acceptance switch with the
source it was read in, the benchmark client, the result format, the checked versions) is each
engine's declaration (explorer/specs/engine.py, EngineKind.bench); this module lays the runs out.

Core module: numpy and pydantic only.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import numpy.typing as npt
import pandas as pd
from pydantic import BaseModel, ConfigDict

from explorer.analysis.candidate import candidate
from explorer.analysis.recommend import recommend
from explorer.analysis.timing_error import (
    CHECKED_BATCHES_UP_TO,
    FIT_STEP_OVERHEAD_MS,
    STEP_REFERENCE,
    timing_error,
)
from explorer.base.engines import ServingEngine
from explorer.base.mechanisms import mechanism_kind
from explorer.model.grid import scenario_model
from explorer.model.resolve import resolve
from explorer.presets import draft_heads
from explorer.specs.engine import ENGINE_KINDS, BenchClientRun, BenchServerRun
from explorer.specs.scenario import Scenario

FloatArray = npt.NDArray[np.float64]

# z of the 10 % and 90 % quantiles of a normal: the plan's interval is the 80 % one, as the
# explorer's speedup intervals are (explorer/model/acceptance_source.py INTERVAL).
Z80 = 1.2815515655446004
# Output tokens per request: enough decode steps per request for the forced acceptance to show,
# few enough that a ladder of runs takes minutes (the expected figures price the prompts' prefill
# these steps carry). The input is then set so the mean KV length while decoding,
# input + output/2, is the scenario's context S.
MAX_OUTPUT_LEN = 256
# Requests per run: eight rounds of B concurrent requests (at least 32), so the run spends most of
# its time at full concurrency rather than ramping up or draining.
ROUNDS = 8
MIN_PROMPTS = 32
# A plan says so where the prefill is more than this share of a plain step at the scenario's B.
PREFILL_NOTE_SHARE = 0.3

PLAN_KEYS = ("engine", "batch", "draft_len", "forced_acceptance_length", "server_command",
             "client_command", "expected_output_tokens_per_s", "expected_tpot_s",
             "expected_low", "expected_high", "input_len", "output_len")


class BenchRun(BaseModel):
    """One benchmark run. The keys are an interface (issue #23): keep their names."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: ServingEngine
    batch: int
    draft_len: int
    forced_acceptance_length: float | None  # None at D = 0 (nothing to force)
    server_command: str
    client_command: str
    expected_output_tokens_per_s: float
    expected_tpot_s: float
    expected_low: float  # 80 % interval of expected_output_tokens_per_s
    expected_high: float
    # tokens per request the client command asks for: the expected figures price these whole
    # requests (their prompts' prefill included)
    input_len: int
    output_len: int


class BenchPlan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: ServingEngine
    model: str
    hardware: str
    tp: int
    context: int
    mechanism: str
    mechanism_name: str
    draft_len: int
    draft_checkpoint: str | None  # a published checkpoint id, where the catalogue has one
    input_len: int
    output_len: int
    num_prompts_per_batch: dict[int, int]
    engine_version: dict[str, str]
    interval: str
    runs: list[BenchRun]
    notes: list[str]


def result_name(engine: str, batch: int, draft_len: int, al: float | None) -> str:
    """The result file's stem: bench-compare reads B, D and the forced AL back from it."""
    tail = f"_al{al:.2f}" if al is not None and draft_len > 0 else ""
    return f"bench_{engine}_b{batch}_d{draft_len}{tail}"


def batch_ladder(batch: int) -> list[int]:
    """The scenario's B and one step either side, by factors of 2 (B=1: 1, 2, 4)."""
    if batch <= 1:
        return [1, 2, 4]
    return sorted({max(1, batch // 2), batch, batch * 2})


def io_lengths(context: int) -> tuple[int, int]:
    """(input, output) tokens per request: mean KV length while decoding = S."""
    out = max(2, min(MAX_OUTPUT_LEN, context // 2))
    return max(1, context - out // 2), out


@cache
def plain_step_log_rms() -> float:
    """Log-scale RMS error of the model's plain decode step T_verif(B, 1) against the measured
    step reference (Llama-3.1-8B, one H100, vLLM; data/samples/step_times.csv, the reference
    `timing_error` uses for the verify-cost ratio), batches up to CHECKED_BATCHES_UP_TO."""
    steps = pd.read_csv(STEP_REFERENCE)
    rows = steps[(steps.draft_len == 0) & (steps.batch <= CHECKED_BATCHES_UP_TO)]
    b = rows.batch.to_numpy(dtype=np.float64)
    ref_s = (rows.step_time_ms.to_numpy(dtype=np.float64) + FIT_STEP_OVERHEAD_MS) * 1e-3
    m = scenario_model(Scenario(hardware="h100", model="llama-3.1-8b", tp=1, context=1024))
    model_s = np.asarray(m.grid(b, 0.0).t_verif_base_s, dtype=np.float64)
    return float(np.sqrt(np.mean(np.log(model_s / ref_s) ** 2)))


def log_sigma(draft_len: npt.ArrayLike) -> FloatArray:
    """σ of log(step time) at D: the plain step's error and, for D > 0, the verify-cost ratio's
    (analysis/timing_error.py), added in quadrature."""
    ratio = timing_error().step_sigma(draft_len)  # a step time's error, not a speed-up's
    return np.asarray(np.sqrt(plain_step_log_rms() ** 2 + ratio ** 2), dtype=np.float64)


class Prediction(BaseModel):
    """The model's figures for runs at (B, D) with a forced AL (arrays, one per run)."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    step_s: FloatArray  # one step, with the prefill it carries
    prefill_s: FloatArray  # of which the prompt prefill (0 for decode steps only)
    output_tokens_per_s: FloatArray
    tpot_s: FloatArray
    low: FloatArray
    high: FloatArray


def run_context(input_len: npt.ArrayLike, output_len: npt.ArrayLike) -> FloatArray:
    """A run's mean KV length while decoding: its prompt plus half its output."""
    return np.asarray(np.asarray(input_len, dtype=np.float64)
                      + np.asarray(output_len, dtype=np.float64) / 2.0, dtype=np.float64)


def predict(scenario: Scenario, batch: npt.ArrayLike, draft_len: npt.ArrayLike,
            acceptance_length: npt.ArrayLike, input_len: npt.ArrayLike | None = None,
            output_len: npt.ArrayLike | None = None) -> Prediction:
    """Output tokens/s (all requests), TPOT and the 80 % interval of runs at (B, D) whose
    acceptance is forced to AL (AL is ignored at D = 0).

    With the runs' mean input and output tokens per request (a serving benchmark runs whole
    requests), each step is priced as the explorer prices whole requests (explorer/model/
    grid.py `speedup_at`), in steady state: decode at the mean KV length input + output/2, plus
    the prefill of the requests that replace finished ones, p for B·input/output prompt tokens
    (`ScenarioModel.prefill_per_step`, N = the run's output): step = T_verif(B) + p at D = 0,
    T_verif(B·W) + T_draft + AL·p·f with speculation (f: the drafter prefills too). Without
    them, decode steps only at the scenario's S (whatever its own N). tokens/s = B·AL / step,
    TPOT = step / AL. The scenario's engine, mechanism and any applied measured terms price the
    step."""
    b = np.asarray(batch, dtype=np.float64).reshape(-1)
    d = np.asarray(draft_len, dtype=np.float64).reshape(-1)
    al = np.where(d > 0, np.asarray(acceptance_length, dtype=np.float64).reshape(-1), 1.0)
    sm = scenario_model(scenario)
    if input_len is None or output_len is None:
        g = sm.grid(b, d)
        prefill = np.zeros_like(b * d)
    else:
        isl = np.broadcast_to(np.asarray(input_len, dtype=np.float64).reshape(-1), b.shape)
        osl = np.broadcast_to(np.asarray(output_len, dtype=np.float64).reshape(-1), b.shape)
        if not (np.isfinite(isl).all() and np.isfinite(osl).all()) or (isl < 1).any() or \
                (osl < 1).any():
            raise ValueError("input_len and output_len must be ≥ 1 token per request")
        g = sm.grid(b, d, context=run_context(isl, osl))
        p, f = sm.prefill_per_step(b, isl, np.full(b.shape, sm.r.group), output_tokens=osl)
        prefill = al * p * np.where(d > 0, f, 1.0)  # at D = 0 no drafter prefills
    step = np.where(d > 0, g.t_verif_spec_s + g.t_draft_s, g.t_verif_base_s) + prefill
    tps = b * al / step
    spread = np.exp(Z80 * log_sigma(d))
    return Prediction(step_s=step, prefill_s=np.asarray(prefill, dtype=np.float64),
                      output_tokens_per_s=tps, tpot_s=step / al, low=tps / spread,
                      high=tps * spread)


def _checkpoint(scenario: Scenario, slug: str) -> str | None:
    heads = draft_heads().get((scenario.model, slug), ())
    same = [h for h in heads if h.same_weights] or list(heads)
    return same[0].checkpoint if same else None


def _needs_weights(scenario: Scenario, slug: str) -> bool:
    return resolve(candidate(scenario, slug)).mechanism.needs_draft_weights


def _choice(scenario: Scenario, mechanism: str | None) -> tuple[str, int, float, list[str]]:
    """(mechanism, D, AL at D) to test: the recommendation at the scenario's B (among all
    mechanisms, or `mechanism`'s best D) where it runs on this engine, else the scenario's own
    mechanism at its D."""
    notes: list[str] = []
    rec = recommend(scenario, [mechanism] if mechanism else None)
    engine = scenario.engine
    kind = ENGINE_KINDS[engine]
    best = rec.best
    if mechanism and best is None and rec.best_if_trained is not None:
        # the mechanism asked for runs only with a head still to be trained: plan its best D
        best = rec.best_if_trained
        notes.append(f"{best.mechanism_name} needs a head trained for D = {best.draft_len}: "
                     "the runs measure the step costs such a head would have.")
    if (best is not None and kind.supports(mechanism_kind(best.mechanism))
            and best.draft_len > 0):
        if best.speedup <= 1.0:
            notes.append(f"At B = {scenario.batch} the recommendation ({best.mechanism_name} "
                         f"D = {best.draft_len}, {best.speedup:.2f}×) does not pay: the runs "
                         "check that prediction too.")
        return best.mechanism, best.draft_len, best.acceptance_length, notes
    slug, d = mechanism or scenario.mechanism, max(1, scenario.draft_len)
    if slug in rec.unavailable:
        raise ValueError(f"'{slug}' is unavailable for {scenario.model}: {rec.unavailable[slug]}")
    if not kind.supports(mechanism_kind(slug)):
        raise ValueError(f"mechanism '{slug}' has no speculative method in {engine}")
    sc = candidate(scenario, slug).model_copy(update={"draft_len": d})
    al = float(np.ravel(scenario_model(sc).acceptance(float(d)).acceptance_length)[0])
    if not np.isfinite(al):
        raise ValueError(f"'{slug}' has no acceptance length at D = {d} for {scenario.model} "
                         "(a block drafter is known only at the D its evidence has)")
    why = ("nothing fits in memory at this batch" if best is None
           else f"the recommendation ({best.mechanism_name}) does not run on {engine}")
    notes.append(f"{why[0].upper()}{why[1:]}: the runs test {slug} at the scenario's D = {d}.")
    return slug, d, al, notes


def bench_plan(scenario: Scenario, mechanism: str | None = None) -> BenchPlan:
    """The benchmark runs that check the prediction on the scenario's engine: for the
    recommended mechanism, or for `mechanism` at its best D."""
    engine = scenario.engine
    bench = ENGINE_KINDS[engine].bench
    slug, d, al_raw, notes = _choice(scenario, mechanism)
    al = round(min(max(al_raw, 1.0), 1.0 + d), 2)  # the engines take AL in [1, D+1]
    sc = candidate(scenario, slug)
    mech = resolve(sc).mechanism
    kind = mechanism_kind(slug)
    assert kind is not None  # _choice returns a mechanism the engine supports
    needs_weights = _needs_weights(sc, slug)
    ckpt = _checkpoint(scenario, slug)
    draft = ckpt or '"$DRAFT_MODEL"'
    isl, osl = io_lengths(scenario.context)
    max_len = isl + osl
    batches = batch_ladder(scenario.batch)
    bs = np.repeat(np.asarray(batches, dtype=np.float64), 2)
    ds = np.tile(np.asarray([0.0, float(d)]), len(batches))
    pred = predict(sc, bs, ds, np.full(bs.shape, al), input_len=isl, output_len=osl)
    runs: list[BenchRun] = []
    prompts = {b: max(MIN_PROMPTS, ROUNDS * b) for b in batches}
    for i, (b_f, d_f) in enumerate(zip(bs, ds, strict=True)):
        b, dd = int(b_f), int(d_f)
        forced = al if dd > 0 else None
        stem = result_name(engine, b, dd, forced)
        server = BenchServerRun(
            mechanism=kind, tp=sc.tp, kv_dtype=sc.kv_dtype, batch=b, draft_len=dd,
            forced_acceptance_length=forced, draft=draft,
            needs_draft_weights=needs_weights, max_len=max_len, stem=stem)
        client = BenchClientRun(batch=b, draft_len=dd, forced_acceptance_length=forced,
                                input_len=isl, output_len=osl, prompts=prompts[b], stem=stem)
        runs.append(BenchRun(
            engine=engine, batch=b, draft_len=dd, forced_acceptance_length=forced,
            server_command=bench.server(server), client_command=bench.client(client),
            expected_output_tokens_per_s=float(pred.output_tokens_per_s[i]),
            expected_tpot_s=float(pred.tpot_s[i]),
            expected_low=float(pred.low[i]), expected_high=float(pred.high[i]),
            input_len=isl, output_len=osl))
    at_b = int(np.argmax((bs == scenario.batch) & (ds == 0)))
    share = float(pred.prefill_s[at_b] / pred.step_s[at_b])
    if share > PREFILL_NOTE_SHARE:
        notes.append(f"At these lengths the prompts' prefill is {share:.0%} of a plain step at "
                     f"B = {scenario.batch}: the runs check the prefill's price as much as the "
                     "speculative step's; fewer input tokens per output token would isolate "
                     "the decode steps.")
    if mech.needs_draft_weights and ckpt is None:
        notes.append(f"No published {mech.name} checkpoint for {scenario.model} in "
                     "data/draft_heads.csv: set DRAFT_MODEL to your drafter's path or id.")
    notes += [
        f"Acceptance is forced to AL = {al:.2f} (the model's AL for {mech.name} at D = {d}), "
        "so the runs measure step costs, not how well the drafter fits random prompts. Forced "
        "acceptance commits unchecked draft tokens: for performance only.",
        f"Each request reads {isl} tokens and writes {osl} (mean KV length while decoding "
        f"≈ S = {scenario.context}). The expected figures are over these whole requests, as "
        "output tokens/s counts them: in steady state each step also carries the prefill of "
        f"the requests that replace finished ones (B·{isl}/{osl} prompt tokens a plain step, "
        "AL times that with speculation), which speculation does not shorten. TPOT includes "
        "the other requests' prefills a request's steps carry; a run whose requests stay in "
        "lockstep prefills them all before they decode (in TTFT), so its TPOT can read lower "
        "and its output tokens/s about the same.",
        "Run every command pair in turn: start the server, wait until it answers, run the "
        "client, stop the server. Then `python -m explorer bench-compare bench_*.json*` with the "
        "same scenario flags.",
    ]
    return BenchPlan(
        engine=engine, model=scenario.model, hardware=scenario.hardware, tp=scenario.tp,
        context=scenario.context, mechanism=slug, mechanism_name=mech.name, draft_len=d,
        draft_checkpoint=ckpt, input_len=isl, output_len=osl, num_prompts_per_batch=prompts,
        engine_version=dict(bench.versions),
        interval=(f"80 % interval of output tokens/s: exp(±{Z80:.3f}·σ), σ = the model's plain "
                  f"step log error against the measured step reference "
                  f"({plain_step_log_rms():.3f}) and, for D > 0, the verify-cost ratio's "
                  "(analysis/timing_error.py), in quadrature; the prompt prefill each step "
                  "carries is priced by the same step model; its own error is not in σ"),
        runs=runs, notes=notes)


def bench_script(plan: BenchPlan) -> str:
    """Every run of the plan as one bash script (servers started and stopped in turn)."""
    needs_draft = any('"$DRAFT_MODEL"' in r.server_command for r in plan.runs)
    lines = [
        "#!/usr/bin/env bash",
        f"# SpecDec Explorer benchmark plan: {plan.mechanism_name} D={plan.draft_len} vs D=0, "
        f"{plan.model} on {plan.hardware} (TP {plan.tp}), {plan.engine}.",
        f"# Flags checked against: {plan.engine_version['engine']}",
        "# Forced acceptance commits unchecked draft tokens: use these servers for timing only.",
        "set -euo pipefail",
        f'MODEL="${{MODEL:?set MODEL to the local path or Hugging Face id of {plan.model}}}"',
    ]
    if needs_draft:
        lines.append(f'DRAFT_MODEL="${{DRAFT_MODEL:?set DRAFT_MODEL to the {plan.mechanism_name} '
                     'drafter\'s path or id}"')
    lines += [
        f"PORT=\"${{PORT:-{ENGINE_KINDS[plan.engine].bench.port}}}\"",
        "wait_ready() {",
        "  for _ in $(seq 1 900); do",
        "    curl -sf \"http://localhost:$PORT/v1/models\" >/dev/null && return 0",
        "    sleep 2",
        "  done",
        "  echo 'server did not come up' >&2; return 1",
        "}",
        "stop_server() {  # the server runs in a background subshell: stop its children too",
        "  pkill -P \"$1\" 2>/dev/null || true; kill \"$1\" 2>/dev/null || true",
        "  wait \"$1\" 2>/dev/null || true",
        "}",
        "",
    ]
    for r in plan.runs:
        al = ("" if r.forced_acceptance_length is None
              else f", forced AL {r.forced_acceptance_length:.2f}")
        lines += [
            f"# B={r.batch} D={r.draft_len}{al}: expect {r.expected_output_tokens_per_s:.0f} "
            f"output tok/s [{r.expected_low:.0f}–{r.expected_high:.0f}], TPOT "
            f"{r.expected_tpot_s * 1e3:.2f} ms",
            f"{r.server_command} &",
            "SERVER=$!",
            "wait_ready",
            r.client_command,
            "stop_server \"$SERVER\"",
            "",
        ]
    lines.append("echo 'done: python -m explorer bench-compare bench_*.json* (same scenario "
                 "flags)'")
    return "\n".join(lines) + "\n"

"""The runs that check a prediction on the user's own engine, with forced acceptance.

`bench_plan(scenario)` takes the recommended mechanism and D at the scenario's batch and lays
out, for the scenario's serving engine, D = 0 and the recommended D at the scenario's B and a
ladder around it (B/2, B, 2B): each run with the engine's launch command (its speculative config
and the engine's own switch that forces the acceptance length, so the benchmark measures the step
costs the explorer predicts, whatever the drafter would accept on random prompts), the engine's
own serving benchmark with concurrency = B and fixed input/output lengths, and the output tokens/s
and TPOT the model expects, with an 80 % interval. `bench_script(plan)` is the same as one shell
script. Every flag was read in the engine's source at the commit named beside it (and in the
plan's `engine_version`); nothing here runs an engine.

The forced-acceptance switches (each read in the engine's code):
- vLLM: SpeculativeConfig `rejection_sample_method: "synthetic"` with
  `synthetic_acceptance_length` = AL (bonus token included, in [1, D+1]; resolved to the
  minimum-variance per-position schedule) — vllm/config/speculative.py @002e77c1.
- SGLang: `SGLANG_SIMULATE_ACC_LEN` = AL (EnvFloat, default −1 = off) with
  `SGLANG_SIMULATE_ACC_METHOD=match-expected` — python/sglang/srt/environ.py @21ff4b08; AL counts
  the guaranteed token as vLLM's does (InferenceX golden_al_distribution/README.md @843c6254).
- TensorRT-LLM: `TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS` = AL − 1: it counts accepted *draft*
  tokens only (the bonus token excluded); fractional values accept one more draft token with the
  fractional probability — tensorrt_llm/_torch/speculative/interface.py
  (FORCE_NUM_ACCEPTED_TOKENS_ENV_VAR) @2cbdaa0f, as InferenceX's README @843c6254 documents it.

Core module: numpy and pydantic only.
"""

from __future__ import annotations

import json
import shlex
from functools import cache
from typing import Any

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
from explorer.export.engine_configs import (
    SGLANG_ALGORITHM,
    SGLANG_DRAFT_LEN_FLAGS,
    TRTLLM_DECODING_TYPE,
    VLLM_METHOD,
)
from explorer.model.grid import scenario_model
from explorer.model.resolve import resolve
from explorer.presets import draft_heads
from explorer.specs.scenario import Scenario

FloatArray = npt.NDArray[np.float64]

# z of the 10 % and 90 % quantiles of a normal: the plan's interval is the 80 % one, as the
# explorer's speedup intervals are (explorer/model/acceptance_source.py INTERVAL).
Z80 = 1.2815515655446004
# Output tokens per request: long enough that decoding dominates the run (the prediction is the
# decode rate), short enough that a ladder of runs takes minutes. The input is then set so the
# mean KV length while decoding, input + output/2, is the scenario's context S.
MAX_OUTPUT_LEN = 256
# Requests per run: eight rounds of B concurrent requests (at least 32), so the run spends most of
# its time at full concurrency rather than ramping up or draining.
ROUNDS = 8
MIN_PROMPTS = 32

# The engine versions the flags were checked against (source files at a commit).
ENGINE_VERSIONS: dict[str, dict[str, str]] = {
    "vllm": {
        "engine": "vLLM main @002e77c1f0ef9b19cff8b9e21cfbd6feb3d6b443 (SpeculativeConfig); "
                  "vllm bench serve @009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1",
        "server_flags": "vllm/config/speculative.py @002e77c1: method, model, "
                        "num_speculative_tokens, rejection_sample_method ('standard' | "
                        "'synthetic' | 'block'), synthetic_acceptance_length (in [1, D+1], "
                        "exclusive with synthetic_acceptance_rates); `vllm serve "
                        "--speculative-config` takes the same keys as JSON",
        "client_flags": "vllm/benchmarks/serve.py @009e6d4a: --save-result, --result-filename, "
                        "--max-concurrency, --dataset-name random, --random-input-len / "
                        "--random-output-len, --ignore-eos, --metadata KEY=VALUE (saved as "
                        "top-level keys); the saved JSON holds max_concurrency, "
                        "output_throughput, mean_tpot_ms and spec_decode_acceptance_length",
    },
    "sglang": {
        "engine": "SGLang main: python/sglang/srt/environ.py @21ff4b08a19649d55c59ed4bd8383ab9a1"
                  "9e6430 (SGLANG_SIMULATE_ACC_LEN); server_args.py @001067fffe33427bee0ed2f007"
                  "fb7551a1d76b44; bench_serving.py @0033168f0f58b2bc05aa0273bd475d9c01bafb1c",
        "server_flags": "environ.py @21ff4b08: SGLANG_SIMULATE_ACC_LEN = EnvFloat(-1), "
                        "SGLANG_SIMULATE_ACC_METHOD = EnvStr('match-expected'); "
                        "server_args.py @001067f: --speculative-algorithm, "
                        "--speculative-draft-model-path, --speculative-num-steps, "
                        "--speculative-eagle-topk, --speculative-num-draft-tokens",
        "client_flags": "python/sglang/bench_serving.py @0033168f: --dataset-name random, "
                        "--random-input-len, --random-output-len, --random-range-ratio, "
                        "--num-prompts, --max-concurrency, --output-file (one JSON line per "
                        "run, appended: max_concurrency, output_throughput, mean_tpot_ms, "
                        "accept_length)",
    },
    "trtllm": {
        "engine": "TensorRT-LLM main: tensorrt_llm/_torch/speculative/interface.py "
                  "@2cbdaa0ffa36fbef7960a0ad9f0458373025fa9f (forced accepted tokens); "
                  "tensorrt_llm/bench/dataclasses/reporting.py @0249976575050d2c624a5f285683c6"
                  "6de311a3b7 (trtllm-bench report); AIPerf (ai-dynamo/aiperf) "
                  "@13992dbd96879c76e9584f2e8dc05db49bee6cf2",
        "server_flags": "interface.py: FORCE_NUM_ACCEPTED_TOKENS_ENV_VAR = "
                        "'TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS' (accepted draft tokens: "
                        "AL − 1, fractional allowed); trtllm-serve --config YAML with "
                        "speculative_config.decoding_type / max_draft_len / speculative_model "
                        "(docs/source/features/speculative-decoding.md @04c8822c)",
        "client_flags": "AIPerf `aiperf profile`: --endpoint-type chat, --streaming, "
                        "--concurrency, --request-count, --synthetic-input-tokens-mean / "
                        "-stddev, --output-tokens-mean / -stddev, --extra-inputs "
                        "ignore_eos:true, --artifact-dir (writes profile_export_aiperf.json: "
                        "output_token_throughput.avg, inter_token_latency.avg in ms); or "
                        "trtllm-bench throughput --report_json (performance, "
                        "streaming_metrics.avg_tpot_ms, decoding_stats)",
    },
}

PLAN_KEYS = ("engine", "batch", "draft_len", "forced_acceptance_length", "server_command",
             "client_command", "expected_output_tokens_per_s", "expected_tpot_s",
             "expected_low", "expected_high")


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
    ratio = timing_error().sigma(draft_len)
    return np.asarray(np.sqrt(plain_step_log_rms() ** 2 + ratio ** 2), dtype=np.float64)


class Prediction(BaseModel):
    """The model's figures for runs at (B, D) with a forced AL (arrays, one per run)."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    step_s: FloatArray
    output_tokens_per_s: FloatArray
    tpot_s: FloatArray
    low: FloatArray
    high: FloatArray


def predict(scenario: Scenario, batch: npt.ArrayLike, draft_len: npt.ArrayLike,
            acceptance_length: npt.ArrayLike) -> Prediction:
    """Output tokens/s (all requests), TPOT and the 80 % interval of runs at (B, D) whose
    acceptance is forced to AL (AL is ignored at D = 0): step = T_verif(B·(1+D)) + T_draft,
    tokens/s = B·AL / step, TPOT = step / AL. The scenario's engine, mechanism, S and any applied
    measured terms price the step."""
    b = np.asarray(batch, dtype=np.float64).reshape(-1)
    d = np.asarray(draft_len, dtype=np.float64).reshape(-1)
    al = np.where(d > 0, np.asarray(acceptance_length, dtype=np.float64).reshape(-1), 1.0)
    g = scenario_model(scenario).grid(b, d)
    step = np.where(d > 0, g.t_verif_spec_s + g.t_draft_s, g.t_verif_base_s)
    tps = b * al / step
    spread = np.exp(Z80 * log_sigma(d))
    return Prediction(step_s=step, output_tokens_per_s=tps, tpot_s=step / al,
                      low=tps / spread, high=tps * spread)


def _checkpoint(scenario: Scenario, slug: str) -> str | None:
    heads = draft_heads().get((scenario.model, slug), ())
    same = [h for h in heads if h.same_weights] or list(heads)
    return same[0].checkpoint if same else None


def _needs_weights(scenario: Scenario, slug: str) -> bool:
    return resolve(candidate(scenario, slug)).mechanism.needs_draft_weights


def _kv_flag(engine: str, kv_dtype: str) -> list[str]:
    if kv_dtype != "fp8":
        return []
    # vLLM --kv-cache-dtype fp8; SGLang --kv-cache-dtype fp8_e4m3 (server_args.py @001067f).
    return {"vllm": ["--kv-cache-dtype", "fp8"],
            "sglang": ["--kv-cache-dtype", "fp8_e4m3"]}.get(engine, [])


def _join(args: list[str]) -> str:
    # "$MODEL" / "$DRAFT_MODEL" stay shell variables: the script sets them.
    return " ".join(a if a.startswith('"$') else shlex.quote(a) for a in args)


def _vllm_server(sc: Scenario, slug: str, b: int, d: int, al: float | None, draft: str,
                 max_len: int) -> str:
    args = ["vllm", "serve", '"$MODEL"', "--tensor-parallel-size", str(sc.tp),
            "--max-num-seqs", str(b), "--max-model-len", str(max_len),
            *_kv_flag("vllm", sc.kv_dtype)]
    if d > 0:
        cfg: dict[str, Any] = {"method": VLLM_METHOD[slug]}
        if _needs_weights(sc, slug):
            cfg["model"] = draft.strip('"')
        cfg |= {"num_speculative_tokens": d, "rejection_sample_method": "synthetic",
                "synthetic_acceptance_length": al}
        spec = json.dumps(cfg, separators=(",", ":"))
        # A shell variable inside the single-quoted JSON: close the quotes around it.
        spec = spec.replace("$DRAFT_MODEL", "'\"$DRAFT_MODEL\"'")
        args += ["--speculative-config", "'" + spec + "'"]
        return " ".join(a if a.startswith(("'", '"$')) else shlex.quote(a) for a in args)
    return _join(args)


def _sglang_server(sc: Scenario, slug: str, b: int, d: int, al: float | None, draft: str,
                   max_len: int) -> str:
    env: list[str] = []
    args = ["python", "-m", "sglang.launch_server", "--model-path", '"$MODEL"',
            "--tp-size", str(sc.tp), "--max-running-requests", str(b),
            "--context-length", str(max_len), *_kv_flag("sglang", sc.kv_dtype)]
    if d > 0:
        env = [f"SGLANG_SIMULATE_ACC_LEN={al:.4g}", "SGLANG_SIMULATE_ACC_METHOD=match-expected"]
        args += ["--speculative-algorithm", SGLANG_ALGORITHM[slug]]
        if _needs_weights(sc, slug):
            args += ["--speculative-draft-model-path", draft]
        args += SGLANG_DRAFT_LEN_FLAGS[slug](d)
    return " ".join([*env, _join(args)])


def _trtllm_server(sc: Scenario, slug: str, b: int, d: int, al: float | None, draft: str,
                   max_len: int) -> str:
    config = f"{result_name('trtllm', b, d, al)}.yml"
    lines = ["cuda_graph_config:", "  enable_padding: true", f"  max_batch_size: {b}"]
    if sc.kv_dtype == "fp8":
        lines += ["kv_cache_config:", "  dtype: fp8"]
    env = ""
    if d > 0:
        lines += ["speculative_config:", f"  decoding_type: {TRTLLM_DECODING_TYPE[slug]}",
                  f"  max_draft_len: {d}"]
        if _needs_weights(sc, slug):
            lines.append(f"  speculative_model: {draft}")
        assert al is not None
        env = f"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS={al - 1.0:.4g} "
    # The YAML is written by printf (one line of shell); $DRAFT_MODEL expands inside "…".
    printf = "printf '%s\\n' " + " ".join(
        f'"{line}"' if "$DRAFT_MODEL" in line else shlex.quote(line) for line in lines)
    serve = _join(["trtllm-serve", '"$MODEL"', "--backend", "pytorch", "--tp_size", str(sc.tp),
                   "--max_batch_size", str(b), "--max_seq_len", str(max_len),
                   "--config", config])
    return f"{printf} > {config} && {env}{serve}"


def _client(engine: str, b: int, d: int, al: float | None, isl: int, osl: int,
            prompts: int) -> str:
    name = result_name(engine, b, d, al)
    if engine == "vllm":
        meta = [f"batch={b}", f"draft_len={d}"]
        if al is not None and d > 0:
            meta.append(f"forced_acceptance_length={al:.4g}")
        return _join(["vllm", "bench", "serve", "--backend", "vllm", "--model", '"$MODEL"',
                      "--dataset-name", "random", "--random-input-len", str(isl),
                      "--random-output-len", str(osl), "--num-prompts", str(prompts),
                      "--max-concurrency", str(b), "--ignore-eos", "--temperature", "0",
                      "--save-result", "--result-filename", f"{name}.json",
                      "--metadata", *meta])
    if engine == "sglang":
        return _join(["python", "-m", "sglang.bench_serving", "--backend", "sglang",
                      "--dataset-name", "random", "--random-input-len", str(isl),
                      "--random-output-len", str(osl), "--random-range-ratio", "1",
                      "--num-prompts", str(prompts), "--max-concurrency", str(b),
                      "--output-file", f"{name}.jsonl"])
    aiperf = _join(["aiperf", "profile", "--model", '"$MODEL"', "--url", "localhost:8000",
                    "--endpoint-type", "chat", "--streaming", "--concurrency", str(b),
                    "--request-count", str(prompts), "--synthetic-input-tokens-mean", str(isl),
                    "--synthetic-input-tokens-stddev", "0", "--output-tokens-mean", str(osl),
                    "--output-tokens-stddev", "0", "--extra-inputs", "ignore_eos:true",
                    "--artifact-dir", name])
    # The run's B, D and AL travel in the file name: copy the summary out of its folder.
    return f"{aiperf} && cp {name}/profile_export_aiperf.json {name}.json"


SERVERS = {"vllm": _vllm_server, "sglang": _sglang_server, "trtllm": _trtllm_server}
SUPPORTED = {"vllm": VLLM_METHOD, "sglang": SGLANG_ALGORITHM, "trtllm": TRTLLM_DECODING_TYPE}


def _choice(scenario: Scenario, mechanism: str | None) -> tuple[str, int, float, list[str]]:
    """(mechanism, D, AL at D) to test: the recommendation at the scenario's B (among all
    mechanisms, or `mechanism`'s best D) where it runs on this engine, else the scenario's own
    mechanism at its D."""
    notes: list[str] = []
    rec = recommend(scenario, [mechanism] if mechanism else None)
    engine = scenario.engine
    best = rec.best
    if mechanism and best is None and rec.best_if_trained is not None:
        # the mechanism asked for runs only with a head still to be trained: plan its best D
        best = rec.best_if_trained
        notes.append(f"{best.mechanism_name} needs a head trained for D = {best.draft_len}: "
                     "the runs measure the step costs such a head would have.")
    if best is not None and best.mechanism in SUPPORTED[engine] and best.draft_len > 0:
        if best.speedup <= 1.0:
            notes.append(f"At B = {scenario.batch} the recommendation ({best.mechanism_name} "
                         f"D = {best.draft_len}, {best.speedup:.2f}×) does not pay: the runs "
                         "check that prediction too.")
        return best.mechanism, best.draft_len, best.acceptance_length, notes
    slug, d = mechanism or scenario.mechanism, max(1, scenario.draft_len)
    if slug in rec.unavailable:
        raise ValueError(f"'{slug}' is unavailable for {scenario.model}: {rec.unavailable[slug]}")
    if slug not in SUPPORTED[engine]:
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
    slug, d, al_raw, notes = _choice(scenario, mechanism)
    al = round(min(max(al_raw, 1.0), 1.0 + d), 2)  # the engines take AL in [1, D+1]
    sc = candidate(scenario, slug)
    mech = resolve(sc).mechanism
    ckpt = _checkpoint(scenario, slug)
    draft = ckpt or '"$DRAFT_MODEL"'
    isl, osl = io_lengths(scenario.context)
    max_len = isl + osl
    batches = batch_ladder(scenario.batch)
    bs = np.repeat(np.asarray(batches, dtype=np.float64), 2)
    ds = np.tile(np.asarray([0.0, float(d)]), len(batches))
    pred = predict(sc, bs, ds, np.full(bs.shape, al))
    runs: list[BenchRun] = []
    prompts = {b: max(MIN_PROMPTS, ROUNDS * b) for b in batches}
    for i, (b_f, d_f) in enumerate(zip(bs, ds, strict=True)):
        b, dd = int(b_f), int(d_f)
        forced = al if dd > 0 else None
        runs.append(BenchRun(
            engine=engine, batch=b, draft_len=dd, forced_acceptance_length=forced,
            server_command=SERVERS[engine](sc, slug, b, dd, forced, draft, max_len),
            client_command=_client(engine, b, dd, forced, isl, osl, prompts[b]),
            expected_output_tokens_per_s=float(pred.output_tokens_per_s[i]),
            expected_tpot_s=float(pred.tpot_s[i]),
            expected_low=float(pred.low[i]), expected_high=float(pred.high[i])))
    if mech.needs_draft_weights and ckpt is None:
        notes.append(f"No published {mech.name} checkpoint for {scenario.model} in "
                     "data/draft_heads.csv: set DRAFT_MODEL to your drafter's path or id.")
    notes += [
        f"Acceptance is forced to AL = {al:.2f} (the model's AL for {mech.name} at D = {d}), "
        "so the runs measure step costs, not how well the drafter fits random prompts. Forced "
        "acceptance commits unchecked draft tokens: for performance only.",
        f"Each request reads {isl} tokens and writes {osl} (mean KV length while decoding "
        f"≈ S = {scenario.context}); output tokens/s counts all requests over the run and "
        "includes the prefills, which the decode-only prediction leaves out.",
        "Run every command pair in turn: start the server, wait until it answers, run the "
        "client, stop the server. Then `python -m explorer bench-compare bench_*.json*` with the "
        "same scenario flags.",
    ]
    return BenchPlan(
        engine=engine, model=scenario.model, hardware=scenario.hardware, tp=scenario.tp,
        context=scenario.context, mechanism=slug, mechanism_name=mech.name, draft_len=d,
        draft_checkpoint=ckpt, input_len=isl, output_len=osl, num_prompts_per_batch=prompts,
        engine_version=ENGINE_VERSIONS[engine],
        interval=(f"80 % interval of output tokens/s: exp(±{Z80:.3f}·σ), σ = the model's plain "
                  f"step log error against the measured step reference "
                  f"({plain_step_log_rms():.3f}) and, for D > 0, the verify-cost ratio's "
                  "(analysis/timing_error.py), in quadrature"),
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
        "PORT=\"${PORT:-" + ("30000" if plan.engine == "sglang" else "8000") + "}\"",
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

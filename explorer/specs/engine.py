"""A serving engine's profile (data/engines.csv): the costs an engine adds around the kernels.

Per-step scheduling/sampling overhead, a per-sequence cost, the share of the GEMMs' compute
that a served step does not hide behind its weight reads, a fixed overhead per draft forward
(these four are fitted per engine on published step times where the file says `fit`: data/
step_cost_fit.csv, scripts/fit_step_costs.py), the CUDA-graph capture
sizes (a step pads up to the next captured size — a staircase — and past the largest, or off the
list when the engine does not pad, runs eager with a per-kernel launch cost), the sampler's bytes
per logit of a sampled row and the rejection sampler's per logit of a draft-position row, which
tokens the first draft forward of a round runs on, and what an n-gram request without a match
verifies.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from explorer.base.engines import SERVING_ENGINES, ServingEngine
from explorer.base.mechanisms import (
    MechanismKind,
    SglangAlgorithm,
    TrtllmDecoding,
    VllmMethod,
)

CaptureUnit = Literal["tokens", "requests"]
NgramNoMatch = Literal["one", "full"]
# The first draft forward of a round runs on every scheduled token of the verify step, B·(1+D)
# ("scheduled": the rejected ones are padding), or on one token per request ("batch").
DraftFirstForward = Literal["scheduled", "batch"]
# The parameters a profile has, in data/engines.csv's `parameter` column.
ENGINE_PARAMETERS: tuple[str, ...] = (
    "step_overhead_us", "draft_forward_overhead_us", "cuda_graph_sizes", "cuda_graph_padding",
    "eager_launch_us", "sampler_bytes_per_logit", "rejection_sampler_bytes_per_logit",
    "draft_first_forward", "ngram_no_match", "per_sequence_us", "compute_overlap_loss",
    "recurrent_state_copies",
)
# The whole-step terms calibrated on published step times (explorer/calibration/step_costs.py):
# parameter → (EngineProfile field, scale from the CSV's unit to the field's).
FITTED_STEP_TERMS: dict[str, tuple[str, float]] = {
    "step_overhead_us": ("step_overhead_s", 1e-6),
    "per_sequence_us": ("per_sequence_s", 1e-6),
    "compute_overlap_loss": ("compute_overlap_loss", 1.0),
    "draft_forward_overhead_us": ("draft_forward_overhead_s", 1e-6),
}


class EngineProfile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: ServingEngine
    step_overhead_s: float = Field(ge=0, le=0.1, description="scheduling/sampling per step, s")
    draft_forward_overhead_s: float = Field(ge=0, le=0.1,
                                            description="fixed cost of one draft forward, s")
    per_sequence_s: float = Field(
        default=0.0, ge=0, le=1e-3, description="per request in a step (input preparation, "
        "block tables, attention metadata), s")
    compute_overlap_loss: float = Field(
        default=0.0, ge=0, le=1, description="κ: the share of a target step's GEMM compute "
        "time (at the dtype's peak) that a served step does not overlap with its weight reads; "
        "it pays κ·min(compute, weight read) on top of the isolated kernel times (0: the "
        "measured tables' own overlap; 1: none, the summed roofline)")
    fitted: dict[str, str] = Field(default_factory=dict, description="fitted parameter → what "
                                   "it was fitted on and its leave-one-source-out error")
    capture_sizes: tuple[int, ...] = Field(min_length=1,
                                           description="captured CUDA-graph sizes, ascending")
    capture_unit: CaptureUnit
    pads_to_capture: bool
    eager_launch_s: float = Field(ge=0, le=1e-3, description="per-kernel launch without a graph")
    sampler_bytes_per_logit: float = Field(
        ge=0, le=64, description="HBM bytes per logit of a row the sampler samples (one per "
        "request: a plain decode token or the bonus token)")
    rejection_sampler_bytes_per_logit: float = Field(
        ge=0, le=128, description="HBM bytes per logit of a draft-position row (B·D per step) "
        "the rejection sampler passes over")
    draft_first_forward: DraftFirstForward
    ngram_no_match: NgramNoMatch
    recurrent_state_copies: float = Field(
        default=0.0, ge=0, le=8, description="recurrent (Mamba-2 / Gated DeltaNet) states each "
        "request copies per recurrent layer after a verify step (one read and one write each): "
        "an engine that commits the accepted position's state into the running one")
    sources: dict[str, str] = Field(default_factory=dict, description="parameter → source")
    assumptions: tuple[str, ...] = Field(default=(), description="parameters without a source")

    @model_validator(mode="after")
    def _check(self) -> EngineProfile:
        sizes = self.capture_sizes
        if any(s < 1 for s in sizes) or any(b <= a for a, b in pairwise(sizes)):
            raise ValueError("capture_sizes must be positive and strictly ascending")
        unknown = set(self.assumptions) - set(ENGINE_PARAMETERS)
        if unknown:
            raise ValueError(f"assumptions name unknown parameters: {sorted(unknown)}")
        return self

    @property
    def max_capture(self) -> int:
        return self.capture_sizes[-1]

    def value_text(self, parameter: str) -> str:
        """One parameter's value as the Presets & sources page shows it ('' if unknown)."""
        first = ("all B·(1+D) scheduled tokens" if self.draft_first_forward == "scheduled"
                 else "B tokens")
        values = {
            "step_overhead_us": f"{self.step_overhead_s * 1e6:.0f} µs",
            "per_sequence_us": f"{self.per_sequence_s * 1e6:.1f} µs per request",
            "compute_overlap_loss": f"κ = {self.compute_overlap_loss:.2f}",
            "draft_forward_overhead_us": f"{self.draft_forward_overhead_s * 1e6:.0f} µs",
            "cuda_graph_sizes": f"{len(self.capture_sizes)} sizes by {self.capture_unit}, "
                                f"{self.capture_sizes[0]}…{self.max_capture}",
            "cuda_graph_padding": "pads up" if self.pads_to_capture else "no padding",
            "eager_launch_us": f"{self.eager_launch_s * 1e6:g} µs per kernel",
            "sampler_bytes_per_logit": f"{self.sampler_bytes_per_logit:g} B",
            "rejection_sampler_bytes_per_logit": f"{self.rejection_sampler_bytes_per_logit:g} B",
            "draft_first_forward": first,
            "ngram_no_match": "verifies 1 token" if self.ngram_no_match == "one"
            else "full width",
            "recurrent_state_copies": f"{self.recurrent_state_copies:g} per request and "
                                      "recurrent layer after a verify",
        }
        return values.get(parameter, "")

    def describe(self) -> str:
        """One line for the Sources tab: the numbers, each assumption labelled as such."""
        def tag(p: str) -> str:
            if p in self.fitted:
                return (" (fitted)" if self.sources.get(p, "").startswith("fit:")
                        else " (another engine's fit, carried)")
            return " (assumption)" if p in self.assumptions else ""
        pad = "pads to the next captured size" if self.pads_to_capture else "no padding"
        first = ("all B·(1+D) scheduled tokens" if self.draft_first_forward == "scheduled"
                 else "B tokens")
        return (
            f"{self.engine}: step overhead {self.step_overhead_s * 1e6:.0f} µs"
            f"{tag('step_overhead_us')}; {self.per_sequence_s * 1e6:.1f} µs per request"
            f"{tag('per_sequence_us')}; κ = {self.compute_overlap_loss:.2f} of the GEMM compute "
            f"not overlapped with weight reads{tag('compute_overlap_loss')}; "
            f"{self.draft_forward_overhead_s * 1e6:.0f} µs per draft "
            f"forward{tag('draft_forward_overhead_us')}; CUDA graphs by {self.capture_unit} up to "
            f"{self.max_capture} ({len(self.capture_sizes)} sizes, {pad}){tag('cuda_graph_sizes')}"
            f"; eager past that at {self.eager_launch_s * 1e6:g} µs per kernel"
            f"{tag('eager_launch_us')}; sampler {self.sampler_bytes_per_logit:g} B per sampled "
            f"logit{tag('sampler_bytes_per_logit')}, rejection sampler "
            f"{self.rejection_sampler_bytes_per_logit:g} B per draft-position logit"
            f"{tag('rejection_sampler_bytes_per_logit')}; the first draft forward runs on "
            f"{first}"
            f"{tag('draft_first_forward')}; n-gram without a match verifies "
            f"{'1 token' if self.ngram_no_match == 'one' else 'the full width'}"
            f"{tag('ngram_no_match')}; {self.recurrent_state_copies:g} recurrent state copied "
            f"per request and recurrent layer after a verify{tag('recurrent_state_copies')}"
        )


# --- the engine registry ------------------------------------------------------------------------
# One declaration per serving engine: what is not a number of data/engines.csv (the profile
# above). The Scenario carries the engine's slug; the model resolves it once to an `Engine`
# (explorer.presets.serving_engine: this declaration + its profile). Nothing else writes an
# engine's slug (tests/unit/test_registries.py counts the files). Recipe: README.md, Layout.


@dataclass(frozen=True)
class NotAsServed:
    """A shipped table whose collector did not time the calls as a serving step runs them, so it
    does not price that engine's steps; the first stand-in engine with a table does."""

    stand_ins: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class OverheadNotServed:
    """A shipped GEMM table whose calls include an activation-quantization step a served
    deployment does not run: its serving time is the table's time less that step's own measured
    table (quantize/<engine>/<version>/<op>_perf.parquet of the same version), floored at the
    GEMM's speed of light, as aiconfigurator's own query does."""

    overhead_op: str  # the quantize table's op name: computescale
    label: str  # what the provenance and the evaluation's sources say
    reason: str


# aiconfigurator's fp8_static rule (aic-core/rust/aiconfigurator-core/src/operators/gemm.rs
# @90f7fc0fc, `GemmOp::query`): fp8_static = fp8 table − compute_scale(m, k), floored at the
# GEMM's speed of light, not at 0; scale_matrix is subtracted too only for a low-precision input,
# and ours is bf16.
_FP8_STATIC_RULE = "aiconfigurator's fp8_static rule, gemm.rs @90f7fc0fc"

TableKey = tuple[str, str]  # (op, dtype in the aiconfigurator package's spelling)


# --- each engine's benchmark commands (explorer/export/bench_plan.py lays the runs out) ----------


@dataclass(frozen=True)
class BenchServerRun:
    """What an engine's server launch command needs for one benchmark run."""

    mechanism: MechanismKind
    tp: int
    kv_dtype: str
    batch: int
    draft_len: int  # 0: plain decoding
    forced_acceptance_length: float | None  # AL, bonus token included; None at D = 0
    draft: str  # the drafter's checkpoint id, or "$DRAFT_MODEL" in double quotes
    needs_draft_weights: bool
    max_len: int  # input + output tokens of a request
    stem: str  # the run's result-file stem (bench_plan.result_name)


@dataclass(frozen=True)
class BenchClientRun:
    """What an engine's benchmark client command needs for one run."""

    batch: int  # the client's concurrency
    draft_len: int
    forced_acceptance_length: float | None
    input_len: int
    output_len: int
    prompts: int
    stem: str  # the run's result-file stem: bench-compare reads B, D and AL back from it


@dataclass(frozen=True)
class EngineBench:
    """How a benchmark plan runs on one engine: the engine's launch command with its forced-
    acceptance switch, its serving-benchmark client, the result format that client writes
    (explorer/measured/bench_results.py reads it) and the engine versions every flag was read in."""

    server: Callable[[BenchServerRun], str]
    client: Callable[[BenchClientRun], str]
    result_format: str  # a BenchFormat of explorer/measured/bench_results.py
    port: int  # where the server listens by default
    versions: Mapping[str, str]  # engine, server_flags, client_flags: the sources at a commit


def shell_join(args: list[str]) -> str:
    """Arguments as one shell line; "$MODEL" / "$DRAFT_MODEL" stay variables (the script sets
    them)."""
    return " ".join(a if a.startswith('"$') else shlex.quote(a) for a in args)


def _vllm_server(r: BenchServerRun) -> str:
    """`vllm serve`. Forced acceptance: SpeculativeConfig `rejection_sample_method: "synthetic"`
    with `synthetic_acceptance_length` = AL (bonus token included, in [1, D+1]; resolved to the
    minimum-variance per-position schedule) — vllm/config/speculative.py @002e77c1."""
    args = ["vllm", "serve", '"$MODEL"', "--tensor-parallel-size", str(r.tp),
            "--max-num-seqs", str(r.batch), "--max-model-len", str(r.max_len)]
    if r.kv_dtype == "fp8":
        args += ["--kv-cache-dtype", "fp8"]
    if r.draft_len > 0:
        assert r.mechanism.vllm is not None
        cfg: dict[str, Any] = {"method": r.mechanism.vllm.method}
        if r.needs_draft_weights:
            cfg["model"] = r.draft.strip('"')
        cfg |= {"num_speculative_tokens": r.draft_len, "rejection_sample_method": "synthetic",
                "synthetic_acceptance_length": r.forced_acceptance_length}
        spec = json.dumps(cfg, separators=(",", ":"))
        # A shell variable inside the single-quoted JSON: close the quotes around it.
        spec = spec.replace("$DRAFT_MODEL", "'\"$DRAFT_MODEL\"'")
        args += ["--speculative-config", "'" + spec + "'"]
        return " ".join(a if a.startswith(("'", '"$')) else shlex.quote(a) for a in args)
    return shell_join(args)


def _vllm_client(r: BenchClientRun) -> str:
    """`vllm bench serve --save-result`, B, D and AL saved as --metadata keys."""
    meta = [f"batch={r.batch}", f"draft_len={r.draft_len}"]
    if r.forced_acceptance_length is not None and r.draft_len > 0:
        meta.append(f"forced_acceptance_length={r.forced_acceptance_length:.4g}")
    return shell_join(["vllm", "bench", "serve", "--backend", "vllm", "--model", '"$MODEL"',
                       "--dataset-name", "random", "--random-input-len", str(r.input_len),
                       "--random-output-len", str(r.output_len), "--num-prompts", str(r.prompts),
                       "--max-concurrency", str(r.batch), "--ignore-eos", "--temperature", "0",
                       "--save-result", "--result-filename", f"{r.stem}.json",
                       "--metadata", *meta])


def _sglang_server(r: BenchServerRun) -> str:
    """`sglang.launch_server`. Forced acceptance: `SGLANG_SIMULATE_ACC_LEN` = AL (EnvFloat,
    default −1 = off) with `SGLANG_SIMULATE_ACC_METHOD=match-expected` —
    python/sglang/srt/environ.py @21ff4b08; AL counts the guaranteed token as vLLM's does
    (InferenceX golden_al_distribution/README.md @843c6254)."""
    env: list[str] = []
    args = ["python", "-m", "sglang.launch_server", "--model-path", '"$MODEL"',
            "--tp-size", str(r.tp), "--max-running-requests", str(r.batch),
            "--context-length", str(r.max_len)]
    if r.kv_dtype == "fp8":
        args += ["--kv-cache-dtype", "fp8_e4m3"]  # server_args.py @001067f
    if r.draft_len > 0:
        names = r.mechanism.sglang
        assert names is not None and r.forced_acceptance_length is not None
        env = [f"SGLANG_SIMULATE_ACC_LEN={r.forced_acceptance_length:.4g}",
               "SGLANG_SIMULATE_ACC_METHOD=match-expected"]
        args += ["--speculative-algorithm", names.algorithm]
        if r.needs_draft_weights:
            args += ["--speculative-draft-model-path", r.draft]
        args += names.flags(r.draft_len)
    return " ".join([*env, shell_join(args)])


def _sglang_client(r: BenchClientRun) -> str:
    """`sglang.bench_serving --output-file`: one JSON line per run, appended."""
    return shell_join(["python", "-m", "sglang.bench_serving", "--backend", "sglang",
                       "--dataset-name", "random", "--random-input-len", str(r.input_len),
                       "--random-output-len", str(r.output_len), "--random-range-ratio", "1",
                       "--num-prompts", str(r.prompts), "--max-concurrency", str(r.batch),
                       "--output-file", f"{r.stem}.jsonl"])


def _trtllm_server(r: BenchServerRun) -> str:
    """`trtllm-serve --config` with the YAML written beside it. Forced acceptance:
    `TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS` = AL − 1: it counts accepted *draft* tokens only
    (the bonus token excluded); fractional values accept one more draft token with the fractional
    probability — tensorrt_llm/_torch/speculative/interface.py (FORCE_NUM_ACCEPTED_TOKENS_ENV_VAR)
    @2cbdaa0f, as InferenceX's README @843c6254 documents it."""
    config = f"{r.stem}.yml"
    lines = ["cuda_graph_config:", "  enable_padding: true", f"  max_batch_size: {r.batch}"]
    if r.kv_dtype == "fp8":
        lines += ["kv_cache_config:", "  dtype: fp8"]
    env = ""
    if r.draft_len > 0:
        names = r.mechanism.trtllm
        assert names is not None and r.forced_acceptance_length is not None
        lines += ["speculative_config:", f"  decoding_type: {names.decoding_type}",
                  f"  max_draft_len: {r.draft_len}"]
        if r.needs_draft_weights:
            lines.append(f"  speculative_model: {r.draft}")
        env = f"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS={r.forced_acceptance_length - 1.0:.4g} "
    # The YAML is written by printf (one line of shell); $DRAFT_MODEL expands inside "…".
    printf = "printf '%s\\n' " + " ".join(
        f'"{line}"' if "$DRAFT_MODEL" in line else shlex.quote(line) for line in lines)
    serve = shell_join(["trtllm-serve", '"$MODEL"', "--backend", "pytorch", "--tp_size",
                        str(r.tp), "--max_batch_size", str(r.batch), "--max_seq_len",
                        str(r.max_len), "--config", config])
    return f"{printf} > {config} && {env}{serve}"


def _trtllm_client(r: BenchClientRun) -> str:
    """AIPerf against trtllm-serve; its summary copied out of the artifact folder."""
    aiperf = shell_join([
        "aiperf", "profile", "--model", '"$MODEL"', "--url", "localhost:8000",
        "--endpoint-type", "chat", "--streaming", "--concurrency", str(r.batch),
        "--request-count", str(r.prompts), "--synthetic-input-tokens-mean", str(r.input_len),
        "--synthetic-input-tokens-stddev", "0", "--output-tokens-mean", str(r.output_len),
        "--output-tokens-stddev", "0", "--extra-inputs", "ignore_eos:true",
        "--artifact-dir", r.stem])
    # The run's B, D and AL travel in the file name: copy the summary out of its folder.
    return f"{aiperf} && cp {r.stem}/profile_export_aiperf.json {r.stem}.json"


_VLLM_BENCH = EngineBench(
    _vllm_server, _vllm_client, "vllm_bench_serve", 8000, {
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
    })
_SGLANG_BENCH = EngineBench(
    _sglang_server, _sglang_client, "sglang_bench_serving", 30000, {
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
    })
_TRTLLM_BENCH = EngineBench(
    _trtllm_server, _trtllm_client, "trtllm_bench_report", 8000, {
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
    })


@dataclass(frozen=True)
class EngineKind:
    """One serving engine's declaration."""

    slug: ServingEngine  # also its folder name in the aiconfigurator package's tables
    name: str  # as people write it: the one spelling in pages, notes and exports
    config_key: str  # its key in an exported EngineConfigs (JSON)
    # Its name for a mechanism (the mechanism's declaration holds it); None: not supported.
    speculative_name: Callable[[MechanismKind], VllmMethod | SglangAlgorithm | TrtllmDecoding
                               | None]
    bench: EngineBench  # how a benchmark plan runs on it
    # Other names text gives it, lower case, found within the text ('TensorRT-LLM (PyTorch
    # backend)'); the slug itself is always one.
    aliases: tuple[str, ...] = ()
    vendors: frozenset[str] | None = None  # GPU vendors it runs on; None: any
    # Shipped tables not timed as a serving step runs them: the stand-in engines that price it.
    not_as_served: tuple[tuple[TableKey, NotAsServed], ...] = ()
    # Shipped GEMM tables whose calls include a quantization step a served step does not run.
    overhead_not_served: tuple[tuple[TableKey, OverheadNotServed], ...] = ()
    # The kernel a table version runs by default per SM, where several kernels measured the
    # same configuration (the package's systems/attention_lane_defaults.yaml; a test checks it).
    attention_default_lanes: Mapping[str, Mapping[int, str]] = field(default_factory=dict)

    def runs_on(self, vendor: str) -> bool:
        return self.vendors is None or vendor in self.vendors

    def supports(self, mechanism: MechanismKind | None) -> bool:
        """Whether the engine has a speculative method for the mechanism."""
        return mechanism is not None and self.speculative_name(mechanism) is not None


ENGINE_KINDS: Final[dict[str, EngineKind]] = {e.slug: e for e in (
    EngineKind(
        "vllm", "vLLM", "vllm", lambda k: k.vllm, _VLLM_BENCH,
        # (engine, op, dtype in the package's spelling) → why its table is not a serving
        # step's time.
        not_as_served=((("gemm", "fp8_block"), NotAsServed(
            ("sglang", "trtllm"),
            "vLLM's collector times fp8_block GEMMs without CUDA graphs (ai-dynamo/aiconfigurator "
            "collector/vllm/collect_gemm.py @d5bad971c, the vLLM 0.24.0 data: use_cuda_graph="
            "gemm_type != 'fp8_block'), so each call carries host launch time a CUDA-graph step "
            "does not pay: at m ≤ 64 its times are 4x SGLang's on Hopper and 14-27x on Blackwell "
            "(60-290 µs for any shape)")),)),
    EngineKind(
        "sglang", "SGLang", "sglang", lambda k: k.sglang, _SGLANG_BENCH,
        attention_default_lanes={
            "0.5.14": {90: "fa3", 100: "triton", 103: "triton", 120: "flashinfer"}}),
    EngineKind(
        "trtllm", "TensorRT-LLM", "tensorrt_llm", lambda k: k.trtllm, _TRTLLM_BENCH,
        aliases=("tensorrt", "trt-llm"),
        vendors=frozenset({"nvidia"}),
        # Only TRT-LLM's fp8: its collector builds the fp8 weights without an input_scale, so
        # FP8QDQ takes the dynamic-quantization path (collector/trtllm/collect_gemm.py
        # @dec5f4cd2, the 1.3.0rc20 data), while the FP8 checkpoints TRT-LLM serves (ModelOpt)
        # carry static input scales and take the static path.
        # Not SGLang: its compute_scale tables are all zeros (1625 of 1628 points on h100_sxm
        # 0.5.14), so there is nothing to subtract. Not vLLM either, by decision: its fp8
        # collector also times the dynamic scheme (Fp8Config(activation_scheme="dynamic"),
        # collector/vllm/collect_gemm.py @d5bad971c, the 0.24.0 data) and its compute_scale
        # table is not zero (median 0.7 µs a call at m ≤ 64 on h100_sxm, against TRT-LLM's
        # 7.3 µs).
        overhead_not_served=((("gemm", "fp8"), OverheadNotServed(
            "computescale",
            f"fp8 static: the measured dynamic-quant fp8 time less TRT-LLM's measured "
            f"compute-scale time ({_FP8_STATIC_RULE})",
            "TRT-LLM's collector builds its fp8 weights without an input_scale, so FP8QDQ runs "
            "the dynamic-quantization path and each timed GEMM includes computing the "
            "activation's scale (ai-dynamo/aiconfigurator collector/trtllm/collect_gemm.py "
            "@dec5f4cd2); the ModelOpt FP8 checkpoints TRT-LLM serves carry static input "
            "scales")),)),
)}
assert tuple(ENGINE_KINDS) == SERVING_ENGINES, "declare every serving engine, in order"
# Handles for code that means one engine by what it is (its config writer, a reference measured
# on it), never by comparing a slug.
VLLM, SGLANG, TRTLLM = ENGINE_KINDS.values()


def engine_kind(slug: str) -> EngineKind:
    """The declaration of a serving engine (KeyError for an unknown slug)."""
    return ENGINE_KINDS[slug]


def engine_in_text(text: str) -> str | None:
    """The engine a text names ('SGLang (FA3)', 'vLLM V1', 'TensorRT-LLM'), by its slug or an
    alias; None: none."""
    t = text.lower()
    return next((k.slug for k in ENGINE_KINDS.values()
                 if any(a in t for a in (k.slug, *k.aliases))), None)


def engine_name(slug: str) -> str:
    """How pages and messages name an engine (an unknown slug as it is written)."""
    kind = ENGINE_KINDS.get(slug)
    return kind.name if kind is not None else slug


@dataclass(frozen=True)
class Engine:
    """A serving engine as the model uses it: its declaration and its cost profile
    (data/engines.csv), composed; resolved once per scenario (explorer.presets.serving_engine)."""

    kind: EngineKind
    profile: EngineProfile

    @property
    def slug(self) -> str:
        return self.kind.slug

    @property
    def name(self) -> str:
        return self.kind.name

    @property
    def capture_sizes(self) -> tuple[int, ...]:
        return self.profile.capture_sizes

    @property
    def pads_to_capture(self) -> bool:
        return self.profile.pads_to_capture

    def runs_on(self, vendor: str) -> bool:
        return self.kind.runs_on(vendor)

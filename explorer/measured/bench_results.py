"""Serving-benchmark result files, read back as runs: batch, D, forced AL, output tokens/s, TPOT
and the mean input/output tokens per request (the whole requests the prediction prices).

Formats (each read from the tool's source at a commit; samples in data/samples/bench_*):
- `vllm_bench_serve`: `vllm bench serve --save-result` JSON (vllm/benchmarks/serve.py
  @009e6d4a): max_concurrency, output_throughput [tok/s], mean_tpot_ms, and with speculation
  spec_decode_num_drafts / spec_decode_draft_tokens / spec_decode_acceptance_length,
  total_input_tokens / total_output_tokens / completed (the mean lengths); keys given
  with --metadata KEY=VALUE are saved at the top level (the plan writes batch, draft_len,
  forced_acceptance_length there).
- `sglang_bench_serving`: `python -m sglang.bench_serving --output-file` JSON lines, one per run,
  appended (python/sglang/bench_serving.py @0033168f): max_concurrency, output_throughput,
  mean_tpot_ms, accept_length (the server's average, null without speculation), the totals as
  vLLM's (else random_input_len / random_output_len).
- `trtllm_bench_report`: `trtllm-bench … throughput --report_json` (tensorrt_llm/bench/dataclasses/
  reporting.py @02499765): performance.system_output_throughput_tok_s,
  streaming_metrics.avg_tpot_ms (with --streaming), request_info.avg_num_concurrent_requests,
  decoding_stats.acceptance_length_percentiles.average with speculation,
  request_info.avg_input_length / avg_output_length.
- `aiperf_profile_export`: AIPerf's profile_export_aiperf.json (ai-dynamo/aiperf docs
  @13992dbd): output_token_throughput.avg [tokens/sec], inter_token_latency.avg [ms],
  input_config.loadgen.concurrency, input_sequence_length.avg / output_sequence_length.avg.

What a file does not say (D in SGLang's, TensorRT-LLM's and AIPerf's; the forced AL in most) is
read from its name as the plan writes it: bench_<engine>_b<B>_d<D>[_al<AL>].… A file the parser
cannot use is refused with every problem named by line and field, as every measured-data parser
does (explorer/measured/_problems.py).
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from explorer.base.engines import SERVING_ENGINES
from explorer.base.limits import (
    AL_BOUND_TOLERANCE,
    MAX_FILE_BYTES,
    MAX_LABEL_CHARS,
    MAX_MEASURED_DRAFT_LEN,
)
from explorer.base.quoting import quote
from explorer.base.reading import read_file
from explorer.measured._bounds import check_json_shape, check_line_count
from explorer.measured._entry import decode
from explorer.measured._json import json_int, json_number, load_json
from explorer.measured._problems import Collector
from explorer.specs.engine import ENGINE_KINDS
from explorer.specs.measured import Problem

BenchFormat = Literal["vllm_bench_serve", "sglang_bench_serving", "trtllm_bench_report",
                      "aiperf_profile_export"]
BENCH_FORMATS: tuple[BenchFormat, ...] = ("vllm_bench_serve", "sglang_bench_serving",
                                          "trtllm_bench_report", "aiperf_profile_export")
UNKNOWN = "unknown"
# The stem the plan gives each result (explorer/export/bench_plan.py result_name).
NAME_PATTERN = re.compile(
    rf"bench_(?P<engine>{'|'.join(map(re.escape, SERVING_ENGINES))})_b(?P<batch>\d+)"
    r"_d(?P<d>\d+)(?:_al(?P<al>\d+(?:\.\d+)?))?")
# The engine whose benchmark client writes each format (its declaration says which): a file
# whose name does not say the engine ran on that one. AIPerf's is any engine's.
ENGINE_OF_FORMAT: dict[str, str] = {e.bench.result_format: e.slug for e in ENGINE_KINDS.values()}


class BenchMeasurement(BaseModel):
    """One measured run. SI units: tokens/s and seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    format: str
    line: int | None = None  # JSON lines: which line
    engine: str | None  # from the name or the tool; None: the scenario's
    batch: int
    draft_len: int
    forced_acceptance_length: float | None  # None at D = 0 or where nothing says it
    measured_acceptance_length: float | None  # what the engine reported, where it did
    output_tokens_per_s: float
    tpot_s: float
    # mean KV length while decoding, input + output/2 tokens per request, where the file says
    # (None: the scenario's context)
    context: int | None = None
    # mean input (prompt) and output tokens per request, where the file says (None: the plan's):
    # the prediction prices these whole requests, their prefill included
    input_len: float | None = None
    output_len: float | None = None
    lengths_from: str = ""  # the keys they were read from ("" where the file lacks them)
    recognised_from: str  # where B, D and AL were read


class BenchFile(BaseModel):
    """The outcome of reading one result file. With errors it holds no runs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    format: str
    summary: str
    runs: tuple[BenchMeasurement, ...] = ()
    problems: tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "error")


def _finish(name: str, fmt: str, col: Collector, runs: list[BenchMeasurement]) -> BenchFile:
    if col.has_errors:
        n = col.error_count()
        return BenchFile(file=name, format=fmt, problems=col.problems(),
                         summary=f"{fmt}: not loaded, {n} error{'s' if n != 1 else ''} to fix")
    what = ", ".join(f"B={r.batch} D={r.draft_len}" for r in runs[:6]) + (
        ", …" if len(runs) > 6 else "")
    return BenchFile(file=name, format=fmt, runs=tuple(runs), problems=col.problems(),
                     summary=f"{len(runs)} run{'s' if len(runs) != 1 else ''} ({what})")


def _get(obj: object, path: str) -> object:
    cur = obj
    for key in path.split("."):
        if not isinstance(cur, dict) or key not in cur:
            return None
        cur = cur[key]
    return cur


def _positive(obj: dict[str, object], path: str, col: Collector, line: int | None,
              what: str) -> float | None:
    raw = _get(obj, path)
    v = json_number(raw)
    if raw is None:
        col.error(f"missing: the file has no {what}", line, path)
        return None
    if v is None or not math.isfinite(v) or v <= 0:
        col.error(f"{what} must be a number > 0, got {quote(str(raw)[:40])}", line, path)
        return None
    return v


def detect_bench_format(text: str) -> str | None:
    stripped = text.lstrip()
    if not stripped.startswith("{"):
        return None
    first = stripped.split("\n", 1)[0]
    try:
        obj = json.loads(stripped)
    except (ValueError, RecursionError):
        try:
            obj = json.loads(first)  # JSON lines: the first line tells
        except (ValueError, RecursionError):
            # Broken JSON: guess from tell-tale keys, so the parser reports the syntax error.
            head = stripped[:200_000]
            for key, fmt in (('"random_input_len"', "sglang_bench_serving"),
                             ('"performance"', "trtllm_bench_report"),
                             ('"output_token_throughput"', "aiperf_profile_export"),
                             ('"output_throughput"', "vllm_bench_serve")):
                if key in head:
                    return fmt
            return None
        if isinstance(obj, dict) and "output_throughput" in obj and "random_input_len" in obj:
            return "sglang_bench_serving"
        return None
    if not isinstance(obj, dict):
        return None
    if "performance" in obj and "request_info" in obj:
        return "trtllm_bench_report"
    if isinstance(obj.get("output_token_throughput"), dict):
        return "aiperf_profile_export"
    if "output_throughput" in obj and "random_input_len" in obj:
        return "sglang_bench_serving"
    if "output_throughput" in obj and ("endpoint_type" in obj or "date" in obj
                                       or "max_concurrency" in obj):
        return "vllm_bench_serve"
    return None


class _Identity:
    """B, D and the forced AL of a run: the file's own keys, else the plan's file name."""

    def __init__(self, name: str) -> None:
        m = NAME_PATTERN.search(name)
        self.engine = m.group("engine") if m else None
        self.batch = int(m.group("batch")) if m else None
        self.draft_len = int(m.group("d")) if m else None
        self.al = float(m.group("al")) if m and m.group("al") else None


def _check_run(col: Collector, line: int | None, batch: int | None, d: int | None,
               al: float | None, batch_field: str, d_field: str, al_field: str) -> bool:
    ok = True
    if batch is None:
        col.error("the run's batch (concurrency) is not in the file: name the file as the plan "
                  "does (bench_<engine>_b<B>_d<D>…)", line, batch_field)
        ok = False
    elif batch < 1:
        col.error(f"batch must be ≥ 1, got {batch}", line, batch_field)
        ok = False
    if d is None:
        col.error("the run's draft length D is not in the file: name the file as the plan does "
                  "(bench_<engine>_b<B>_d<D>…)", line, d_field)
        ok = False
    elif not 0 <= d <= MAX_MEASURED_DRAFT_LEN:
        col.error(f"draft_len must be in [0, {MAX_MEASURED_DRAFT_LEN}], got {d}", line, d_field)
        ok = False
    if ok and al is not None and d is not None and d > 0 and not (
            1.0 <= al <= 1.0 + d + AL_BOUND_TOLERANCE):
        col.error(f"acceptance length {al:g} is outside [1, 1+D] = [1, {1 + d}]", line, al_field)
        ok = False
    return ok


def _vllm(name: str, obj: dict[str, object], col: Collector) -> list[BenchMeasurement]:
    ident = _Identity(name)
    tps = _positive(obj, "output_throughput", col, None, "output token throughput")
    tpot_ms = _positive(obj, "mean_tpot_ms", col, None, "mean TPOT (ms)")
    # --metadata values are strings; max_concurrency is the client's concurrency (null: none).
    batch = json_int(obj.get("max_concurrency"))
    from_where = "max_concurrency"
    meta_b = _meta_int(obj.get("batch"))
    if batch is None:
        batch, from_where = (meta_b, "metadata batch") if meta_b is not None else (
            ident.batch, "file name")
    d = _meta_int(obj.get("draft_len"))
    d_from = "metadata draft_len"
    drafts = json_number(obj.get("spec_decode_num_drafts"))
    draft_tokens = json_number(obj.get("spec_decode_draft_tokens"))
    if d is None and drafts and draft_tokens is not None and drafts > 0:
        # every draft proposes D tokens: draft tokens / drafts = D
        d = round(draft_tokens / drafts)
        d_from = "spec_decode_draft_tokens / spec_decode_num_drafts"
    if d is None and ident.draft_len is not None:
        d, d_from = ident.draft_len, "file name"
    if d is None and "spec_decode_acceptance_length" not in obj:
        d, d_from = 0, "no spec_decode_* keys (no speculation)"
    measured = json_number(obj.get("spec_decode_acceptance_length"))
    al = _meta_float(obj.get("forced_acceptance_length"))
    al_from = "metadata forced_acceptance_length"
    if al is None and ident.al is not None:
        al, al_from = ident.al, "file name"
    if not _check_run(col, None, batch, d, al, "max_concurrency", "draft_len",
                      "forced_acceptance_length") or tps is None or tpot_ms is None:
        return []
    assert batch is not None and d is not None
    return [BenchMeasurement(
        file=name, format="vllm_bench_serve",
        engine=ident.engine or ENGINE_OF_FORMAT["vllm_bench_serve"], batch=batch,
        draft_len=d, forced_acceptance_length=al if d > 0 else None,
        measured_acceptance_length=measured, output_tokens_per_s=tps, tpot_s=tpot_ms * 1e-3,
        **_lengths(*_per_request_lengths(obj)),
        recognised_from=f"B from {from_where}, D from {d_from}"
        + (f", AL from {al_from}" if d > 0 and al is not None else ""))]


def _context(isl: object, osl: object) -> int | None:
    i, o = json_number(isl), json_number(osl)
    if i is None or o is None or not (math.isfinite(i) and math.isfinite(o)) or i < 0 or o < 0:
        return None
    c = round(i + o / 2)
    return c if c >= 1 else None


def _meta_int(raw: object) -> int | None:
    if isinstance(raw, str):
        try:
            return int(raw.strip())
        except ValueError:
            return None
    return json_int(raw)


def _meta_float(raw: object) -> float | None:
    if isinstance(raw, str):
        try:
            v = float(raw.strip())
        except ValueError:
            return None
        return v if math.isfinite(v) else None
    return json_number(raw)


def _lengths(isl: object, osl: object, keys: str) -> dict[str, object]:
    """A run's mean input and output tokens per request and its mean KV length while decoding,
    where the file gives both (an output of 0 tokens or a missing key: neither, the plan's)."""
    i, o = json_number(isl), json_number(osl)
    if i is None or o is None or not (math.isfinite(i) and math.isfinite(o)) or i < 1 or o < 1:
        return {"context": _context(isl, osl)}
    return {"context": _context(i, o), "input_len": i, "output_len": o, "lengths_from": keys}


def _per_request_lengths(obj: dict[str, object]) -> tuple[object, object, str]:
    """vllm bench serve / sglang.bench_serving: the totals over the completed requests."""
    n = json_number(obj.get("completed"))
    i, o = json_number(obj.get("total_input_tokens")), json_number(obj.get("total_output_tokens"))
    if not n or n <= 0 or i is None or o is None:
        return None, None, ""
    return i / n, o / n, "total_input_tokens / total_output_tokens / completed"


def _sglang_lengths(obj: dict[str, object]) -> tuple[object, object, str]:
    """The totals where the line has them (the random lengths are the maxima when
    --random-range-ratio < 1), else the requested random lengths."""
    got = _per_request_lengths(obj)
    if got[0] is not None:
        return got
    return (obj.get("random_input_len"), obj.get("random_output_len"),
            "random_input_len / random_output_len")


def _sglang(name: str, text: str, col: Collector) -> list[BenchMeasurement]:
    ident = _Identity(name)
    runs: list[BenchMeasurement] = []
    for i, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            col.error(f"not valid JSON: {str(exc)[:120]}", i)
            continue
        if not isinstance(obj, dict):
            col.error("each line must be a JSON object", i)
            continue
        tps = _positive(obj, "output_throughput", col, i, "output token throughput")
        tpot_ms = _positive(obj, "mean_tpot_ms", col, i, "mean TPOT (ms)")
        batch = json_int(obj.get("max_concurrency"))
        b_from = "max_concurrency"
        if batch is None:
            batch, b_from = ident.batch, "file name"
        measured = json_number(obj.get("accept_length"))
        d, d_from = ident.draft_len, "file name"
        if d is None and obj.get("accept_length") is None:
            d, d_from = 0, "accept_length null (no speculation)"
        if not _check_run(col, i, batch, d, ident.al, "max_concurrency", "draft_len",
                          "file name") or tps is None or tpot_ms is None:
            continue
        assert batch is not None and d is not None
        runs.append(BenchMeasurement(
            file=name, format="sglang_bench_serving", line=i,
            engine=ident.engine or ENGINE_OF_FORMAT["sglang_bench_serving"],
            batch=batch, draft_len=d,
            forced_acceptance_length=ident.al if d > 0 else None,
            measured_acceptance_length=measured, output_tokens_per_s=tps,
            tpot_s=tpot_ms * 1e-3, **_lengths(*_sglang_lengths(obj)),
            recognised_from=f"B from {b_from}, D from {d_from}"
            + (", AL from file name" if d > 0 and ident.al is not None else "")))
    if not runs and not col.has_errors:
        col.error("no runs: the file has no JSON lines")
    return runs


def _trtllm(name: str, obj: dict[str, object], col: Collector) -> list[BenchMeasurement]:
    ident = _Identity(name)
    tps = _positive(obj, "performance.system_output_throughput_tok_s", col, None,
                    "system output throughput")
    if _get(obj, "streaming_metrics") is None:
        col.error("no streaming metrics: run trtllm-bench with --streaming so the report has "
                  "the TPOT", None, "streaming_metrics.avg_tpot_ms")
        tpot_ms = None
    else:
        tpot_ms = _positive(obj, "streaming_metrics.avg_tpot_ms", col, None, "mean TPOT (ms)")
    batch, b_from = ident.batch, "file name"
    if batch is None:
        conc = json_number(_get(obj, "request_info.avg_num_concurrent_requests"))
        if conc is not None and math.isfinite(conc) and conc >= 0.5:
            batch, b_from = round(conc), "request_info.avg_num_concurrent_requests"
    spec = _get(obj, "decoding_stats")
    d, d_from = ident.draft_len, "file name"
    if d is None and spec is None:
        d, d_from = 0, "no decoding_stats (no speculation)"
    measured = json_number(_get(obj, "decoding_stats.acceptance_length_percentiles.average"))
    if not _check_run(col, None, batch, d, ident.al, "request_info.avg_num_concurrent_requests",
                      "decoding_stats", "file name") or tps is None or tpot_ms is None:
        return []
    assert batch is not None and d is not None
    return [BenchMeasurement(
        file=name, format="trtllm_bench_report",
        engine=ident.engine or ENGINE_OF_FORMAT["trtllm_bench_report"], batch=batch,
        draft_len=d, forced_acceptance_length=ident.al if d > 0 else None,
        measured_acceptance_length=measured, output_tokens_per_s=tps, tpot_s=tpot_ms * 1e-3,
        **_lengths(_get(obj, "request_info.avg_input_length"),
                   _get(obj, "request_info.avg_output_length"),
                   "request_info.avg_input_length / avg_output_length"),
        recognised_from=f"B from {b_from}, D from {d_from}"
        + (", AL from file name" if d > 0 and ident.al is not None else ""))]


_MS = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "us": 1e-6, "ns": 1e-9}


def _aiperf(name: str, obj: dict[str, object], col: Collector) -> list[BenchMeasurement]:
    ident = _Identity(name)
    tps = _positive(obj, "output_token_throughput.avg", col, None, "output token throughput")
    itl = _positive(obj, "inter_token_latency.avg", col, None, "mean inter-token latency")
    unit = _get(obj, "inter_token_latency.unit")
    scale = _MS.get(str(unit).strip().lower()) if unit is not None else 1e-3
    if scale is None:
        col.error(f"unknown time unit {quote(str(unit)[:20])} (expected ms, s, us or ns)", None,
                  "inter_token_latency.unit")
    batch, b_from = ident.batch, "file name"
    if batch is None:
        batch = json_int(_get(obj, "input_config.loadgen.concurrency"))
        b_from = "input_config.loadgen.concurrency"
    if not _check_run(col, None, batch, ident.draft_len, ident.al,
                      "input_config.loadgen.concurrency", "draft_len (file name)", "file name"
                      ) or tps is None or itl is None or scale is None:
        return []
    assert batch is not None and ident.draft_len is not None
    d = ident.draft_len
    return [BenchMeasurement(
        file=name, format="aiperf_profile_export", engine=ident.engine, batch=batch,
        draft_len=d, forced_acceptance_length=ident.al if d > 0 else None,
        measured_acceptance_length=None, output_tokens_per_s=tps, tpot_s=itl * scale,
        **_lengths(_get(obj, "input_sequence_length.avg"),
                   _get(obj, "output_sequence_length.avg"),
                   "input_sequence_length.avg / output_sequence_length.avg"),
        recognised_from=f"B from {b_from}, D from file name"
        + (", AL from file name" if d > 0 and ident.al is not None else ""))]


def parse_bench_bytes(name: str, data: bytes) -> BenchFile:
    """Read one result file. Never raises: every problem comes back named."""
    col = Collector()
    try:
        text = decode(data, col)
        if text is None:
            return _finish(name, UNKNOWN, col, [])
        stripped = text.lstrip()
        jsonish = stripped.startswith(("{", "["))
        if jsonish and not check_json_shape(text, col):
            return _finish(name, UNKNOWN, col, [])
        if not jsonish and not check_line_count(text, col):
            return _finish(name, UNKNOWN, col, [])
        fmt = detect_bench_format(text)
        if fmt is None:
            col.error(f"{quote(name, MAX_LABEL_CHARS)} is not a result file of vllm bench serve "
                      "(--save-result JSON), sglang.bench_serving (--output-file JSON lines), "
                      "trtllm-bench (--report_json) or AIPerf (profile_export_aiperf.json): "
                      "none of their keys (output_throughput, performance, "
                      "output_token_throughput) is there", None, "output_throughput")
            return _finish(name, UNKNOWN, col, [])
        if fmt == "sglang_bench_serving":
            return _finish(name, fmt, col, _sglang(name, text, col))
        obj = load_json(text, col)
        if not isinstance(obj, dict):
            if not col.has_errors:
                col.error("the file must hold one JSON object")
            return _finish(name, fmt, col, [])
        reader = {"vllm_bench_serve": _vllm, "trtllm_bench_report": _trtllm,
                  "aiperf_profile_export": _aiperf}[fmt]
        return _finish(name, fmt, col, reader(name, obj, col))
    except Exception as exc:  # the contract: never raise on any input
        return BenchFile(file=name, format=UNKNOWN, summary="not loaded: internal error",
                         problems=(Problem(message=f"internal error while reading the file "
                                           f"({type(exc).__name__}: {str(exc)[:200]})"),))


def read_bench_path(path: str | os.PathLike[str]) -> BenchFile:
    """A result file from disk: regular files only, at most MAX_FILE_BYTES. Never raises."""
    name = os.path.basename(os.fspath(path))
    col = Collector()
    try:
        data = read_file(path, MAX_FILE_BYTES)  # one safe read: explorer/base/reading.py
    except ValueError as exc:
        col.error(str(exc))
        return _finish(name, UNKNOWN, col, [])
    return parse_bench_bytes(name, data)

"""Leave-one-GPU-out fit of the GEMM roofline's defaults on aiconfigurator-core's measured tables.

Per dtype (bf16, fp8, fp8_block, fp4) the roofline

    C = 2·m·n·k / (F_dtype·η_c)                              compute time
    M = (m·k·b_in + k·n·b_w + m·n·b_out) / (BW·η_m)          memory time (output bf16)
    t = floor + (C^p + M^p)^(1/p)      (floor "add")   or   max(floor, (C^p + M^p)^(1/p))  ("max")

has four numbers that carry to a GPU without data: η_c, η_m (fractions of the spec-sheet peak
F_dtype and bandwidth BW of data/hardware.csv), the floor (seconds) and p (the memory→compute
transition; p → ∞ is today's hard max, p = 1 the sum). The rule under test: one value of each
per dtype, fitted on the measured GEMMs of every other GPU, predicts a GPU from its spec sheet
alone. Candidate forms — transition (hard max, p fitted, sum) × floor (max, add) and, for the
quantized dtypes, b_in with the per-call activation quantization (read bf16, write and re-read
the quantized copy), a per-output cost k0 in K units, and weight streaming slower for narrow
outputs (M × (1 + (n½/n)^q), η_m ≤ 1) — are ranked by the mean out-of-sample MAPE; the winner
per dtype is refitted on all GPUs and printed as the default to record beside the presets.
Decode attention the same way: t = floor [+ c·B·n_q] [+ c_unit·B·n_kv·h/128] + KV bytes /
(BW·η(x)). `--form` ranks a subset of the GEMM forms (quicker); with --write the rows of the
(kind, dtype) not refitted stay as they were.

Data: the newest table of one engine per GPU (default vLLM), measured grid points only (no
filled ones), and by default only the token counts a CUDA-graph step runs at (m = 1, 2, 4 and
multiples of 8; --all-m adds the tables' m = 16·j + 1 rows). Fits minimise the squared log
error with every GPU weighted equally. MAPE is mean |pred/measured − 1|; bias is mean
(pred/measured − 1), > 0 = the model is slow. "serving" restricts to n, k ≥ 1024 (the shapes of
LLM layers at any TP); "own fit" fits the same form on the held-out GPU itself (the form's
floor), "today" is the shipped roofline (hardware.csv η and floor, hard max, one byte width).

    PYTHONPATH=. .venv/bin/python scripts/fit_roofline_from_tables.py [--engine vllm] [--all-m]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy.optimize import least_squares

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explorer.analysis.roofline_check import ROOFLINE_TARGET_MAPE, why_missed
from explorer.base.dtypes import ACT_QUANT_BYTES, GEMM_OPERAND_BYTES
from explorer.kernel_tables import (
    SYSTEM_FOR_PRESET,
    GemmTable,
    GenerationAttentionTable,
    load_gemm_table,
    load_generation_attention_table,
    load_serving_gemm_table,
)
from explorer.kernel_tables.served import SpeedOfLight, kv_read_s, served_points
from explorer.presets import hardware_presets

FloatArray = npt.NDArray[np.float64]

BYTES = GEMM_OPERAND_BYTES  # (activations, weights incl. scales, output) per dtype
PEAK_DTYPE = {"bf16": "bf16", "fp8": "fp8", "fp8_block": "fp8", "fp4": "fp4"}
SERVING_MIN_NK = 1024


@dataclass(frozen=True)
class Points:
    gpu: str
    m: FloatArray
    n: FloatArray
    k: FloatArray
    latency_s: FloatArray
    peak_flops_per_s: float
    bw_bytes_per_s: float

    def take(self, index: npt.NDArray[np.intp]) -> Points:
        return Points(self.gpu, self.m[index], self.n[index], self.k[index],
                      self.latency_s[index], self.peak_flops_per_s, self.bw_bytes_per_s)

    @property
    def serving(self) -> npt.NDArray[np.bool_]:
        return np.asarray((self.n >= SERVING_MIN_NK) & (self.k >= SERVING_MIN_NK))


@dataclass(frozen=True)
class Form:
    name: str
    transition: str  # "max" | "p" | "sum"
    floor: str  # "add" | "max"
    act_quant: bool = False  # charge the activation quantization's bytes (quantized dtypes)
    k_eff: bool = False  # compute on k + k0: a per-output cost (prologue/epilogue) in K units
    width: bool = False  # weight streaming slower for narrow outputs: memory × (1 + (n½/n)^q)


FORMS = (Form("max + floor max (today)", "max", "max"), Form("max + floor add", "max", "add"),
         Form("p-norm + floor max", "p", "max"), Form("p-norm + floor add", "p", "add"),
         Form("sum + floor add", "sum", "add"),
         Form("p-norm + floor add + act quant", "p", "add", act_quant=True),
         Form("max + floor add + act quant", "max", "add", act_quant=True),
         Form("p-norm + floor add + K-eff", "p", "add", k_eff=True),
         Form("p-norm + floor add + act quant + K-eff", "p", "add", act_quant=True, k_eff=True),
         Form("p-norm + floor add + width", "p", "add", width=True),
         Form("p-norm + floor add + K-eff + width", "p", "add", k_eff=True, width=True),
         Form("p-norm + floor add + act quant + width", "p", "add", act_quant=True, width=True),
         Form("p-norm + floor add + act quant + K-eff + width", "p", "add", act_quant=True,
              k_eff=True, width=True))
# "width": at small m a GEMM streams its weights with one CTA per output tile (n/128 of them
# for one m tile), so a narrow output has too few loads in flight to reach the bandwidth a
# wide one does; measured at fixed bytes, time falls with n more than with k (the residuals of
# the forms without it rise by ~30% from n = 1024 to 65536 at every m ≤ 256).
# Tried and left out: a share of the weights read from L2 (the collector repeats one call, so
# weights that fit stay cached; L2 sizes from the spec sheets) gains 1.4 points on fp8 (only
# L40S) and nothing elsewhere; efficiency by total bytes instead of by output width gains
# nothing; wave quantisation ceil(tiles/SMs) on the compute term loses 4 points.
# Tried and left out: compute on m rounded up to 64- or 128-row tiles gains 0.1-0.3 points of
# bf16 LOO MAPE and only by pushing η_m above 1 (faster than the spec-sheet bandwidth).


@dataclass(frozen=True)
class Params:
    eta_c: float
    eta_m: float
    floor_s: float
    p: float  # inf for the hard max
    k0: float = 0.0  # K elements charged per output element (K-dependent efficiency k/(k+k0))
    n_half: float = 0.0  # output width (columns) at which weight streaming takes twice as long
    n_q: float = 1.0

    def describe(self) -> str:
        p = "∞" if np.isinf(self.p) else f"{self.p:.2f}"
        return (f"η_c={self.eta_c:.3f} η_m={self.eta_m:.3f} floor={self.floor_s * 1e6:.2f} µs "
                f"p={p}" + (f" k0={self.k0:.0f}" if self.k0 else "")
                + (f" n½={self.n_half:.3g} q={self.n_q:.2f}" if self.n_half else ""))


def predict(form: Form, params: Params, pts: Points, dtype: str) -> FloatArray:
    b_in, b_w, b_out = BYTES[dtype]
    if form.act_quant:
        b_in = ACT_QUANT_BYTES.get(dtype, b_in)
    compute = 2.0 * pts.m * pts.n * (pts.k + params.k0) / (pts.peak_flops_per_s * params.eta_c)
    memory = ((pts.m * pts.k * b_in + pts.k * pts.n * b_w + pts.m * pts.n * b_out)
              / (pts.bw_bytes_per_s * params.eta_m))
    if params.n_half:
        memory = memory * (1.0 + (params.n_half / pts.n) ** params.n_q)
    hi, lo = np.maximum(compute, memory), np.minimum(compute, memory)
    # (C^p + M^p)^(1/p), written to stay finite for large p
    body = hi if np.isinf(params.p) else hi * (1.0 + (lo / hi) ** params.p) ** (1.0 / params.p)
    if form.floor == "add":
        return np.asarray(params.floor_s + body)
    return np.asarray(np.maximum(params.floor_s, body))


def unpack(form: Form, x: FloatArray) -> Params:
    if form.transition == "p":
        p = 1.0 + float(np.exp(x[3]))
    else:
        p = np.inf if form.transition == "max" else 1.0
    k0 = float(np.exp(x[4])) if form.k_eff else 0.0
    n_half, n_q = (float(np.exp(x[5])), float(np.exp(x[6]))) if form.width else (0.0, 1.0)
    return Params(float(np.exp(x[0])), float(np.exp(x[1])), float(np.exp(x[2])), p, k0,
                  n_half, n_q)


def fit(form: Form, train: list[Points], dtype: str) -> Params:
    """Least squares in log time; each GPU weighted by 1/sqrt(its points) so GPUs count equally."""
    weights = [1.0 / np.sqrt(p.m.size) for p in train]

    def residuals(x: FloatArray) -> FloatArray:
        params = unpack(form, x)
        return np.concatenate([w * (np.log(predict(form, params, p, dtype)) - np.log(p.latency_s))
                               for w, p in zip(weights, train, strict=True)])

    x0 = np.log([0.6, 0.7, 8e-6, 2.0, 64.0, 512.0, 0.5])
    lower = np.log([0.02, 0.02, 1e-7, 0.01, 1.0, 1.0, 0.05])
    upper = np.log([1.5, 1.5, 2e-4, 30.0, 16384.0, 1e6, 4.0])
    if form.width:  # η_m is then the share of the spec bandwidth at an unbounded width
        upper[1] = 0.0
    used = ([0, 1, 2] + ([3] if form.transition == "p" else []) + ([4] if form.k_eff else [])
            + ([5, 6] if form.width else []))
    full = x0.copy()

    def residuals_of(z: FloatArray) -> FloatArray:
        full[used] = z
        return residuals(full)

    result = least_squares(residuals_of, x0[used], bounds=(lower[used], upper[used]),
                           x_scale=1.0, diff_step=1e-4, max_nfev=400)
    full[used] = result.x
    return unpack(form, np.asarray(full, dtype=np.float64))


@dataclass(frozen=True)
class Score:
    mape: float
    bias: float
    n: int


def score(pred: FloatArray, meas: FloatArray, mask: npt.NDArray[np.bool_] | None = None) -> Score:
    rel = pred / meas - 1.0
    if mask is not None:
        rel = rel[mask]
    return Score(float(np.mean(np.abs(rel))), float(np.mean(rel)), int(rel.size))


def aligned_rows(m: FloatArray) -> npt.NDArray[np.bool_]:
    """Token counts a CUDA-graph step runs at: 1, 2, 4 and multiples of 8 (vLLM's default
    capture sizes pad to these). The tables also hold m = 16·j + 1 rows, which per-tensor FP8
    kernels run up to 4x slower (an unaligned path) — an eager-mode effect no roofline has."""
    return np.asarray((m <= 2) | (m == 4) | (m % 8 == 0))


def load_points(engine: str, dtype: str, aligned_only: bool) -> list[Points]:
    presets = hardware_presets()
    out = []
    for slug, system in SYSTEM_FOR_PRESET.items():
        if system is None or slug not in presets or presets[slug].vendor != FIT_VENDOR:
            continue
        hw = presets[slug]
        peak_dtype = PEAK_DTYPE[dtype]
        has_peak = {"bf16": True, "fp8": hw.fp8_flops_per_s is not None,
                    "fp4": hw.fp4_flops_per_s is not None}[peak_dtype]
        if not has_peak:
            if isinstance(load_gemm_table(slug, engine, dtype), GemmTable):
                print(f"  ({slug}: has a {dtype} table but no {peak_dtype} peak in "
                      "hardware.csv; left out)")
            continue
        # The table as the model takes it for a serving step (explorer/model/measured_kernels):
        # the engine's served table (a stand-in, TRT-LLM fp8 on its static path), never below
        # the DRAM read of the weights — rows the collector ran from L2 (L40S) are neither what
        # a roofline of DRAM traffic predicts nor what serving sees.
        table = load_serving_gemm_table(slug, engine, dtype, SpeedOfLight.of(hw, dtype))
        if not isinstance(table, GemmTable):
            continue
        m, n, k, latency = served_points(table, hw.hbm_bw_bytes_per_s)
        pts = Points(slug, m, n, k, latency, hw.peak_flops_per_s(peak_dtype),
                     hw.hbm_bw_bytes_per_s)
        out.append(pts.take(np.flatnonzero(aligned_rows(pts.m))) if aligned_only else pts)
    return out


def today(dtype: str, pts: Points) -> FloatArray:
    """The shipped roofline: the preset's bf16-fitted η and floor, hard max, b bytes for all."""
    hw = hardware_presets()[pts.gpu]
    b = {"bf16": 2.0, "fp8": 1.0, "fp8_block": 1.0, "fp4": 0.5}[dtype]
    compute = 2.0 * pts.m * pts.n * pts.k / (pts.peak_flops_per_s * hw.gemm_compute_efficiency)
    memory = ((pts.m * pts.k + pts.k * pts.n + pts.m * pts.n) * b
              / (pts.bw_bytes_per_s * hw.gemm_memory_efficiency))
    return np.asarray(np.maximum(np.maximum(compute, memory), hw.kernel_floor_s))


def pct(x: float) -> str:
    return f"{100 * x:+6.1f}%" if x < 0 else f"{100 * x:6.1f}%"


# GPU architecture of each preset (data/hardware.csv `architecture`: A100 Ampere, L40S Ada
# Lovelace, H100/H200 Hopper, B200/GB200/B300/GB300 Blackwell, RTX PRO 6000 sm_120). The "same
# architecture" rule fits a held-out GPU on the other GPUs of its architecture (kernels are
# written per SM generation), and on all others where it is the only one of its kind.
ARCH: dict[str, str] = {slug: hw.architecture for slug, hw in hardware_presets().items()}
# The record's fits are NVIDIA's (column `vendor`); the one Intel GPU with tables (Arc Pro B60,
# vLLM only) could not be held out against another of its kind.
FIT_VENDOR = "nvidia"
RULES = ("all GPUs", "same architecture")
TARGET_MAPE = ROOFLINE_TARGET_MAPE


def training_set(rule: str, held: str, gpus: list[str]) -> list[str]:
    others = [g for g in gpus if g != held]
    if rule == "same architecture":
        same = [g for g in others if ARCH.get(g) == ARCH.get(held)]
        return same or others
    return others


@dataclass(frozen=True)
class DtypeResult:
    """The chosen (rule, form) of one (engine, dtype), its scores and the defaults to record."""

    engine: str
    dtype: str
    rule: str
    form: Form
    loo_serving: float  # mean over held-out GPUs
    loo_all: float
    bias_serving: float
    own_fit: float
    per_gpu: dict[str, tuple[Score, Score]]  # held-out (all, serving)
    defaults: dict[str, tuple[Params, list[str]]]  # key ("all" or an architecture) → fit, GPUs

    def why_missed(self) -> str:
        """Why the LOO target is missed: the form itself (own fit) or the transfer."""
        return why_missed(self.loo_serving, self.own_fit)


def fit_dtype(engine: str, dtype: str, stride: int, aligned_only: bool,
              log: Callable[[str], None], only_forms: tuple[str, ...] = ()
              ) -> DtypeResult | None:
    rows = "m ∈ {1, 2, 4, 8·j}" if aligned_only else "every m"
    forms = [f for f in FORMS if (dtype in ACT_QUANT_BYTES or not f.act_quant)
             and (not only_forms or f.name in only_forms)]
    start = time.perf_counter()
    data = load_points(engine, dtype, aligned_only)
    if len(data) < 3:
        log(f"\n== {dtype} ({engine}): {len(data)} GPUs with tables and a spec-sheet peak — too "
            "few for leave-one-GPU-out")
        return None
    by_gpu = {p.gpu: p for p in data}
    gpus = list(by_gpu)
    train_sets = {p.gpu: p.take(np.arange(0, p.m.size, stride)) for p in data}
    log(f"\n== {dtype} ({engine}, {rows}; GPUs: {', '.join(gpus)}; "
        f"{sum(p.m.size for p in data)} measured points)")
    loo: dict[tuple[str, str], dict[str, tuple[Score, Score]]] = {}
    for rule in RULES:
        for form in forms:
            cell: dict[str, tuple[Score, Score]] = {}
            for held in data:
                train = [train_sets[g] for g in training_set(rule, held.gpu, gpus)]
                pred = predict(form, fit(form, train, dtype), held, dtype)
                cell[held.gpu] = (score(pred, held.latency_s),
                                  score(pred, held.latency_s, held.serving))
            loo[(rule, form.name)] = cell
    log("  rule               form                             LOO MAPE all   serving")

    def mean(key: tuple[str, str], i: int, attr: str = "mape") -> float:
        return float(np.mean([getattr(v[i], attr) for v in loo[key].values()]))

    ranked = sorted(loo, key=lambda key: mean(key, 1))
    for key in ranked:
        log(f"  {key[0]:18s} {key[1]:31s} {pct(mean(key, 0)):>12s} {pct(mean(key, 1)):>9s}")
    rule, form_name = ranked[0]
    form = next(f for f in forms if f.name == form_name)
    log(f"  chosen by out-of-sample error (serving shapes): {rule}, {form.name}")
    log("  held out   LOO MAPE  bias    | serving MAPE  bias   | own-fit MAPE | today MAPE  bias")
    owns = []
    for held in data:
        s_all, s_srv = loo[(rule, form_name)][held.gpu]
        own = score(predict(form, fit(form, [train_sets[held.gpu]], dtype), held, dtype),
                    held.latency_s, held.serving)
        owns.append(own.mape)
        now = score(today(dtype, held), held.latency_s)
        log(f"  {held.gpu:8s} {pct(s_all.mape)} {pct(s_all.bias)} | {pct(s_srv.mape)} "
            f"{pct(s_srv.bias)} | {pct(own.mape)}      | {pct(now.mape)} {pct(now.bias)}")
    groups: dict[str, list[str]] = {"all": gpus}
    if rule == "same architecture":
        for g in gpus:
            same = [x for x in gpus if ARCH.get(x) == ARCH.get(g)]
            if len(same) > 1:
                groups[ARCH[g]] = same
    defaults = {key: (fit(form, [train_sets[g] for g in members], dtype), members)
                for key, members in groups.items()}
    for key, (params, members) in defaults.items():
        log(f"  default to record ({dtype}, {key}: {', '.join(members)}): {params.describe()}")
    result = DtypeResult(engine, dtype, rule, form, mean((rule, form_name), 1),
                         mean((rule, form_name), 0), mean((rule, form_name), 1, "bias"),
                         float(np.mean(owns)), loo[(rule, form_name)], defaults)
    verdict = "meets" if result.loo_serving <= TARGET_MAPE else "misses"
    log(f"  LOO MAPE (serving) {result.loo_serving:.1%} {verdict} the ≤ {TARGET_MAPE:.0%} "
        f"target{': ' + result.why_missed() if result.why_missed() else ''}  "
        f"[{time.perf_counter() - start:.0f} s]")
    return result


# -- decode attention ---------------------------------------------------------------------
ATT_KV_BYTES = {"bf16": 2.0, "fp8": 1.0}


@dataclass(frozen=True)
class AttPoints:
    gpu: str
    nbytes: FloatArray  # KV bytes read: B·S·2·n_kv·h·b
    units: FloatArray  # work units B·n_kv (one per sequence and KV head)
    q_rows: FloatArray  # B·n_q (sequence × query head)
    latency_s: FloatArray
    bw_bytes_per_s: float
    work: FloatArray  # B·n_kv·h/128: per-(sequence, KV head) work in 128-wide head units

    def take(self, step: int) -> AttPoints:
        return AttPoints(self.gpu, self.nbytes[::step], self.units[::step], self.q_rows[::step],
                         self.latency_s[::step], self.bw_bytes_per_s, self.work[::step])


def load_attention(engine: str, kv_dtype: str) -> list[AttPoints]:
    """Measured generation-attention points (full attention, q_len 1) per GPU."""
    presets = hardware_presets()
    out = []
    for slug, system in SYSTEM_FOR_PRESET.items():
        if system is None or slug not in presets or presets[slug].vendor != FIT_VENDOR:
            continue
        table = load_generation_attention_table(slug, engine, kv_dtype)
        if not isinstance(table, GenerationAttentionTable):
            continue
        cols: list[list[FloatArray]] = [[], [], [], [], []]
        for (q_heads, kv, head_dim, window), cfg in table.configs.items():
            if window:
                continue
            ib, isx = np.nonzero(cfg.measured)
            b = cfg.batch_values[ib].astype(np.float64)
            s = cfg.kv_len_values[isx].astype(np.float64)
            cols[0].append(b * s * 2.0 * kv * head_dim * ATT_KV_BYTES[kv_dtype])
            cols[1].append(b * kv)
            cols[2].append(b * q_heads)
            # Never below the DRAM read of the KV cache, as the model takes a table time.
            cols[3].append(np.maximum(np.exp(cfg.log_latency[ib, isx]), kv_read_s(
                b, s, 2.0 * kv * head_dim, kv_dtype, presets[slug].hbm_bw_bytes_per_s)))
            cols[4].append(b * kv * head_dim / 128.0)
        if cols[0]:
            x, u, r, t, wk = (np.concatenate(c) for c in cols)
            bw = presets[slug].hbm_bw_bytes_per_s
            out.append(AttPoints(slug, x, u, r, t, bw, wk))
    return out


# Candidate forms: η by the bytes read (small reads do not stream at full bandwidth), or by
# the work units B·n_kv (few units leave SMs idle) plus a cost per (sequence, query head);
# "units+work" adds a cost per (sequence, KV head) in proportion to the head dim — each such
# unit is a CTA (or a few split-KV ones) that loads its queries, runs the softmax epilogue and
# writes its output whatever the KV length, which at short KV and large batch is the time.
ATT_FORMS = ("bytes", "units", "units+work")


def att_predict(form: str, x: FloatArray, pts: AttPoints) -> FloatArray:
    floor, eta_max, half, q, per_row, per_unit = x
    size = pts.nbytes if form == "bytes" else pts.units
    eta = eta_max / (1.0 + (half / np.maximum(size, 1.0)) ** q)
    extra = per_row * pts.q_rows + per_unit * pts.work
    return np.asarray(floor + extra + pts.nbytes / (pts.bw_bytes_per_s * eta))


def att_today(pts: AttPoints) -> FloatArray:
    hw = hardware_presets()[pts.gpu]
    return np.asarray(np.maximum(pts.nbytes / (pts.bw_bytes_per_s
                                               * hw.attention_memory_efficiency),
                                 hw.kernel_floor_s))


def att_fit(form: str, train: list[AttPoints]) -> FloatArray:
    weights = [1.0 / np.sqrt(p.nbytes.size) for p in train]

    def unpack(z: FloatArray) -> FloatArray:
        x = np.exp(z)
        return np.asarray([*x[:4], x[4] if form != "bytes" else 0.0,
                           x[5] if form == "units+work" else 0.0])

    def residuals(z: FloatArray) -> FloatArray:
        x = unpack(z)
        return np.concatenate([w * (np.log(att_predict(form, x, p)) - np.log(p.latency_s))
                               for w, p in zip(weights, train, strict=True)])

    if form == "bytes":
        z0, lo, hi = np.log([5e-6, 0.85, 1e6, 1.0, 1.0, 1.0]), [1e-7, 0.05, 1e3, 0.2, 0.5, 0.5], \
            [2e-4, 1.5, 1e11, 4.0, 2.0, 2.0]
    else:
        # with the per-unit cost, η_max is the share of the spec bandwidth a large read
        # reaches: at most all of it
        z0, lo, hi = (np.log([5e-6, 0.85, 64.0, 1.0, 1e-8, 1e-8]),
                      [1e-7, 0.05, 0.1, 0.2, 1e-12, 1e-13],
                      [2e-4, 1.0 if form == "units+work" else 1.5, 1e6, 4.0, 1e-5, 1e-5])
    n = {"bytes": 4, "units": 5}.get(form, 6)
    res = least_squares(residuals, z0[:n], bounds=(np.log(lo[:n]), np.log(hi[:n])),
                        diff_step=1e-4, max_nfev=400)
    return unpack(np.asarray(res.x, dtype=np.float64))


@dataclass(frozen=True)
class AttResult:
    engine: str
    kv_dtype: str
    form: str
    rule: str
    loo: float
    bias: float
    own_fit: float
    per_gpu: dict[str, Score]
    defaults: dict[str, tuple[FloatArray, list[str]]]


def fit_attention(engine: str, kv_dtype: str, stride: int,
                  log: Callable[[str], None]) -> AttResult | None:
    data = load_attention(engine, kv_dtype)
    if len(data) < 3:
        log(f"\n== attention {kv_dtype} KV ({engine}): {len(data)} GPUs — too few")
        return None
    gpus = [p.gpu for p in data]
    log(f"\n== decode attention, {kv_dtype} KV ({engine}; GPUs: {', '.join(gpus)}; "
        f"{sum(p.nbytes.size for p in data)} measured points)")
    log("  t = floor [+ c·B·n_q] [+ c_unit·B·n_kv·h/128] + bytes/(BW·η), "
        "η = η_max/(1 + (x_half/x)^q), x = KV bytes "
        "(form 'bytes') or work units B·n_kv (form 'units')")
    train = {p.gpu: p.take(stride) for p in data}
    cells: dict[tuple[str, str], dict[str, Score]] = {}
    for rule in RULES:
        for form in ATT_FORMS:
            cells[(rule, form)] = {
                held.gpu: score(att_predict(form, att_fit(
                    form, [train[g] for g in training_set(rule, held.gpu, gpus)]), held),
                    held.latency_s) for held in data}
    ranked = sorted(cells, key=lambda key: np.mean([s.mape for s in cells[key].values()]))
    for key in ranked:
        log(f"  {key[0]:18s} {key[1]:6s} LOO MAPE "
            f"{pct(float(np.mean([s.mape for s in cells[key].values()])))}")
    rule, form = ranked[0]
    log(f"  chosen by out-of-sample error: {rule}, form '{form}'")
    log("  held out   LOO MAPE  bias    | own-fit MAPE | today MAPE  bias")
    owns = []
    for held in data:
        s = cells[(rule, form)][held.gpu]
        own = score(att_predict(form, att_fit(form, [train[held.gpu]]), held), held.latency_s)
        now = score(att_today(held), held.latency_s)
        owns.append(own.mape)
        log(f"  {held.gpu:8s} {pct(s.mape)} {pct(s.bias)} | {pct(own.mape)}      | "
            f"{pct(now.mape)} {pct(now.bias)}")
    groups: dict[str, list[str]] = {"all": gpus}
    if rule == "same architecture":
        for g in gpus:
            same = [x for x in gpus if ARCH.get(x) == ARCH.get(g)]
            if len(same) > 1:
                groups[ARCH[g]] = same
    defaults = {key: (att_fit(form, [train[g] for g in members]), members)
                for key, members in groups.items()}
    per_gpu = cells[(rule, form)]
    loo = float(np.mean([s.mape for s in per_gpu.values()]))
    bias = float(np.mean([s.bias for s in per_gpu.values()]))
    own_fit = float(np.mean(owns))
    verdict = "meets" if loo <= TARGET_MAPE else "misses"
    why = why_missed(loo, own_fit, "batch, KV length and heads")
    log(f"  LOO MAPE {loo:.1%} {verdict} the ≤ {TARGET_MAPE:.0%} target"
        + (f": {why}" if why else ""))
    for key, (x, members) in defaults.items():
        log(f"  default to record ({key}: {', '.join(members)}): floor={x[0] * 1e6:.2f} µs "
            f"η_max={x[1]:.3f} x_half={x[2]:.3g} q={x[3]:.2f} c={x[4]:.3g} s "
            f"c_unit={x[5]:.3g} s")
    return AttResult(engine, kv_dtype, form, rule, loo, bias, own_fit, per_gpu, defaults)


# -- the record --------------------------------------------------------------------------
FIT_COLUMNS = ("kind", "dtype", "scope", "vendor", "engine", "rule", "form", "eta_c", "eta_m",
               "floor_us", "p", "act_quant", "half_bytes", "q", "loo_mape", "loo_bias",
               "loo_mape_all", "own_fit_mape", "gpus", "source", "per_row_ns", "k0", "n_half",
               "n_q", "per_unit_ns", "best")
ENGINE_ORDER = ("vllm", "sglang", "trtllm")
LOO_COLUMNS = ("kind", "dtype", "engine", "gpu", "loo_mape", "loo_bias", "loo_mape_serving",
               "loo_bias_serving")


def sort_record(path: Path) -> None:
    """GEMM rows first in dtype order, then attention, each dtype's engines in ENGINE_ORDER:
    the order `make validate` prints, whichever (kind, dtype, engine) a run refitted (within
    one, the order the writer gave: scope all first, GPUs as SYSTEM_FOR_PRESET lists them)."""
    import csv

    header, *rows = list(csv.reader(path.open(encoding="utf-8")))
    order = {"gemm": list(BYTES), "attention": list(ATT_KV_BYTES)}
    at = header.index("engine")

    def key(r: list[str]) -> tuple[bool, int, int]:
        dtypes = order.get(r[0], [])
        engine = ENGINE_ORDER.index(r[at]) if r[at] in ENGINE_ORDER else len(ENGINE_ORDER)
        return r[0] != "gemm", dtypes.index(r[1]) if r[1] in dtypes else len(dtypes), engine

    rows.sort(key=key)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def write_record(gemm: list[DtypeResult], attention: list[AttResult], fit_path: Path,
                 loo_path: Path, source: str) -> None:
    """Write both files, every engine's fit per (kind, dtype, scope); rows of the (kind, dtype,
    engine) not refitted this run stay as they were. `best` is recomputed over all rows: per
    (kind, dtype) the engine with the lowest loo_mape (ties: ENGINE_ORDER)."""
    import csv

    refitted = ({("gemm", r.dtype, r.engine) for r in gemm}
                | {("attention", a.kv_dtype, a.engine) for a in attention})
    kept: dict[Path, list[list[str]]] = {}
    for path in (fit_path, loo_path):
        rows = list(csv.reader(path.open(encoding="utf-8"))) if path.exists() else [[]]
        header = rows[0]
        columns = FIT_COLUMNS if path == fit_path else LOO_COLUMNS
        kept[path] = [[d.get(c, "") for c in columns]
                      for d in (dict(zip(header, r, strict=False)) for r in rows[1:] if r)
                      if (d["kind"], d["dtype"], d["engine"]) not in refitted]

    fit_rows: list[list[str]] = list(kept[fit_path])
    for r in gemm:
        for scope, (params, members) in r.defaults.items():
            p = "inf" if np.isinf(params.p) else f"{params.p:.4f}"
            fit_rows.append(["gemm", r.dtype, scope, "nvidia", r.engine, r.rule, r.form.name,
                             f"{params.eta_c:.4f}", f"{params.eta_m:.4f}",
                             f"{params.floor_s * 1e6:.3f}", p, str(r.form.act_quant).lower(),
                             "", "", f"{r.loo_serving:.4f}", f"{r.bias_serving:.4f}",
                             f"{r.loo_all:.4f}", f"{r.own_fit:.4f}", " ".join(members),
                             source, "", f"{params.k0:.4g}",
                             f"{params.n_half:.4g}" if params.n_half else "",
                             f"{params.n_q:.4f}" if params.n_half else "", "", ""])
    for a in attention:
        for scope, (x, members) in a.defaults.items():
            floor, eta, half, q, per_row, per_unit = x
            fit_rows.append(["attention", a.kv_dtype, scope, "nvidia", a.engine, a.rule,
                             a.form, "", f"{eta:.4f}", f"{floor * 1e6:.3f}", "", "",
                             f"{half:.4g}", f"{q:.4f}", f"{a.loo:.4f}", f"{a.bias:.4f}",
                             f"{a.loo:.4f}", f"{a.own_fit:.4f}", " ".join(members), source,
                             f"{per_row * 1e9:.4g}", "", "", "",
                             f"{per_unit * 1e9:.4g}" if per_unit else "", ""])
    col = {c: i for i, c in enumerate(FIT_COLUMNS)}
    lowest: dict[tuple[str, str], tuple[float, int, str]] = {}
    for row in fit_rows:
        engine = row[col["engine"]]
        rank = (float(row[col["loo_mape"]]),
                ENGINE_ORDER.index(engine) if engine in ENGINE_ORDER else len(ENGINE_ORDER),
                engine)
        key = (row[col["kind"]], row[col["dtype"]])
        lowest[key] = min(lowest.get(key, rank), rank)
    for row in fit_rows:
        row[col["best"]] = str(lowest[(row[col["kind"]], row[col["dtype"]])][2]
                               == row[col["engine"]]).lower()

    with fit_path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(FIT_COLUMNS)
        w.writerows(fit_rows)
    with loo_path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(LOO_COLUMNS)
        w.writerows(kept[loo_path])
        for r in gemm:
            for gpu, (s_all, s_srv) in r.per_gpu.items():
                w.writerow(("gemm", r.dtype, r.engine, gpu, f"{s_all.mape:.4f}",
                            f"{s_all.bias:.4f}", f"{s_srv.mape:.4f}", f"{s_srv.bias:.4f}"))
        for a in attention:
            for gpu, s in a.per_gpu.items():
                w.writerow(("attention", a.kv_dtype, a.engine, gpu, f"{s.mape:.4f}",
                            f"{s.bias:.4f}", f"{s.mape:.4f}", f"{s.bias:.4f}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", action="append", choices=("vllm", "sglang", "trtllm"),
                        help="engines whose tables to fit (default: all three; each engine's fit "
                        "is recorded, `best` marks the lowest LOO error per dtype)")
    parser.add_argument("--stride", type=int, default=3,
                        help="fit on every STRIDE-th measured point (scores use all of them)")
    parser.add_argument("--dtype", action="append", choices=tuple(BYTES),
                        help="dtypes to fit (default: all)")
    parser.add_argument("--all-m", action="store_true",
                        help="also the unaligned m = 16·j + 1 rows (default: CUDA-graph sizes)")
    parser.add_argument("--write", action="store_true",
                        help="record every engine's chosen fit in data/roofline_fit.csv and "
                        "their "
                        "per-GPU cross-validation in data/roofline_loo.csv")
    parser.add_argument("--only", choices=("gemm", "attention"),
                        help="fit only this kind (with --write the rows not refitted stay)")
    parser.add_argument("--form", action="append", choices=[f.name for f in FORMS],
                        help="GEMM forms to rank (default: all; a subset is quicker)")
    args = parser.parse_args()
    engines = args.engine or list(ENGINE_ORDER)
    stride = max(1, args.stride)
    fitted: list[DtypeResult] = []
    for engine in engines if args.only != "attention" else []:
        for dtype in args.dtype or list(BYTES):
            r = fit_dtype(engine, dtype, stride, not args.all_m, print, tuple(args.form or ()))
            if r is not None:
                fitted.append(r)
    att: list[AttResult] = []
    for engine in engines if args.only != "gemm" else []:
        for kv in ATT_KV_BYTES:
            a = fit_attention(engine, kv, stride, print)
            if a is not None:
                att.append(a)
    print("\n== summary: leave-one-GPU-out MAPE per engine (serving shapes); * lowest per dtype")
    for dtype in BYTES:
        rs = [r for r in fitted if r.dtype == dtype]
        for r in rs:
            verdict = "meets" if r.loo_serving <= TARGET_MAPE else "misses"
            mark = "*" if r.loo_serving == min(x.loo_serving for x in rs) else " "
            print(f" {mark}GEMM {dtype:9s} {r.engine:7s} {r.loo_serving:6.1%} {verdict} ≤ "
                  f"{TARGET_MAPE:.0%} ({r.rule}, {r.form.name})"
                  + (f": {r.why_missed()}" if r.why_missed() else ""))
    for kv in ATT_KV_BYTES:
        as_ = [a for a in att if a.kv_dtype == kv]
        for a in as_:
            verdict = "meets" if a.loo <= TARGET_MAPE else "misses"
            mark = "*" if a.loo == min(x.loo for x in as_) else " "
            print(f" {mark}attention {kv} KV {a.engine:7s} {a.loo:6.1%} {verdict} ≤ "
                  f"{TARGET_MAPE:.0%}")
    if args.write:
        from explorer.kernel_tables import package_label

        data = Path(__file__).resolve().parent.parent / "data"
        source = (f"scripts/fit_roofline_from_tables.py on {package_label()} measured tables "
                  f"(stride {stride}, {'every m' if args.all_m else 'CUDA-graph m'})")
        write_record(fitted, att, data / "roofline_fit.csv",
                     data / "roofline_loo.csv", source)
        for path in (data / "roofline_fit.csv", data / "roofline_loo.csv"):
            sort_record(path)
        print("wrote data/roofline_fit.csv and data/roofline_loo.csv")


if __name__ == "__main__":
    main()

"""Fit the hardware presets' efficiency defaults from measured kernel latencies.

Reads the unchanged copies of the measured tables in ``data/measured/`` (published by
github.com/ai-dynamo/aiconfigurator @095f58a, see the ``source`` column of every row) and the
spec-sheet peaks in ``data/hardware.csv``, and prints the fitted values that
``data/hardware.csv`` carries in its efficiency and ``kernel_floor_us`` columns.

The cost model these numbers feed (DESIGN.md §2.1):

* GEMM:      t = max(2·M·N·K / (F·η_c), (M·K + K·N + M·N)·b / (BW·η_m), floor)
* attention: t = max(flops / (F_bf16·η_c,att), kv_bytes / (BW·η_m,att), floor)

Fit rules (BF16 rows only; robust percentiles, linear interpolation as numpy's default):

* η_c (GEMM)  = p95 of achieved TFLOP/s over rows with M ≥ 1024 (compute-bound, beyond every
  GPU's ridge) divided by the dense BF16 peak.
* η_m (GEMM)  = p95 of effective bandwidth (M·K + K·N + M·N)·2 bytes / latency over rows with
  M ≤ 64 (memory-bound, far below every ridge) at the largest measured shape N = K = 8192
  (134 MB of weights: least dominated by fixed latency and on-chip cache) divided by the HBM
  bandwidth. Rows faster than the spec-sheet HBM bandwidth are physically cache-resident and
  dropped (only L40S M = 1 at this shape).
* floor       = p5 of all BF16 GEMM latencies of that GPU (a robust minimum).
* η_m (attn)  = p95 of the effective KV read bandwidth B·S·2·n_kv·h·2 bytes / latency over
  decode-attention rows at the longest KV length (65535) with batch ≥ 8 (≥ 268 MB of KV per
  call; batch 1 under-fills the GPU) divided by the HBM bandwidth.
* η_c (attn)  = a sourced compute-bound attention figure from reference/kernels.csv where one
  exists for the GPU family (FlashMLA dense decode 660 TFLOP/s on H800 for Hopper, FMHA
  prefill 1460 TFLOP/s on B200 for Blackwell); otherwise equal to the GEMM η_c (assumption).

GPUs without measured rows carry their family's fit over (``CARRY_OVER``). Run:

    python scripts/fit_hardware_efficiencies.py
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
GEMM_CSV = ROOT / "data" / "measured" / "gemm_measured.csv"
ATTENTION_CSV = ROOT / "data" / "measured" / "attention_measured.csv"
HARDWARE_CSV = ROOT / "data" / "hardware.csv"

# `gpu` column of the measured tables -> preset slug in data/hardware.csv.
MEASURED_GPU: dict[str, str] = {
    "h100_sxm": "h100",
    "b200_sxm": "b200",
    "b300_sxm": "b300",
    "a100_sxm": "a100",
    "l40s": "l40s",
    "gb200": "gb200",  # attention rows only (no GEMM rows for gb200)
}
# preset slug -> preset whose fit is carried over where the preset has no measured rows.
# Presets added for issue 26 carry the fit of the measured GPU closest to them: same silicon
# (gb300 ← b300, h100-pcie ← h100, a100-pcie and a30 ← a100), same SM and memory kind (l4 ←
# l40s), the PCIe GDDR server card before it (rtx-pro-6000 ← l40s; no sm_120 rows), or, with
# no rows of their vendor at all, as mi300x (AMD ← h100) and the GDDR card (arc-pro-b60 ← l40s).
CARRY_OVER: dict[str, str] = {
    "h200": "h100", "gb200": "b200", "mi300x": "h100",
    "gb300": "b300", "h100-pcie": "h100", "a100-pcie": "a100", "a30": "a100", "l4": "l40s",
    "rtx-pro-6000": "l40s", "arc-pro-b60": "l40s",
    "mi325x": "h100", "mi350x": "h100", "mi355x": "h100",
}

DTYPE = "bfloat16"
BYTES_BF16 = 2.0
COMPUTE_MIN_M = 1024
MEMORY_MAX_M = 64
MEMORY_SHAPE = 8192
ATTENTION_KV_LEN = 65535
ATTENTION_MIN_BATCH = 8
P_HIGH = 95.0
P_FLOOR = 5.0

# Sourced compute-bound attention figures (reference/kernels.csv): achieved TFLOP/s, the dense
# BF16 peak of the GPU it was measured on, and the source.
ATTENTION_COMPUTE: dict[str, tuple[float, float, str]] = {
    "hopper": (
        660.0,
        989.4,
        "github.com/deepseek-ai/FlashMLA README.md @9241ae3: dense MLA decode (BF16) "
        "660 TFLOP/s compute-bound on H800 SXM5 (same SM as H100; dense BF16 peak 989.4)",
    ),
    "blackwell": (
        1460.0,
        2250.0,
        "github.com/deepseek-ai/FlashMLA README.md @9241ae3: FMHA prefill dense (sm100) "
        "1460 TFLOP/s on B200 ('as reported by NVIDIA'), over the HGX B200 dense BF16 peak 2250",
    ),
}
FAMILY: dict[str, str] = {
    "h100": "hopper",
    "h200": "hopper",
    "b200": "blackwell",
    "gb200": "blackwell",
    "b300": "blackwell",
    "gb300": "blackwell",
    "h100-pcie": "hopper",
}


@dataclass(frozen=True)
class Spec:
    bf16_tflops: float
    hbm_tb_per_s: float


@dataclass(frozen=True)
class GemmFit:
    gemm_compute_efficiency: float
    gemm_memory_efficiency: float
    kernel_floor_us: float
    n_rows: int
    n_compute_rows: int
    n_memory_rows: int
    n_memory_dropped: int


@dataclass(frozen=True)
class HardwareFit:
    slug: str
    gemm_compute_efficiency: float
    gemm_memory_efficiency: float
    attention_compute_efficiency: float
    attention_memory_efficiency: float
    kernel_floor_us: float
    provenance: str


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def load_specs(path: Path = HARDWARE_CSV) -> dict[str, Spec]:
    """Spec-sheet peaks (not fitted values) per preset slug from data/hardware.csv."""
    return {
        r["slug"]: Spec(float(r["bf16_dense_tflops"]), float(r["hbm_tb_per_s"]))
        for r in _read(path)
    }


def fit_gemm(rows: list[dict[str, str]], spec: Spec) -> GemmFit:
    """η_c, η_m and the floor from one GPU's BF16 GEMM rows (see the module docstring)."""
    m = np.array([float(r["M"]) for r in rows])
    n = np.array([float(r["N"]) for r in rows])
    k = np.array([float(r["K"]) for r in rows])
    t = np.array([float(r["latency_ms"]) for r in rows]) * 1e-3
    tflops = 2.0 * m * n * k / t / 1e12
    compute = tflops[m >= COMPUTE_MIN_M]
    eta_c = float(np.percentile(compute, P_HIGH)) / spec.bf16_tflops
    bw_tb = (m * k + k * n + m * n) * BYTES_BF16 / t / 1e12
    mem_sel = (m <= MEMORY_MAX_M) & (n == MEMORY_SHAPE) & (k == MEMORY_SHAPE)
    mem = bw_tb[mem_sel]
    kept = mem[mem <= spec.hbm_tb_per_s]
    eta_m = float(np.percentile(kept, P_HIGH)) / spec.hbm_tb_per_s
    floor_us = float(np.percentile(t, P_FLOOR)) * 1e6
    return GemmFit(
        gemm_compute_efficiency=eta_c,
        gemm_memory_efficiency=eta_m,
        kernel_floor_us=floor_us,
        n_rows=len(rows),
        n_compute_rows=int(compute.size),
        n_memory_rows=int(kept.size),
        n_memory_dropped=int(mem.size - kept.size),
    )


def fit_attention_memory(rows: list[dict[str, str]], spec: Spec) -> tuple[float, int]:
    """η_m for decode attention: p95 effective KV bandwidth at long KV, batch ≥ 8, over HBM BW."""
    sel = [
        r
        for r in rows
        if int(r["kv_len_step"]) == ATTENTION_KV_LEN and int(r["batch"]) >= ATTENTION_MIN_BATCH
    ]
    bw = np.array(
        [
            float(r["batch"])
            * float(r["kv_len_step"])
            * 2.0
            * float(r["num_kv_heads"])
            * float(r["head_dim"])
            * BYTES_BF16
            / (float(r["latency_ms"]) * 1e-3)
            / 1e12
            for r in sel
        ]
    )
    bw = bw[bw <= spec.hbm_tb_per_s]
    return float(np.percentile(bw, P_HIGH)) / spec.hbm_tb_per_s, int(bw.size)


def fit_presets(
    gemm_csv: Path = GEMM_CSV,
    attention_csv: Path = ATTENTION_CSV,
    hardware_csv: Path = HARDWARE_CSV,
) -> dict[str, HardwareFit]:
    """Fitted efficiencies and floor for every preset in hardware.csv, with provenance text."""
    specs = load_specs(hardware_csv)
    gemm_rows = [r for r in _read(gemm_csv) if r["dtype"] == DTYPE]
    attn_rows = [r for r in _read(attention_csv) if r["kv_dtype"] == DTYPE]

    gemm: dict[str, GemmFit] = {}
    attn: dict[str, tuple[float, int]] = {}
    for gpu, slug in MEASURED_GPU.items():
        if slug not in specs:
            continue
        g = [r for r in gemm_rows if r["gpu"] == gpu]
        if g:
            gemm[slug] = fit_gemm(g, specs[slug])
        a = [r for r in attn_rows if r["gpu"] == gpu]
        if a:
            attn[slug] = fit_attention_memory(a, specs[slug])

    out: dict[str, HardwareFit] = {}
    for slug in specs:
        notes: list[str] = []
        gsrc = slug if slug in gemm else CARRY_OVER.get(slug)
        if gsrc is None or gsrc not in gemm:
            raise ValueError(f"{slug}: no GEMM rows and no carry-over preset with rows")
        gf = gemm[gsrc]
        gpu_id = next(k for k, v in MEASURED_GPU.items() if v == gsrc)
        gemm_note = (
            f"fit: scripts/fit_hardware_efficiencies.py on data/measured/gemm_measured.csv "
            f"(aiconfigurator {gpu_id} bf16 torch_flow, {gf.n_rows} rows): "
            f"η_c = p95 achieved TFLOP/s over {gf.n_compute_rows} rows with M ≥ {COMPUTE_MIN_M} "
            f"/ dense BF16 peak; η_m = p95 effective bytes/s over {gf.n_memory_rows} rows "
            f"M ≤ {MEMORY_MAX_M}, N = K = {MEMORY_SHAPE} / HBM BW"
            + (
                f" ({gf.n_memory_dropped} cache-resident row above HBM BW dropped)"
                if gf.n_memory_dropped
                else ""
            )
            + "; floor = p5 of all latencies"
        )
        if gsrc != slug:
            gemm_note = (
                f"carried over from {gsrc} (assumption: no measured GEMM rows for {slug}) "
                f"({gemm_note})"
            )
        notes.append(gemm_note)

        asrc = slug if slug in attn else CARRY_OVER.get(slug, slug)
        if asrc not in attn:
            asrc = "h100"  # A100 has GEMM rows but no attention rows
        eta_att_m, n_att = attn[asrc]
        att_id = next(k for k, v in MEASURED_GPU.items() if v == asrc)
        att_note = (
            f"attention η_m = p95 effective KV read bandwidth over {n_att} rows of "
            f"data/measured/attention_measured.csv (aiconfigurator {att_id} TRT-LLM "
            f"generation_attention, kv_len {ATTENTION_KV_LEN}, "
            f"batch ≥ {ATTENTION_MIN_BATCH}) / HBM BW"
        )
        if asrc != slug:
            att_note = (
                f"{att_note}, carried over from {asrc} "
                f"(assumption: no measured attention rows for {slug})"
            )
        notes.append(att_note)

        family = FAMILY.get(slug)
        if family is not None:
            achieved, peak, src = ATTENTION_COMPUTE[family]
            eta_att_c = achieved / peak
            notes.append(f"attention η_c = {achieved:g}/{peak:g} ({src})")
        else:
            eta_att_c = gf.gemm_compute_efficiency
            notes.append("attention η_c = GEMM η_c (assumption: no sourced figure for this GPU)")

        out[slug] = HardwareFit(
            slug=slug,
            gemm_compute_efficiency=gf.gemm_compute_efficiency,
            gemm_memory_efficiency=gf.gemm_memory_efficiency,
            attention_compute_efficiency=eta_att_c,
            attention_memory_efficiency=eta_att_m,
            kernel_floor_us=gf.kernel_floor_us,
            provenance="; ".join(notes),
        )
    return out


def ridge_tokens(bf16_tflops: float, hbm_tb_per_s: float, bytes_per_weight: float = 2.0) -> float:
    """GEMM ridge M* = F·b_w / (2·BW) in tokens."""
    return bf16_tflops * 1e12 * bytes_per_weight / (2.0 * hbm_tb_per_s * 1e12)


def main() -> None:
    fits = fit_presets()
    header = (
        f"{'slug':8} {'gemm_η_c':>9} {'gemm_η_m':>9} {'att_η_c':>8} {'att_η_m':>8} {'floor_us':>9}"
    )
    print(header)
    for slug, f in fits.items():
        print(
            f"{slug:8} {f.gemm_compute_efficiency:9.4f} {f.gemm_memory_efficiency:9.4f} "
            f"{f.attention_compute_efficiency:8.4f} {f.attention_memory_efficiency:8.4f} "
            f"{f.kernel_floor_us:9.2f}"
        )
    print()
    for slug, f in fits.items():
        print(f"{slug}: {f.provenance}")
    specs = load_specs()
    h200 = specs["h200"]
    print()
    ridge = ridge_tokens(h200.bf16_tflops, h200.hbm_tb_per_s)
    print(f"ridge M* (h200, bf16) = F·b_w/(2·BW) = {ridge:.1f} tokens")


if __name__ == "__main__":
    main()

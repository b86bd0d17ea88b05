"""Seconds and peak memory per MB of `validate` for each format's worst shape, at two sizes.

The worst shape of a format is the largest file it accepts (or the one refused latest, after
the most work); each runs in a fresh interpreter, so the peak resident memory above that
interpreter's start is the parse's own. Linear cost shows as the same s/MB and MB/MB at both
sizes (the "x" columns: growth of time and memory over growth of size, 1.0 = linear).

PYTHONPATH=. .venv/bin/python benchmarks/bench_parsers.py [shape ...]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from explorer.base.limits import (  # noqa: E402
    MAX_CATEGORIES,
    MAX_CELLS,
    MAX_CURVES,
    MAX_JSON_VALUES,
    MAX_MEASURED_ROWS,
)

MB = 1e6
# Peak resident memory of the parse alone: the high-water mark (VmHWM) is reset to the current
# resident size after the imports (Linux: clear_refs 5), then read after validate.
CHILD = """
import gc, json, sys, time
from pathlib import Path
from explorer.measured import validate_path

def kib(key):
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith(key))
    return int(line.split()[1])

gc.collect()
Path("/proc/self/clear_refs").write_text("5")
base = kib("VmRSS:")
t0 = time.perf_counter()
result = validate_path(sys.argv[1])
dt = time.perf_counter() - t0
peak = kib("VmHWM:") - base
print(json.dumps({"s": dt, "peak_mb": peak * 1024 / 1e6, "ok": result.ok,
                  "format": result.format, "first": (result.problems[0].message
                                                      if result.problems else result.summary)}))
"""


def al_curves(rows: int) -> tuple[str, bytes]:
    per = rows // MAX_CURVES  # the most curves a file may hold, each as long as it takes
    lines = (f"eagle3,ds{g},{d},{1 + 0.7 * (1 - 0.7 ** d) / 0.3:.6f}\n"
             for g in range(MAX_CURVES) for d in range(1, per + 1))
    return "al.csv", ("mechanism,dataset,D,AL\n" + "".join(lines)).encode()


def positions(rows: int) -> tuple[str, bytes]:
    per = rows // MAX_CURVES
    lines = (f"eagle3,ds{g},{p},0.9,conditional\n" for g in range(MAX_CURVES)
             for p in range(1, per + 1))
    return "pos.csv", ("mechanism,dataset,position,rate,kind\n" + "".join(lines)).encode()


def kernels(rows: int) -> tuple[str, bytes]:
    half = rows // 2
    head = "kind,m,n,k,dtype,batch,context,q_heads,kv_heads,head_dim,q_len,time_us\n"
    gemm = (f"gemm,{1 + i % 8192},4096,4096,bfloat16,,,,,,,{5 + i % 997}.125\n"
            for i in range(half))
    attn = (f"attention,,,,bfloat16,{1 + i % 256},{128 + i % 131072},32,8,128,{1 + i % 8},"
            f"{5 + i % 4999}.5\n" for i in range(rows - half))
    return "kernels.csv", (head + "".join(gemm) + "".join(attn)).encode()


def steps(rows: int) -> tuple[str, bytes]:
    lines = (f"{1 + i % 4096},{i % 8},{5 + (i % 997) / 100:.4f}\n" for i in range(rows))
    return "steps.csv", ("batch,draft_len,step_time_ms\n" + "".join(lines)).encode()


def tiny_cells(cells: int) -> tuple[str, bytes]:
    """The most one-character cells a table may hold: a step table with 17 extra columns."""
    cols = 20
    head = "batch,draft_len,step_time_ms," + ",".join(f"c{i}" for i in range(cols - 3)) + "\n"
    row = "1,0,5," + ",".join(["1"] * (cols - 3)) + "\n"
    return "steps.csv", (head + row * (cells // cols)).encode()


def speed_bench_rows(rows: int) -> tuple[str, bytes]:
    lines = (f"model{i},2.51,2.63,2.57\n" for i in range(rows))
    return "speed_bench_report_D3.csv", ("Model,coding,math,Overall\n" + "".join(lines)).encode()


def speed_bench_categories(cats: int) -> tuple[str, bytes]:
    head = "Model," + ",".join(f"cat{i}" for i in range(cats)) + ",Overall\n"
    return "speed_bench_report_D3.csv", (head + "m," + ",".join(["2.5"] * (cats + 1)) +
                                         "\n").encode()


def wide_csv(cols: int) -> tuple[str, bytes]:
    return "wide.csv", ("D,AL," + ",".join(f"c{i}" for i in range(cols)) + "\n1,1.5\n").encode()


def ragged_rows(cells: int) -> tuple[str, bytes]:
    """A 2-column header over 5 rows of `cells` cells (issue 25: 100,000 cells per row is a
    1 MiB file that cost 77–90 s and 1.2 GiB when only the header's width was capped; the
    target is a refusal in < 2 s and < 300 MB)."""
    return "ragged.csv", ("D,AL\n" + ("1,1.5" + ",9" * (cells - 2) + "\n") * 5).encode()


def deep_json(depth: int) -> tuple[str, bytes]:
    """A JSON profile nesting `depth` deep: refused on the text, before json.loads recurses."""
    return "speculation_profile.json", b"[" * depth


def long_cell(chars: int) -> tuple[str, bytes]:
    return "long.csv", b"mechanism,D,AL\n" + b"x" * chars + b",1,1.5\n"


def sglang(records: int) -> tuple[str, bytes]:
    lines = (json.dumps({"batch_size": 1 + i % 64, "steps": i % 6, "topk": 1 if i % 6 else 0,
                         "num_draft_tokens": i % 6 + 1 if i % 6 else 0,
                         "acc_length": 1.0 + 0.4 * (i % 6), "step_time": 0.01 + (i % 97) * 1e-4,
                         "speed": 100.0, "completion_tokens": 4096.0}) for i in range(records))
    return "bench.jsonl", "\n".join(lines).encode()


def metrics(lines: int) -> tuple[str, bytes]:
    per = lines // MAX_CURVES - 3
    out = []
    for s in range(MAX_CURVES):
        lab = f'engine="0",model_name="m{s}"'
        out += [f"vllm:spec_decode_num_drafts_total{{{lab}}} 1000",
                f"vllm:spec_decode_num_draft_tokens_total{{{lab}}} {1000 * per}",
                f"vllm:spec_decode_num_accepted_tokens_total{{{lab}}} {sum(range(per))}"]
        out += [f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{lab},position="{p}"}} '
                f"{per - 1 - p}" for p in range(per)]
    return "metrics.txt", ("\n".join(out) + "\n").encode()


def profile_values(values: int) -> tuple[str, bytes]:
    """A profile whose free-form 'validation' holds as many values as a JSON file may."""
    obj = {"schema_version": "1.0", "measured": True, "method": "eagle3",
           "marginal_accept_rates": [0.8, 0.6, 0.4], "validation": {"v": [0.5] * (values - 10)}}
    return "speculation_profile.json", json.dumps(obj).encode()


def dynamic(entries: int) -> tuple[str, bytes]:
    obj = {"max_num_speculative_tokens": 3, "acceptance_rate_per_pos": [0.8, 0.6, 0.4],
           "batch_stats": {str(b): {str(k): 5.0 + k for k in range(4)}
                           for b in range(1, entries // 4 + 1)}}
    return "dynamic_speculative_config.json", json.dumps(obj).encode()


# name → (what the size counts, two sizes, generator)
SHAPES: dict[str, tuple[str, tuple[int, int], Callable[[int], tuple[str, bytes]]]] = {
    "al_curve_csv": ("rows", (MAX_MEASURED_ROWS // 2, MAX_MEASURED_ROWS), al_curves),
    "position_acceptance_csv": ("rows", (MAX_MEASURED_ROWS // 2, MAX_MEASURED_ROWS), positions),
    "kernel_timings_csv": ("rows", (MAX_MEASURED_ROWS // 2, MAX_MEASURED_ROWS), kernels),
    "step_times_csv": ("rows", (MAX_MEASURED_ROWS // 2, MAX_MEASURED_ROWS), steps),
    "csv tiny cells": ("cells", (MAX_CELLS // 2, MAX_CELLS), tiny_cells),
    "csv wide (refused)": ("columns", (20_000, 40_000), wide_csv),
    "csv long cell (refused)": ("chars", (10_000_000, 20_000_000), long_cell),
    "csv ragged rows (refused)": ("cells", (20_000, 100_000), ragged_rows),
    "json deep (refused)": ("levels", (1_000_000, 10_000_000), deep_json),
    "speed_bench_report rows (refused)": ("rows", (MAX_MEASURED_ROWS // 2, MAX_MEASURED_ROWS),
                                          speed_bench_rows),
    "speed_bench_report categories (refused)": ("categories", (25_000, 50_000),
                                                speed_bench_categories),
    "sglang_bench_speculative": ("records", (MAX_MEASURED_ROWS // 2, MAX_MEASURED_ROWS), sglang),
    "vllm_metrics": ("lines", (MAX_MEASURED_ROWS // 2, MAX_MEASURED_ROWS), metrics),
    "specdec_bench_profile": ("values", (MAX_JSON_VALUES // 2, MAX_JSON_VALUES), profile_values),
    "vllm_dynamic_sd_config": ("entries", (MAX_MEASURED_ROWS // 2, MAX_MEASURED_ROWS), dynamic),
}
assert MAX_CATEGORIES < 25_000


def measure(path: Path) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True,
                          text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)}, check=True,
                          timeout=600)
    out: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def main() -> None:
    chosen = sys.argv[1:] or list(SHAPES)
    print("validate per format, worst shape, two sizes (fresh interpreter each; peak = resident "
          "memory above its start)")
    print(f"{'shape':42s} {'size':>14s} {'MB':>7s} {'s':>6s} {'s/MB':>6s} {'peak MB':>8s} "
          f"{'MB/MB':>6s} {'x time':>6s} {'x mem':>6s}  outcome")
    with tempfile.TemporaryDirectory() as tmp:
        for shape in chosen:
            unit, sizes, make = SHAPES[shape]
            runs = []
            for n in sizes:
                name, data = make(n)
                path = Path(tmp) / name
                path.write_bytes(data)
                r = measure(path)
                runs.append((n, len(data) / MB, float(r["s"]), float(r["peak_mb"]), r))  # type: ignore[arg-type]
                path.unlink()
            _, mb0, s0, p0, _ = runs[0]
            for n, mb, s, peak, r in runs:
                growth = mb / mb0
                outcome = "used" if r["ok"] else f"refused: {str(r['first'])[:70]}"
                print(f"{shape:42s} {n:>8,} {unit:<5s} {mb:7.2f} {s:6.2f} {s / mb:6.3f} "
                      f"{peak:8.1f} {peak / mb:6.2f} {s / s0 / growth:6.2f} "
                      f"{peak / max(p0, 1e-9) / growth:6.2f}  {outcome}")


if __name__ == "__main__":
    main()

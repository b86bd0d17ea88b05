"""Time validate + load of a generated 100k-row kernel timings CSV (target: < 2 s).

.venv/bin/python benchmarks/bench_measured.py [rows] [repeats]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from explorer.measured import validate_path


def make_kernel_csv(rows: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    half = rows // 2
    gemm = pd.DataFrame(
        {
            "kind": "gemm",
            "m": rng.integers(1, 8192, half),
            "n": 4096,
            "k": 4096,
            "dtype": "bfloat16",
            "time_us": np.round(rng.uniform(5.0, 2000.0, half), 3),
        }
    )
    attention = pd.DataFrame(
        {
            "kind": "attention",
            "dtype": "bfloat16",
            "batch": rng.integers(1, 256, rows - half),
            "context": rng.integers(128, 131072, rows - half),
            "q_heads": 32,
            "kv_heads": 8,
            "head_dim": 128,
            "q_len": rng.integers(1, 9, rows - half),
            "time_us": np.round(rng.uniform(5.0, 5000.0, rows - half), 3),
        }
    )
    columns = [
        "kind",
        "m",
        "n",
        "k",
        "dtype",
        "batch",
        "context",
        "q_heads",
        "kv_heads",
        "head_dim",
        "q_len",
        "time_us",
    ]
    frame = pd.concat([gemm, attention], ignore_index=True)[columns]
    for c in ("m", "n", "k", "batch", "context", "q_heads", "kv_heads", "head_dim", "q_len"):
        frame[c] = frame[c].astype("Int64")
    return frame.to_csv(index=False).encode()


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    data = make_kernel_csv(rows)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel_timings.csv")
        with open(path, "wb") as fh:
            fh.write(data)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            result = validate_path(path)
            times.append(time.perf_counter() - t0)
            assert result.ok, [str(p) for p in result.problems[:5]]
    kt = result.kernel_timings
    assert kt is not None
    print(
        f"{rows} rows ({len(data) / 1e6:.1f} MB; {len(kt.gemm.m)} gemm + "
        f"{len(kt.attention.batch)} attention): validate + load best {min(times):.3f} s, "
        f"median {statistics.median(times):.3f} s over {repeats} runs (target < 2 s)"
    )


if __name__ == "__main__":
    main()

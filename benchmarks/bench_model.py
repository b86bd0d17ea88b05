"""Benchmark: the full grid B (64 log-spaced, 1…4096) × D (0…32) × 6 mechanisms, vectorized vs a
per-point loop over the same function. Prints figures; asserts nothing about time."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explorer import Scenario
from explorer.model.grid import scenario_model
from explorer.presets import mechanism_presets

BATCHES = np.unique(np.round(np.logspace(0, 12, 64, base=2.0)))
DRAFT_LENS = np.arange(0, 33, dtype=np.float64)


def grid_all(models: list) -> float:  # type: ignore[type-arg]
    total = 0.0
    for m in models:
        total += float(np.nansum(m.grid(BATCHES[:, None], DRAFT_LENS[None, :]).speedup))
    return total


def loop_one(m) -> float:  # type: ignore[no-untyped-def]
    total = 0.0
    for b in BATCHES:
        for d in DRAFT_LENS:
            total += float(np.nansum(m.grid(b, d).speedup))
    return total


def main() -> None:
    models = [scenario_model(Scenario(mechanism=k, model="llama-3.1-70b", tp=2))
              for k in mechanism_presets()]
    grid_all(models)  # warm caches
    runs = []
    for _ in range(7):
        t = time.perf_counter()
        grid_all(models)
        runs.append(time.perf_counter() - t)
    vec = statistics.median(runs)
    t = time.perf_counter()
    loop_one(models[0])
    loop = (time.perf_counter() - t) * len(models)  # one mechanism timed, scaled to six
    points = len(BATCHES) * len(DRAFT_LENS) * len(models)
    print(f"model grid: {points} points (64 B × 33 D × {len(models)} mechanisms)")
    print(f"  vectorized: {vec * 1e3:.1f} ms (median of 7; goal < 50 ms)")
    print(f"  per-point loop: {loop * 1e3:.0f} ms → vectorized is {loop / vec:.0f}× faster")


if __name__ == "__main__":
    main()

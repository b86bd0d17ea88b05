"""Benchmark: every draft-length policy over a 24-bucket concurrency × 8-context × 7-category
profile (Llama-3.1-70B on H200, TP2, EAGLE-3): seconds per evaluation. Prints; asserts nothing."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explorer import Scenario
from explorer.analysis.deploy import deploy
from explorer.specs.deployment import (
    ConcurrencyHistogram,
    ContextLogNormal,
    DeploymentProfile,
    WorkloadShare,
)

CATEGORIES = ("Coding", "Math", "RAG", "Multilingual", "Reasoning", "STEM", "Summarization")


def profile() -> DeploymentProfile:
    batches = tuple(int(x) for x in np.unique(np.round(np.logspace(0, 10, 24, base=2.0))))
    batches = tuple(sorted(set(batches) | set(range(1, 40))))[:24]  # 24 distinct B
    return DeploymentProfile(
        concurrency=ConcurrencyHistogram(batches=batches, weights=(1.0,) * len(batches)),
        context=ContextLogNormal(median=4096, sigma=1.0, buckets=8),
        workload=tuple(WorkloadShare(
            source=f"eagle3/MiniMax-M3 (amd/MiniMax-M3-MXFP4)/SPEED-Bench {c}", weight=1.0)
            for c in CATEGORIES))


def main() -> None:
    sc = Scenario(hardware="h200", model="llama-3.1-70b", tp=2, mechanism="eagle3")
    p = profile()
    nb, ns, nw = len(p.batch_buckets()[0]), len(p.context_buckets()[0]), len(p.workload)
    t0 = time.perf_counter()
    deploy(sc, p)
    first = time.perf_counter() - t0  # includes building the scenario's model (cached after)
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        r = deploy(sc, p)
        times.append(time.perf_counter() - t0)
    print(f"deploy: {nb} B × {ns} S × {nw} categories × D 0…32, 6 policies: "
          f"{statistics.median(times) * 1e3:.1f} ms median of 7 "
          f"(first call, with the model's set-up: {first * 1e3:.0f} ms); "
          f"oracle {r.policy('oracle').tokens_per_s_per_gpu:.0f} tokens/s per GPU")


if __name__ == "__main__":
    main()

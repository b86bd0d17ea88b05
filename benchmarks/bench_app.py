"""Benchmark: server-side rerun time after a slider move (median of AppTest reruns) and the
size of the page's figure payload. Prints figures (goals: < 300 ms, < 1 MB)."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def main() -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    times_cold, times_warm, script, cpu = [], [], [], []
    for i, d in enumerate([4, 5, 6, 7, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11]):
        at.slider(key="d").set_value(d)
        t = time.perf_counter()
        at.run()
        (times_cold if i < 8 else times_warm).append(time.perf_counter() - t)
        script.append(at.session_state["_script_run_s"])
        cpu.append(at.session_state["_script_cpu_s"])
    payload = sum(len(c.proto.spec) for c in at.get("plotly_chart"))
    charts = len(at.get("plotly_chart"))
    print(f"app rerun after a D slider move: median {statistics.median(times_cold) * 1e3:.0f} ms "
          f"(new values), {statistics.median(times_warm) * 1e3:.0f} ms (cached values); "
          "goal < 300 ms")
    print(f"  of which the script itself: median {statistics.median(script[:8]) * 1e3:.0f} ms "
          f"(new values), {statistics.median(script[8:]) * 1e3:.0f} ms (cached); the rest is "
          "AppTest's polling")
    print(f"  the script's own CPU: median {statistics.median(cpu[:8]) * 1e3:.0f} ms (new values), "
          f"{statistics.median(cpu[8:]) * 1e3:.0f} ms (cached): what a rerun costs whatever else "
          "runs on the machine")
    print(f"figure payload: {payload / 1e6:.2f} MB in {charts} charts (goal < 1 MB)")
    sizes = sorted(((len(c.proto.spec), json.loads(c.proto.spec)["layout"].get("title", {})
                     .get("text", "?")) for c in at.get("plotly_chart")), reverse=True)[:3]
    for size, title in sizes:
        print(f"  {size / 1e3:.0f} KB  {title}")


if __name__ == "__main__":
    main()

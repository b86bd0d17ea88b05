"""The Explorer's headline metrics read whole in a fifth of the page (a metric's value is cut
with an ellipsis where it is wider than its column)."""

from __future__ import annotations

from tests.support.apptest import run_app


def test_memory_per_gpu_shows_the_need_and_puts_the_capacity_in_its_delta():
    # DeepSeek-V3 FP8 on 8×B200 at B=64: "122 / 192 GB" was cut to "122 / 192…"
    at = run_app(m="deepseek-v3", hw="b200", tp="8", b="64", dt="fp8", v="2")
    memory = next(m for m in at.metric if m.label == "Memory per GPU")
    number, unit = memory.value.split(" ")
    assert unit == "GB" and number.replace(",", "").isdigit()
    assert memory.delta.startswith("fits in ") and memory.delta.endswith(" GB")
    assert int(memory.delta.split()[2].replace(",", "")) > int(number.replace(",", ""))


def test_memory_that_does_not_fit_names_the_capacity_it_misses():
    at = run_app(m="llama-3.1-405b", hw="h100", tp="1", b="8", v="2")
    memory = next(m for m in at.metric if m.label == "Memory per GPU")
    assert memory.delta.startswith("does not fit in ") and memory.delta.endswith(" GB")

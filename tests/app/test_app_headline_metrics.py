"""The Explorer's headline numbers read whole in a fifth of the page (a metric's value was cut
with an ellipsis where it was wider than its column)."""

from __future__ import annotations

from tests.support import headline
from tests.support.apptest import run_app


def test_memory_per_gpu_shows_the_need_and_puts_the_capacity_in_its_note():
    # DeepSeek-V3 FP8 on 8×B200 at B=64: "122 / 192 GB" was cut to "122 / 192…"
    at = run_app(m="deepseek-v3", hw="b200", tp="8", b="64", dt="fp8", v="2")
    memory = headline.numbers(at)["Memory per GPU"]
    number, unit = memory.value.split(" ")
    assert unit == "GB" and number.replace(",", "").isdigit()
    assert memory.note is not None and memory.tone == "good"
    assert memory.note.startswith("fits in ") and memory.note.endswith(" GB")
    assert int(memory.note.split()[2].replace(",", "")) > int(number.replace(",", ""))


def test_memory_that_does_not_fit_names_the_capacity_it_misses():
    at = run_app(m="llama-3.1-405b", hw="h100", tp="1", b="8", v="2")
    memory = headline.numbers(at)["Memory per GPU"]
    assert memory.note is not None and memory.tone == "bad"
    assert memory.note.startswith("does not fit in ") and memory.note.endswith(" GB")

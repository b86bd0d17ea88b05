"""The headline says what its speedup spans: decode steps only, with the whole-request figure at a
reference output length beside it, or whole requests when the link sets output tokens N."""

from __future__ import annotations

import re

from explorer.analysis.evaluate import evaluate, whole_request_speedup
from explorer.specs.scenario import Scenario
from tests.support.apptest import run_app


def _caption(at) -> str:  # type: ignore[no-untyped-def]
    return next(c.value for c in at.caption if "Decode steps only" in c.value
                or "Whole requests" in c.value)


def test_decode_steps_only_names_the_whole_request_speedup_at_1k_outputs():
    at = run_app(m="llama-3.1-8b", hw="h100", tp="1", b="64", ctx="1024", v="1")
    text = _caption(at)
    assert text.startswith("Decode steps only")
    shown = float(re.search(r"it is ([0-9.]+)×", text).group(1))  # type: ignore[union-attr]
    sc = Scenario(model="llama-3.1-8b", hardware="h100", tp=1, batch=64, context=1024)
    assert shown == round(whole_request_speedup(sc, 1024) or 0, 2)
    assert shown < float(at.metric[0].value.rstrip("×"))


def test_a_link_with_output_tokens_prices_whole_requests():
    at = run_app(m="llama-3.1-8b", hw="h100", tp="1", b="64", ctx="1024", out="1024", v="1")
    text = _caption(at)
    assert text.startswith("Whole requests: prompt S = 1,024 tokens per N = 1,024 generated")
    sc = Scenario(model="llama-3.1-8b", hardware="h100", tp=1, batch=64, context=1024,
                  output_tokens=1024)
    assert at.metric[0].value == f"{evaluate(sc).speedup:.2f}×"
    assert at.session_state["out"] == 1024

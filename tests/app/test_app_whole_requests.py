"""The headline says what its speedup spans: whole requests (the default, N = 1,024 output tokens)
with the decode-steps figure beside it, or decode steps only (`out=0`, or a link of version 1)
with the whole-request figure at the default output length beside it."""

from __future__ import annotations

import re

from explorer.analysis.evaluate import evaluate, whole_request_speedup
from explorer.specs.scenario import Scenario
from tests.support import headline
from tests.support.apptest import run_app


def _caption(at) -> str:  # type: ignore[no-untyped-def]
    return next(c.value for c in at.caption if "Decode steps only" in c.value
                or "Whole requests" in c.value)


def test_decode_steps_only_names_the_whole_request_speedup_at_1k_outputs():
    for decode_only in ({"v": "1"}, {"out": "0"}):  # an old link, or N set to decode only
        at = run_app(m="llama-3.1-8b", hw="h100", tp="1", b="64", ctx="1024", **decode_only)
        text = _caption(at)
        assert text.startswith("Decode steps only")
        shown = float(re.search(r"it is ([0-9.]+)×", text).group(1))  # type: ignore[union-attr]
        sc = Scenario(model="llama-3.1-8b", hardware="h100", tp=1, batch=64, context=1024,
                      output_tokens=None)
        assert shown == round(whole_request_speedup(sc, 1024) or 0, 2)
        assert shown < float(headline.value(at, "Speedup").rstrip("×"))
        assert headline.value(at, "Speedup") == f"{evaluate(sc).speedup:.2f}×"


def test_a_link_with_output_tokens_prices_whole_requests():
    at = run_app(m="llama-3.1-8b", hw="h100", tp="1", b="64", ctx="1024", out="1024", v="1")
    text = _caption(at)
    assert text.startswith("Whole requests: prompt S = 1,024 tokens per N = 1,024 generated")
    sc = Scenario(model="llama-3.1-8b", hardware="h100", tp=1, batch=64, context=1024,
                  output_tokens=1024)
    assert headline.value(at, "Speedup") == f"{evaluate(sc).speedup:.2f}×"
    assert at.session_state["out"] == 1024
    # today's links price whole requests of 1,024 output tokens without saying so, and the
    # caption gives the decode steps' figure beside it
    plain = run_app(m="llama-3.1-8b", hw="h100", tp="1", b="64", ctx="1024")
    assert plain.session_state["out"] == 1024
    assert headline.value(plain, "Speedup") == headline.value(at, "Speedup")
    decode = evaluate(sc.model_copy(update={"output_tokens": None})).speedup
    assert f"On decode steps only (prompts prefilled on other GPUs, the article's ratio) it " \
        f"is {decode:.2f}×" in _caption(plain)


def test_the_deployment_page_says_what_its_policies_span():
    from tests.support.apptest import goto

    whole = goto(run_app(), "deploy")
    assert any(c.value.startswith("Over whole requests of N = 1,024 output tokens")
               for c in whole.caption)
    decode = goto(run_app(out="0"), "deploy")
    assert any(c.value.startswith("Over decode steps only") for c in decode.caption)

"""AppTest: the page words unavailable mechanisms for the page (no CLI flags) and lists them
with their reasons."""

from __future__ import annotations

from tests.support import headline
from tests.support.apptest import run_app


def page_text(at) -> str:  # type: ignore[no-untyped-def]
    parts = [w.value for kind in ("warning", "error", "info", "success", "caption", "markdown")
             for w in getattr(at, kind)]
    return "\n".join(str(p) for p in parts).replace("\\", "")  # markdown escapes


def test_external_for_deepseek_is_explained_without_a_cli_flag():
    at = run_app(m="deepseek-v3", mech="external", tp="8", vw="mechanisms")
    text = page_text(at)
    assert "tokenizer" in text and "--draft-model" not in text and "pick one" not in text
    assert "External draft model: unavailable, not ranked" in text


def test_mtp_on_llama_is_a_flagged_hypothetical_and_not_ranked():
    at = run_app(mech="mtp", vw="mechanisms")  # the unranked list is in the Mechanisms view
    warnings = " ".join(w.value for w in at.warning)
    assert "is unavailable for this target" in warnings and "ships no MTP layers" in warnings
    assert "MTP head (native multi-token prediction): unavailable, not ranked" in page_text(at)


def test_nothing_fits_names_the_largest_batch_and_what_would_fit():
    at = run_app(ctx="32768", b="64")
    errors = " ".join(e.value for e in at.error).replace("\\", "")
    assert "No mechanism fits in memory" in errors
    # the fastest option that runs today is EAGLE-3 (DFlash, to be trained here, is not sized): B=12
    assert "largest batch that fits" in errors and "B=12" in errors and "TP=8" in errors


def test_apply_sets_the_sidebar_to_the_recommendation_and_the_metrics_follow():
    from explorer import Scenario, recommend

    best = recommend(Scenario()).best
    assert best is not None and (best.mechanism, best.draft_len) != ("eagle3", 3)
    at = run_app()
    at.button(key="apply_recommendation").click().run()
    assert not at.exception
    assert at.session_state["mech"] == best.mechanism and at.session_state["d"] == best.draft_len
    speedup = headline.value(at, "Speedup")
    assert speedup == f"{best.speedup:.2f}×"
    assert any("The sidebar is at the recommendation" in c.value for c in at.caption)


def test_the_headline_speedup_shows_its_interval():
    from explorer import Scenario, evaluate

    ev = evaluate(Scenario())
    at = run_app()
    box = headline.numbers(at)["Speedup"]
    assert box.value == f"{ev.speedup:.2f}×"
    assert box.note == f"80%: {ev.speedup_low:.2f}–{ev.speedup_high:.2f}×"
    assert any("How sure:" in s.value.replace("\\", "") for s in at.success)  # Markdown-escaped


def test_worth_training_is_a_question_apart_from_the_recommendation():
    # Qwen3-8B on one H100: RedHatAI's EAGLE-3 head is public (the recommendation); DFlash at
    # D=7 would need a head trained at that block size (z-lab's is block 16)
    at = run_app(m="qwen3-8b", hw="h100", tp="1", b="8")
    success = " ".join(s.value for s in at.success).replace("\\", "")
    assert "Recommendation:" in success and "EAGLE-3 head at D=" in success
    assert "Worth training" not in success and "to be trained" not in success
    captions = [c.value for c in at.caption if "Worth training?" in c.value]
    assert len(captions) == 1
    assert "DFlash" in captions[0] and "would need AL ≥" in captions[0]

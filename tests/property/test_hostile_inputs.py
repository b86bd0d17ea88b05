"""Generators of issue 25's shapes, so the next shape of the same kind is caught: ragged CSV rows,
deep or long-numbered JSON behind every JSON reader (files, packed `cm`/`cd`, saved views),
user text with Markdown, controls and lone surrogates, deployment weights near the float limit,
and packed models with absurd dimensions. Each is refused with a message naming its cap, or
accepted within every cap — never an exception, a hang or raw markup."""

from __future__ import annotations

import base64
import json
import math
import re
import zlib

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.base.limits import (
    MAX_COLUMNS,
    MAX_HIDDEN,
    MAX_JSON_DEPTH,
    MAX_NUMBER_CHARS,
    MAX_VOCAB,
)
from explorer.base.quoting import quote, shown
from explorer.base.reading import load_json
from explorer.interfaces.cli import TerminalText
from explorer.interfaces.view_state import decode, decode_view
from explorer.measured import parse_as
from explorer.specs.architecture import DrafterSpec, ModelSpec
from explorer.specs.compact import unpack
from explorer.specs.deployment import DeploymentProfile, profile_from_url
from tests.support.measured_contract import check_result

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SMALL_MODEL = {"slug": "hf-x-00000000", "name": "tiny", "layers": 2, "hidden": 64, "q_heads": 4,
               "kv_heads": 2, "head_dim": 16, "ffn_intermediate": 128, "vocab": 1000}
# Characters a terminal or Markdown would act on, and ones UTF-8 cannot encode.
HOSTILE_CHARS = st.sampled_from(
    ["\x1b", "\x07", "\x00", "\n", "\r", "\u202e", "\u2028", "\ufeff", "\x9b", "\ud800",
     "\udfff", "[", "]", "(", ")", "!", "*", "_", "`", "$", ":", "<", ">", "#", "|", "~", "a",
     "https://", "www.", "@", " ", "é"])
HOSTILE_TEXT = st.lists(HOSTILE_CHARS, max_size=40).map("".join)


def packraw(raw: bytes) -> str:
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


# --- ragged CSV --------------------------------------------------------------------------------

@st.composite
def ragged_csvs(draw: st.DrawFn) -> tuple[bytes, int]:
    """A small header over rows of any width (some far past MAX_COLUMNS), some cells quoted
    with commas inside; returns the file and its widest row's cells outside quotes."""
    header = ["D", "AL", "source"][: draw(st.integers(1, 3))]
    lines = [",".join(header)]
    widest = len(header)
    for _ in range(draw(st.integers(1, 4))):
        n = draw(st.sampled_from([1, 2, 3, MAX_COLUMNS, MAX_COLUMNS + 1, 1000, 20_000]))
        cells = ["1", "1.5", *(["9"] * (n - 2))][:n]
        if draw(st.booleans()):  # a quoted cell with commas inside is one cell
            cells[-1] = '"' + "x," * draw(st.integers(0, 600)) + '"'
        lines.append(",".join(cells))
        widest = max(widest, n)
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    ending = newline if draw(st.booleans()) else ""
    return (newline.join(lines) + ending).encode(), widest


@FAST
@given(ragged_csvs())
def test_a_ragged_csv_is_refused_by_its_widest_row_or_read(case: tuple[bytes, int]) -> None:
    data, widest = case
    result = parse_as("ragged.csv", data, "al_curve_csv")
    check_result(result)
    capped = any("(MAX_COLUMNS)" in p.message for p in result.problems)
    assert capped == (widest > MAX_COLUMNS), (widest, result.problems[:2])


# --- JSON behind every reader ------------------------------------------------------------------

@st.composite
def hostile_json(draw: st.DrawFn) -> str:
    """Nesting of mixed lists and objects to any depth (some closed, some not), long numbers,
    and brackets inside strings (which do not nest)."""
    depth = draw(st.sampled_from([0, 1, 5, MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH,
                                  MAX_JSON_DEPTH + 1, 200, 5000]))
    opens = draw(st.lists(st.sampled_from(['[', '{"k": ']), min_size=depth, max_size=depth))
    digits = draw(st.sampled_from([1, 20, MAX_NUMBER_CHARS, MAX_NUMBER_CHARS + 1, 5000]))
    leaf = draw(st.sampled_from([
        "-" + "9" * digits, "0." + "1" * digits, '"[[[{{{"', "1e999", "null",
        '"' + "9" * 6000 + '"']))
    closes = "".join("]" if o == "[" else "}" for o in reversed(opens))
    if draw(st.booleans()):
        closes = closes[: len(closes) // 2]  # cut short
    return "".join(opens) + leaf + closes


@FAST
@given(hostile_json())
def test_the_one_json_reader_refuses_with_a_named_cap_or_parses(text: str) -> None:
    try:
        value = load_json(text)
    except ValueError as exc:
        assert re.search(r"\(MAX_[A-Z_]+\)|not valid JSON|not usable JSON", str(exc)), exc
    else:
        assert value == json.loads(text)


@FAST
@given(hostile_json(), st.sampled_from(["cm", "cd"]))
def test_a_packed_link_value_holding_any_json_is_a_warning_or_a_spec(text: str, key: str
                                                                     ) -> None:
    value = packraw(text.encode("utf-8", "surrogatepass"))
    for state in (decode({key: value, "v": "2"}), decode_view({key: value})):
        if key in state.fell_back:
            assert any(f"'{key}=" in w for w in state.warnings), state.warnings
        else:
            unpack(value, ModelSpec if key == "cm" else DrafterSpec)


# --- user text on a page and a terminal ---------------------------------------------------------

@settings(max_examples=400, deadline=None)
@given(HOSTILE_TEXT, st.one_of(st.none(), st.integers(1, 50)))
def test_shown_text_carries_no_markup_control_or_surrogate(text: str, limit: int | None) -> None:
    for markdown in (True, False):
        out = shown(text, limit, markdown=markdown)
        out.encode("utf-8")  # a lone surrogate would raise here
        assert not re.search("[\x00-\x1f\x7f-\x9f\u202e\u2028\ufeff]", out), repr(out)
        if markdown:
            assert not re.search(r"(?<!\\)[\[\]!*_`$<>]", out), repr(out)
            assert "https://" not in out and "www." not in out
    quote(text).encode("utf-8")


@settings(max_examples=200, deadline=None)
@given(st.lists(HOSTILE_TEXT, max_size=5))
def test_the_terminal_gate_keeps_lines_and_escapes_the_rest(parts: list[str]) -> None:
    import io

    sink = io.StringIO()
    gate = TerminalText(sink)  # type: ignore[arg-type]
    for p in parts:
        gate.write(p)
    out = sink.getvalue()
    out.encode("utf-8")
    assert out.count("\n") == sum(p.count("\n") for p in parts)
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f]", out), repr(out)


# --- deployment weights near the float limit ----------------------------------------------------

WEIGHT = st.one_of(st.sampled_from([0.0, 1e-320, 1.0, 1e300, 1e308, 1.7e308]),
                   st.floats(0, 1e308, allow_nan=False, allow_infinity=False))


@FAST
@given(st.lists(WEIGHT, min_size=1, max_size=6), st.lists(WEIGHT, min_size=1, max_size=6))
def test_a_profile_is_refused_as_a_whole_or_its_shares_sum_to_one(wb: list[float],
                                                                   wc: list[float]) -> None:
    data = {"concurrency": {"kind": "histogram", "batches": list(range(1, len(wb) + 1)),
                            "weights": wb},
            "context": {"kind": "buckets", "contexts": list(range(1, len(wc) + 1)),
                        "weights": wc}}
    try:
        profile = DeploymentProfile.model_validate(data)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        assert "weights" in str(exc), exc
        assert not (math.isfinite(sum(wb)) and sum(wb) > 0
                    and math.isfinite(sum(wc)) and sum(wc) > 0)
        return
    for _, w in (profile.batch_buckets(), profile.context_buckets()):
        assert np.isfinite(w).all() and abs(float(w.sum()) - 1.0) < 1e-9
    if profile.link_problem() is None:  # what a link can carry, it carries
        profile_from_url(profile.to_url())


# --- packed models with absurd dimensions -------------------------------------------------------

@FAST
@given(st.sampled_from(["hidden", "vocab", "q_heads", "kv_heads", "head_dim", "layers",
                        "ffn_intermediate", "n_routed_experts", "sliding_window"]),
       st.one_of(st.integers(-2, 2**70), st.sampled_from([1e20, 1e308, 4.5, -0.0])))
def test_a_packed_model_is_held_to_a_config_files_bounds(field: str, value: float) -> None:
    value_json = json.dumps({**SMALL_MODEL, field: value})
    try:
        spec = unpack(packraw(value_json.encode()), ModelSpec)
    except ValueError as exc:
        assert field in str(exc) or "ModelSpec" in str(exc), exc
        return
    assert spec.hidden <= MAX_HIDDEN and spec.vocab <= MAX_VOCAB

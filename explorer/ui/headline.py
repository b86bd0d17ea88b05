"""A page's headline numbers (speedup, AL, tokens/s, memory): a row of Markdown, not metric
widgets.

Measured (benchmarks/bench_floor.py's pairing, a DOM timeline in Chromium on 2 cores, 8 rounds):
the browser loads each kind of element's code on its first use, and on a session's first look at
the Explorer the five `st.metric` (their code with a number-formatting library) and the Apply
button held its chart back ~0.07× the framework floor; the same numbers as Markdown with HTML
(whose parser is a 190 KB chunk) ~0.05×, as `st.html` ~0.03×. Markdown in columns is drawn by code
the page has loaded already: label, value, a tinted note under it (the interval, the baseline,
the capacity), the explanation behind the help icon.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import streamlit as st

from explorer.ui.text import md_text

Tone = Literal["neutral", "good", "bad"]
KEY = "headline_numbers"  # the row's container: the page's CSS class st-key-headline_numbers
NOTE_COLOUR: dict[Tone, str] = {"neutral": "gray", "good": "green", "bad": "red"}


@dataclass(frozen=True)
class Number:
    """One headline number: `note` goes under the value, `help` behind the help icon."""

    label: str
    value: str
    note: str | None = None
    tone: Tone = "neutral"
    help: str | None = None


def markdown(n: Number) -> str:
    """One number as Markdown: the label, the value as a heading, the note as a tinted badge."""
    note = f"\n\n:{NOTE_COLOUR[n.tone]}-badge[{md_text(n.note)}]" if n.note else ""
    return f"{md_text(n.label)}\n\n### {md_text(n.value)}{note}"


def show(numbers: Sequence[Number]) -> None:
    with st.container(key=KEY):
        for col, n in zip(st.columns(len(numbers)), numbers, strict=True):
            col.markdown(markdown(n), help=n.help, anchors=False)

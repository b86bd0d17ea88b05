"""A page's headline numbers (speedup, AL, tokens/s, memory): a row of Markdown, not metric
widgets.

The browser loads each kind of element's code on its first use. Measured on a session's first
look at the Explorer (five servers alternated in one Chromium, 8 rounds, the first chart against
the framework floor of benchmarks/bench_floor.py): with five `st.metric` and the Apply button in
the first paint 1.14×; with Apply left for the controls' run, the numbers as Markdown with HTML
(whose parser is a 190 KB chunk) 1.12×, as `st.html` 1.09×, as Markdown in columns 1.07× — code
the page has loaded already. They read the same: label, value, a tinted badge under it (the
interval, the baseline, the capacity), the explanation behind the help icon.
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

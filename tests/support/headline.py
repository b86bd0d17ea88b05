"""Read a page's headline numbers (explorer/ui/headline.py) back: from an AppTest, from a
WebSocket run's elements, or in a browser."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from explorer.ui.headline import KEY, NOTE_COLOUR, Number, Tone


def unshown(text: str) -> str:
    """The text that md_text escaped for Markdown."""
    return re.sub(r"\\(.)", r"\1", text).replace("\u2060", "")


_TONE_OF: dict[str, Tone] = {colour: tone for tone, colour in NOTE_COLOUR.items()}
_NUMBER = re.compile(r"\A(?P<label>[^\n]+)\n\n### (?P<value>[^\n]+)"
                     r"(?:\n\n:(?P<colour>\w+)-badge\[(?P<note>.*)\])?\Z", re.S)


def parse(bodies: Iterable[tuple[str, str]]) -> dict[str, Number]:
    """Every headline number among these (Markdown body, help) pairs, by label."""
    out: dict[str, Number] = {}
    for body, help_text in bodies:
        m = _NUMBER.match(body)
        if m is None:
            continue
        label = unshown(m["label"])
        out[label] = Number(label, unshown(m["value"]),
                            unshown(m["note"]) if m["note"] is not None else None,
                            _TONE_OF.get(m["colour"] or "gray", "neutral"),
                            help_text or None)
    return out


def numbers(at: Any) -> dict[str, Number]:
    """An AppTest's headline numbers, by label."""
    return parse((str(m.value), str(m.proto.help)) for m in at.markdown)


def value(at: Any, label: str) -> str:
    """One headline number's value as shown (an AppTest)."""
    return numbers(at)[label].value


SELECTOR = f".st-key-{KEY} [data-testid='stColumn']"  # one number's box in the page


def box_in_browser(page: Any, label: str) -> Any:
    """The box of the number under this label (a Playwright locator)."""
    return page.locator(SELECTOR).filter(has_text=re.compile(rf"^{re.escape(label)}\s")).first


def value_in_browser(page: Any, label: str) -> str:
    """The value under this label, as the browser shows it."""
    return str(box_in_browser(page, label).locator("h3").inner_text()).strip()

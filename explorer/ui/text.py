"""User-provided text (URL values, file and dataset names, labels from files) shown as text.

Streamlit renders Markdown (links, images, ``$math$``, ``:color[…]``, ``:icon:``, and bare
``https://…``, ``www.…`` and e-mail addresses as links) in alerts, captions and markdown; Plotly
renders a subset of HTML (``<a href>``, ``<b>``, ``<br>``) in trace names and hover text. Anything
a user or a shared link supplies goes through these first.
"""

from __future__ import annotations

import html
import re

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$:&])")
_WORD_JOINER = "\u2060"  # invisible; breaks the patterns that turn bare text into links
_AUTOLINK = re.compile(r"(?i)(://|\bwww(?=\.)|@)")


def md_text(text: str) -> str:
    """Escape every character Markdown or Streamlit could read as markup (shown literally)."""
    text = _AUTOLINK.sub(lambda m: {"://": ":" + _WORD_JOINER + "//", "@": _WORD_JOINER + "@"}
                         .get(m.group(1), m.group(1) + _WORD_JOINER), text)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def plotly_text(text: str) -> str:
    """Escape the HTML that Plotly renders in names and hover text (shown literally)."""
    return html.escape(text, quote=False)

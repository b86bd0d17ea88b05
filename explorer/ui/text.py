"""User-provided text (URL values, file and dataset names, labels from files) shown as text.

Streamlit renders Markdown (links, images, ``$math$``, ``:color[…]``, ``:icon:``) in alerts,
captions and markdown; Plotly renders a subset of HTML (``<a href>``, ``<b>``, ``<br>``) in
trace names and hover text. Anything a user or a shared link supplies goes through these first.
"""

from __future__ import annotations

import html
import re

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$:&])")


def md_text(text: str) -> str:
    """Escape every character Markdown or Streamlit could read as markup (shown literally)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def plotly_text(text: str) -> str:
    """Escape the HTML that Plotly renders in names and hover text (shown literally)."""
    return html.escape(text, quote=False)

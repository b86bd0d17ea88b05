"""User-provided text (URL values, file and dataset names, labels from files) shown as text.

Streamlit renders Markdown (links, images, ``$math$``, ``:color[…]``, ``:icon:``, and bare
``https://…``, ``www.…`` and e-mail addresses as links) in alerts, captions and markdown; Plotly
renders a subset of HTML (``<a href>``, ``<b>``, ``<br>``) in trace names and hover text. Anything
a user or a shared link supplies goes through these first: both are the one quoting function of
explorer/base/quoting.py (controls and lone surrogates escaped as well).
"""

from __future__ import annotations

import html

from explorer.base.quoting import shown


def md_text(text: str) -> str:
    """Escape every character Markdown or Streamlit could read as markup (shown literally)."""
    return shown(text)


def plotly_text(text: str) -> str:
    """Escape the HTML that Plotly renders in names and hover text (shown literally)."""
    return html.escape(shown(text, markdown=False), quote=False)

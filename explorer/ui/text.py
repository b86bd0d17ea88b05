"""User-provided text (URL values, file and dataset names, labels from files) shown as text.

Streamlit renders Markdown (links, images, ``$math$``, ``:color[…]``, ``:icon:``, and bare
``https://…``, ``www.…`` and e-mail addresses as links) in alerts, captions and markdown; Plotly
renders a subset of HTML (``<a href>``, ``<b>``, ``<br>``) in trace names and hover text. Anything
a user or a shared link supplies goes through these first: both are the one quoting function of
explorer/base/quoting.py (controls and lone surrogates escaped as well).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import pandas as pd

from explorer.base.quoting import shown


def md_text(text: str) -> str:
    """Escape every character Markdown or Streamlit could read as markup (shown literally)."""
    return shown(text)


def plotly_text(text: str) -> str:
    """Escape the HTML that Plotly renders in names and hover text (shown literally)."""
    return html.escape(shown(text, markdown=False), quote=False)


def md_table(df: pd.DataFrame, fmt: Callable[[Any], str] = str) -> str:
    """A small table as one Markdown table, every cell shown literally. One element for the
    browser to draw: st.table draws each cell as a Markdown block of its own (~50 for a six-row
    table), which cost a page a third of a second to draw on a loaded machine. Numbers are
    right-aligned, as st.table aligns them."""
    head = [md_text(str(c)) for c in df.columns]
    align = ["---:" if pd.api.types.is_numeric_dtype(t) else "---" for t in df.dtypes]
    rows = [[md_text(fmt(v)) for v in r] for r in df.itertuples(index=False)]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in [head, align, *rows])

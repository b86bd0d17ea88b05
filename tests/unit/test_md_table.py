"""explorer.ui.text.md_table: a small table as one Markdown table, every cell shown literally."""

from __future__ import annotations

import pandas as pd

from explorer.ui.text import md_table


def test_one_markdown_table_with_every_cell_literal() -> None:
    df = pd.DataFrame({"policy": ["static", "a|b *c*"], "tokens/s": [1234.46, 7.0]})
    text = md_table(df, lambda v: f"{v:,.1f}" if isinstance(v, float) else str(v))
    assert text.splitlines() == [
        "| policy | tokens/s |",
        "| --- | ---: |",  # numbers right-aligned
        "| static | 1,234\\.5 |",
        "| a\\|b \\*c\\* | 7\\.0 |",  # a pipe does not split the row, markup is not read
    ]

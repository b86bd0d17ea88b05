"""Limits shared by the types, the parsers, the URL, the CLI and the charts: each declared once."""

from __future__ import annotations

# D: the largest draft length the model evaluates (scenario, mechanisms, CLI lists).
MAX_DRAFT_LEN = 64
# D on the explorer's axes and slider: the article's figures run to D = 32.
VIEW_MAX_DRAFT_LEN = 32
# Rows of a measured timing table embedded in a scenario (kernel or step times).
MAX_MEASURED_ROWS = 200_000
# Points of one measured AL curve.
MAX_CURVE_POINTS = 256
# Characters of a dataset's label and of its one-line source/provenance text (storage, display).
MAX_LABEL_CHARS = 200
MAX_SOURCE_CHARS = 500

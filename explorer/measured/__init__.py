"""Parsers that turn files architects already have into validated datasets.

    parse_bytes(name, data)  -> ParseResult   (format detected from the content)
    validate_path(path)      -> ParseResult

Neither raises: every problem (row, field, reason) comes back in ``ParseResult.problems``, and
a result with errors holds no datasets. ``FORMATS`` lists the accepted formats with a template
and parser each; ``json_schema(name)`` describes one.
"""

from __future__ import annotations

from explorer.measured._entry import detect_format, parse_as, validate_path
from explorer.measured.templates import FORMATS, FormatInfo, json_schema, template
from explorer.specs.measured import (
    KNOWN_MECHANISMS,
    AcceptanceCurve,
    AttentionTimings,
    DraftStyle,
    GemmTimings,
    KernelTimings,
    Mechanism,
    ParseResult,
    Problem,
    Provenance,
    StepTimings,
)


def parse_bytes(name: str, data: bytes, fmt: str | None = None) -> ParseResult:
    """Parse an uploaded file. ``fmt`` forces a format; by default it is detected. Never raises."""
    return parse_as(name, data, fmt)


__all__ = [
    "FORMATS",
    "KNOWN_MECHANISMS",
    "AcceptanceCurve",
    "AttentionTimings",
    "DraftStyle",
    "FormatInfo",
    "GemmTimings",
    "KernelTimings",
    "Mechanism",
    "ParseResult",
    "Problem",
    "Provenance",
    "StepTimings",
    "detect_format",
    "json_schema",
    "parse_bytes",
    "template",
    "validate_path",
]

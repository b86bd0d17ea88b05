"""What one file may cost: the caps of explorer/base/limits.py, checked before the work they
bound, each refusal naming its cap. Every check here is linear in the file and allocates at most
a small multiple of it (str.count, one regex pass, numpy over bytes)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np

from explorer.base.limits import MAX_JSON_DEPTH, MAX_JSON_VALUES, MAX_ROWS
from explorer.measured._problems import Collector


def over_cap(col: Collector, what: str, count: int, cap: int, noun: str, limit_name: str,
             row: int | None = None, field: str | None = None) -> None:
    """One message shape for every cap: what was found, the cap, and the cap's name."""
    col.error(f"{what} has {count:,} {noun}; the limit is {cap:,} ({limit_name})", row, field)


def count_lines(text: str) -> int:
    """Physical lines ("a\nb" and "a\nb\n" are both 2)."""
    if not text:
        return 0
    return text.count("\n") + (not text.endswith("\n"))


def iter_lines(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its line break), lazily: no list of every line."""
    lineno, pos, end = 1, 0, len(text)
    while pos < end:
        nl = text.find("\n", pos)
        stop = end if nl < 0 else nl
        if lineno > start:
            yield lineno, text[pos:stop].removesuffix("\r")
        lineno += 1
        pos = stop + 1


def first_lines(text: str, n: int) -> Iterator[str]:
    for lineno, line in iter_lines(text):
        if lineno > n:
            return
        yield line


def check_line_count(text: str, col: Collector) -> bool:
    """Text formats (CSV, Prometheus): at most a header and MAX_ROWS lines."""
    lines = count_lines(text)
    if lines > MAX_ROWS + 1:
        over_cap(col, "the file", lines, MAX_ROWS + 1, "lines",
                 "a header and MAX_ROWS lines of data")
        return False
    return True


# A JSON string, escapes included (the unrolled form runs in C, even over a 47 MB string).
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = np.zeros(256, dtype=np.int8)
_BRACKET[[ord("["), ord("{")]] = 1
_BRACKET[[ord("]"), ord("}")]] = -1


def check_json_shape(text: str, col: Collector) -> bool:
    """JSON (one document or JSON lines): at most MAX_JSON_VALUES values nested at most
    MAX_JSON_DEPTH deep, counted on the text before json.loads builds a Python object per
    value (or recurses once per level)."""
    skeleton = _JSON_STRING.sub('""', text)  # brackets and commas inside strings do not count
    values = skeleton.count(",") + skeleton.count("[") + skeleton.count("{") + 1
    if values > MAX_JSON_VALUES:
        over_cap(col, "the JSON", values, MAX_JSON_VALUES,
                 "values (counted by separators)", "MAX_JSON_VALUES")
        return False
    delta = _BRACKET[np.frombuffer(skeleton.encode("utf-8", "replace"), dtype=np.uint8)]
    steps = delta[np.flatnonzero(delta)].astype(np.int64)
    depth = int(np.cumsum(steps).max()) if steps.size else 0
    if depth > MAX_JSON_DEPTH:
        over_cap(col, "the JSON", depth, MAX_JSON_DEPTH,
                 "levels of nesting (counting brackets still open)", "MAX_JSON_DEPTH")
        return False
    return True

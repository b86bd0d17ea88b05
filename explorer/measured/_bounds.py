"""What one file may cost: the caps of explorer/base/limits.py, checked before the work they
bound, each refusal naming its cap. Every check here is linear in the file and allocates at most
a small multiple of it (str.count, one regex pass, numpy over bytes)."""

from __future__ import annotations

from collections.abc import Iterator

from explorer.base.limits import MAX_ROWS
from explorer.base.reading import cap_message, json_shape_problem
from explorer.measured._problems import Collector


def over_cap(col: Collector, what: str, count: int, cap: int, noun: str, limit_name: str,
             row: int | None = None, field: str | None = None) -> None:
    """One message shape for every cap: what was found, the cap, and the cap's name."""
    col.error(cap_message(what, count, cap, noun, limit_name), row, field)


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


def check_json_shape(text: str, col: Collector) -> bool:
    """JSON (one document or JSON lines): within MAX_JSON_VALUES values, MAX_JSON_DEPTH levels
    and MAX_NUMBER_CHARS per number, counted on the text before json.loads builds a Python
    object per value (or recurses once per level): explorer/base/reading.py's one check."""
    problem = json_shape_problem(text)
    if problem is not None:
        col.error(problem)
        return False
    return True

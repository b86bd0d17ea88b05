"""JSON values: parsing with a located error, and numbers that are really numbers."""

from __future__ import annotations

import json
import math

from explorer.measured._csv import MAX_INT
from explorer.measured._problems import Collector


def load_json(text: str, col: Collector) -> object | None:
    try:
        parsed: object = json.loads(text)
        return parsed
    except json.JSONDecodeError as exc:
        col.error(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", exc.lineno)
    except RecursionError:
        col.error("not usable JSON: nested too deeply")
    except ValueError as exc:
        col.error(f"not valid JSON: {exc}")
    return None


def json_number(value: object) -> float | None:
    """A JSON number (not a bool) as float, else None."""
    if type(value) is float:  # the common case first: JSON lines call this per value
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def json_int(value: object) -> int | None:
    if type(value) is int:
        return value if abs(value) <= MAX_INT else None
    v = json_number(value)
    if v is None or not math.isfinite(v) or v != int(v) or abs(v) > MAX_INT:
        return None
    return int(v)


def int_key(key: str) -> int | None:
    try:
        v = int(str(key).strip())
    except ValueError:
        return None
    return v if abs(v) <= MAX_INT else None

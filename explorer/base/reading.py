"""Reading what a user gives — a file, a JSON text — within the caps of explorer/base/limits.py,
checked before the work they bound: a file's kind and size before it is read (a FIFO would block,
/dev/zero never ends), a JSON text's nesting, value count and number lengths before json.loads
recurses once per level or builds an object per value. Every refusal is a ValueError whose text
names the cap; the measured-data parsers, the CLI's --scenario/--profile, packed specs in links
(`cm`, `cd`) and saved views all read through here."""

from __future__ import annotations

import json
import os
import re
import stat

import numpy as np

from explorer.base.limits import (
    MAX_FILE_BYTES,
    MAX_JSON_DEPTH,
    MAX_JSON_VALUES,
    MAX_NUMBER_CHARS,
)
from explorer.base.quoting import quote


def cap_message(what: str, count: int, cap: int, noun: str, limit_name: str) -> str:
    """One message shape for every cap: what was found, the cap, and the cap's name."""
    return f"{what} has {count:,} {noun}; the limit is {cap:,} ({limit_name})"


# A JSON string, escapes included (the unrolled form runs in C, even over a 47 MB string).
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_LONG_NUMBER = re.compile(rf"[-+0-9.eE]{{{MAX_NUMBER_CHARS + 1},}}")
_BRACKET = np.zeros(256, dtype=np.int8)
_BRACKET[[ord("["), ord("{")]] = 1
_BRACKET[[ord("]"), ord("}")]] = -1


def json_shape_problem(text: str) -> str | None:
    """Why a JSON text (one document or JSON lines) is over the caps — more than
    MAX_JSON_VALUES values, nested deeper than MAX_JSON_DEPTH, a number longer than
    MAX_NUMBER_CHARS — counted on the text (linear, no recursion); None when within them."""
    skeleton = _JSON_STRING.sub('""', text)  # brackets and commas inside strings do not count
    values = skeleton.count(",") + skeleton.count("[") + skeleton.count("{") + 1
    if values > MAX_JSON_VALUES:
        return cap_message("the JSON", values, MAX_JSON_VALUES, "values (counted by separators)",
                           "MAX_JSON_VALUES")
    delta = _BRACKET[np.frombuffer(skeleton.encode("utf-8", "replace"), dtype=np.uint8)]
    steps = delta[np.flatnonzero(delta)].astype(np.int64)
    depth = int(np.cumsum(steps).max()) if steps.size else 0
    if depth > MAX_JSON_DEPTH:
        return cap_message("the JSON", depth, MAX_JSON_DEPTH,
                           "levels of nesting (counting brackets still open)", "MAX_JSON_DEPTH")
    long_number = _LONG_NUMBER.search(skeleton)
    if long_number is not None:
        n = len(long_number.group())
        return cap_message(f"the JSON number {quote(long_number.group())}", n, MAX_NUMBER_CHARS,
                           "characters", "MAX_NUMBER_CHARS")
    return None


def load_json(text: str) -> object:
    """A JSON text within the caps, parsed; ValueError with a one-line reason otherwise (never
    RecursionError: the depth is checked first)."""
    problem = json_shape_problem(text)
    if problem is not None:
        raise ValueError(problem)
    try:
        parsed: object = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
                         ) from None
    except (RecursionError, ValueError) as exc:  # belt and braces: the scan bounds both
        raise ValueError(f"not usable JSON: {type(exc).__name__}") from None
    return parsed


_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"))


def not_regular(mode: int) -> str | None:
    """What a non-regular file is (opening a FIFO would block until a writer comes; a device
    such as /dev/zero never ends)."""
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _FILE_KINDS if test(mode)), "not a regular file")


def read_file(path: str | os.PathLike[str], max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """A regular file's bytes, at most `max_bytes`; ValueError naming the path (quoted) and why
    otherwise. Never blocks: the kind is checked before the file is opened, and again on the
    descriptor (opened non-blocking, so a FIFO swapped in meanwhile cannot hang), and at most
    max_bytes + 1 bytes are read whatever the size says."""
    shown = quote(os.fspath(path), 200)
    try:
        kind = not_regular(os.stat(path).st_mode)
        if kind is None:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "rb") as fh:
                st = os.fstat(fh.fileno())
                kind = not_regular(st.st_mode)
                size = st.st_size
                data = fh.read(max_bytes + 1) if kind is None and size <= max_bytes else b""
    except OSError as exc:
        raise ValueError(f"cannot read {shown}: {exc.strerror or exc}") from None
    if kind is not None:
        raise ValueError(f"cannot read {shown}: it is {kind}, not a regular file")
    if size > max_bytes or len(data) > max_bytes:
        raise ValueError(f"{shown} is {max(size, len(data)) / 2**20:.1f} MiB; the limit is "
                         f"{max_bytes / 2**20:.0f} MiB (MAX_FILE_BYTES)")
    return data


def read_json_file(path: str | os.PathLike[str], max_bytes: int = MAX_FILE_BYTES) -> object:
    """A JSON file within every cap (kind, size, UTF-8, nesting, values, number lengths);
    ValueError naming the path and the reason."""
    data = read_file(path, max_bytes)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{quote(os.fspath(path), 200)} is not UTF-8 text (byte "
                         f"{exc.start})") from None
    try:
        return load_json(text)
    except ValueError as exc:
        raise ValueError(f"{quote(os.fspath(path), 200)}: {exc}") from None

"""Text read from files, shown in messages and labels: control characters escaped, cells quoted
as a short prefix. A terminal or a page then shows what the file holds, never what it asks for
(ANSI/OSC escapes, bidi overrides, a 47-million-character cell)."""

from __future__ import annotations

import re
import reprlib

from explorer.base.limits import MAX_QUOTE_CHARS

# C0 and C1 controls, DEL, zero-width and bidi controls, line/paragraph separators, the BOM.
_CONTROL = re.compile(
    "[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]"
)
ELLIPSIS = "…"


def _escape_one(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]  # repr-style: '\x1b', '\n', '\u202e'


def escape_controls(text: str) -> str:
    """Every control character as its repr escape; idempotent (the escapes are printable)."""
    return _CONTROL.sub(_escape_one, text)


def bounded(text: str, limit: int) -> str:
    """Control characters escaped, at most `limit` characters (cut ones end in '…')."""
    if len(text) > limit:  # cut before escaping too, so a huge text costs only its prefix
        text = text[:limit]
    out = escape_controls(text)
    return out if len(out) <= limit else out[: limit - 1] + ELLIPSIS


def _prefix(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + ELLIPSIS


def _short_repr() -> reprlib.Repr:
    r = reprlib.Repr()  # Python 3.11's Repr takes no keyword arguments
    r.maxlevel, r.maxlist, r.maxdict, r.maxtuple, r.maxset = 2, 4, 4, 4, 4
    r.maxstring, r.maxother, r.maxlong = MAX_QUOTE_CHARS, MAX_QUOTE_CHARS, 24
    return r


_SHORT_REPR = _short_repr()


def quote(value: object, limit: int = MAX_QUOTE_CHARS) -> str:
    """A cell or JSON value for a message: quoted, at most `limit` characters of it then '…',
    control characters escaped. Non-strings are shown by a bounded repr (a 2-million-element
    list costs its first few elements)."""
    text = value if isinstance(value, str) else _SHORT_REPR.repr(value)
    return f"'{escape_controls(_prefix(text, limit))}'"

"""User-provided text shown on a page or printed to a terminal: the one quoting of it.

`shown` is that one function: lone surrogates and control characters escaped (a terminal or a
page then shows what the text holds, never what it asks for: ANSI/OSC escapes, bidi overrides,
a character UTF-8 cannot encode), and for a page that renders Markdown every character Markdown
or Streamlit could read as markup escaped too (links, images, ``$math$``, ``:color[…]``, bare
``https://…``). Model names from a link, file paths and flag values echoed by the CLI, cells
quoted in problem messages: all go through it. A terminal renders no Markdown, so text printed
there skips that part (``markdown=False``) rather than show a path as ``data\\.csv``.

`quote` is `shown` for a cell or value inside a message (quoted, a short prefix); `bounded` for
whole messages and labels (controls escaped, cut to a limit).
"""

from __future__ import annotations

import re
import reprlib

from explorer.base.limits import MAX_QUOTE_CHARS

# C0 and C1 controls, DEL, zero-width and bidi controls, line/paragraph separators, the BOM, and
# lone surrogates (UTF-8 cannot encode them: printing or sending one raises).
_CONTROL = re.compile(
    "[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff]"
)
# Markdown and Streamlit markup: emphasis, code, links and images, headings, lists, tables,
# strikethrough, HTML, math, colour and icon directives.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$:&])")
_WORD_JOINER = "\u2060"  # invisible; breaks the patterns that turn bare text into links
_AUTOLINK = re.compile(r"(?i)(://|\bwww(?=\.)|@)")
ELLIPSIS = "…"


def _escape_one(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]  # repr-style: '\x1b', '\n', '\u202e', '\ud800'


def escape_controls(text: str) -> str:
    """Every control character and lone surrogate as its repr escape; idempotent (the escapes
    are printable ASCII)."""
    return _CONTROL.sub(_escape_one, text)


def _escape_markdown(text: str) -> str:
    text = _AUTOLINK.sub(lambda m: {"://": ":" + _WORD_JOINER + "//", "@": _WORD_JOINER + "@"}
                         .get(m.group(1), m.group(1) + _WORD_JOINER), text)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def shown(text: object, limit: int | None = None, *, markdown: bool = True) -> str:
    """The one quoting of user text for a screen or terminal: at most `limit` characters of it
    (cut ones end in '…'), Markdown escaped (unless `markdown` is False: a terminal), then
    controls and lone surrogates escaped. Not idempotent where Markdown is escaped: quote once,
    where the text meets the page."""
    s = text if isinstance(text, str) else str(text)
    if limit is not None and len(s) > limit:  # cut before escaping, so a huge text costs little
        s = s[:limit] + ELLIPSIS
    if markdown:
        s = _escape_markdown(s)
    return escape_controls(s)


def bounded(text: str, limit: int) -> str:
    """Control characters escaped, at most `limit` characters (cut ones end in '…')."""
    if len(text) > limit:  # cut before escaping too, so a huge text costs only its prefix
        text = text[:limit]
    out = escape_controls(text)
    return out if len(out) <= limit else out[: limit - 1] + ELLIPSIS


def _short_repr() -> reprlib.Repr:
    r = reprlib.Repr()  # Python 3.11's Repr takes no keyword arguments
    r.maxlevel, r.maxlist, r.maxdict, r.maxtuple, r.maxset = 2, 4, 4, 4, 4
    r.maxstring, r.maxother, r.maxlong = MAX_QUOTE_CHARS, MAX_QUOTE_CHARS, 24
    return r


_SHORT_REPR = _short_repr()


def quote(value: object, limit: int = MAX_QUOTE_CHARS) -> str:
    """A cell, JSON value, path or flag value inside a message: quoted, at most `limit`
    characters of it then '…', controls and lone surrogates escaped (`shown` for a terminal; a
    page escapes the whole message's Markdown where it shows it). Non-strings are shown by a
    bounded repr (a 2-million-element list costs its first few elements)."""
    text = value if isinstance(value, str) else _SHORT_REPR.repr(value)
    return f"'{shown(text, limit, markdown=False)}'"

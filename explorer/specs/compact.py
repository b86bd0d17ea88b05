"""A spec as one compact URL value: its fields as canonical JSON, zlib-compressed, base64url.

Links carry a custom model or drafter this way (URL keys `cm`, `cd`: explorer/specs/settings.py).
Reading one never executes anything: the text is bounded before and after decompression, then
parsed as JSON within the caps every JSON reader meets (nesting, values, number lengths:
explorer/base/reading.py, so a 110-character link nesting 60,000 deep is a message, not a
RecursionError) and validated by the spec's own pydantic model, whose dimension bounds are a
config file's (hidden = 1e20 is refused); any problem is a ValueError with a one-line reason.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from explorer.base.reading import load_json

# A model spec packs to ~1 kB; these bounds leave room and stop a zip bomb or a huge link.
MAX_PACKED_CHARS = 4096
MAX_UNPACKED_BYTES = 65_536
_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

T = TypeVar("T", bound=BaseModel)


def pack(spec: BaseModel) -> str:
    """The spec's fields (defaults left out) as sorted-key JSON, compressed, base64url, no
    padding: the same spec always packs to the same text."""
    text = json.dumps(spec.model_dump(mode="json", exclude_defaults=True), sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)
    raw = zlib.compress(text.encode("utf-8"), 9)
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def unpack(text: str, cls: type[T]) -> T:
    """The spec a packed value holds; ValueError naming what is wrong."""
    if len(text) > MAX_PACKED_CHARS:
        raise ValueError(f"too long ({len(text):,} characters; at most {MAX_PACKED_CHARS:,})")
    if not text or not set(text) <= _ALPHABET:
        raise ValueError("not a packed spec (base64url characters A-Z a-z 0-9 - _)")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        inflater = zlib.decompressobj()
        data = inflater.decompress(raw, MAX_UNPACKED_BYTES)
        if inflater.unconsumed_tail:
            raise ValueError(f"does not unpack within {MAX_UNPACKED_BYTES:,} bytes")
        if not inflater.eof:
            raise ValueError("not a packed spec (cut short)")
        text_json = data.decode("utf-8")
    except (binascii.Error, zlib.error, UnicodeDecodeError) as exc:
        raise ValueError(f"not a packed spec ({type(exc).__name__})") from None
    try:
        obj = load_json(text_json)
    except ValueError as exc:
        raise ValueError(f"not a packed spec: {exc}") from None
    if not isinstance(obj, dict):
        raise ValueError("not a packed spec (not an object)")
    try:
        return cls.model_validate(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or cls.__name__
        raise ValueError(f"not a valid {cls.__name__}: {where}: {err['msg']}") from None


def packed_problem(cls: type[BaseModel]) -> Callable[[str], str | None]:
    """A URL value's check for a packed spec of `cls` ("" is none: valid)."""
    def problem(text: str) -> str | None:
        if not text:
            return None
        try:
            unpack(text, cls)
        except ValueError as exc:
            return str(exc)
        return None
    return problem

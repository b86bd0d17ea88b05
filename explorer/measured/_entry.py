"""Decoding, format detection and the never-raising entry points."""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from explorer.base.limits import MAX_FILE_BYTES, MAX_LABEL_CHARS
from explorer.base.quoting import quote
from explorer.base.reading import read_file
from explorer.measured import (
    al_csv,
    position_csv,
    sglang_bench,
    specdec_profile,
    speed_bench,
    timings,
    vllm_dynamic,
    vllm_metrics,
)
from explorer.measured._bounds import check_json_shape, check_line_count
from explorer.measured._csv import find_column, read_header
from explorer.measured._problems import Collector, finish
from explorer.specs.measured import ParseResult, Problem

Parser = Callable[[str, str], ParseResult]

PARSERS: dict[str, Parser] = {
    al_csv.FORMAT: al_csv.parse_text,
    position_csv.FORMAT: position_csv.parse_text,
    specdec_profile.FORMAT: specdec_profile.parse_text,
    vllm_metrics.FORMAT: vllm_metrics.parse_text,
    sglang_bench.FORMAT: sglang_bench.parse_text,
    speed_bench.FORMAT: speed_bench.parse_text,
    vllm_dynamic.FORMAT: vllm_dynamic.parse_text,
    timings.KERNEL_FORMAT: timings.parse_kernels,
    timings.STEP_FORMAT: timings.parse_steps,
}
UNKNOWN_FORMAT = "unknown"


def decode(data: bytes, col: Collector) -> str | None:
    """Bytes to text: UTF-8 (BOM ok), UTF-16 with a BOM, else Windows-1252 with a warning."""
    if len(data) > MAX_FILE_BYTES:
        col.error(
            f"the file is {len(data) / 2**20:.1f} MiB; "
            f"the limit is {MAX_FILE_BYTES / 2**20:.0f} MiB"
        )
        return None
    if not data.strip():
        col.error("the file is empty")
        return None
    if data[:4] == b"PK\x03\x04":
        col.error("this is a zip archive or an Excel workbook; save the sheet as CSV (UTF-8)")
        return None
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            col.error(f"not valid UTF-16 text: {exc.reason} at byte {exc.start}")
            return None
    if b"\x00" in data:
        col.error("this is a binary file, not text (it contains NUL bytes)")
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        bad = data[exc.start]
        try:
            text = data.decode("cp1252")
        except UnicodeDecodeError:
            col.error(
                f"not UTF-8 text: byte 0x{bad:02x} at offset {exc.start} (line {line}) is "
                f"invalid; save the file as UTF-8",
                line,
            )
            return None
        col.warn(
            f"not UTF-8 (byte 0x{bad:02x} on line {line}); read as Windows-1252 — save as "
            f"UTF-8 to be sure",
            line,
        )
        return text


def _json_keys(text: str) -> set[str] | None:
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return set(obj) if isinstance(obj, dict) else None


def detect_format(name: str, text: str) -> str | None:
    """The format name for this content (the file name only breaks ties), or None."""
    stripped = text.lstrip()
    lname = name.lower()
    if stripped.startswith("{"):
        if sglang_bench.looks_like(stripped):
            return sglang_bench.FORMAT
        keys = _json_keys(stripped)
        if keys is not None:
            if keys & {"schema_version", "conditional_accept_rates", "marginal_accept_rates"}:
                return specdec_profile.FORMAT
            if keys & {"batch_stats", "acceptance_rate_per_pos", "max_num_speculative_tokens"}:
                return vllm_dynamic.FORMAT
            return None
        # Not valid JSON: guess from tell-tale keys, then from the name, so the parser can
        # report the syntax error in context.
        head = stripped[:200_000]
        if lname.endswith(".jsonl") or '"acc_length"' in head:
            return sglang_bench.FORMAT
        if '"schema_version"' in head or "speculation_profile" in lname:
            return specdec_profile.FORMAT
        if '"batch_stats"' in head or '"acceptance_rate_per_pos"' in head or "dynamic" in lname:
            return vllm_dynamic.FORMAT
        return None
    if stripped.startswith("["):
        return None
    if vllm_metrics.looks_like(text):
        return vllm_metrics.FORMAT
    header = read_header(text)
    if not header or len(header) < 2:
        return None
    if speed_bench.looks_like(header):
        return speed_bench.FORMAT
    if timings.looks_like_kernels(header):
        return timings.KERNEL_FORMAT
    if timings.looks_like_steps(header):
        return timings.STEP_FORMAT
    has_pos = find_column(header, position_csv.POSITION_ALIASES) is not None
    has_rate = any(
        find_column(header, aliases) is not None
        for aliases in (
            position_csv.RATE_ALIASES,
            position_csv.CONDITIONAL_COLUMNS,
            position_csv.MARGINAL_COLUMNS,
        )
    )
    if has_pos and has_rate:
        return position_csv.FORMAT
    if find_column(header, al_csv.D_ALIASES) and find_column(header, al_csv.AL_ALIASES):
        return al_csv.FORMAT
    return None


def _unrecognised(name: str, text: str, col: Collector) -> None:
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")) and _json_keys(stripped) is None:
        try:
            json.loads(stripped)
        except json.JSONDecodeError as exc:
            col.error(
                f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", exc.lineno
            )
            return
        except (ValueError, RecursionError):
            pass
    header = read_header(text) or []
    shown = ", ".join(h.strip()[:40] for h in header[:12])
    hint = f" (first line holds: {shown})" if shown and not text.lstrip().startswith("{") else ""
    keys = _json_keys(text.lstrip()) if text.lstrip().startswith("{") else None
    if keys is not None:
        hint = f" (a JSON object with keys {', '.join(sorted(keys)[:12])})"
    col.error(
        f"could not recognise the format of {quote(name, MAX_LABEL_CHARS)}{hint}. Accepted: "
        + ", ".join(PARSERS)
        + ". Download a template to see the expected columns or keys"
    )


def parse_as(name: str, data: bytes, fmt: str | None = None) -> ParseResult:
    """Parse ``data`` as format ``fmt`` (detected when None). Never raises."""
    try:
        col = Collector()
        if fmt is not None and fmt not in PARSERS:
            col.error(f"unknown format {quote(fmt)}; formats: {', '.join(PARSERS)}")
            return finish(UNKNOWN_FORMAT, "", col)
        text = decode(data, col)
        if text is None:
            return finish(fmt or UNKNOWN_FORMAT, "", col)
        # The file-wide caps come before anything that costs per value (json.loads, pandas).
        if text.lstrip().startswith(("{", "[")):
            if not check_json_shape(text, col):
                return finish(fmt or UNKNOWN_FORMAT, "", col)
        elif not check_line_count(text, col):
            return finish(fmt or detect_format(name, text) or UNKNOWN_FORMAT, "", col)
        chosen = fmt or detect_format(name, text)
        if chosen is None:
            _unrecognised(name, text, col)
            return finish(UNKNOWN_FORMAT, "", col)
        result = PARSERS[chosen](name, text)
        if col.problems():  # decoding warnings come first
            result = result.model_copy(update={"problems": col.problems() + result.problems})
        return result
    except Exception as exc:  # the contract: never raise on any input
        return ParseResult(
            format=fmt or UNKNOWN_FORMAT,
            summary="not loaded: internal error",
            problems=(
                Problem(
                    message=f"internal error while reading the file ({type(exc).__name__}: "
                    f"{str(exc)[:200]}); please report it with the file",
                ),
            ),
        )




def validate_path(path: str | os.PathLike[str], fmt: str | None = None) -> ParseResult:
    """Read and parse a file from disk. Never raises (missing file, directory, FIFO, device,
    too big) and never blocks: the kind of file is checked before it is opened, and again on
    the open descriptor (opened non-blocking, so a FIFO swapped in meanwhile cannot hang)."""
    name = os.path.basename(os.fspath(path))
    col = Collector()
    try:
        data = read_file(path, MAX_FILE_BYTES)  # one safe read: explorer/base/reading.py
    except ValueError as exc:
        col.error(str(exc))
        return finish(fmt or UNKNOWN_FORMAT, "", col)
    except Exception as exc:
        col.error(f"cannot read {quote(os.fspath(path), MAX_LABEL_CHARS)}: "
                  f"{type(exc).__name__}")
        return finish(fmt or UNKNOWN_FORMAT, "", col)
    return parse_as(name, data, fmt)

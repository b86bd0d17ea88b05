"""SGLang ``bench_speculative.py`` output (JSON lines, one record per configuration).

Source checked: sgl-project/sglang scripts/playground/bench_speculative.py @01d2a3d0d57b and
@96fd6bf0cbbf (the script lives under scripts/playground/, not python/sglang/). Each run
appends ``{"batch_size", "steps", "topk", "num_draft_tokens", "acc_length", "step_time",
"speed", "completion_tokens"}``: steps = --speculative-num-steps, topk =
--speculative-eagle-topk, num_draft_tokens = --speculative-num-draft-tokens (tokens verified
per sequence), acc_length = accept length incl. bonus (1.0 without speculation), step_time =
20th percentile of the server's step_time_dict in SECONDS (the script prints it x1000 as ms),
speed = acc_length / step_time. steps = topk = num_draft_tokens = 0 is the no-speculation run.

Curves: AL by steps, one per (batch_size, topk) for chains (topk = 1) and per (batch_size,
topk, num_draft_tokens) for trees. Step table: every record (draft_len = steps, verify_tokens =
num_draft_tokens, or 1 without speculation).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict

import numpy as np

from explorer.base.limits import MAX_MEASURED_DRAFT_LEN, MAX_PROBLEMS, MAX_ROWS
from explorer.base.quoting import quote
from explorer.measured._bounds import first_lines, iter_lines, over_cap
from explorer.measured._curves import build_curve, too_many_curves
from explorer.measured._json import json_int, json_number
from explorer.measured._problems import Collector, finish
from explorer.measured._time_units import TimeColumn, check_time_units, out_of_range_message
from explorer.measured.schemas import SglangBenchSpeculativeRecord
from explorer.specs.measured import (
    AcceptanceCurve,
    ParseResult,
    Provenance,
    StepTimings,
    al_within_bounds,
    times_within_bounds,
)

FORMAT = "sglang_bench_speculative"
REQUIRED = ("batch_size", "steps", "topk", "num_draft_tokens", "acc_length", "step_time")
KNOWN = set(SglangBenchSpeculativeRecord.model_fields)


def looks_like(text: str) -> bool:
    for line in first_lines(text, 50):
        s = line.strip()
        if s:
            return s.startswith("{") and '"acc_length"' in s and '"steps"' in s
    return False


# line, batch_size, steps, topk, num_draft_tokens, acc_length, step_time, speed (NaN: none)
_Record = tuple[int, int, int, int, int, float, float, float]


def _within_bounds(recs: list[_Record], col: Collector) -> list[_Record]:
    """The shared AL and time rules over all records at once (per record, numpy's overhead
    would dominate a 200k-line file); AL within the float tolerance of 1 + D becomes 1 + D."""
    if not recs:
        return recs
    line, steps, acc, t, speed = (np.asarray([r[i] for r in recs]) for i in (0, 2, 5, 6, 7))
    al_ok, t_ok = al_within_bounds(acc, steps), times_within_bounds(t)
    col.add_each("error", np.flatnonzero(~t_ok), lambda i: (
        out_of_range_message("step_time", repr(float(t[i])), float(t[i])), int(line[i]),
        "step_time"))
    col.add_each("error", np.flatnonzero(~al_ok & t_ok), lambda i: (
        f"acc_length {acc[i]:g} is outside [1, {1 + steps[i]}] for steps = {steps[i]} "
        "(1 <= AL <= 1 + D)", int(line[i]), "acc_length"))
    acc = np.minimum(acc, 1.0 + steps)
    with np.errstate(all="ignore"):  # a huge AL over a tiny time: inf, which no speed matches
        expected = acc / t
        off = (speed > 0) & np.isfinite(speed) & (np.abs(speed - expected) > 0.02 * expected)
    col.add_each("warning", np.flatnonzero(off & al_ok & t_ok), lambda i: (
        f"speed {speed[i]:g} tokens/s disagrees with acc_length / step_time = "
        f"{expected[i]:.4g}", int(line[i]), "speed"))
    keep = np.flatnonzero(al_ok & t_ok)
    return [(*recs[i][:5], float(acc[i]), *recs[i][6:]) for i in keep]


def parse_text(name: str, text: str) -> ParseResult:
    col = Collector()
    recs: list[_Record] = []
    unknown_keys: dict[str, int] = {}
    records = extra_keys = 0
    for lineno, line in iter_lines(text):
        s = line.strip()
        if not s:
            continue
        records += 1
        if records > MAX_ROWS:
            over_cap(col, "the file", records, MAX_ROWS, "records (at least)", "MAX_ROWS",
                     lineno)
            return finish(FORMAT, "", col)
        try:
            obj = json.loads(s)
        except (json.JSONDecodeError, RecursionError, ValueError) as exc:
            col.error(f"line is not a JSON object: {str(exc)[:120]}", lineno)
            continue
        if not isinstance(obj, dict):
            col.error(f"line is a JSON {type(obj).__name__}, expected an object", lineno)
            continue
        for key in obj:
            if key not in KNOWN and key not in unknown_keys:
                if len(unknown_keys) < MAX_PROBLEMS:  # a page of them is named, the rest counted
                    unknown_keys[key] = lineno
                else:
                    extra_keys += 1
        missing = [k for k in REQUIRED if k not in obj]
        for k in missing:
            col.error(f"missing key {quote(k)}", lineno, k)
        if missing:
            continue
        ints: dict[str, int] = {}
        ok = True
        for key, minimum in (("batch_size", 1), ("steps", 0), ("topk", 0), ("num_draft_tokens", 0)):
            v = json_int(obj[key])
            if v is not None and key == "steps" and v > MAX_MEASURED_DRAFT_LEN:
                col.error(f"steps {v} is past the largest draft length a measurement may name "
                          f"({MAX_MEASURED_DRAFT_LEN}, MAX_MEASURED_DRAFT_LEN)", lineno, key)
                ok = False
            elif v is None or v < minimum:
                col.error(
                    f"{key} must be a whole number >= {minimum}, got {quote(obj[key])}", lineno, key
                )
                ok = False
            else:
                ints[key] = v
        acc = json_number(obj["acc_length"])
        if acc is None or not math.isfinite(acc):
            col.error(
                f"acc_length must be a finite number, got {quote(obj['acc_length'])}",
                lineno,
                "acc_length",
            )
            ok = False
        t = json_number(obj["step_time"])
        if t is None or not math.isfinite(t):
            col.error(
                f"step_time must be a finite number, got {quote(obj['step_time'])}", lineno,
                "step_time",
            )
            ok = False
        elif t <= 0:
            col.error(f"step_time is {'negative' if t < 0 else 'zero'}: {t:g}", lineno, "step_time")
            ok = False
        if not ok or acc is None or t is None:
            continue
        if ints["steps"] > 0 and (ints["topk"] == 0 or ints["num_draft_tokens"] == 0):
            col.error("steps > 0 needs topk >= 1 and num_draft_tokens >= 1", lineno, "topk")
            continue
        speed = json_number(obj.get("speed"))
        recs.append((lineno, ints["batch_size"], ints["steps"], ints["topk"],
                     ints["num_draft_tokens"], acc, t, math.nan if speed is None else speed))
    recs = _within_bounds(recs, col)
    for key, lineno in unknown_keys.items():
        col.warn(f"unknown key {quote(key)} ignored", lineno, key)
    col.skip("warning", extra_keys)
    if not recs and not col.has_errors:
        col.error("no records: the file has no JSON lines")
    if col.has_errors:
        return finish(FORMAT, "", col)

    times = np.asarray([r[6] for r in recs], dtype=np.float64)
    check_time_units(
        times, TimeColumn("step_time", "step_time", "s", 1.0), "step", col, "step times"
    )
    prov = Provenance(file=name, source="sglang bench_speculative.py", format=FORMAT)
    steps_table = StepTimings(
        batch=tuple(r[1] for r in recs),
        draft_len=tuple(r[2] for r in recs),
        verify_tokens=tuple(r[4] if r[2] > 0 else 1 for r in recs),
        step_time_s=tuple(r[6] for r in recs),
        acceptance_length=tuple(r[5] for r in recs),
        includes_draft=True,  # bench_speculative times whole rounds, drafting included
        provenance=prov,
    )

    groups: dict[tuple[int, int, int], dict[int, tuple[float, int]]] = defaultdict(dict)
    for lineno, bs, steps, topk, ndt, acc, _, _ in recs:
        if steps == 0:
            continue
        key = (bs, topk, 0 if topk == 1 else ndt)
        if steps in groups[key]:
            col.warn(
                f"batch_size={bs}, steps={steps}, topk={topk} measured again (line "
                f"{groups[key][steps][1]} and {lineno}); the later line is used",
                lineno,
                "steps",
            )
        groups[key][steps] = (acc, lineno)
    curves: list[AcceptanceCurve] = []
    if too_many_curves(col, len(groups), "curves (distinct batch_size, topk, num_draft_tokens)"):
        return finish(FORMAT, "", col)
    for (bs, topk, ndt), points in sorted(groups.items()):
        ds = sorted(points)
        label = f"SGLang bs={bs} topk={topk}" + (f" draft_tokens={ndt}" if topk != 1 else "")
        curve = build_curve(
            col,
            label=label,
            mechanism=None,
            draft_style="chain" if topk == 1 else None,
            draft_lens=ds,
            als=[points[d][0] for d in ds],
            provenance=prov,
            rows=[points[d][1] for d in ds],
            fields=["acc_length"] * len(ds),
        )
        if curve is not None:
            curves.append(curve)
    batches = sorted({r[1] for r in recs})
    summary = (
        f"SGLang bench_speculative: {len(recs)} configurations, batch {batches[0]}-"
        f"{batches[-1]}, {len(curves)} AL curve{'s' if len(curves) != 1 else ''} from {name}"
    )
    return finish(FORMAT, summary, col, curves=curves, step_timings=steps_table)

"""vLLM Prometheus ``/metrics`` text (speculative-decoding counters).

Source checked: vllm-project/vllm vllm/v1/spec_decode/metrics.py @ee4ceaae5953 and
@016a8587edb0 (SpecDecodingProm): Counters vllm:spec_decode_num_drafts,
vllm:spec_decode_num_draft_tokens, vllm:spec_decode_num_accepted_tokens and
vllm:spec_decode_num_accepted_tokens_per_pos with label position = "0".."K-1" (0-based), all
created with prometheus_client.Counter, which exposes them as <name>_total (plus a
<name>_created gauge). Other labels are model_name and engine; series are summed over engine.

  AL = 1 + accepted / drafts                      (the class docstring's formula)
  m_i = accepted_per_pos[i] / drafts              (marginal, position i + 1)
  mean draft length = draft_tokens / drafts       (<= K; less when drafts come up short)
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from explorer.base.limits import MAX_CELL_CHARS, MAX_MEASURED_DRAFT_LEN
from explorer.base.quoting import quote
from explorer.measured._bounds import count_lines, iter_lines, over_cap
from explorer.measured._csv import MAX_INT
from explorer.measured._curves import (
    build_curve,
    check_al_consistency,
    conditional_rates_of,
    too_many_curves,
    warn_if_marginals_increase,
)
from explorer.measured._problems import Collector, finish
from explorer.model.acceptance import (
    al_from_marginal,
    al_std_error_bound,
    al_std_error_from_marginals,
)
from explorer.specs.measured import AcceptanceCurve, ParseResult, Provenance

FORMAT = "vllm_metrics"
MAX_POSITIONS = MAX_MEASURED_DRAFT_LEN
PREFIX = "vllm:spec_decode_"
_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?\s*$")
_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
COUNTERS = ("num_drafts", "num_draft_tokens", "num_accepted_tokens", "num_accepted_tokens_per_pos")


def looks_like(text: str) -> bool:
    head = text[:200_000]
    return PREFIX in head or bool(re.search(r"^# (TYPE|HELP) \S+", head, re.MULTILINE))


@dataclass
class _Series:
    totals: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    per_pos: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    first_line: int = 0
    labels: dict[str, str] = field(default_factory=dict)


def _pos_field(p: int) -> str:
    return f'vllm:spec_decode_num_accepted_tokens_per_pos{{position="{p}"}}'


def _parse_labels(raw: str) -> dict[str, str] | None:
    labels: dict[str, str] = {}
    pos = 0
    raw = raw.strip()
    while pos < len(raw):
        m = _LABEL.match(raw, pos)
        if m is None:
            return None
        labels[m.group(1)] = m.group(2).replace('\\"', '"').replace("\\\\", "\\")
        pos = m.end()
    return labels


def parse_text(name: str, text: str) -> ParseResult:
    col = Collector()
    series: dict[tuple[tuple[str, str], ...], _Series] = {}
    saw_v0 = False
    for lineno, line in iter_lines(text):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if len(s) > MAX_CELL_CHARS:  # one sample is a name, a few labels and a number
            if PREFIX in s[:MAX_CELL_CHARS]:
                over_cap(col, "the line", len(s), MAX_CELL_CHARS, "characters",
                         "MAX_CELL_CHARS", lineno)
            continue
        m = _SAMPLE.match(s)
        if m is None:
            if PREFIX in s:
                col.error("not a Prometheus sample line", lineno)
            continue
        metric, raw_labels, raw_value = m.group(1), m.group(2) or "", m.group(3)
        if not metric.startswith(PREFIX):
            continue
        if metric.endswith("_created"):
            continue
        base = metric[len(PREFIX) :]
        if base.endswith("_total"):
            base = base[: -len("_total")]
        if base not in COUNTERS:
            saw_v0 = saw_v0 or base in ("draft_acceptance_rate", "efficiency", "num_emitted_tokens")
            continue
        labels = _parse_labels(raw_labels)
        if labels is None:
            col.error(f"cannot read the labels of {metric}", lineno, metric)
            continue
        try:
            value = float(raw_value)
        except ValueError:
            col.error(f"value {quote(raw_value)} is not a number", lineno, metric)
            continue
        if not math.isfinite(value) or value < 0 or value != int(value) or value > MAX_INT:
            # These counters count drafts and tokens: a fraction (2.2e-309 drafts) is no count
            col.error(f"counter value must be a whole number >= 0, got {quote(raw_value)}",
                      lineno, metric)
            continue
        kept = {k: v for k, v in labels.items() if k not in ("engine", "position")}
        key = tuple(sorted(kept.items()))
        if key not in series and too_many_curves(col, len(series) + 1, "series (label sets)"):
            return finish(FORMAT, "", col)
        entry = series.setdefault(key, _Series(first_line=lineno, labels=kept))
        if base == "num_accepted_tokens_per_pos":
            pos_raw = labels.get("position")
            try:
                p = int(pos_raw) if pos_raw is not None else -1
            except ValueError:
                p = -1
            if not 0 <= p < MAX_POSITIONS:
                col.error(
                    f'position label "{pos_raw}" is not an integer in 0..{MAX_POSITIONS - 1}',
                    lineno,
                    metric,
                )
                continue
            entry.per_pos[p] += value
        else:
            entry.totals[base] += value

    if not series:
        if saw_v0:
            col.error(
                "only vLLM v0 spec-decode gauges found (no vllm:spec_decode_num_drafts "
                "counter): AL cannot be computed; use a vLLM V1 server"
            )
        else:
            col.error(
                "no vllm:spec_decode_* counters found: is speculative decoding enabled on "
                "this server?"
            )
        return finish(FORMAT, "", col)

    if text.rstrip(" \t") and not text.endswith("\n"):
        # The exposition format ends every line with a newline: without one the last sample
        # may have been cut (a counter 1000 read as 1).
        col.warn("the text does not end with a newline, so its last line may be cut off; "
                 "scrape /metrics again if a counter looks wrong", count_lines(text))
    curves: list[AcceptanceCurve] = []
    details: list[str] = []
    for entry in series.values():
        model = entry.labels.get("model_name") or None
        label = f"vLLM {model}" if model else "vLLM server"
        drafts = entry.totals.get("num_drafts")
        accepted = entry.totals.get("num_accepted_tokens")
        draft_tokens = entry.totals.get("num_draft_tokens")
        if drafts is None:
            col.error(
                f"{label}: vllm:spec_decode_num_drafts is missing",
                entry.first_line,
                "vllm:spec_decode_num_drafts",
            )
            continue
        if drafts <= 0:
            col.error(
                f"{label}: no drafts recorded yet (num_drafts = 0); scrape after traffic",
                entry.first_line,
                "vllm:spec_decode_num_drafts",
            )
            continue
        if accepted is None:
            col.error(
                f"{label}: vllm:spec_decode_num_accepted_tokens is missing",
                entry.first_line,
                "vllm:spec_decode_num_accepted_tokens",
            )
            continue
        if draft_tokens is not None and accepted > draft_tokens:
            col.error(
                f"{label}: {accepted:g} accepted tokens exceed {draft_tokens:g} draft tokens",
                entry.first_line,
                "vllm:spec_decode_num_accepted_tokens",
            )
            continue
        al = 1.0 + accepted / drafts
        mean_len = draft_tokens / drafts if draft_tokens is not None else None
        prov = Provenance(file=name, source="vLLM /metrics", model=model, format=FORMAT)
        if entry.per_pos:
            k = max(entry.per_pos) + 1
            missing = [p for p in range(k) if p not in entry.per_pos]
            if missing:
                col.error(
                    f"{label}: per-position counters missing for position label(s) "
                    f"{', '.join(map(str, missing))}",
                    entry.first_line,
                    "vllm:spec_decode_num_accepted_tokens_per_pos",
                )
                continue
            marg = np.asarray([entry.per_pos[p] / drafts for p in range(k)], dtype=np.float64)
            bad = [p for p in range(k) if marg[p] > 1.0 + 1e-12]
            for p in bad:
                col.error(
                    f"{label}: position {p} accepted {entry.per_pos[p]:g} times in "
                    f"{drafts:g} drafts (rate {marg[p]:.4g} > 1)",
                    entry.first_line,
                    _pos_field(p),
                )
            if bad:
                continue
            warn_if_marginals_increase(
                col,
                marg.tolist(),
                label=label,
                field="vllm:spec_decode_num_accepted_tokens_per_pos",
            )
            check_al_consistency(
                col, al, marg.tolist(), label=label, field="vllm:spec_decode_num_accepted_tokens"
            )
            if mean_len is not None and mean_len > k + 1e-9:
                col.error(
                    f"{label}: {mean_len:.4g} draft tokens per draft exceeds the {k} positions "
                    f"counted",
                    entry.first_line,
                    "vllm:spec_decode_num_draft_tokens",
                )
                continue
            if mean_len is not None and mean_len < k - 1e-6:
                col.warn(
                    f"{label}: {mean_len:.4g} draft tokens per draft on average, fewer than "
                    f"K = {k}: some drafts came up short (e.g. n-gram misses); rates are per "
                    f"draft step",
                    entry.first_line,
                    "vllm:spec_decode_num_draft_tokens",
                )
            curve = build_curve(
                col,
                label=label,
                mechanism=None,
                draft_style=None,
                draft_lens=list(range(1, k + 1)),
                als=[float(a) for a in al_from_marginal(marg)],
                provenance=prov,
                conditional=conditional_rates_of(marg),
                fields=[_pos_field(p) for p in range(k)],
                std_errors=al_std_error_from_marginals(marg, drafts).tolist(),
            )
        else:
            if mean_len is None:
                col.error(
                    f"{label}: neither per-position counters nor "
                    f"vllm:spec_decode_num_draft_tokens: the draft length is unknown",
                    entry.first_line,
                    "vllm:spec_decode_num_draft_tokens",
                )
                continue
            k = max(1, math.ceil(mean_len - 1e-9))
            if abs(mean_len - k) > 1e-6:
                col.warn(
                    f"{label}: {mean_len:.4g} draft tokens per draft; read as D = {k}",
                    entry.first_line,
                    "vllm:spec_decode_num_draft_tokens",
                )
            curve = build_curve(
                col,
                label=label,
                mechanism=None,
                draft_style=None,
                draft_lens=[k],
                als=[al],
                provenance=prov,
                fields=["vllm:spec_decode_num_accepted_tokens"],
                # the mean and the count only: the widest spread a mean in [0, D] allows
                std_errors=[al_std_error_bound(al, k, drafts)],
            )
        if curve is not None:
            curves.append(curve)
            details.append(f"{model or 'server'}: AL {al:.3f} at K={curve.draft_lens[-1]}")
    summary = f"vLLM metrics from {name}: " + "; ".join(details)
    return finish(FORMAT, summary, col, curves=curves)

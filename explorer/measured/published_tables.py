"""What engines and benchmarks already publish, read as measured data:

- InferenceX "golden AL" curves (`golden_al_distribution/*.yaml`, SemiAnalysisAI/InferenceX
  @843c6254): a YAML mapping model → thinking mode (thinking_on / thinking_off) → D
  (num_speculative_tokens) → AL (bonus token included, the value vLLM's
  synthetic_acceptance_length takes), with comment lines naming the Actions run, the dataset and
  how it was measured. Each (model, mode) becomes an AcceptanceCurve, an AL source.
- vLLM's adaptive-verification profile cache (`$VLLM_CACHE_ROOT/adaptive_verification/
  profile_<fingerprint>.json`, schema 1, vLLM PR #52233's cache module, stored copy read
  2026-12): `draft_curve` [[requests, ms], …] (the drafter's round per request count) and
  `verify_curve` [[target tokens, ms], …] (the target forward per token count), with
  `factors.profile.k` (num_speculative_tokens) and the hardware and context they were profiled
  at. A round of B requests verifies B·(1+k) tokens: every B the two curves share becomes a
  whole-round step (verify + draft) at D = k; where they share none, the verify points alone.

Both return a ParseResult (explorer/measured/_problems.py's contract: every problem named, a
result with errors holds no data). Neither executes anything: YAML through yaml.safe_load.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from explorer.base.limits import MAX_CURVE_POINTS, MAX_CURVES, MAX_MEASURED_DRAFT_LEN
from explorer.base.quoting import quote
from explorer.measured._bounds import check_json_shape, check_line_count
from explorer.measured._entry import decode
from explorer.measured._json import json_int, json_number, load_json
from explorer.measured._mechanisms import infer_draft_style, mechanism_in_file_name
from explorer.measured._problems import Collector, finish
from explorer.specs.measured import (
    AcceptanceCurve,
    Mechanism,
    ParseResult,
    Provenance,
    StepTimings,
    al_within_bounds,
    times_within_bounds,
)

GOLDEN_FORMAT = "inferencex_golden_al"
COST_CURVE_FORMAT = "vllm_adaptive_verification_profile"
GOLDEN_SOURCE = ("InferenceX golden AL curve (SemiAnalysisAI/InferenceX golden_al_distribution, "
                 "README @843c6254: SPEED-Bench coding, vLLM on B300, AL = 1 + accepted/drafts)")


def looks_like_golden(name: str, text: str) -> bool:
    return name.lower().endswith((".yaml", ".yml")) or "golden AL" in text[:2000]


def _comment(text: str, key: str) -> str | None:
    m = re.search(rf"^#\s*{re.escape(key)}\s*:?\s*(.+)$", text, re.MULTILINE | re.IGNORECASE)
    return m.group(1).strip() if m else None


def parse_golden_al(name: str, text: str) -> ParseResult:
    col = Collector()
    try:
        doc: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        col.error(f"not valid YAML: {getattr(exc, 'problem', None) or exc}",
                  mark.line + 1 if mark is not None else None)
        return finish(GOLDEN_FORMAT, "", col)
    if not isinstance(doc, dict) or not doc:
        col.error("expected a mapping model → thinking mode → D → AL (InferenceX "
                  "golden_al_distribution format)")
        return finish(GOLDEN_FORMAT, "", col)
    # InferenceX names its files <model>_<mechanism>[…].yaml
    mech: Mechanism | None = mechanism_in_file_name(name)
    style = infer_draft_style(mech)
    run = _comment(text, "Source GitHub Actions run")
    dataset = (_comment(text, "dataset") or "").split("|")[0].strip() or None
    source = GOLDEN_SOURCE + (f"; run {run}" if run else "")
    curves: list[AcceptanceCurve] = []
    # aliases may repeat one mapping many times: the number of curves is capped before the work
    n_curves = sum(len(m) if isinstance(m, dict) else 1 for m in doc.values())
    if n_curves > MAX_CURVES:
        col.error(f"{n_curves} curves; at most {MAX_CURVES} (MAX_CURVES)")
        return finish(GOLDEN_FORMAT, "", col)
    for model, modes in doc.items():
        if not isinstance(modes, dict):
            col.error("expected thinking modes (thinking_on / thinking_off) under the model",
                      None, str(model))
            continue
        for mode, points in modes.items():
            where = f"{model}.{mode}"
            if not isinstance(points, dict) or not points:
                col.error("expected D: AL pairs", None, where)
                continue
            if len(points) > MAX_CURVE_POINTS:
                col.error(f"{len(points)} points; at most {MAX_CURVE_POINTS}", None, where)
                continue
            pairs: list[tuple[int, float]] = []
            for k, v in points.items():
                d, al = json_int(k), json_number(v)
                if d is None or not 1 <= d <= MAX_MEASURED_DRAFT_LEN:
                    col.error(f"D {quote(str(k)[:20])} is not an integer in [1, "
                              f"{MAX_MEASURED_DRAFT_LEN}]", None, f"{where}.{k}")
                elif al is None or not bool(al_within_bounds(al, d)):
                    col.error(f"AL {quote(str(v)[:20])} at D={d} is outside [1, 1+D]", None,
                              f"{where}.{k}")
                else:
                    pairs.append((d, al))
            if col.has_errors or not pairs:
                continue
            pairs.sort()
            curves.append(AcceptanceCurve(
                label=f"{model} {mode}", mechanism=mech, draft_style=style,
                draft_lens=tuple(p[0] for p in pairs),
                acceptance_lengths=tuple(p[1] for p in pairs),
                provenance=Provenance(file=name, source=source, model=str(model),
                                      dataset=dataset, format=GOLDEN_FORMAT)))
    if not curves and not col.has_errors:
        col.error("no curves in the file")
    return finish(GOLDEN_FORMAT, f"{len(curves)} golden AL curve(s) from InferenceX", col,
                  curves=curves)


def looks_like_cost_curves(text: str) -> bool:
    head = text[:200_000]
    return '"verify_curve"' in head and '"draft_curve"' in head


def _curve(obj: object, field: str, col: Collector) -> list[tuple[int, float]]:
    if not isinstance(obj, list) or not obj:
        col.error("expected a non-empty list of [x, milliseconds] points", None, field)
        return []
    out: list[tuple[int, float]] = []
    prev = 0
    for i, point in enumerate(obj):
        x = json_int(point[0]) if isinstance(point, list) and len(point) == 2 else None
        y = json_number(point[1]) if isinstance(point, list) and len(point) == 2 else None
        if x is None or y is None or x <= prev or not bool(times_within_bounds(y * 1e-3)):
            col.error("each point must be [x, ms] with x a strictly increasing integer ≥ 1 and "
                      "a time in range", None, f"{field}[{i}]")
            return []
        out.append((x, y * 1e-3))
        prev = x
    return out


def _at(obj: object, path: str) -> object:
    for key in path.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def parse_cost_curves(name: str, text: str) -> ParseResult:
    col = Collector()
    doc = load_json(text, col)
    if not isinstance(doc, dict):
        if not col.has_errors:
            col.error("expected one JSON object (vLLM adaptive-verification profile cache)")
        return finish(COST_CURVE_FORMAT, "", col)
    k = json_int(_at(doc, "factors.profile.k"))
    if k is None or not 1 <= k <= MAX_MEASURED_DRAFT_LEN:
        col.error("missing or bad num_speculative_tokens: factors.profile.k must be an integer "
                  f"in [1, {MAX_MEASURED_DRAFT_LEN}]", None, "factors.profile.k")
    draft = _curve(doc.get("draft_curve"), "draft_curve", col)
    verify = _curve(doc.get("verify_curve"), "verify_curve", col)
    if col.has_errors or k is None:
        return finish(COST_CURVE_FORMAT, "", col)
    width = 1 + k
    draft_at = dict(draft)
    by_batch = {n // width: t for n, t in verify if n % width == 0}
    whole = sorted(b for b in by_batch if b in draft_at)
    hw = _at(doc, "factors.hardware.device_name")
    ctx = _at(doc, "factors.profile.context_len")
    src = (f"vLLM adaptive-verification profile cache (schema {doc.get('schema')}, vLLM PR "
           f"#52233) on {str(hw)[:80] if hw else 'unstated hardware'}, profiled at context "
           f"{str(ctx)[:20] if ctx is not None else 'unstated'}")
    if whole:
        steps = StepTimings(batch=tuple(whole), draft_len=(k,) * len(whole),
                            verify_tokens=tuple(b * width for b in whole),
                            step_time_s=tuple(by_batch[b] + draft_at[b] for b in whole),
                            includes_draft=True, source=src + "; verify + draft per round")
        what = f"{len(whole)} whole rounds (verify + draft) at D={k}"
    elif by_batch:
        bs = sorted(by_batch)
        steps = StepTimings(batch=tuple(bs), draft_len=(k,) * len(bs),
                            verify_tokens=tuple(b * width for b in bs),
                            step_time_s=tuple(by_batch[b] for b in bs), includes_draft=False,
                            source=src + "; verify only (no draft point at these B)")
        what = f"{len(bs)} verify steps at D={k}"
    else:
        col.error(f"no verify point at a multiple of 1+k = {width} tokens: no batch to read",
                  None, "verify_curve")
        return finish(COST_CURVE_FORMAT, "", col)
    col.warn("the profile's context is its own (factors.profile.context_len); the explorer "
             "takes the steps at the scenario's S", None, "factors.profile.context_len")
    return finish(COST_CURVE_FORMAT, what, col, step_timings=steps)


def parse_published(name: str, data: bytes) -> ParseResult | None:
    """A golden AL YAML or a vLLM profile cache, with the file-wide caps checked first; None
    when the file is neither (then it is for the benchmark-result reader)."""
    col = Collector()
    text = decode(data, col)
    if text is None:
        return finish("unknown", "", col) if name.lower().endswith((".yaml", ".yml")) else None
    if text.lstrip().startswith("{"):
        if not looks_like_cost_curves(text):
            return None
        if not check_json_shape(text, col):
            return finish(COST_CURVE_FORMAT, "", col)
        return parse_cost_curves(name, text)
    if not looks_like_golden(name, text):
        return None
    if not check_line_count(text, col):
        return finish(GOLDEN_FORMAT, "", col)
    return parse_golden_al(name, text)

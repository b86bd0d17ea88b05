"""Published speed-up rows (../shared/reference/speedups.csv) as scenarios: the GPU, model,
engine, mechanism, D (a DFlash block, a tree's depth and width), batch and AL each row prints,
read into the presets — or the reason a row does not map. The step-cost fit
(explorer/calibration/step_costs.py) and `make validate` read the rows through here."""

from __future__ import annotations

import re
from functools import cache

import pandas as pd

from explorer.base.mechanisms import mechanism_of_published
from explorer.presets import DATA_DIR, hardware_presets, mechanism_presets, model_presets
from explorer.specs.engine import VLLM, engine_in_text
from explorer.specs.scenario import DEFAULT_OUTPUT_TOKENS, Acceptance, Scenario

# Assumption: published end-to-end runs without a stated context are short chat prompts.
ASSUMED_CONTEXT = 1024
# Prompt and output lengths of the requests behind published speed-ups, where the publication
# gives them (its traces): a row that matches runs as whole requests (Scenario.output_tokens)
# at its prompt length; the others as whole requests of ASSUMED_CONTEXT prompt tokens and the
# explorer's default output length (what a user who knows no more is told).
REQUEST_LENGTHS = DATA_DIR / "request_lengths.csv"


# GPU names as the reference writes them → hardware preset; longest prefix first.
GPU_NAMES = (("GB200", "gb200"), ("H100", "h100"), ("H200", "h200"), ("A100", "a100"),
             ("B200", "b200"), ("B300", "b300"), ("L40S", "l40s"), ("MI300X", "mi300x"))
# Reference model names that are another spelling of a preset (the architecture the row ran);
# any other name maps only when it is a preset's slug.
MODEL_ALIASES = {
    "llama-3.3-70b": "llama-3.1-70b",  # same architecture (data/al_curves.csv maps it so)
    "deepseek-r1": "deepseek-v3",
    "llama-4-scout-17b-16e": "llama-4-scout",
    "llama-4-maverick-17b-128e": "llama-4-maverick",
    # the same shapes in reference/models.csv (64 layers, 5120 hidden, 24/4 heads of 256, FFN
    # 17408, vocab 248320; 48 Gated DeltaNet + 16 full-attention layers)
    "qwen3.6-27b": "qwen3.5-27b",
}
_INT = re.compile(r"^\s*(\d+)\s*$")
_LEAD_NUMBER = re.compile(r"^\s*~?(\d+(?:\.\d+)?)x?(?:\s*(?:\(|/|$))")


def normalise_gpu(text: str) -> tuple[str | None, int, str]:
    """'H100-80GB (SGLang)' → ('h100', 1, ''); 'A100-80GB x2 (TP2)' → ('a100', 2, ''); the reason
    when it does not map."""
    t = text.strip().upper().replace("NVIDIA ", "")
    if not t or t.startswith("(NOT STATED"):
        return None, 1, "GPU not stated"
    if "NODE" in t:
        return None, 1, "multi-node deployment"
    hw = next((slug for name, slug in GPU_NAMES if t.startswith(name)), None)
    if hw is None:
        return None, 1, "GPU not a preset"
    tp = re.search(r"TP\s*(\d+)", t) or re.search(r"\bX\s*(\d+)", t)
    return hw, int(tp.group(1)) if tp else 1, ""


def normalise_model(text: str) -> str | None:
    """'LLaMA-3.1-8B-Instruct', 'Llama-3.1-8B(-Instruct)' → 'llama-3.1-8b'; None if no preset."""
    t = text.strip().split(" ")[0].lower().split("/")[-1]
    t = re.sub(r"\(-?instruct\)|-instruct$|-instruct\b", "", t)
    t = MODEL_ALIASES.get(t, t)
    return t if t in model_presets() else None


def normalise_engine(text: str) -> str | None:
    """The serving engine a row names (its declaration's slug and aliases); None: none."""
    return engine_in_text(text)


_BLOCK = re.compile(r"^\s*block(?: size)?\s+(\d+)")
_TREE = re.compile(r"tree depth (\d+).*?(\d+) draft tokens")


def _draft_len_and_width(row: pd.Series, slug: str) -> tuple[int | None, int | None]:
    """(D, tree width W) of a row: D as printed; a DFlash 'block N' verifies N tokens (D = N − 1);
    a tree 'depth d … k draft tokens' drafts d deep and verifies the k tokens and the root."""
    tree = _TREE.search(str(row.get("drafter", "")))
    if tree:
        return int(tree.group(1)), int(tree.group(2)) + 1
    d_m = _INT.match(str(row.D))
    if d_m:
        return int(d_m.group(1)), None
    block = _BLOCK.match(str(row.D))
    if block and mechanism_presets()[slug].draft_style == "block":
        return int(block.group(1)) - 1, None
    return None, None


def series_key(row: pd.Series) -> tuple[str, ...]:
    """One published series: the same source, model, drafter, dataset and D over batches."""
    return tuple(str(row[c]) for c in ("source", "model_target", "drafter", "mechanism",
                                       "dataset", "D"))


def publication(source: str) -> str:
    """The publication a reference row comes from, whichever of its parts (blog, simulator
    data) it cites: 'SpecDecodeBench-blog (…)' and 'SpecDecodeBench-simulator@2fdccbd …' →
    'SpecDecodeBench'."""
    head = re.split(r"@| \(", source, maxsplit=1)[0].strip()
    return re.sub(r"-(blog|simulator)$", "", head)


def carried_al(df: pd.DataFrame, al_curves: pd.DataFrame | None = None
               ) -> dict[tuple[str, ...], float]:
    """A series' AL from its B = 1 row, for its rows at other batches that print none (AL is a
    property of the drafter and the text, not of the batch); else, with `al_curves`
    (reference/al_curves.csv), the AL the same publication gives for the same target, dataset,
    drafter kind and D (SpecDecodeBench's B = 128 speed-up and its own acceptance data)."""
    out: dict[tuple[str, ...], float] = {}
    for _, row in df.iterrows():
        al_m = _LEAD_NUMBER.match(str(row.AL))
        b = str(row.batch).replace("concurrency", "").strip()
        if al_m and b == "1":
            out[series_key(row)] = float(al_m.group(1))
    if al_curves is None:
        return out
    curves: dict[tuple[str, str | None, str, str, str], float] = {}
    for _, c in al_curves.iterrows():
        al_m, d_m = _LEAD_NUMBER.match(str(c.AL)), _INT.match(str(c.D))
        if al_m and d_m:
            curves[(publication(str(c.source)), normalise_model(str(c.model_target)),
                    str(c.dataset).strip().lower(), str(c.mechanism).split("_")[0].lower(),
                    d_m.group(1))] = float(al_m.group(1))
    for _, row in df.iterrows():
        key = series_key(row)
        d_m = _INT.match(str(row.D))
        if key in out or _LEAD_NUMBER.match(str(row.AL)) or not d_m:
            continue
        al = curves.get((publication(str(row.source)), normalise_model(str(row.model_target)),
                         str(row.dataset).strip().lower(),
                         str(row.mechanism).split("_")[0].lower(), d_m.group(1)))
        if al is not None and normalise_model(str(row.model_target)) is not None:
            out[key] = al
    return out


def map_row(row: pd.Series, carried: dict[tuple[str, ...], float] | None = None
            ) -> tuple[Scenario | None, str]:
    """A reference speedup row as a scenario with its own AL (or its series' B = 1 AL), or the
    reason it does not map."""
    hw, tp, why = normalise_gpu(str(row.gpu))
    if hw is None:
        return None, why
    if hw not in hardware_presets():
        return None, "GPU not a preset"
    model = normalise_model(str(row.model_target))
    if model is None:
        return None, "model not a preset"
    mech = str(row.mechanism).lower()
    if " vs " in mech:
        return None, "comparison of two mechanisms"
    slug = mechanism_of_published(mech)  # the declarations' `published` names
    if slug is None or "EAGLE-1" in str(row.get("drafter", "")):
        # EAGLE-1's head (no fused FC, the target's lm_head) is priced by no preset
        return None, "mechanism not a preset"
    d, width = _draft_len_and_width(row, slug)
    if "tree" in mech and width is None:
        return None, "tree verification without its width"
    b_m = _INT.match(str(row.batch).replace("concurrency", ""))
    al_m, sp_m = _LEAD_NUMBER.match(str(row.AL)), _LEAD_NUMBER.match(str(row.speedup))
    al = float(al_m.group(1)) if al_m else (carried or {}).get(series_key(row))
    if d is None or not (b_m and al is not None and sp_m):
        return None, "D, batch, AL or speedup not a single number"
    # a row that names no serving engine is taken as vLLM's (`make validate` says so)
    engine = normalise_engine(str(row.engine)) or VLLM.slug
    dtype = "fp8" if "fp8" in str(row.model_target).lower() else "bf16"  # 'Llama-4-Scout (FP8)'
    lengths = request_lengths(row)
    context, output = lengths if lengths is not None else (ASSUMED_CONTEXT, DEFAULT_OUTPUT_TOKENS)
    try:
        sc = Scenario(hardware=hw, model=model, tp=tp, mechanism=slug, batch=int(b_m.group(1)),
                      draft_len=d, context=context, output_tokens=output, dtype=dtype,
                      verify_width=width, engine=engine,
                      acceptance=Acceptance(kind="fixed", fixed_al=al))
    except (ValueError, TypeError) as err:
        return None, f"not a valid scenario ({type(err).__name__})"
    return sc, ""


@cache
def _request_lengths() -> tuple[tuple[str, str, str, int, int], ...]:
    rows = pd.read_csv(REQUEST_LENGTHS, dtype=str).to_dict("records")
    return tuple((r["source_contains"], r["model_contains"], r["dataset"],
                  int(r["prompt_tokens"]), int(r["output_tokens"])) for r in rows)


def request_lengths(row: pd.Series) -> tuple[int, int] | None:
    """(prompt, output) tokens of a published row's requests, where data/request_lengths.csv
    has its publication, model and dataset."""
    src, model, data = (str(row.get(k, "")) for k in ("source", "model_target", "dataset"))
    for s, m, d, prompt, output in _request_lengths():
        if s in src and m.lower() in model.lower() and d.lower() == data.strip().lower():
            return prompt, output
    return None


def published_speedup(row: pd.Series) -> float:
    m = _LEAD_NUMBER.match(str(row.speedup))
    return float(m.group(1)) if m else float("nan")

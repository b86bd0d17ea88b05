"""Mechanism and draft-style names as engines and papers write them."""

from __future__ import annotations

import re
from functools import lru_cache

from explorer.base.mechanisms import mechanism_of_alias, mechanism_slugs
from explorer.base.quoting import quote
from explorer.presets import mechanism_presets
from explorer.specs.measured import DraftStyle, Mechanism


@lru_cache(maxsize=4096)  # a 200k-row table names a few mechanisms: normalise each once
def normalize_mechanism(raw: str) -> tuple[Mechanism | None, DraftStyle | None, bool]:
    """(mechanism, draft style, recognised). Empty text is (None, None, True).

    Accepts the names engines and papers use: 'EAGLE3', 'eagle3_chain', 'draft_model',
    'ngram_prompt_lookup', 'dflash_block_diffusion (5 layers)', 'MTP (nextn)', ...
    """
    s = re.sub(r"\([^)]*\)", " ", raw.strip().lower())
    s = re.sub(r"[^0-9a-z]+", "_", s).strip("_")
    if not s:
        return None, None, True
    # Each mechanism's aliases are in its declaration (explorer/specs/mechanism.py).
    mech: Mechanism | None = mechanism_of_alias(s)
    if mech is None:
        parts = s.split("_")
        for i in range(len(parts) - 1, 0, -1):
            mech = mechanism_of_alias("_".join(parts[:i]))
            if mech is not None:
                break
    if mech is None:
        return None, None, False
    return mech, infer_draft_style(mech, s), True


def mechanism_in_file_name(name: str) -> Mechanism | None:
    """The mechanism a file's name names, by its declaration's slug and aliases: the last word
    (or pair of words) that is one, as files are named <model>_<mechanism>[_<variant>].<ext>
    (InferenceX's golden_al_distribution/kimik2.5_eagle3.yaml, dsv4_dspark_probabilistic.yaml).
    Read from the end, so a model name that happens to hold an alias does not win."""
    words = [w for w in re.split(r"[^0-9a-z]+", name.lower()) if w]
    for i in range(len(words) - 1, -1, -1):
        for n in (2, 1):
            if i + n <= len(words):
                mech: Mechanism | None = mechanism_of_alias("_".join(words[i:i + n]))
                if mech is not None:
                    return mech
    return None


def infer_draft_style(mech: Mechanism | None, text: str = "") -> DraftStyle | None:
    t = text.lower()
    if "tree" in t:
        return None
    if "block" in t:
        return "block"
    if "chain" in t:
        return "chain"
    spec = mechanism_presets().get(mech) if mech is not None else None
    if spec is None:
        return None
    return "block" if spec.is_block else "chain"  # the mechanism's own style (mechanisms.csv)


def parse_draft_style(raw: str) -> tuple[DraftStyle | None, bool]:
    s = raw.strip().lower()
    if not s:
        return None, True
    if s in ("chain", "linear", "autoregressive", "ar", "chain_analytic"):
        return "chain", True
    if s in ("block", "parallel", "block_parallel", "measured_per_k"):
        return "block", True
    if s == "tree":
        return None, True
    return None, False


def unknown_mechanism_message(raw: str) -> str:
    return f"unknown mechanism {quote(raw)}; known mechanisms: {', '.join(mechanism_slugs())}"

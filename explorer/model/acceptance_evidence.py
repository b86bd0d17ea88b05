"""The published AL points behind a mechanism's prior (data/al_curves.csv): where they hold.

A prior is evidence only where its points were measured: a chain prior past the largest
published D is model-extended (the prior's decay, not a measurement), a block prior exists only
at the published block sizes.
"""

from __future__ import annotations

from functools import lru_cache

from explorer.presets import published_al_points


@lru_cache(maxsize=64)
def evidence_draft_lens(mechanism: str) -> tuple[int, ...]:
    """The draft lengths with a primary published point for this mechanism (sorted)."""
    return tuple(sorted({p.draft_len for p in published_al_points()
                         if p.mechanism == mechanism and p.primary}))

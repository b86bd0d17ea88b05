"""Which pytest selections are the quick loop: the ones that leave out browser and slow tests."""

from __future__ import annotations


def is_quick_loop(markexpr: str) -> bool:
    """True when the marker expression excludes both browser and slow tests."""
    words = " ".join(markexpr.replace("(", " ").replace(")", " ").split())
    return all(f"not {kind}" in words for kind in ("browser", "slow"))

"""A parsed AcceptanceCurve → the scenario's MeasuredCurve, its provenance in one line."""

from __future__ import annotations

from explorer.measured.types import AcceptanceCurve
from explorer.scenario import MeasuredCurve


def provenance_text(curve: AcceptanceCurve) -> str:
    p = curve.provenance
    parts = (f"file {p.file}", f"format {p.format}", p.source, p.model and f"model {p.model}",
             p.dataset and f"dataset {p.dataset}",
             p.temperature is not None and f"temperature {p.temperature:g}")
    return "; ".join(x for x in parts if x)


def as_measured_curve(curve: AcceptanceCurve, prefix: str = "") -> MeasuredCurve:
    return MeasuredCurve(label=f"{prefix}{curve.label}"[:200], draft_lens=curve.draft_lens,
                         acceptance_lengths=curve.acceptance_lengths,
                         source=provenance_text(curve)[:500])

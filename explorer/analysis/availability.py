"""Which mechanisms exist for a target (DESIGN.md §2.3, availability).

MTP only where the target ships MTP layers; an external draft only from a model that shares the
target's tokenizer; a separately trained head (EAGLE-3, DFlash, DSpark) either published for the
target — with its checkpoint and source — or to be trained, with the training it needs. An
unavailable mechanism is listed with its reason and not ranked.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from explorer.base.errors import ScenarioError
from explorer.model.acceptance_evidence import evidence_draft_lens
from explorer.model.resolve import resolve, target_model
from explorer.presets import draft_heads, mechanism_presets
from explorer.specs.scenario import Scenario

Status = Literal["ships with the target", "published", "to be trained", "separate draft model",
                 "no training", "unavailable"]


class Availability(BaseModel):
    """Whether a mechanism exists for the scenario's target, and what it takes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mechanism: str
    available: bool
    status: Status
    text: str  # one line for a page: what exists, or why not, with its source
    checkpoints: list[str] = []


def availability(scenario: Scenario, slug: str | None = None) -> Availability:
    """`slug` (default: the scenario's mechanism) for the scenario's target model."""
    slug = slug or scenario.mechanism
    mech = mechanism_presets()[slug]
    model = target_model(scenario)
    if model is None:
        return Availability(mechanism=slug, available=False, status="unavailable",
                            text=f"unknown target model '{scenario.model}'")
    if mech.uses_target_mtp_layers:
        if model.mtp_layers < 1:
            return Availability(
                mechanism=slug, available=False, status="unavailable",
                text=f"{model.name} ships no MTP layers (mtp_layers = 0 in data/models.csv: its "
                f"config defines no MTP module); MTP is {mech.training}: {mech.training_source}")
        heads = draft_heads().get((model.slug, slug), ())
        return Availability(
            mechanism=slug, available=True, status="ships with the target",
            text=f"{model.name} ships {model.mtp_layers} MTP module(s)"
            + (f" ({heads[0].source})" if heads else ""),
            checkpoints=[h.checkpoint for h in heads])
    if mech.needs_draft_model:
        try:
            r = resolve(scenario.model_copy(update={"mechanism": slug}))
        except ScenarioError as exc:
            return Availability(mechanism=slug, available=False, status="unavailable",
                                text=exc.message)
        draft = r.draft_model
        assert draft is not None  # resolve() refuses a draft model mechanism without one
        return Availability(
            mechanism=slug, available=True, status="separate draft model",
            text=f"{draft.name} as the draft (same {draft.tokenizer} tokenizer as {model.name}); "
            f"{mech.training}", checkpoints=[draft.slug])
    if mech.needs_draft_weights:
        heads = draft_heads().get((model.slug, slug), ())
        own = [h for h in heads if h.same_weights]
        if mech.is_block:  # a block head runs at its own block size only
            fits = [h for h in own if _block_matches(h.draft_len, evidence_draft_lens(slug))]
            other = [h for h in own if h not in fits]
            own = fits
            if other and not own:
                listed = "; ".join(f"{h.summary} [{h.source}]" for h in other)
                sizes = ", ".join(map(str, evidence_draft_lens(slug)))
                return Availability(
                    mechanism=slug, available=True, status="to be trained",
                    text=f"to be trained for {model.name} at D ∈ {{{sizes}}}, where AL is "
                    f"published: the public head(s) run at another or an unstated block size, "
                    f"where no AL is published — {listed}; {mech.training_source}",
                    checkpoints=[h.checkpoint for h in other])
        if own:
            listed = "; ".join(f"{h.summary} [{h.source}]" for h in own)
            return Availability(mechanism=slug, available=True, status="published",
                                text=f"published: {listed}",
                                checkpoints=[h.checkpoint for h in own])
        sibling = "; ".join(f"{h.checkpoint} for {h.trained_for} (same architecture, other "
                            f"weights: {h.source})" for h in heads)
        return Availability(
            mechanism=slug, available=True, status="to be trained",
            text=f"to be trained for {model.name}: {mech.training_source}"
            + (f"; published for a sibling: {sibling}" if sibling else ""))
    return Availability(mechanism=slug, available=True, status="no training",
                        text=mech.training_source or "no training")


def _block_matches(draft_len: str, published: tuple[int, ...]) -> bool:
    """Whether a block head's stated size ('block 16', '7') is one the AL evidence covers (as
    drafted tokens or as the block with its anchor token); an unstated size is not known to."""
    digits = "".join(ch if ch.isdigit() else " " for ch in draft_len).split()
    if not digits:
        return False
    n = int(digits[0])
    return n in published or n - 1 in published

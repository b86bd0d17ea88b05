"""Draft mechanisms (DESIGN.md §2.2): how each drafts, its default depth and acceptance prior."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from explorer.base.limits import MAX_DRAFT_LEN

# The registry (one declaration per mechanism: what is not a sourced number) is
# explorer/base/mechanisms.py, below the specs so that every spec module can ask it.

DraftStyle = Literal["chain", "block", "block_serial", "lookup"]
# Where the draft weights come from: a separate small LLM (the scenario's draft model), a
# separately trained drafter checkpoint, the MTP layers shipped in the target checkpoint, none.
DraftWeights = Literal["draft_model", "checkpoint", "target_mtp", "none"]


class MechanismSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    slug: str
    name: str
    draft_style: DraftStyle
    default_draft_len: int = Field(ge=0, le=MAX_DRAFT_LEN)
    max_draft_len: int = Field(ge=1, le=MAX_DRAFT_LEN)
    draft_layers: int | None = Field(
        default=None, ge=0, description="layers of target dims the drafter runs; None = own model"
    )
    serial_head_layer_fraction: float = Field(default=0.0, ge=0, le=1)
    draft_vocab: int | None = Field(default=None, ge=1)
    lookup_time_s: float = Field(default=0.0, ge=0, le=0.01)
    draft_weights: DraftWeights
    fused_target_layers: int = Field(
        default=0, ge=0, le=16,
        description="target hidden-state layers an FC (k·h → h) fuses per draft step; 0 = none",
    )
    draft_checkpoint: str = Field(
        default="", description="what the separately trained draft weights are called"
    )
    first_rate: float = Field(ge=0, le=1, description="prior conditional acceptance at position 1")
    decay: float = Field(ge=0, le=1, description="prior: c_j = first_rate·decay^(j−1)")
    prior_source: str = ""
    training: str = ""
    training_source: str = Field(default="", description="what training the drafter needs, sourced")
    extra_memory: str = ""
    source: str = ""
    assumptions: str = ""

    @model_validator(mode="after")
    def _own_model_iff_draft_model(self) -> MechanismSpec:
        # draft_layers blank means "the draft model's own layers": only a draft-model drafter.
        if (self.draft_layers is None) != self.needs_draft_model:
            raise ValueError(f"{self.slug}: draft_layers is blank exactly when draft_weights is "
                             f"'draft_model' (got {self.draft_layers!r}, {self.draft_weights!r})")
        return self

    @property
    def needs_draft_model(self) -> bool:
        """Drafts with a separate small LLM (the scenario's draft model)."""
        return self.draft_weights == "draft_model"

    @property
    def needs_draft_weights(self) -> bool:
        """Serving it takes a path to weights other than the target's."""
        return self.draft_weights in ("draft_model", "checkpoint")

    @property
    def uses_target_mtp_layers(self) -> bool:
        """Drafts with the MTP layers of the target checkpoint (which must ship them)."""
        return self.draft_weights == "target_mtp"

    @property
    def is_block(self) -> bool:
        """Block drafters produce D tokens in one pass; their AL is only valid at measured D."""
        return self.draft_style in ("block", "block_serial")


"""Draft mechanisms (DESIGN.md §2.2): how each drafts, its default depth and acceptance prior."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from explorer.base.limits import MAX_DRAFT_LEN

DraftStyle = Literal["chain", "block", "block_serial", "lookup"]


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
    first_rate: float = Field(ge=0, le=1, description="prior conditional acceptance at position 1")
    decay: float = Field(ge=0, le=1, description="prior: c_j = first_rate·decay^(j−1)")
    prior_source: str = ""
    training: str = ""
    extra_memory: str = ""
    source: str = ""
    assumptions: str = ""

    @property
    def is_block(self) -> bool:
        """Block drafters produce D tokens in one pass; their AL is only valid at measured D."""
        return self.draft_style in ("block", "block_serial")

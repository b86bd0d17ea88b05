"""The scenario: everything one evaluation needs, as a frozen pydantic model with units."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from explorer.base.dtypes import KvDtype, WeightDtype
from explorer.base.limits import MAX_DRAFT_LEN
from explorer.specs.hardware import HardwareOverrides
from explorer.specs.measured import AcceptanceCurve, KernelTimings, StepTimings, al_within_bounds

# The public name of the scenario's AL curve before the measured types were unified.
MeasuredCurve = AcceptanceCurve


class Acceptance(BaseModel):
    """Where AL comes from: the mechanism's prior, an i.i.d. α, a fixed AL, or a measured curve."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["prior", "iid", "fixed", "curve"] = "prior"
    alpha: float | None = Field(default=None, ge=0, le=1, description="i.i.d. acceptance rate")
    fixed_al: float | None = Field(default=None, ge=1, description="AL at the scenario's D")
    curve: AcceptanceCurve | None = None

    @model_validator(mode="after")
    def _check(self) -> Acceptance:
        if self.kind == "iid" and self.alpha is None:
            raise ValueError("acceptance kind 'iid' needs alpha")
        if self.kind == "fixed" and self.fixed_al is None:
            raise ValueError("acceptance kind 'fixed' needs fixed_al")
        if self.kind == "curve" and self.curve is None:
            raise ValueError("acceptance kind 'curve' needs a curve")
        return self


class Scenario(BaseModel):
    """One operating point. Preset names are slugs (`python -m explorer presets`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hardware: str = Field(default="h200", description="hardware preset slug")
    model: str = Field(default="llama-3.1-70b", description="target model preset slug")
    mechanism: str = Field(default="eagle3", description="draft mechanism slug")
    draft_model: str | None = Field(default=None, description="draft model slug (external)")
    dtype: WeightDtype = Field(default="bf16", description="weight/GEMM dtype")
    kv_dtype: KvDtype = Field(default="bf16", description="KV-cache dtype")
    batch: int = Field(default=32, ge=1, le=65536, description="B, concurrent sequences")
    context: int = Field(default=8192, ge=1, le=2_000_000, description="S, KV tokens per sequence")
    tp: int = Field(default=2, ge=1, le=64, description="tensor-parallel degree")
    draft_len: int = Field(default=3, ge=0, le=MAX_DRAFT_LEN, description="D, tokens drafted")
    verify_width: int | None = Field(
        default=None, ge=1, le=1024, description="W, tokens verified per sequence (trees); ≥ 1+D"
    )
    group: int | None = Field(default=None, ge=1, le=256, description="G override (q per KV head)")
    layers: int | None = Field(default=None, ge=1, le=1000, description="L_target override")
    rho: float | None = Field(default=None, ge=0, le=4, description="ρ = L_draft/L_target override")
    acceptance: Acceptance = Field(default_factory=Acceptance)
    hardware_overrides: HardwareOverrides | None = None
    measured_kernels: KernelTimings | None = None
    measured_steps: StepTimings | None = None

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        if self.verify_width is not None and self.verify_width < 1 + self.draft_len:
            raise ValueError(
                f"verify_width: W={self.verify_width} must be ≥ 1+D = {1 + self.draft_len}"
            )
        a = self.acceptance
        if (a.kind == "fixed" and a.fixed_al is not None
                and not al_within_bounds(a.fixed_al, self.draft_len)):
            raise ValueError(
                f"fixed_al: AL {a.fixed_al} is outside [1, 1+D] = [1, {1 + self.draft_len}]"
            )
        return self

    @property
    def width(self) -> int:
        return self.verify_width if self.verify_width is not None else 1 + self.draft_len


def scenario_json_schema() -> str:
    return json.dumps(Scenario.model_json_schema(), indent=2)

"""The scenario: everything one evaluation needs, as a frozen pydantic model with units."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from explorer.base.limits import MAX_CURVE_POINTS, MAX_MEASURED_ROWS
from explorer.specs.hardware import HardwareOverrides
from explorer.specs.settings import setting_field


class MeasuredCurve(BaseModel):
    """A measured AL(D) curve with its provenance (an upload or a shipped sample)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str = Field(default="measured", max_length=200)
    draft_lens: tuple[int, ...] = Field(min_length=1, max_length=MAX_CURVE_POINTS)
    acceptance_lengths: tuple[float, ...] = Field(min_length=1, max_length=MAX_CURVE_POINTS)
    source: str = Field(default="", max_length=500)

    @model_validator(mode="after")
    def _check(self) -> MeasuredCurve:
        if len(self.draft_lens) != len(self.acceptance_lengths):
            raise ValueError("draft_lens and acceptance_lengths differ in length")
        if list(self.draft_lens) != sorted(set(self.draft_lens)) or self.draft_lens[0] < 1:
            raise ValueError("draft_lens must be strictly increasing integers ≥ 1")
        for d, al in zip(self.draft_lens, self.acceptance_lengths, strict=True):
            if not 1.0 <= al <= 1.0 + d:
                raise ValueError(f"AL {al} at D={d} is outside [1, 1+D] = [1, {1 + d}]")
        return self


class Acceptance(BaseModel):
    """Where AL comes from: the mechanism's prior, an i.i.d. α, a fixed AL, or a measured curve."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["prior", "iid", "fixed", "curve"] = "prior"
    alpha: float | None = Field(default=None, ge=0, le=1, description="i.i.d. acceptance rate")
    fixed_al: float | None = Field(default=None, ge=1, description="AL at the scenario's D")
    curve: MeasuredCurve | None = None

    @model_validator(mode="after")
    def _check(self) -> Acceptance:
        if self.kind == "iid" and self.alpha is None:
            raise ValueError("acceptance kind 'iid' needs alpha")
        if self.kind == "fixed" and self.fixed_al is None:
            raise ValueError("acceptance kind 'fixed' needs fixed_al")
        if self.kind == "curve" and self.curve is None:
            raise ValueError("acceptance kind 'curve' needs a curve")
        return self


class MeasuredGemm(BaseModel):
    """Measured GEMM latencies: they replace the roofline for matching (n, k, dtype) shapes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    m: tuple[int, ...] = Field(max_length=MAX_MEASURED_ROWS)
    n: tuple[int, ...] = Field(max_length=MAX_MEASURED_ROWS)
    k: tuple[int, ...] = Field(max_length=MAX_MEASURED_ROWS)
    dtype: tuple[str, ...] = Field(max_length=MAX_MEASURED_ROWS)
    time_s: tuple[float, ...] = Field(max_length=MAX_MEASURED_ROWS)


class MeasuredAttention(BaseModel):
    """Measured decode/verify attention latencies (one layer's kernel)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    batch: tuple[int, ...] = Field(max_length=MAX_MEASURED_ROWS)
    context: tuple[int, ...] = Field(max_length=MAX_MEASURED_ROWS)
    q_heads: tuple[int, ...] = Field(max_length=MAX_MEASURED_ROWS)
    kv_heads: tuple[int, ...] = Field(max_length=MAX_MEASURED_ROWS)
    head_dim: tuple[int, ...] = Field(max_length=MAX_MEASURED_ROWS)
    q_len: tuple[int, ...] = Field(max_length=MAX_MEASURED_ROWS)
    time_s: tuple[float, ...] = Field(max_length=MAX_MEASURED_ROWS)


class MeasuredKernels(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    gemm: MeasuredGemm | None = None
    attention: MeasuredAttention | None = None
    source: str = Field(default="", max_length=500)


class MeasuredSteps(BaseModel):
    """Measured decode steps by (B, D); D = 0 is plain decoding. With `includes_draft` a row is
    a whole round T_verif(B·(1+D)) + T_draft(B, D), else the target's verify step alone. Where
    the table covers a point it replaces the model's time there."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    batch: tuple[int, ...] = Field(max_length=MAX_MEASURED_ROWS)
    draft_len: tuple[int, ...] = Field(max_length=MAX_MEASURED_ROWS)
    step_time_s: tuple[float, ...] = Field(max_length=MAX_MEASURED_ROWS)
    includes_draft: bool = True
    source: str = Field(default="", max_length=500)


class Scenario(BaseModel):
    """One operating point. Preset names are slugs (`python -m explorer presets`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Defaults, bounds and descriptions come from each setting's declaration (settings.py).
    hardware: str = setting_field("hardware")
    model: str = setting_field("model")
    mechanism: str = setting_field("mechanism")
    draft_model: str | None = setting_field("draft_model")
    dtype: Literal["bf16", "fp8", "fp4"] = setting_field("dtype")
    kv_dtype: Literal["bf16", "fp8"] = setting_field("kv_dtype")
    batch: int = setting_field("batch")
    context: int = setting_field("context")
    tp: int = setting_field("tp")
    draft_len: int = setting_field("draft_len")
    verify_width: int | None = setting_field("verify_width")
    group: int | None = setting_field("group")
    layers: int | None = setting_field("layers")
    rho: float | None = setting_field("rho")
    acceptance: Acceptance = Field(default_factory=Acceptance)
    hardware_overrides: HardwareOverrides | None = None
    measured_kernels: MeasuredKernels | None = None
    measured_steps: MeasuredSteps | None = None

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        if self.verify_width is not None and self.verify_width < 1 + self.draft_len:
            raise ValueError(
                f"verify_width: W={self.verify_width} must be ≥ 1+D = {1 + self.draft_len}"
            )
        a = self.acceptance
        if a.kind == "fixed" and a.fixed_al is not None and a.fixed_al > 1 + self.draft_len:
            raise ValueError(
                f"fixed_al: AL {a.fixed_al} is outside [1, 1+D] = [1, {1 + self.draft_len}]"
            )
        return self

    @property
    def width(self) -> int:
        return self.verify_width if self.verify_width is not None else 1 + self.draft_len


def scenario_json_schema() -> str:
    return json.dumps(Scenario.model_json_schema(), indent=2)

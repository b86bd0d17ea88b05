"""The scenario: everything one evaluation needs, as a frozen pydantic model with units."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from explorer.base.dtypes import KvDtype, WeightDtype
from explorer.base.engines import ServingEngine
from explorer.specs.architecture import DrafterSpec, ModelSpec
from explorer.specs.hardware import HardwareOverrides
from explorer.specs.measured import AcceptanceCurve, KernelTimings, StepTimings, al_within_bounds
from explorer.specs.settings import setting_field

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

    # Defaults, bounds and descriptions come from each setting's declaration (settings.py).
    hardware: str = setting_field("hardware")
    model: str = setting_field("model")
    mechanism: str = setting_field("mechanism")
    draft_model: str | None = setting_field("draft_model")
    dtype: WeightDtype = setting_field("dtype")
    kv_dtype: KvDtype = setting_field("kv_dtype")
    moe_dtype: WeightDtype | None = setting_field("moe_dtype")
    # Saved scenarios and links from before the setting open as vLLM (its default).
    engine: ServingEngine = setting_field("engine")
    batch: int = setting_field("batch")
    context: int = setting_field("context")
    output_tokens: int | None = setting_field("output_tokens")
    tp: int = setting_field("tp")
    draft_len: int = setting_field("draft_len")
    verify_width: int | None = setting_field("verify_width")
    group: int | None = setting_field("group")
    layers: int | None = setting_field("layers")
    rho: float | None = setting_field("rho")
    acceptance: Acceptance = Field(default_factory=Acceptance)
    hardware_overrides: HardwareOverrides | None = None
    measured_kernels: KernelTimings | None = None
    measured_steps: StepTimings | None = None
    # A model read from a config.json (explorer/measured/hf_config.py) travels in the scenario
    # itself, so saved scenarios and their links carry it; `model` is then its slug.
    custom_model: ModelSpec | None = None
    # A drafter read from its config.json: an EAGLE-3 / DFlash / DSpark head (the mechanism of
    # that kind runs with its layers and vocabulary) or an external draft model.
    custom_drafter: DrafterSpec | None = None

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        if self.verify_width is not None and self.verify_width < 1 + self.draft_len:
            raise ValueError(
                f"verify_width: W={self.verify_width} must be ≥ 1+D = {1 + self.draft_len}"
            )
        if self.custom_model is not None and self.model != self.custom_model.slug:
            raise ValueError(f"model: '{self.model}' is not the uploaded model's slug "
                             f"'{self.custom_model.slug}' (the custom model is the target)")
        a = self.acceptance
        if (a.kind == "fixed" and a.fixed_al is not None
                and not al_within_bounds(a.fixed_al, self.draft_len)):
            raise ValueError(
                f"fixed_al: AL {a.fixed_al} is outside [1, 1+D] = [1, {1 + self.draft_len}]"
            )
        return self

    @property
    def expert_dtype(self) -> str:
        """The routed experts' dtype: moe_dtype, else the weights dtype."""
        return self.moe_dtype if self.moe_dtype is not None else self.dtype

    @property
    def width(self) -> int:
        return self.verify_width if self.verify_width is not None else 1 + self.draft_len


# The default output tokens per request N, from its declaration (explorer/specs/settings.py says
# why 1,024): what a published run of unknown lengths is priced at, and the reference length the
# Explorer quotes a whole-request speedup at when the scenario prices decode steps only.
DEFAULT_OUTPUT_TOKENS: int = Scenario.model_fields["output_tokens"].default


def tokens_label(tokens: int) -> str:
    """A context length as the field writes it: 8K, 1.5K, 1M (binary: K = 1,024 tokens); a
    length below 1K as it is (S = 512, not "0K")."""
    for unit, size in (("M", 1024**2), ("K", 1024)):
        if tokens >= size:
            return f"{tokens / size:.4g}{unit}" if tokens % (size // 8) == 0 else \
                f"{tokens / size:.1f}{unit}"
    return f"{tokens:,}"


def scenario_json_schema() -> str:
    return json.dumps(Scenario.model_json_schema(), indent=2)

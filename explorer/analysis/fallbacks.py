"""What the explorer shows when a scenario cannot be evaluated: the offending setting reset.

The pages name the setting and show the nearest scenario that can be evaluated instead of an
error; the rule (which setting falls back to what) lives here, once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from explorer.analysis.evaluate import evaluate
from explorer.base.errors import ScenarioError
from explorer.specs.scenario import Scenario

# ScenarioError.field → the settings that replace the offending one (disjoint keys).
FALLBACKS: dict[str, dict[str, Any]] = {
    "group": {"group": None},  # the model's own G, which divides its query heads
    "tp": {"tp": 1},  # no tensor parallelism: never more ranks than heads
    # No draft model for this target: the default mechanism, which needs none.
    "draft_model": {"mechanism": Scenario.model_fields["mechanism"].default},
    "layers": {"layers": None},  # the model's own layer count
    # An engine that does not run on the GPU (TensorRT-LLM on AMD): the default engine, which
    # runs on every preset (data/hardware.csv `engines`; a test checks it).
    "engine": {"engine": Scenario.model_fields["engine"].default},
}


class Fallback(BaseModel):
    """One setting the model rejected, and what is shown instead."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    field: str
    message: str
    replaced_by: dict[str, Any]

    @property
    def note(self) -> str:
        return f"{self.field}: {self.message} — showing {self.replaced_by} instead."


def with_fallbacks(scenario: Scenario, check: Callable[[Scenario], object] = evaluate
                   ) -> tuple[Scenario, list[Fallback]]:
    """The scenario to show: `scenario`, or it with each rejected setting reset by FALLBACKS.

    `check` evaluates (the UI passes its cached evaluation, so the work is not done twice).
    Raises the ScenarioError of a setting without a fallback, or one whose fallback changes
    nothing.
    """
    applied: list[Fallback] = []
    while True:  # each fix sets its own keys to fixed values, so it applies at most once

        try:
            check(scenario)
            return scenario, applied
        except ScenarioError as exc:
            fix = FALLBACKS.get(exc.field)
            if fix is None or all(getattr(scenario, k) == v for k, v in fix.items()):
                raise
            applied.append(Fallback(field=exc.field, message=exc.message, replaced_by=fix))
            scenario = scenario.model_copy(update=fix)

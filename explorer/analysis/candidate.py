"""The same operating point with another mechanism: the one rule recommend, sweep and export use."""

from __future__ import annotations

from explorer.specs.scenario import Acceptance, Scenario


def candidate(scenario: Scenario, slug: str) -> Scenario:
    """`scenario` drafted by mechanism `slug` instead.

    The scenario's acceptance source and ρ override describe its own mechanism, so another
    mechanism gets its own prior acceptance and its native ρ.
    """
    if slug == scenario.mechanism:
        return scenario
    return scenario.model_copy(update={"mechanism": slug, "acceptance": Acceptance(), "rho": None})

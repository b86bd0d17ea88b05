"""A scenario resolved: presets looked up, overrides applied, G and L_target fixed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from explorer.base.errors import ScenarioError
from explorer.base.limits import MAX_DRAFT_LEN
from explorer.base.mechanisms import mechanism_kind
from explorer.presets import (
    DEFAULT_DRAFT_MODEL,
    hardware_presets,
    mechanism_presets,
    model_presets,
)
from explorer.specs.architecture import DrafterSpec, ModelSpec
from explorer.specs.hardware import HardwareSpec
from explorer.specs.mechanism import MechanismSpec
from explorer.specs.scenario import Scenario

T = TypeVar("T")


class Resolved(BaseModel):
    """A scenario with its presets looked up and overrides applied."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scenario: Scenario
    hardware: HardwareSpec
    model: ModelSpec
    mechanism: MechanismSpec
    draft_model: ModelSpec | None
    group: float
    layers: int
    # A drafter head's own shapes (its config.json's hidden/intermediate/heads); None: the
    # head runs at the target's dims.
    head: ModelSpec | None = None


def _pick(table: Mapping[str, T], slug: str, field_name: str) -> T:
    if slug not in table:
        raise ScenarioError(field_name, f"unknown preset '{slug}'; known: {', '.join(table)}")
    return table[slug]


def compatible_drafts(model: ModelSpec) -> list[str]:
    """Draft presets that share the target's tokenizer (a draft must share its vocabulary)."""
    return [slug for slug, m in model_presets().items()
            if m.role in ("draft", "both") and slug != model.slug and m.tokenizer
            and m.tokenizer == model.tokenizer]


def _check_draft(mech: MechanismSpec, model: ModelSpec, draft: ModelSpec | None) -> None:
    """A separate draft model must exist and share the target's tokenizer (worded for any page:
    the CLI names its flag from the field)."""
    if draft is None:
        raise ScenarioError(
            "draft_model",
            f"{mech.name}: no draft model among the presets shares {model.name}'s tokenizer "
            f"({model.tokenizer or 'unknown'}), and a draft must share the target's vocabulary",
        )
    if model.tokenizer and draft.tokenizer != model.tokenizer:
        others = compatible_drafts(model)
        raise ScenarioError(
            "draft_model",
            f"{draft.name} uses the {draft.tokenizer} tokenizer and {model.name} the "
            f"{model.tokenizer} one: a draft must share the target's vocabulary"
            + (f" (drafts that do: {', '.join(others)})" if others else ""),
        )


def target_model(scenario: Scenario) -> ModelSpec | None:
    """The scenario's target: its custom model (read from a config.json) or its preset."""
    if scenario.custom_model is not None:
        return scenario.custom_model
    return model_presets().get(scenario.model)


def apply_drafter(mech: MechanismSpec, drafter: DrafterSpec | None) -> MechanismSpec:
    """The mechanism with a drafter config's layers and vocabulary when the config is a head of
    its kind (an EAGLE-3 config changes eagle3; the other mechanisms, ranked beside it by
    `recommend`, keep their presets)."""
    if drafter is None or drafter.kind != mech.slug:
        return mech
    update: dict[str, object] = {"draft_layers": drafter.draft_layers}
    kind = mechanism_kind(drafter.kind)
    if kind is not None and kind.head_own_vocab:
        update["draft_vocab"] = drafter.draft_vocab
    if drafter.block_size is not None and mech.is_block:
        # A block drafter fills block_size positions: the anchor and D ≤ block_size − 1 drafts.
        top = max(1, min(drafter.block_size - 1, MAX_DRAFT_LEN))
        update.update(max_draft_len=top, default_draft_len=min(mech.default_draft_len, top))
    return mech.model_copy(update=update)


def head_model(target: ModelSpec, drafter: DrafterSpec | None,
               mech: MechanismSpec) -> ModelSpec | None:
    """A drafter head's own shapes as a dense model (the target's where its config gives none);
    None where the head runs at the target's dims (the presets' heads)."""
    if drafter is None or drafter.kind != mech.slug:
        return None
    own = {"hidden": drafter.hidden, "ffn_intermediate": drafter.intermediate,
           "q_heads": drafter.q_heads, "kv_heads": drafter.kv_heads,
           "head_dim": drafter.head_dim}
    given = {k: v for k, v in own.items() if v is not None}
    dense_ffn = target.ffn_intermediate or target.moe_intermediate * (
        target.experts_per_tok + target.n_shared_experts)
    base = {"hidden": target.hidden, "ffn_intermediate": dense_ffn, "q_heads": target.q_heads,
            "kv_heads": target.kv_heads, "head_dim": target.head_dim}
    if not given or all(base[k] == v for k, v in given.items()):
        return None
    return ModelSpec(
        slug=f"{target.slug}:head", name=f"{drafter.name} (head)", role="draft",
        layers=max(drafter.draft_layers or 1, 1), vocab=target.vocab, gated_mlp=True,
        **{**base, **given})


def _default_draft(scenario: Scenario, model: ModelSpec) -> str | None:
    if scenario.custom_model is None:
        return DEFAULT_DRAFT_MODEL.get(scenario.model)
    drafts = compatible_drafts(model)  # a custom target: the first preset draft that fits
    return drafts[0] if drafts else None


def resolve(scenario: Scenario) -> Resolved:
    """Look up presets and apply overrides; raises ScenarioError naming the bad field."""
    hw = _pick(hardware_presets(), scenario.hardware, "hardware")
    model = scenario.custom_model or _pick(model_presets(), scenario.model, "model")
    mech = apply_drafter(_pick(mechanism_presets(), scenario.mechanism, "mechanism"),
                         scenario.custom_drafter)
    # Which engines run on a GPU is the preset's (data/hardware.csv `engines`).
    engine_problem = hw.engine_problem(scenario.engine)
    if engine_problem is not None:
        raise ScenarioError("engine", engine_problem)
    if scenario.hardware_overrides is not None:
        hw = scenario.hardware_overrides.apply(hw)
    # Uncovered calls are priced on the roofline fitted on the scenario's engine's tables.
    hw = hw.for_engine(scenario.engine)
    draft = None
    if scenario.custom_drafter is not None and scenario.custom_drafter.model is not None:
        # an external draft model's config (DrafterSpec carries a model exactly then)
        draft = scenario.custom_drafter.model
    else:
        draft_slug = scenario.draft_model or _default_draft(scenario, model)
        if draft_slug is not None:
            draft = _pick(model_presets(), draft_slug, "draft_model")
    if mech.needs_draft_model:
        _check_draft(mech, model, draft)
    group = float(scenario.group) if scenario.group is not None else model.group_size
    if model.attention_kind == "gqa" and model.q_heads % group:
        raise ScenarioError(
            "group", f"G={scenario.group} must divide the {model.q_heads} query heads"
        )
    if scenario.tp > model.q_heads:
        raise ScenarioError("tp", f"TP={scenario.tp} exceeds the {model.q_heads} query heads")
    return Resolved(
        scenario=scenario,
        hardware=hw,
        model=model,
        mechanism=mech,
        draft_model=draft,
        group=group,
        layers=scenario.layers if scenario.layers is not None else model.layers,
        head=head_model(model, scenario.custom_drafter, mech),
    )

"""T_draft(B, D) per component for one speculation round, by draft style (DESIGN.md §2.2)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from explorer.model.layers import COMPONENTS, Breakdown, FloatArray, LayerModel, _f, _zeros
from explorer.specs.architecture import ModelSpec
from explorer.specs.mechanism import MechanismSpec


def native_draft_layers(
    mech: MechanismSpec, target: ModelSpec, draft: ModelSpec | None
) -> float:
    """L_draft of the mechanism (a draft-model drafter: the draft model's layers)."""
    if mech.draft_style == "lookup":
        return 0.0
    if mech.draft_layers is None:  # a draft model (the spec ties this to needs_draft_model)
        return float(draft.layers) if draft is not None else 0.0
    return float(mech.draft_layers)


def draft_time(
    target_layers: LayerModel,
    draft_layers_model: LayerModel | None,
    mech: MechanismSpec,
    batch: npt.ArrayLike,
    draft_len: npt.ArrayLike,
    context: npt.ArrayLike,
    group: npt.ArrayLike,
    layer_scale: npt.ArrayLike = 1.0,
    tokens_of: Callable[[FloatArray, FloatArray], FloatArray] | None = None,
    first_forward_width: npt.ArrayLike = 1.0,
    target_hidden: float | None = None,
) -> Breakdown:
    """T_draft(B, D) per component for one speculation round (zero at D = 0).

    `layer_scale` multiplies the drafter's layer work: it carries a ρ override. `tokens_of(B, W)`
    gives the tokens a draft forward's GEMMs run on once the engine pads it to a captured
    CUDA-graph size (model/engine_costs.graph_shape); without it, B·W.
    `first_forward_width`: tokens per request of a chain head's first forward (the engine
    profile's draft_first_forward: 1 + D where it runs on every scheduled token, else 1); that
    forward alone applies the fused FC of the target's features and samples B rows, the other
    D − 1 run on B tokens. `target_hidden`: the width of the target features that FC reads
    (default the head's own hidden size, the same for a head at the target's dims).
    """
    def pad(bb: FloatArray, ww: FloatArray) -> FloatArray | None:
        return tokens_of(bb, ww) if tokens_of is not None else None

    b, d, s, g = _f(batch), _f(draft_len), _f(context), _f(group)
    one = np.ones_like(b)
    shape = _zeros(b, d, s, g)
    zero: Breakdown = {c: shape.copy() for c in COMPONENTS}
    if mech.draft_style == "lookup":
        zero["overhead"] = shape + np.where(d > 0, mech.lookup_time_s, 0.0)
        return zero
    scale = _f(layer_scale)
    if mech.draft_style == "chain":
        if mech.draft_layers is None:  # a draft model: D full small-model steps
            if draft_layers_model is None:
                return {c: shape + np.nan for c in COMPONENTS}
            step = draft_layers_model.forward(b, one, s, include_step_overhead=False,
                                              tokens=pad(b, one))
            return {c: shape + step[c] * d * scale for c in COMPONENTS}
        w1 = np.broadcast_to(_f(first_forward_width), np.broadcast_shapes(b.shape, d.shape))
        first = target_layers.head_layers(
            b, w1, s, g, float(mech.draft_layers), mech.draft_vocab,
            fused_target_layers=mech.fused_target_layers, tokens=pad(b, w1), logit_rows=b,
            fused_input_hidden=target_hidden,
        )
        later = target_layers.head_layers(
            b, one, s, g, float(mech.draft_layers), mech.draft_vocab, tokens=pad(b, one),
        )
        n_first, n_later = np.where(d > 0, 1.0, 0.0), np.maximum(d - 1.0, 0.0)
        return {c: shape + (first[c] * n_first + later[c] * n_later) * scale
                for c in COMPONENTS}
    # Block drafters: one pass of draft_layers over the whole block of D tokens.
    layers = float(mech.draft_layers or 0)
    width = np.maximum(d, 1.0)
    block = target_layers.head_layers(b, width, s, g, layers, mech.draft_vocab,
                                      tokens=pad(b, width))
    out = {c: shape + np.where(d > 0, block[c] * scale, 0.0) for c in COMPONENTS}
    if mech.draft_style == "block_serial" and mech.serial_head_layer_fraction > 0:
        head = target_layers.head_layers(
            b, one, s, g, mech.serial_head_layer_fraction, mech.draft_vocab, tokens=pad(b, one)
        )
        out = {c: out[c] + head[c] * d * scale for c in COMPONENTS}
    return out

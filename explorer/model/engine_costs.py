"""What the serving engine adds around the kernels (DESIGN.md §2.1, data/engines.csv).

`graph_shape` says how many tokens a forward's GEMMs really run on once the step is padded up to
the next captured CUDA-graph size (a staircase), and where no graph fits so the step runs eager.
`apply_engine_profile` is the one place a profile's costs are charged, to a target (verify)
forward or to a round of draft forwards:
- the per-step scheduling/sampling overhead, once per target step, and the per-sequence cost,
  once per request in it;
- the compute a served target step does not overlap with its weight reads: κ·min(compute at
  the dtype's peak, weight read) (`compute_overlap_loss`; the tables time each GEMM alone);
- the per-draft-forward fixed overhead, once per draft forward (EAGLE/MTP/external: D forwards;
  DFlash: one block pass; DSpark: one, its D serial head steps run within the pass; n-gram:
  none);
- the sampler's passes over the logits: one row per request (a plain decode token or the bonus
  token) at `sampler_bytes_per_logit`, and the rejection sampler's over the B·D draft-position
  rows at `rejection_sampler_bytes_per_logit` (memory-bound; vLLM's passes are cited in
  data/engines.csv);
- an eager step's launches: each kernel costs the eager launch instead of the graph replay.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from explorer.model.layers import Breakdown
from explorer.specs.engine import EngineProfile
from explorer.specs.hardware import HardwareSpec

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def graph_shape(profile: EngineProfile, batch: npt.ArrayLike,
                width: npt.ArrayLike) -> tuple[FloatArray, BoolArray]:
    """(tokens the GEMMs run on, eager) for B sequences × W tokens under the profile's graphs.

    vLLM captures by token count B·W, SGLang and TensorRT-LLM by batch size B (each request
    then runs W tokens). A padding engine rounds up to the next captured size; one that does
    not pad (TensorRT-LLM's default) replays a graph only at a captured size. Past the largest
    size, or off the list without padding, the step runs eager on its real tokens.
    """
    b = np.asarray(batch, dtype=np.float64)
    w = np.asarray(width, dtype=np.float64)
    size = b * w if profile.capture_unit == "tokens" else b * np.ones_like(w)
    sizes = np.asarray(profile.capture_sizes, dtype=np.float64)
    idx = np.searchsorted(sizes, size, side="left")
    inside = idx < sizes.size
    captured = sizes[np.minimum(idx, sizes.size - 1)]
    if profile.pads_to_capture:
        padded = np.where(inside, captured, size)
        eager = ~inside
    else:
        padded = size
        eager = ~(inside & (captured == size))
    tokens = padded if profile.capture_unit == "tokens" else padded * w
    return np.asarray(tokens, dtype=np.float64), np.asarray(eager, dtype=np.bool_)


def apply_engine_profile(
    profile: EngineProfile,
    forward: Breakdown,
    hw: HardwareSpec,
    *,
    eager_kernels: npt.ArrayLike = 0.0,
    draft_forwards: npt.ArrayLike = 0.0,
    sampled_tokens: npt.ArrayLike = 0.0,
    rejection_rows: npt.ArrayLike = 0.0,
    vocab: int = 0,
    step_overhead_s: float = 0.0,
    sequences: npt.ArrayLike = 0.0,
    overlappable_s: npt.ArrayLike = 0.0,
) -> Breakdown:
    """The forward's breakdown with the engine's costs added to its `overhead`.

    `eager_kernels` counts the kernels that launch without a graph (0 where the step replays
    one; each already pays the graph launch latency in the forward); `sampled_tokens` the rows
    whose `vocab` logits the sampler samples (one per request) and `rejection_rows` the
    draft-position rows the rejection sampler passes over; `step_overhead_s` is charged once
    (a target step), the per-sequence cost once per request of `sequences`, and the
    overlap loss κ on `overlappable_s` = min(compute, weight read) of a target step.
    """
    launches = (np.asarray(eager_kernels, dtype=np.float64)
                * max(profile.eager_launch_s - hw.launch_latency_s, 0.0))
    sampler = ((np.asarray(sampled_tokens, dtype=np.float64) * profile.sampler_bytes_per_logit
                + np.asarray(rejection_rows, dtype=np.float64)
                * profile.rejection_sampler_bytes_per_logit)
               * vocab / (hw.hbm_bw_bytes_per_s * hw.gemm_memory_efficiency))
    extra = (step_overhead_s + launches + sampler
             + np.asarray(draft_forwards, dtype=np.float64) * profile.draft_forward_overhead_s
             + np.asarray(sequences, dtype=np.float64) * profile.per_sequence_s
             + np.asarray(overlappable_s, dtype=np.float64) * profile.compute_overlap_loss)
    out = dict(forward)
    out["overhead"] = forward["overhead"] + extra
    return out

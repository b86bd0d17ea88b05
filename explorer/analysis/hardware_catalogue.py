"""Every hardware preset with what prices its kernels: measured tables or a roofline from its
spec sheet (with that roofline's cross-validated error), the engines that run on it and its
selector group. The `presets` command and the Presets & sources page list these rows."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from explorer.analysis.roofline_check import model_vs_measured
from explorer.kernel_tables import preset_coverage
from explorer.kernel_tables.catalog import Missing, package_label, resolve_system
from explorer.presets import hardware_presets
from explorer.specs.hardware import HARDWARE_GROUPS, HardwareSpec


@dataclass(frozen=True)
class HardwareEntry:
    slug: str
    name: str
    group: str
    engines: tuple[str, ...]
    measured: bool  # the pinned package measured this GPU's kernels
    kernels: str  # what prices its kernels, in one line


def _measured_text(hw: HardwareSpec, system: str) -> str:
    """'measured tables: aiconfigurator-core 0.12.0 gb300 (vllm 0.24.0, …)'."""
    per_engine = [f"{c.engine} {c.gemm_version}" for c in preset_coverage((hw.slug,))
                  if c.gemm_version is not None and c.engine in hw.engines]
    fit = hw.gemm_fit("bf16")
    where = (f"the roofline fitted on {fit.gpus.replace(' ', ', ')}" if fit is not None
             else "the single-η roofline")
    return (f"measured tables: {package_label()} {system} (GEMM: {', '.join(per_engine)}); "
            f"{where} where they do not cover a call")


# GEMM shapes of LLM layers at any TP (as roofline_loo.csv's `serving` columns).
SERVING_MIN_DIM = 1024


@lru_cache(maxsize=8)
def other_vendor_error(fit_vendor: str, dtype: str = "bf16") -> tuple[str, str, float] | None:
    """How the roofline fitted on `fit_vendor`'s GPUs misses a GPU of another vendor that has
    measured tables (none of them was fitted on): (its name, engine, MAPE on serving shapes)
    of the first such GPU and engine with a table at `dtype`; None where there is none."""
    for hw in hardware_presets().values():
        if hw.vendor == fit_vendor or isinstance(resolve_system(hw.slug), Missing):
            continue
        for engine in hw.engines:
            d = model_vs_measured(hw.slug, engine, dtype, max_points=1_000_000)
            serving = (d.n >= SERVING_MIN_DIM) & (d.k >= SERVING_MIN_DIM)
            if serving.any():
                return hw.name, engine, float(np.mean(np.abs(d.residual[serving])))
    return None


def hardware_entry(hw: HardwareSpec) -> HardwareEntry:
    system = resolve_system(hw.slug)
    measured = not isinstance(system, Missing)
    if measured:
        kernels = _measured_text(hw, str(system))
    else:
        kernels = hw.roofline_error_note("bf16", "bf16")
        fit = hw.gemm_fit("bf16")
        found = other_vendor_error(fit.vendor) if fit is not None and fit.vendor != hw.vendor \
            else None
        if found is not None:  # the one check of carrying it to another vendor's kernels
            name, engine, mape = found
            kernels += (f"; carried to another vendor, the same roofline misses {name}'s "
                        f"measured {engine} BF16 GEMMs by {mape:.1%} (serving shapes; a GPU "
                        "it was not fitted on)")
    return HardwareEntry(hw.slug, hw.name, hw.group, tuple(hw.engines), measured, kernels)


def hardware_catalogue() -> tuple[HardwareEntry, ...]:
    """Every preset, in the selector's group order (data/hardware.csv order within a group)."""
    rank = {g: i for i, g in enumerate(HARDWARE_GROUPS)}
    hws = sorted(hardware_presets().values(), key=lambda h: rank.get(h.group, len(rank)))
    return tuple(hardware_entry(h) for h in hws)

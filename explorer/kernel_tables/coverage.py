"""What the measured tables cover for our hardware presets: per engine, GEMM and KV dtypes."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from explorer.base.dtypes import normalize_dtype
from explorer.kernel_tables.catalog import (
    ENGINES,
    SYSTEM_FOR_PRESET,
    Missing,
    find_table,
    resolve_system,
)


@dataclass(frozen=True)
class PresetCoverage:
    """One (hardware preset, engine): the newest tables and the dtypes they hold."""

    preset: str
    engine: str
    system: str | None
    gemm_version: str | None
    gemm_dtypes: tuple[str, ...]  # canonical names: bf16, fp8, fp8_block, fp4, int8_wo, …
    attention_version: str | None
    kv_dtypes: tuple[str, ...]
    reason: str = ""  # why there is nothing, where there is nothing


@lru_cache(maxsize=256)
def _column_values(path: Path, column: str) -> tuple[str, ...]:
    values = pd.read_parquet(path, columns=[column])[column].unique()
    return tuple(sorted(normalize_dtype(str(v)) for v in values))


def table_dtypes(gpu: str, op: str, engine: str, version: str | None = None) -> tuple[str, ...]:
    """Canonical dtypes in a GEMM table (gemm_dtype) or attention table (kv_cache_dtype)."""
    ref = find_table(gpu, op, engine, version)
    if isinstance(ref, Missing):
        return ()
    return _column_values(ref.path, "gemm_dtype" if op == "gemm" else "kv_cache_dtype")


def preset_coverage(presets: tuple[str, ...] | None = None) -> tuple[PresetCoverage, ...]:
    """Coverage of each hardware preset (default: every slug we map) by each engine."""
    out = []
    for preset in presets or tuple(SYSTEM_FOR_PRESET):
        system = resolve_system(preset)
        for engine in ENGINES:
            if isinstance(system, Missing):
                out.append(PresetCoverage(preset, engine, None, None, (), None, (),
                                          system.reason))
                continue
            gemm = find_table(preset, "gemm", engine)
            attn = find_table(preset, "generation_attention", engine)
            reasons = [x.reason for x in (gemm, attn) if isinstance(x, Missing)]
            out.append(PresetCoverage(
                preset, engine, system,
                None if isinstance(gemm, Missing) else gemm.version,
                table_dtypes(preset, "gemm", engine),
                None if isinstance(attn, Missing) else attn.version,
                table_dtypes(preset, "generation_attention", engine),
                "; ".join(reasons)))
    return tuple(out)

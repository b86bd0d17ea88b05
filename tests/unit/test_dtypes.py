"""One dtype vocabulary: every spelling a file may use maps to one canonical dtype, and every
reader (tables, Scenario, roofline) speaks it."""

from __future__ import annotations

import pytest

from explorer.base.dtypes import (
    BYTES_PER_ELEMENT,
    DTYPE_SPELLINGS,
    KV_DTYPES,
    WEIGHT_DTYPES,
    normalize_dtype,
    spellings_of,
)
from explorer.specs.measured import AttentionTimings, GemmTimings
from explorer.specs.scenario import Scenario

# The spellings the calibration and the measured-kernel correction each accepted before.
BF16 = ("bf16", "bfloat16", "fp16", "float16", "half", "torch.bfloat16", "torch.float16")
FP8 = ("fp8", "float8", "fp8_e4m3", "e4m3", "float8_e4m3fn", "torch.float8_e4m3fn")
# Block-scaled FP8 has kernels and measured tables of its own: never folded into fp8.
FP8_BLOCK = ("fp8_block", "fp8-block", "fp8_blockwise")
FP4 = ("fp4", "nvfp4", "mxfp4")


@pytest.mark.parametrize(("canonical", "names"), [("bf16", BF16), ("fp8", FP8),
                                                  ("fp8_block", FP8_BLOCK), ("fp4", FP4)])
def test_every_spelling_maps_to_its_dtype_in_any_case(canonical: str, names: tuple[str, ...]):
    assert set(spellings_of(canonical)) == set(names)
    for name in names:
        assert normalize_dtype(name) == canonical
        assert normalize_dtype(f"  {name.upper()} ") == canonical


def test_unknown_dtypes_come_back_lower_cased():
    assert normalize_dtype(" INT4_WO ") == "int4_wo"
    assert "int4_wo" not in BYTES_PER_ELEMENT


def test_the_vocabulary_is_complete_and_the_scenario_speaks_it():
    assert set(DTYPE_SPELLINGS.values()) == {*WEIGHT_DTYPES, "fp8_block"}
    assert set(WEIGHT_DTYPES) | set(KV_DTYPES) <= set(BYTES_PER_ELEMENT)
    props = Scenario.model_json_schema()["properties"]
    assert tuple(props["dtype"]["enum"]) == WEIGHT_DTYPES
    assert tuple(props["kv_dtype"]["enum"]) == KV_DTYPES


def test_tables_hold_the_canonical_spelling():
    g = GemmTimings.from_columns([1, 2, 3], 4096, 4096, ["torch.bfloat16", "E4M3", "int8"],
                                 [1e-5, 1e-5, 1e-5])
    assert g.dtype == ("bf16", "fp8", "int8")
    a = AttentionTimings.from_columns([1], [1024], [32], [8], [128], [1], [1e-5],
                                      kv_dtype="torch.float8_e4m3fn")
    assert a.kv_dtype == ("fp8",)

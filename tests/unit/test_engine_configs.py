"""The recommendation as vLLM / SGLang / TensorRT-LLM configuration: keys, types, and values that
agree with the recommendation and with the best D at each batch."""

from __future__ import annotations

import itertools
import json
import re
import shlex

import numpy as np
import pytest
import yaml

from explorer import Scenario, recommend
from explorer.analysis.frontier import best_draft_len
from explorer.export.engine_configs import (
    SGLANG_ALGORITHM,
    TRTLLM_DECODING_TYPE,
    VLLM_METHOD,
    draft_len_at,
    engine_configs,
    sglang_config,
    to_yaml,
    trtllm_config,
    vllm_config,
)
from explorer.presets import mechanism_presets, sample_curves
from explorer.specs.scenario import Acceptance

MECHANISMS = ["external", "mtp", "eagle3", "dflash", "dspark", "ngram"]
# A point where memory does not bind up to B = 4096 and speculation stops paying at a few hundred
# (EAGLE-3 at B = 1408). EAGLE-3's AL is the published curve of the public head on this model
# (vLLM issue 20780, MT-bench, D = 2..7) so the schedules do not move with the prior's level:
# the prior for the mix (AL 1.89 at D = 1, 3.08 at D = 3 since issue 22's EAGLE-1 fix) pays to
# B = 4096 here.
SMALL = {"model": "llama-3.1-8b", "tp": 1, "context": 128, "batch": 8,
         "draft_model": "llama-3.2-1b", "acceptance": Acceptance(
             kind="curve",
             curve=sample_curves()["eagle3/Llama-3.1-8B-Instruct/MT-bench (inferred, see notes)"])}
# MTP needs a target that ships MTP layers: DeepSeek-V3 (FP8 weights fit on 8 GPUs).
SMALL_MTP = {"model": "deepseek-v3", "tp": 8, "dtype": "fp8", "context": 128, "batch": 8}
VLLM_KEYS = {"method", "model", "num_speculative_tokens", "num_speculative_tokens_per_batch_size"}


def sglang_args(flags: list[str]) -> dict[str, str]:
    assert len(flags) % 2 == 0 and all(f.startswith("--") for f in flags[::2]), flags
    return dict(zip(flags[::2], flags[1::2], strict=True))


def trt_lookup(schedule: dict[int, int], batch: int) -> int:
    """TensorRT-LLM's reading (llm_args.py): the first key ≥ B, and 0 above the largest key."""
    for max_batch in sorted(schedule):
        if batch <= max_batch:
            return schedule[max_batch]
    return 0


def vllm_lookup(ranges: list[list[int]], batch: int) -> int:
    """vLLM's reading (dynamic/utils.py): the range holding B; the last K holds above it."""
    for lo, hi, k in ranges:
        if lo <= batch <= hi:
            return k
    return ranges[-1][2]


def test_default_configs_follow_the_recommendation():
    sc = Scenario()
    rec = recommend(sc)
    assert rec.best is not None and rec.best.speedup > 1
    ec = engine_configs(sc)
    assert ec.mechanism == rec.best.mechanism
    assert ec.draft_len == ec.recommended_draft_len == rec.best.draft_len
    assert ec.speculate_at_batch and ec.speedup_at_batch == pytest.approx(rec.best.speedup)
    assert draft_len_at(ec.schedule, sc.batch) == rec.best.draft_len

    v = ec.vllm.speculative_config
    assert v is not None and set(v) <= VLLM_KEYS
    assert v["method"] == VLLM_METHOD[ec.mechanism]
    assert v["num_speculative_tokens"] == rec.best.draft_len
    assert isinstance(v["num_speculative_tokens"], int)
    assert shlex.split(ec.vllm.cli)[0] == "--speculative-config"
    assert json.loads(shlex.split(ec.vllm.cli)[1]) == v

    t = ec.tensorrt_llm.config
    assert t is not None
    assert t["speculative_config"]["decoding_type"] == TRTLLM_DECODING_TYPE[ec.mechanism]
    assert t["speculative_config"]["max_draft_len"] == rec.best.draft_len

    args = sglang_args(ec.sglang.flags)
    assert args["--speculative-algorithm"] == SGLANG_ALGORITHM[ec.mechanism]
    assert all(isinstance(f, str) for f in ec.sglang.flags)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_each_mechanism_maps_to_each_engine(mechanism: str):
    sc = Scenario(**(SMALL_MTP if mechanism == "mtp" else SMALL))  # type: ignore[arg-type]
    ec = engine_configs(sc, mechanism)
    rec = recommend(sc, [mechanism])
    # a head still to be trained is never the headline; the export configures its best D
    best = rec.best or rec.best_if_trained
    assert best is not None and best.speedup > 1
    d = best.draft_len
    assert ec.mechanism == mechanism and ec.draft_len == d

    v = ec.vllm.speculative_config
    assert v is not None and v["method"] == VLLM_METHOD[mechanism]
    assert v["num_speculative_tokens"] == d
    assert ("model" in v) == (mechanism in ("external", "eagle3", "dflash", "dspark"))
    published = {"eagle3": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",  # data/draft_heads.csv
                 "dflash": "z-lab/LLaMA3.1-8B-Instruct-DFlash-UltraChat"}
    if mechanism in published:  # the catalogue's first checkpoint for the target, named
        assert v["model"] == published[mechanism]
        assert any(published[mechanism] in n for n in ec.notes)
    elif "model" in v:
        assert v["model"].startswith("<") and v["model"].endswith(">")
    if mechanism == "external":
        assert "Llama-3.2-1B" in v["model"]

    args = sglang_args(ec.sglang.flags)
    assert args["--speculative-algorithm"] == SGLANG_ALGORITHM[mechanism]
    assert ("--speculative-draft-model-path" in args) == ("model" in v)
    if mechanism in ("external", "mtp", "eagle3"):
        assert args["--speculative-num-steps"] == str(d)
        assert args["--speculative-eagle-topk"] == "1"
        assert args["--speculative-num-draft-tokens"] == str(d + 1)
    elif mechanism == "dspark":
        assert args["--speculative-dspark-block-size"] == str(d)
    else:  # dflash, ngram: the verify window, D drafts + 1
        assert args["--speculative-num-draft-tokens"] == str(d + 1)
    assert shlex.split(ec.sglang.cli) == ec.sglang.flags
    assert any("not supported by SGLang" in n for n in ec.sglang.notes)

    spec = ec.tensorrt_llm.config["speculative_config"]  # type: ignore[index]
    assert spec["decoding_type"] == TRTLLM_DECODING_TYPE[mechanism]
    assert spec["max_draft_len"] == d
    assert ("speculative_model" in spec) == ("model" in v)
    assert ec.tensorrt_llm.yaml.startswith("speculative_config:\n")
    assert f"  decoding_type: {spec['decoding_type']}\n" in ec.tensorrt_llm.yaml
    for src in (ec.vllm.source, ec.sglang.source, ec.tensorrt_llm.source):
        assert re.search(r"@[0-9a-f]{40}", src), src


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_schedule_is_the_best_d_per_batch_non_increasing_and_off_beyond_the_switch(mechanism):
    sc = Scenario(**SMALL)  # type: ignore[arg-type]
    ec = engine_configs(sc, mechanism)
    bounds = [b for b, _ in ec.schedule]
    ds = [d for _, d in ec.schedule]
    assert bounds == sorted(set(bounds)) and bounds[-1] == ec.max_batch_evaluated == 4096
    assert all(a >= b for a, b in itertools.pairwise(ds)), ds
    assert ds[0] == ec.draft_len and min(ds) >= 0
    assert all(a != b for a, b in itertools.pairwise(ds))  # runs are merged

    # Independent: the best D per B from analysis.best_draft_len on the same integer grid (memory
    # does not bind here), made non-increasing by its upper envelope and capped at D.
    cand = sc if mechanism == sc.mechanism else sc.model_copy(
        update={"mechanism": mechanism, "acceptance": Acceptance(), "rho": None})
    batches = np.arange(1, 4097)
    ref = best_draft_len(cand, batches)
    assert ref.max_batch_in_memory == 4096
    assert ref.speed_best_draft_len == ref.best_draft_len  # memory does not bind
    best = np.asarray(ref.speed_best_draft_len)
    expected = np.minimum(np.maximum.accumulate(best[::-1])[::-1], ec.draft_len)
    got = np.array([draft_len_at(ec.schedule, int(b)) for b in batches])
    np.testing.assert_array_equal(got, expected)

    assert ec.switch_off_batch is not None and 0 < ec.switch_off_batch < 4096
    assert ec.break_even_batch == ref.break_even_batch == ec.switch_off_batch + 1
    assert all(draft_len_at(ec.schedule, b) > 0 for b in range(1, ec.switch_off_batch + 1))
    assert all(draft_len_at(ec.schedule, b) == 0 for b in range(ec.switch_off_batch + 1, 4200))


def test_exported_schedule_is_the_explorer_pages_speed_only_best_d_where_memory_binds():
    """The page (best_draft_len) and the export read one function: where memory binds the
    schedule follows the speed-only D, not the D among fitting points, at every batch."""
    sc = Scenario(context=32768)  # 70B on 2×H200: plain decoding fits only up to B = 12
    ec = engine_configs(sc, "eagle3")
    ref = best_draft_len(sc, np.arange(1, 4097))
    speed_d = np.asarray(ref.speed_best_draft_len)
    fit_d = np.asarray(ref.best_draft_len)
    assert ref.max_batch_in_memory == ec.max_batch_in_memory == 12
    # the limit is EAGLE-3's, its head's weights and KV included (plain decoding fits to 13)
    assert ref.max_batch_plain == 13
    assert any(n.startswith("EAGLE-3 head fits in memory up to B = 12 at S = 32768")
               for n in ec.notes), ec.notes
    assert (fit_d[12:] == 0).all() and (speed_d[12:] > 0).all()  # the two answers differ
    # The schedule is the speed-only D made non-increasing by its upper envelope (with measured
    # kernels the speed-only D flips 8 ↔ 7 at a few small batches, where D = 7 and 8 are within
    # timing noise) and capped at the configured D.
    envelope = np.minimum(np.maximum.accumulate(speed_d[::-1])[::-1], ec.draft_len)
    assert speed_d.max() == ec.draft_len
    got = np.array([draft_len_at(ec.schedule, int(b)) for b in ref.batch])
    np.testing.assert_array_equal(got, envelope)
    assert ec.break_even_batch == ref.break_even_batch


@pytest.mark.parametrize("mechanism", ["eagle3", "ngram", "dflash"])
def test_engine_schedules_read_back_to_the_schedule(mechanism: str):
    ec = engine_configs(Scenario(**SMALL), mechanism)  # type: ignore[arg-type]
    v = ec.vllm.speculative_config
    assert v is not None
    ranges = v["num_speculative_tokens_per_batch_size"]
    assert ranges[0][0] == 1
    assert all(len(r) == 3 and all(isinstance(x, int) for x in r) for r in ranges)
    assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(ranges))
    assert all(0 <= k <= v["num_speculative_tokens"] for _, _, k in ranges)
    assert ranges[-1][2] == 0  # off above the switch-off batch, and above the last range too

    spec = ec.tensorrt_llm.config["speculative_config"]  # type: ignore[index]
    sched = spec["draft_len_schedule"]
    assert list(sched) == sorted(sched) and all(isinstance(k, int) for k in sched)
    assert sched[min(sched)] == spec["max_draft_len"]  # llm_args.py: smallest key = max_draft_len
    assert min(sched) == 1  # older releases refuse a schedule without {1: max_draft_len}
    assert all(0 < d <= spec["max_draft_len"] for d in sched.values())
    assert max(sched) == ec.switch_off_batch
    for b in [1, 2, 7, 30, 64, 100, 150, 200, 299, 400, 1000, 4096, 10_000]:
        assert trt_lookup(sched, b) == draft_len_at(ec.schedule, b) == vllm_lookup(ranges, b), b
    for line in (f"    {k}: {d}" for k, d in sched.items()):
        assert line in ec.tensorrt_llm.yaml.splitlines()


def test_a_batch_where_speculation_loses_is_configured_off():
    # S = 128 on an A100: the switch-off is at B = 2811 (B = 1536 lost before issue 22 took
    # SpecDecodeBench's EAGLE-1 points out of the EAGLE-3 prior, which raised its AL at D = 1 from
    # 1.75 to 1.89); at B = 3200, within memory (3655), speculation loses 0.3 %.
    sc = Scenario(model="llama-3.1-8b", tp=1, context=128, batch=3200, hardware="a100")
    ec = engine_configs(sc, "eagle3")
    assert not ec.speculate_at_batch
    assert ec.speedup_at_batch is not None and ec.speedup_at_batch <= 1
    assert ec.switch_off_batch is not None and ec.switch_off_batch < sc.batch
    assert draft_len_at(ec.schedule, sc.batch) == 0
    v = ec.vllm.speculative_config
    assert v is not None and vllm_lookup(v["num_speculative_tokens_per_batch_size"], sc.batch) == 0
    assert any("does not pay" in n for n in ec.notes)
    assert any(f"--max-running-requests {ec.switch_off_batch}" in n for n in ec.sglang.notes)


def test_speculation_that_never_pays_emits_no_engine_config():
    sc = Scenario(acceptance=Acceptance(kind="iid", alpha=0.0))  # AL = 1 at every D
    ec = engine_configs(sc, "eagle3")
    assert ec.switch_off_batch == 0 and ec.draft_len == 0
    assert all(d == 0 for _, d in ec.schedule)
    assert ec.vllm.speculative_config is None and ec.vllm.cli == ""
    assert ec.sglang.flags == [] and ec.tensorrt_llm.config is None
    assert any("does not pay at any batch" in n for n in ec.notes)


def test_a_smaller_d_than_preferred_at_small_batch_is_noted():
    ec = engine_configs(Scenario(), "ngram")
    assert ec.draft_len == ec.recommended_draft_len
    assert any("prefers D up to" in n for n in ec.notes)
    v = ec.vllm.speculative_config
    assert v is not None and v["num_speculative_tokens"] == ec.draft_len


def test_dspark_schedule_is_not_supported_by_tensorrt_llm():
    ec = engine_configs(Scenario(**SMALL), "dspark")  # type: ignore[arg-type]
    spec = ec.tensorrt_llm.config["speculative_config"]  # type: ignore[index]
    assert "draft_len_schedule" not in spec and "max_concurrency" not in spec
    assert any("not supported by TensorRT-LLM for DSpark" in n for n in ec.tensorrt_llm.notes)


def test_unsupported_combinations_are_notes_not_flags():
    sc = Scenario()
    for cfg in (vllm_config("medusa", 3, [(4096, 3)], sc), sglang_config("medusa", 3, None, sc),
                trtllm_config("medusa", 3, [(4096, 3)], sc)):
        assert any("'medusa' is not supported by" in n for n in cfg.notes)
    assert vllm_config("medusa", 3, [(4096, 3)], sc).speculative_config is None
    amd = Scenario(hardware="mi300x", mechanism="ngram")
    ec = engine_configs(amd, "ngram")
    assert ec.tensorrt_llm.config is None and ec.tensorrt_llm.yaml == ""
    assert any("not supported by TensorRT-LLM" in n for n in ec.tensorrt_llm.notes)
    assert ec.sglang.flags == []
    assert any("NGRAM is not supported by SGLang on AMD" in n for n in ec.sglang.notes)
    assert ec.vllm.speculative_config is not None  # vLLM runs ngram on ROCm


def test_yaml_quotes_what_needs_quoting():
    obj = {"a": {"b": "Eagle3", "c": "<x: y>", "d": {1: 4, 16: 0}, "e": "yes", "f": [1, "x"],
                 "g": "null", "h": "3", "i": "<" + "very long placeholder " * 10 + ">"}}
    text = to_yaml(obj)
    assert yaml.safe_load(text) == obj  # "yes", "null" and "3" stay strings, ints stay ints
    assert text.startswith("a:\n  b: Eagle3\n") and "\n  d:\n    1: 4\n    16: 0\n" in text
    assert len(text.splitlines()) == 13  # block style, the long string on one line


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_tensorrt_llm_yaml_parses_back_to_the_config(mechanism: str):
    ec = engine_configs(Scenario(**SMALL), mechanism)  # type: ignore[arg-type]
    assert ec.tensorrt_llm.config is not None
    assert yaml.safe_load(ec.tensorrt_llm.yaml) == ec.tensorrt_llm.config


def test_engine_tables_name_only_preset_mechanisms():
    """A mechanism is a data/mechanisms.csv row plus these engine-name entries (SOURCES.md)."""
    from explorer.export import engine_configs as ec

    slugs = set(mechanism_presets())
    for table in (ec.VLLM_METHOD, ec.SGLANG_ALGORITHM, ec.SGLANG_DRAFT_LEN_FLAGS,
                  ec.TRTLLM_DECODING_TYPE):
        assert set(table) == slugs
    for extra in (ec.VLLM_NOTES, ec.SGLANG_NVIDIA_ONLY, ec.TRTLLM_NOTES,
                  ec.TRTLLM_SCHEDULE_UNSUPPORTED):
        assert set(extra) <= slugs


def test_draft_weights_and_mtp_notes_follow_the_mechanism_spec():
    sc = Scenario(**SMALL)  # type: ignore[arg-type]
    for slug, mech in mechanism_presets().items():
        ec = engine_configs(sc, slug)
        assert ec.vllm.speculative_config is not None
        assert ("model" in ec.vllm.speculative_config) == mech.needs_draft_weights, slug
        mtp_notes = [n for n in ec.vllm.notes + ec.sglang.notes + ec.tensorrt_llm.notes
                     if "ships MTP layers" in n or "MTP layers." in n]
        assert len(mtp_notes) == (3 if mech.uses_target_mtp_layers else 0), slug
        if mech.draft_checkpoint and slug not in ("eagle3", "dflash"):  # no public head
            assert ec.vllm.speculative_config["model"].startswith(f"<{mech.draft_checkpoint} for")


def test_an_unavailable_mechanism_says_why_instead_of_a_config():
    ec = engine_configs(Scenario(**SMALL), "mtp")  # type: ignore[arg-type]  # Llama: no MTP
    assert any("unavailable" in n and "ships no MTP layers" in n for n in ec.notes), ec.notes
    assert not any("fits in memory" in n for n in ec.notes)


def test_export_names_the_published_checkpoint_where_the_catalogue_has_one():
    """gpt-oss-20b's EAGLE-3 head is public (RedHatAI): the export names it, no placeholder;
    Llama-3.1-405B has none in the catalogue, so the placeholder stays."""
    sc = Scenario(model="gpt-oss-20b", hardware="h100", tp=1, batch=8, context=1024)
    ec = engine_configs(sc, "eagle3")
    assert ec.vllm.speculative_config is not None
    assert ec.vllm.speculative_config["model"] == "RedHatAI/gpt-oss-20b-speculator.eagle3"
    assert "RedHatAI/gpt-oss-20b-speculator.eagle3" in ec.sglang.flags
    assert not any("placeholders" in n for n in ec.notes)
    big = Scenario(model="llama-3.1-405b", hardware="h200", tp=8, dtype="fp8", batch=8,
                   context=1024)
    spec = engine_configs(big, "eagle3").vllm.speculative_config
    assert spec is not None and spec["model"].startswith("<")

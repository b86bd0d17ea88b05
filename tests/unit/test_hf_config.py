"""Hugging Face config.json → ModelSpec / DrafterSpec (explorer/measured/hf_config.py): every
config the pinned aiconfigurator-core ships loads or is refused with its reason, parameter counts
match the model cards, bad configs name their field, drafters change T_draft as their shapes say.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from explorer.interfaces.cli import main
from explorer.measured.hf_config import (
    parse_config,
    parse_drafter,
    read_config_file,
    read_shipped,
    shipped_config_paths,
)
from explorer.model.grid import scenario_model
from explorer.model.layers import total
from explorer.presets import model_presets
from explorer.specs.scenario import Scenario
from tests.support.paths import SAMPLES

SHIPPED = {p.name.removesuffix("_config.json"): p for p in shipped_config_paths()}
HF_SAMPLES = SAMPLES / "hf_configs"
LLAMA_8B = "meta-llama--Meta-Llama-3.1-8B"

# Refused on purpose, with the reason the parser gives (everything else must load): none —
# the Mamba-2 hybrids (Nemotron-H) and the NAS model (DeciLM) load as layer groups.
REFUSED: dict[str, str] = {}
NEMOTRON_NANO = "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
NEMOTRON_H_56B = "nvidia--Nemotron-H-56B-Base-8K"
NAS_49B = "nvidia--Llama-3_3-Nemotron-Super-49B-v1"

# Published total parameter counts (10⁹) stated on the model cards.
PUBLISHED_TOTAL_B = {
    # huggingface.co/meta-llama/Llama-3.1-8B: safetensors "Model size 8.03B params"
    LLAMA_8B: 8.03,
    # huggingface.co/meta-llama/Llama-3.1-70B: safetensors "Model size 70.6B params"
    "meta-llama--Meta-Llama-3.1-70B": 70.6,
    # github.com/deepseek-ai/DeepSeek-V3 README: "671B total parameters with 37B activated"
    # (the 685B on the HF page adds the 14B MTP module, priced separately here)
    "deepseek-ai--DeepSeek-V3": 671.0,
    # huggingface.co/Qwen/Qwen3-235B-A22B card: "Number of Parameters: 235B in total"
    "Qwen--Qwen3-235B-A22B": 235.0,
    # huggingface.co/openai/gpt-oss-120b card: "117B parameters with 5.1B active parameters"
    "openai--gpt-oss-120b": 117.0,
    # huggingface.co/nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 card: "31.6B total parameters"
    NEMOTRON_NANO: 31.6,
    # huggingface.co/nvidia/Nemotron-H-56B-Base-8K: a 56B-parameter hybrid (the model's name
    # and card, arXiv:2504.03624 "Nemotron-H-56B")
    NEMOTRON_H_56B: 56.0,
    # huggingface.co/nvidia/Llama-3_3-Nemotron-Super-49B-v1: "49B" (its name and card)
    NAS_49B: 49.0,
    # the totals in the names (A12B / A55B: the active parameters)
    "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8": 120.0,
    "nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16": 550.0,
}


def test_the_package_ships_configs():
    assert len(SHIPPED) >= 80, "aiconfigurator-core==0.12.0 ships 89 config.json files"


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_every_shipped_config_loads_or_is_refused_with_its_reason(name):
    res = read_shipped(SHIPPED[name])
    if name in REFUSED:
        assert res.model is None
        assert res.problems and REFUSED[name] in res.problems[0].message
        assert res.problems[0].field in ("architectures", "text_config.architectures")
        return
    assert res.ok, [p.message for p in res.problems]
    assert res.model is not None
    assert "aiconfigurator-core==0.12.0 aiconfigurator_core/model_configs/" in res.model.source
    assert res.weights_dtype in ("bf16", "fp8", "fp4")
    # the model prices without error at a small operating point
    sc = Scenario(model=res.model.slug, custom_model=res.model, tp=8, batch=4, draft_len=3,
                  mechanism="eagle3")
    t = total(scenario_model(sc).verify(4.0, 4.0, 8192.0, res.model.group_size))
    assert 0 < float(t) < 10


@pytest.mark.parametrize("name", sorted(PUBLISHED_TOTAL_B))
def test_parameter_counts_are_within_2_percent_of_the_model_card(name):
    res = read_shipped(SHIPPED[name])
    assert res.model is not None
    computed = res.model.param_count() / 1e9
    assert computed == pytest.approx(PUBLISHED_TOTAL_B[name], rel=0.02)


def test_the_llama_8b_config_has_the_preset_shapes():
    m = read_shipped(SHIPPED[LLAMA_8B]).model
    preset = model_presets()["llama-3.1-8b"]
    keys = ("layers", "hidden", "q_heads", "kv_heads", "head_dim", "ffn_intermediate", "vocab",
            "tied_embeddings", "family", "tokenizer", "attention_kind", "mtp_layers")
    assert m is not None
    assert {k: getattr(m, k) for k in keys} == {k: getattr(preset, k) for k in keys}


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_a_llama_8b_config_gives_the_presets_step_time_through_the_cli():
    common = ("--hardware", "h200", "--tp", "1", "--batch", "8", "--draft-len", "3", "--json")
    code_a, out_a, _ = run("evaluate", "--model", "llama-3.1-8b", *common)
    code_b, out_b, _ = run("evaluate", "--model-config", str(SHIPPED[LLAMA_8B]), *common)
    assert code_a == code_b == 0
    a, b = json.loads(out_a), json.loads(out_b)
    for key in ("t_verif_base_s", "t_verif_spec_s", "t_draft_s"):
        assert b[key] == pytest.approx(a[key], rel=1e-12), key
    assert b["breakdown"].keys() == a["breakdown"].keys()
    for part in a["breakdown"]:
        assert b["breakdown"][part] == pytest.approx(a["breakdown"][part], rel=1e-12), part


def _write(tmp_path: Path, cfg: dict[str, object], name: str = "config.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(cfg), encoding="utf-8")
    return p


def _llama() -> dict[str, object]:
    return dict(json.loads(SHIPPED[LLAMA_8B].read_text(encoding="utf-8")))


def test_a_non_numeric_num_attention_heads_exits_2_naming_the_field(tmp_path):
    bad = _write(tmp_path, {**_llama(), "num_attention_heads": "thirty-two"})
    for cmd in ("evaluate", "recommend", "sweep"):
        code, _, err = run(cmd, "--model-config", str(bad), "--tp", "1")
        assert code == 2, cmd
        assert "--model-config" in err and "num_attention_heads" in err, err


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"num_hidden_layers": None}, "num_hidden_layers", "missing"),
    ({"num_attention_heads": "32"}, "num_attention_heads", "whole number"),
    ({"num_attention_heads": 32.5}, "num_attention_heads", "whole number"),
    ({"hidden_size": 10**9}, "hidden_size", "outside"),
    ({"num_hidden_layers": 0}, "num_hidden_layers", "outside"),
    ({"vocab_size": -5}, "vocab_size", "outside"),
    ({"num_key_value_heads": 5}, "num_key_value_heads", "multiple"),
    ({"architectures": ["TotallyNewForMagic"], "model_type": "magic"}, "architectures",
     "unknown architecture"),
    ({"architectures": "LlamaForCausalLM"}, "architectures", "list"),
    ({"tie_word_embeddings": "no"}, "tie_word_embeddings", "true or false"),
    ({"intermediate_size": None}, "intermediate_size", "intermediate_size"),
])
def test_bad_configs_name_the_field(change, field, words):
    cfg = {k: v for k, v in {**_llama(), **change}.items() if v is not None}
    res = parse_config(json.dumps(cfg))
    assert res.model is None
    errors = [p for p in res.problems if p.severity == "error"]
    assert errors and errors[0].field == field and words in errors[0].message, errors


@pytest.mark.parametrize("text", ["", "[1, 2]", "{not json", "null", '"config"'])
def test_not_a_config_object_is_refused(text):
    res = parse_config(text)
    assert res.model is None and res.problems


def test_auto_map_is_ignored_and_nothing_runs(tmp_path, monkeypatch):
    import builtins

    imported: list[str] = []
    real = builtins.__import__

    def spy(name, *a, **kw):  # a config naming a module must not get it imported
        imported.append(name)
        return real(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", spy)
    cfg = {**_llama(), "auto_map": {"AutoModelForCausalLM": "evil_module.Model"},
           "trust_remote_code": True}
    res = parse_config(json.dumps(cfg))
    monkeypatch.setattr(builtins, "__import__", real)
    assert res.model is not None
    assert "evil_module" not in imported
    assert any("auto_map" in n for n in res.notes)


def test_the_file_cap_is_checked_before_reading(tmp_path):
    big = tmp_path / "config.json"
    with big.open("wb") as fh:
        fh.seek(50 * 1024 * 1024 + 1)
        fh.write(b"}")
    res = read_config_file(big)
    assert res.model is None and "MAX_FILE_BYTES" in res.problems[0].message


def test_a_folder_is_refused_without_opening_it(tmp_path):
    res = read_config_file(tmp_path)
    assert res.model is None and "not a regular file" in res.problems[0].message


@pytest.mark.parametrize(("name", "dtype", "kv", "words"), [
    ("deepseek-ai--DeepSeek-V3", "fp8", None, "weight_block_size"),
    ("openai--gpt-oss-120b", "fp4", None, "mxfp4"),
    ("nvidia--Qwen3-235B-A22B-NVFP4", "fp4", "fp8", "NVFP4"),
    ("nvidia--Qwen3.6-27B-NVFP4", "fp4", "fp8", "mixed precision"),
    ("Qwen--Qwen3-32B", "bf16", None, ""),
])
def test_quantization_sets_the_dtypes(name, dtype, kv, words):
    res = read_shipped(SHIPPED[name])
    assert (res.weights_dtype, res.kv_dtype) == (dtype, kv)
    assert not words or any(words in n for n in res.notes), res.notes


def test_mla_moe_and_mtp_of_deepseek_v3():
    m = read_shipped(SHIPPED["deepseek-ai--DeepSeek-V3"]).model
    assert m is not None
    assert (m.attention_kind, m.kv_lora_rank, m.qk_rope_dim, m.head_dim, m.kv_heads) == \
        ("mla", 512, 64, 576, 1)
    assert (m.q_lora_rank, m.qk_nope_dim, m.v_head_dim) == (1536, 128, 128)
    assert (m.n_routed_experts, m.experts_per_tok, m.n_shared_experts, m.moe_intermediate,
            m.first_dense_layers) == (256, 8, 1, 2048, 3)
    assert m.mtp_layers == 1
    preset = model_presets()["deepseek-v3"]
    assert m.attention_params_per_layer() == preset.attention_params_per_layer()


def test_glm5_uses_its_own_mla_shapes():
    m = read_shipped(SHIPPED["zai-org--GLM-5"]).model
    assert m is not None
    assert (m.q_lora_rank, m.qk_nope_dim, m.v_head_dim) == (2048, 192, 256)


def test_sliding_windows_and_unpriced_layers_are_named():
    oss = read_shipped(SHIPPED["openai--gpt-oss-120b"])
    assert oss.model is not None
    assert (oss.model.sliding_window, oss.model.sliding_layers) == (128, 18)
    qwen35 = read_shipped(SHIPPED["Qwen--Qwen3.5-397B-A17B"])
    assert qwen35.model is not None
    # Gated DeltaNet layers: a recurrent state per sequence (the Mamba-2 layer group), not full
    # attention over the context (issue #21: priced as full attention before). 45 of 60 layers;
    # 64 value heads × 128, 16 key heads × 128; the state in float32 (mamba_ssm_dtype).
    m = qwen35.model
    assert (m.n_attention_layers, m.mamba_layers, m.n_mlp_layers) == (15, 45, 60)
    assert m.mamba is not None
    assert (m.mamba.heads, m.mamba.head_dim, m.mamba.d_state, m.mamba.groups,
            m.mamba.state_bytes, m.mamba.conv_dim) == (64, 128, 128, 16, 4, 64 * 128 + 2 * 16 * 128)
    assert any("Gated DeltaNet" in n and "only the 15 full-attention layers keep a KV cache" in n
               and "intermediate_ssm_state_cache" in n for n in qwen35.notes)
    assert "Gated DeltaNet" in m.assumptions  # shown with the model's sources
    v32 = read_shipped(SHIPPED["deepseek-ai--DeepSeek-V3.2"])
    assert any("index_topk" in n and "upper bound" in n for n in v32.notes)


def _drafter_scenario(path: Path | None, mechanism: str) -> Scenario:
    drafter = read_config_file(path, drafter=True).drafter if path else None
    target = "qwen3-8b" if mechanism == "dflash" else "llama-3.1-8b"  # the samples' targets
    return Scenario(model=target, mechanism=mechanism, tp=1, batch=8, draft_len=7 if
                    mechanism == "dflash" else 3, custom_drafter=drafter)


def _t_draft(sc: Scenario) -> dict[str, float]:
    """T_draft per component; "overhead" without the engine's fixed cost per draft forward
    (data/engines.csv: it does not scale with the drafter's layers — EAGLE-3 pays it D times,
    DFlash once, as tests/unit/test_engine_profiles.py checks)."""
    m = scenario_model(sc)
    b = m.draft(8.0, float(sc.draft_len), 8192.0, m.r.group)
    out = {k: float(v) for k, v in b.items()}
    forwards = sc.draft_len if m.r.mechanism.draft_style == "chain" else 1
    out["overhead"] -= forwards * m.engine.draft_forward_overhead_s
    return out


def test_an_eagle3_config_changes_t_draft_as_its_shape_says(tmp_path):
    sample = HF_SAMPLES / "eagle3_llama3.1_8b_config.json"
    res = parse_drafter(sample.read_text(encoding="utf-8"))
    assert res.drafter is not None
    assert (res.drafter.kind, res.drafter.draft_layers, res.drafter.draft_vocab) == \
        ("eagle3", 1, 32000)
    base = _t_draft(_drafter_scenario(None, "eagle3"))
    same = _t_draft(_drafter_scenario(sample, "eagle3"))
    assert same == pytest.approx(base)  # the preset is this head: 1 layer, 32k vocabulary
    cfg = json.loads(sample.read_text(encoding="utf-8"))
    two = _t_draft(_drafter_scenario(
        _write(tmp_path, {**cfg, "num_hidden_layers": 2}, "two.json"), "eagle3"))
    layer_parts = ("gemm", "attention", "communication", "overhead")
    for part in ("attention", "communication", "overhead"):
        assert two[part] == pytest.approx(2 * base[part], rel=1e-9), part
    assert two["gemm"] > base["gemm"] and two["gemm"] < 2 * base["gemm"]  # the FC runs once
    assert two["lm_head"] == pytest.approx(base["lm_head"])
    big_vocab = _t_draft(_drafter_scenario(
        _write(tmp_path, {**cfg, "draft_vocab_size": 128256}, "vocab.json"), "eagle3"))
    assert big_vocab["lm_head"] > 2 * base["lm_head"]
    assert {k: big_vocab[k] for k in layer_parts} == pytest.approx(
        {k: base[k] for k in layer_parts})


def test_a_dflash_config_changes_t_draft_as_its_shape_says(tmp_path):
    sample = HF_SAMPLES / "dflash_qwen3_8b_config.json"
    res = parse_drafter(sample.read_text(encoding="utf-8"))
    assert res.drafter is not None
    assert (res.drafter.kind, res.drafter.draft_layers, res.drafter.block_size) == \
        ("dflash", 5, 16)
    base = _t_draft(_drafter_scenario(None, "dflash"))
    five = _t_draft(_drafter_scenario(sample, "dflash"))
    assert five == pytest.approx(base)  # the preset's DFlash has 5 layers
    cfg = json.loads(sample.read_text(encoding="utf-8"))
    three = _t_draft(_drafter_scenario(
        _write(tmp_path, {**cfg, "num_hidden_layers": 3}, "three.json"), "dflash"))
    for part in ("gemm", "attention", "communication", "overhead"):
        assert three[part] == pytest.approx(base[part] * 3 / 5, rel=1e-9), part
    assert three["lm_head"] == pytest.approx(base["lm_head"])


def test_a_model_config_as_drafter_is_an_external_draft_model():
    res = read_shipped(SHIPPED["Qwen--Qwen3-0.6B"])
    assert res.model is not None
    d = parse_drafter(SHIPPED["Qwen--Qwen3-0.6B"].read_text(encoding="utf-8"))
    assert d.drafter is not None and d.drafter.kind == "external"
    assert d.drafter.model is not None and d.drafter.model.role == "draft"
    sc = Scenario(model="qwen3-32b", mechanism="external", tp=1, batch=8, draft_len=3,
                  custom_drafter=d.drafter)
    m = scenario_model(sc)
    assert m.r.draft_model is not None and m.r.draft_model.layers == 28
    # against the 1.7B preset draft, the 0.6B config drafts faster
    preset = Scenario(model="qwen3-32b", mechanism="external", tp=1, batch=8, draft_len=3,
                      draft_model="qwen3-1.7b")
    assert total(m.draft(8.0, 3.0, 8192.0, m.r.group)) < total(
        scenario_model(preset).draft(8.0, 3.0, 8192.0, scenario_model(preset).r.group))


def test_the_cli_draft_config_sets_the_mechanism():
    common = ("--hardware", "h200", "--model", "qwen3-8b", "--tp", "1", "--batch", "8",
              "--draft-len", "7", "--json")
    code, out, err = run("evaluate", "--draft-config",
                         str(HF_SAMPLES / "dflash_qwen3_8b_config.json"), *common)
    assert code == 0, err
    code_p, out_p, _ = run("evaluate", "--mechanism", "dflash", *common)
    assert code_p == 0
    assert json.loads(out)["t_draft_s"] == pytest.approx(json.loads(out_p)["t_draft_s"])


def test_a_custom_model_must_be_the_scenarios_model():
    m = read_shipped(SHIPPED[LLAMA_8B]).model
    with pytest.raises(ValueError, match="model"):
        Scenario(model="llama-3.1-70b", custom_model=m)
    sc = Scenario(model=m.slug, custom_model=m)
    assert Scenario.model_validate_json(sc.model_dump_json()) == sc  # travels as JSON


@pytest.mark.parametrize(("arch", "kind"), [
    ("LlamaForCausalLMEagle3", "eagle3"), ("Eagle3LlamaForCausalLM", "eagle3"),
    ("DFlashDraftModel", "dflash"), ("DSparkDraftModel", "dspark"),
])
def test_drafter_architectures_are_recognised(arch, kind):
    cfg = json.loads((HF_SAMPLES / "dflash_qwen3_8b_config.json").read_text(encoding="utf-8"))
    res = parse_drafter(json.dumps({**cfg, "architectures": [arch], "num_hidden_layers": 2}))
    assert res.drafter is not None and res.drafter.kind == kind
    assert res.drafter.draft_layers == 2


def test_a_drafter_with_a_bad_layer_count_names_it():
    cfg = json.loads((HF_SAMPLES / "eagle3_llama3.1_8b_config.json").read_text(encoding="utf-8"))
    res = parse_drafter(json.dumps({**cfg, "num_hidden_layers": "one"}))
    assert res.drafter is None and res.problems[0].field == "num_hidden_layers"
    code, _, err = run("evaluate", "--draft-config", "/nonexistent/config.json")
    assert code == 2 and "--draft-config" in err


def test_every_shipped_config_loads():
    refused = [n for n, p in SHIPPED.items() if not read_shipped(p).ok]
    assert refused == []


def _mamba_scenario(name: str, **kw: object) -> Scenario:
    m = read_shipped(SHIPPED[name]).model
    assert m is not None
    return Scenario(model=m.slug, custom_model=m, tp=kw.pop("tp", 1), batch=8,  # type: ignore[arg-type]
                    draft_len=3, mechanism="eagle3", **kw)  # type: ignore[arg-type]


def test_nemotron_h_counts_its_layer_groups_and_prices_mamba_as_state_updates():
    res = read_shipped(SHIPPED[NEMOTRON_NANO])
    m = res.model
    assert m is not None and m.mamba is not None
    # 'MEMEM*EMEMEM*…': 23 Mamba-2, 6 attention, 23 MoE layers (the model card's split)
    assert (m.mamba_layers, m.n_attention_layers, m.moe_layers, m.layers) == (23, 6, 23, 52)
    assert (m.mamba.heads, m.mamba.head_dim, m.mamba.d_state, m.mamba.state_bytes) == \
        (64, 64, 128, 4)
    assert not m.gated_mlp
    assert any("Mamba-2 layers priced as memory-bound state updates — an assumption" in n
               for n in res.notes)
    assert "Mamba-2" in m.assumptions  # shown in the sources with the model
    grid = scenario_model(_mamba_scenario(NEMOTRON_NANO))
    b, g = 8.0, m.group_size
    # the Mamba part of one decode step does not grow with the context; attention's does
    step = {s: grid.verify(b, 1.0, s, g) for s in (1024.0, 65536.0)}
    mamba_scan = 23 * grid.target.mamba_scan(np.asarray(b), np.asarray(1.0))
    attn = {s: step[s]["attention"] - mamba_scan for s in step}
    assert float(attn[65536.0]) > 5 * float(attn[1024.0]) > 0
    # memory: the recurrent state is per sequence, the KV cache only in the 6 attention layers
    lm = grid.target
    kv = {s: float(grid._kv_bytes(lm, np.asarray(b), np.asarray(s), g, m.layers))
          for s in (0.0, 1000.0)}
    state = b * 23 * m.mamba.state_bytes_per_seq()
    assert kv[0.0] == pytest.approx(state)
    assert kv[1000.0] - kv[0.0] == pytest.approx(b * 1000 * 6 * 2 * m.kv_heads * m.head_dim * 2)


def test_verifying_1_plus_d_tokens_scans_them_all():
    grid = scenario_model(_mamba_scenario(NEMOTRON_NANO))
    t = {w: float(grid.target.mamba_scan(np.asarray(64.0), np.asarray(w))) for w in (1.0, 4.0)}
    m = read_shipped(SHIPPED[NEMOTRON_NANO]).model
    assert m is not None and m.mamba is not None
    # memory-bound: one state read plus a state write per verified token
    assert t[4.0] / t[1.0] == pytest.approx(5 / 2, rel=0.02)


def test_nas_blocks_are_priced_per_layer_group():
    res = read_shipped(SHIPPED[NAS_49B])
    m = res.model
    assert m is not None
    assert (m.layers, m.n_attention_layers, m.kv_heads) == (80, 49, 8)
    # ffn_mult 5.25 → 28672 (Llama-3.3-70B's width), 1.0 → 5632 (int(2·8192/3) rounded up)
    assert dict((w, c) for c, w in m.ffn_groups) == {
        28672: 49, 17920: 1, 14336: 6, 7168: 10, 5632: 8, 2816: 6}
    assert any("NAS blocks" in n for n in res.notes)
    # a layer whose attention is skipped costs less than one that keeps it
    full = Scenario(model="llama-3.3-70b" if "llama-3.3-70b" in model_presets()
                    else "llama-3.1-70b", tp=8, batch=8, draft_len=3, mechanism="eagle3")
    nas = _mamba_scenario(NAS_49B, tp=8)
    t_full = total(scenario_model(full).verify(8.0, 1.0, 8192.0, 8.0))
    t_nas = total(scenario_model(nas).verify(8.0, 1.0, 8192.0, 8.0))
    assert float(t_nas) < float(t_full)


def test_hybrid_and_nas_configs_name_bad_fields(tmp_path):
    nano = json.loads(SHIPPED[NEMOTRON_NANO].read_text(encoding="utf-8"))
    res = parse_config(json.dumps({**nano, "hybrid_override_pattern": "MEX*"}))
    assert not res.ok and res.problems[0].field == "hybrid_override_pattern"
    res = parse_config(json.dumps({**nano, "mamba_num_heads": "many"}))
    assert not res.ok and res.problems[0].field == "mamba_num_heads"
    nas = json.loads(SHIPPED[NAS_49B].read_text(encoding="utf-8"))
    blocks = list(nas["block_configs"])
    blocks[3] = {**blocks[3], "ffn": {**blocks[3]["ffn"], "ffn_mult": "big"}}
    res = parse_config(json.dumps({**nas, "block_configs": blocks}))
    assert not res.ok and res.problems[0].field == "block_configs[3].ffn.ffn_mult"


def test_a_drafter_configs_own_hidden_size_prices_t_draft(tmp_path):
    """A head's hidden_size / intermediate_size / heads are its own, not the target's: an
    EAGLE-3 head twice as wide costs more per layer, its lm_head reads a wider matrix."""
    sample = HF_SAMPLES / "eagle3_llama3.1_8b_config.json"
    cfg = json.loads(sample.read_text(encoding="utf-8"))
    base = _t_draft(_drafter_scenario(sample, "eagle3"))
    wide_cfg = {**cfg, "hidden_size": 8192, "intermediate_size": 28672,
                "num_attention_heads": 64}
    wide_path = _write(tmp_path, wide_cfg, "wide.json")
    drafter = read_config_file(wide_path, drafter=True).drafter
    assert drafter is not None
    assert (drafter.hidden, drafter.intermediate, drafter.q_heads, drafter.kv_heads,
            drafter.head_dim) == (8192, 28672, 64, 8, 128)
    wide = _t_draft(_drafter_scenario(wide_path, "eagle3"))
    # weight bytes per layer grow ~4× (hidden × intermediate), the LM head's 2× (vocab × hidden)
    assert 2.5 * base["gemm"] < wide["gemm"] < 4.5 * base["gemm"]
    assert 1.5 * base["lm_head"] < wide["lm_head"] < 2.5 * base["lm_head"]
    narrow = _t_draft(_drafter_scenario(
        _write(tmp_path, {**cfg, "intermediate_size": 7168}, "narrow.json"), "eagle3"))
    assert narrow["gemm"] < base["gemm"]
    assert narrow["attention"] == pytest.approx(base["attention"])  # same attention shape
    # the head's memory follows its shapes too
    grids = [scenario_model(_drafter_scenario(p, "eagle3")) for p in (sample, wide_path)]
    mem = [float(g.draft_memory_bytes(8.0, 8192.0, g.r.group)) for g in grids]
    assert mem[1] > 2 * mem[0]


def test_a_dflash_block_size_sets_the_largest_d(tmp_path):
    sample = HF_SAMPLES / "dflash_qwen3_8b_config.json"
    cfg = json.loads(sample.read_text(encoding="utf-8"))
    preset = scenario_model(_drafter_scenario(None, "dflash")).r.mechanism
    sixteen = scenario_model(_drafter_scenario(sample, "dflash")).r.mechanism
    assert preset.max_draft_len == 7
    assert sixteen.max_draft_len == 15  # block_size 16: the anchor and 15 drafted tokens
    four = scenario_model(_drafter_scenario(
        _write(tmp_path, {**cfg, "block_size": 4}, "four.json"), "dflash")).r.mechanism
    assert (four.max_draft_len, four.default_draft_len) == (3, 3)
    # a narrower DFlash drafter (half the FFN) drafts faster
    half = _t_draft(_drafter_scenario(
        _write(tmp_path, {**cfg, "intermediate_size": 6144}, "half.json"), "dflash"))
    full = _t_draft(_drafter_scenario(sample, "dflash"))
    assert half["gemm"] < full["gemm"] and half["lm_head"] == pytest.approx(full["lm_head"])


def test_a_head_at_a_hybrid_targets_dims_is_an_attention_layer():
    """An EAGLE-3 head on Nemotron-H: its layer has attention (a KV cache growing with the
    context) and no Mamba state, whatever share of the target's layers are attention."""
    grid = scenario_model(_mamba_scenario(NEMOTRON_NANO))
    m = grid.r.model
    assert grid.head.model.mamba is None and grid.head.model.n_attention_layers == 1 * \
        grid.head.model.layers
    mem = {s: float(grid.draft_memory_bytes(8.0, s, m.group_size)) for s in (0.0, 1000.0)}
    per_token = 2 * m.kv_heads * m.head_dim * 2  # K and V, bf16, one layer
    assert mem[1000.0] - mem[0.0] == pytest.approx(8 * 1000 * per_token)


def test_a_hybrid_layer_is_one_block_one_all_reduce():
    """Nemotron-H's 52 layers are 52 blocks (a transformer's 52 layers would be 104): half the
    all-reduces under TP; the NAS model's skipped attention has none."""
    nano = scenario_model(_mamba_scenario(NEMOTRON_NANO, tp=2))
    m = nano.r.model
    per = float(nano.target.allreduce(np.asarray(8.0)))
    assert float(nano.verify(8.0, 1.0, 8192.0, m.group_size)["communication"]) == \
        pytest.approx(52 * per / 2)
    nas = scenario_model(_mamba_scenario(NAS_49B, tp=2))
    per = float(nas.target.allreduce(np.asarray(8.0)))
    assert float(nas.verify(8.0, 1.0, 8192.0, 8.0)["communication"]) == \
        pytest.approx((49 + 80) * per / 2)


def test_a_wider_heads_fused_fc_reads_the_targets_features(tmp_path):
    """EAGLE-3's FC maps 3 target features (3 × 4096 for Llama-3.1-8B) to the head's own width:
    a head twice as wide reads k = 3·4096, not 3·8192."""
    sample = HF_SAMPLES / "eagle3_llama3.1_8b_config.json"
    cfg = json.loads(sample.read_text(encoding="utf-8"))
    wide_path = _write(tmp_path, {**cfg, "hidden_size": 8192, "intermediate_size": 28672,
                                  "num_attention_heads": 64}, "wide.json")
    m = scenario_model(_drafter_scenario(wide_path, "eagle3"))
    assert (m.head.model.hidden, m.r.model.hidden) == (8192, 4096)
    b, w = np.asarray([[8.0]]), np.asarray([[4.0]])
    s, g = np.asarray([[8192.0]]), np.asarray([[float(m.r.group)]])

    def gemm(**kw: float) -> float:
        return float(m.head.head_layers(b, w, s, g, 1.0, None, **kw)["gemm"].item())

    plain = gemm()
    read_target = gemm(fused_target_layers=3, fused_input_hidden=4096.0) - plain
    read_own = gemm(fused_target_layers=3) - plain
    # bf16 weights 8192 × k: the FC's bytes are half as many when k is 3·4096
    assert 0.4 * read_own < read_target < 0.75 * read_own

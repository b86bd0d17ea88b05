"""A Hugging Face `config.json` (and its `hf_quant_config.json`) → a validated ModelSpec or
DrafterSpec.

The config is data: nothing in it is executed (`auto_map`, `trust_remote_code` and remote code
are ignored). Fields are read by name across the families that spell them differently (Llama,
Qwen2/3, Qwen3-MoE, Qwen3.5, DeepSeek-V3/V3.2/V4, GLM, Kimi, gpt-oss, Gemma, Mistral/Mixtral,
MiniMax, Llama-4, Step, MiMo, Nemotron-H, DeciLM); a multimodal config's `text_config` is the
model. Hybrid and NAS models (Nemotron-H's `hybrid_override_pattern`, DeciLM's `block_configs`)
become ModelSpec's layer groups. What the cost model does not price as the config says (linear
attention, sparse attention, Mamba-2 state updates) is listed in `notes` with how it is priced —
or the config is refused with the reason.

One contract with the other parsers: a config is refused with every problem named by field, or
the spec it gives is valid for everything downstream.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from explorer.base.dtypes import WeightDtype

# The dimensions' bounds are shared with ModelSpec/DrafterSpec, so a packed model in a link meets
# the same ones as a config file (explorer/base/limits.py).
from explorer.base.limits import (
    MAX_EXPERTS,
    MAX_FFN,
    MAX_FILE_BYTES,
    MAX_HEAD_DIM,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_KV_LORA,
    MAX_LAYERS,
    MAX_VOCAB,
    MAX_WINDOW,
)
from explorer.base.mechanisms import draft_model_mechanism, head_kind_of, mechanism_kind
from explorer.base.quoting import quote
from explorer.base.reading import read_file
from explorer.measured._bounds import check_json_shape
from explorer.measured._json import json_int, load_json
from explorer.measured._problems import Collector, validation_message
from explorer.presets import mechanism_presets, model_presets
from explorer.specs.architecture import DrafterSpec, ModelSpec
from explorer.specs.measured import Problem

FORMAT = "hf_config"
QUANT_SUFFIX = "hf_quant_config.json"

# Architectures the parser reads as a causal decoder (the `architectures` entry or `model_type`).
# A config of another one is refused, naming it; one named here is refused with its reason.
REFUSED: dict[str, str] = {}
# Nemotron-H's hybrid_override_pattern letters (its configuration_nemotron_h.py): one block a
# layer — Mamba-2 mixer, attention, MLP or MoE.
HYBRID_LETTERS = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
MAMBA_STATE_NOTE = (
    "Mamba-2 layers priced as memory-bound state updates — an assumption: per sequence and "
    "layer the SSM state (heads × head_dim × d_state at the SSM dtype) and the conv window are "
    "read once and written once per verified token (1+D states kept so rejected draft tokens "
    "roll back; their memory is not counted), in/out projections as GEMMs; no KV cache, "
    "constant in the context")
GDN_NOTE = (
    "the Gated DeltaNet layers priced as memory-bound state updates — per sequence and layer the "
    "recurrent state (at mamba_ssm_dtype) and the conv window are read once and written once "
    "per verified token: SGLang keeps one state per draft token for the rollback "
    "(mem_cache/memory_pool.py intermediate_ssm_state_cache: layers × slots × "
    "speculative_num_draft_tokens × temporal_state_shape), their memory not counted")
KNOWN_TYPES = (
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen3_next",
    "qwen3_5", "qwen3_5_moe", "qwen3_vl", "qwen3_vl_moe", "deepseek_v2", "deepseek_v3",
    "deepseek_v32", "deepseek_v4", "deepseek_ref", "kimi_k2", "kimi_k25", "kimi_k3",
    "kimi_linear", "glm", "glm4", "glm4_moe", "glm_moe_dsa", "gpt_oss", "gemma", "gemma2",
    "gemma3", "gemma3_text", "gemma4", "gemma4_text", "minimax", "minimax_m2", "minimax_m3",
    "minimax_m3_vl", "llama4", "llama4_text", "step3p7", "mimo", "mimo_v2_flash", "phi3",
    "nemotron_h", "nemotron-nas",
)


class HfModelConfig(BaseModel):
    """What one config.json gives: a target (or external draft) model, or a drafter head, with
    the weights dtype its quantization sets and how the cost model prices what it cannot price
    as written (`notes`). `problems` hold the errors when neither spec is set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    summary: str
    model: ModelSpec | None = None
    drafter: DrafterSpec | None = None
    weights_dtype: WeightDtype | None = None
    kv_dtype: Literal["bf16", "fp8"] | None = None
    notes: tuple[str, ...] = ()
    problems: tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        return self.model is not None or self.drafter is not None


def config_slug(name: str, text: str) -> str:
    """A preset-like slug for a config: its name and a short hash of its text (the same config
    always gets the same slug; two configs never share one by accident)."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    stem = "".join(c if c.isalnum() or c in ".-" else "-" for c in name.lower()).strip("-")
    return f"hf-{stem[:40] or 'model'}-{digest}"


class _Reader:
    """Typed, bounded field reads from one config mapping; every problem names its field."""

    def __init__(self, cfg: Mapping[str, Any], col: Collector, prefix: str = "") -> None:
        self.cfg, self.col, self.prefix = cfg, col, prefix

    def name(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def has(self, key: str) -> bool:
        return self.cfg.get(key) is not None

    def first(self, *keys: str) -> str | None:
        return next((k for k in keys if self.has(k)), None)

    def num(self, *keys: str, lo: int = 0, hi: int, required: bool = False,
            default: int | None = None) -> int | None:
        key = self.first(*keys)
        if key is None:
            if required:
                self.col.error(f"missing: a model config needs {keys[0]}", field=self.name(keys[0]))
            return default
        raw = self.cfg[key]
        value = json_int(raw)
        if value is None:
            self.col.error(f"expected a whole number, got {quote(json.dumps(raw))}",
                           field=self.name(key))
            return default
        if not lo <= value <= hi:
            self.col.error(f"{value:,} is outside [{lo:,}, {hi:,}]", field=self.name(key))
            return default
        return value

    def flag(self, key: str) -> bool | None:
        raw = self.cfg.get(key)
        if raw is None:
            return None
        if not isinstance(raw, bool):
            self.col.error(f"expected true or false, got {quote(json.dumps(raw))}",
                           field=self.name(key))
            return None
        return raw

    def seq(self, key: str) -> list[Any] | None:
        raw = self.cfg.get(key)
        if raw is None:
            return None
        if not isinstance(raw, list):
            self.col.error(f"expected a list, got {quote(json.dumps(raw))}", field=self.name(key))
            return None
        return raw


def _architecture(cfg: Mapping[str, Any], col: Collector) -> str:
    archs = cfg.get("architectures")
    if archs is not None and not (isinstance(archs, list) and archs
                                  and all(isinstance(a, str) for a in archs)):
        col.error(f"expected a list of class names, got {quote(json.dumps(archs))}",
                  field="architectures")
        return ""
    return str(archs[0]) if archs else ""


def _head_kind(arch: str, cfg: Mapping[str, Any]) -> str | None:
    """The head kind the config names (each mechanism declares its words and marker keys)."""
    key = (arch + " " + str(cfg.get("model_type", ""))).lower()
    return head_kind_of(key, frozenset(str(k) for k in cfg))


def _quant(cfg: Mapping[str, Any], quant: Mapping[str, Any] | None, col: Collector,
           notes: list[str]) -> tuple[WeightDtype, Literal["bf16", "fp8"] | None]:
    """The weights dtype a config's quantization sets (the one the most parameters use)."""
    kv: Literal["bf16", "fp8"] | None = None
    if quant is not None:
        q = quant.get("quantization", quant)
        algo = str(q.get("quant_algo", "")).upper() if isinstance(q, Mapping) else ""
        kv_algo = str(q.get("kv_cache_quant_algo", "") or "").upper() \
            if isinstance(q, Mapping) else ""
        kv = "fp8" if "FP8" in kv_algo else None
        if algo == "MIXED_PRECISION" and isinstance(q, Mapping):
            algo = _mixed_algo(q.get("quantized_layers"), notes)
        if "FP4" in algo:
            notes.append(f"hf_quant_config.json: quant_algo {algo} → fp4 weights"
                         + (", FP8 KV cache" if kv else ""))
            return "fp4", kv
        if "FP8" in algo:
            notes.append(f"hf_quant_config.json: quant_algo {algo} → fp8 weights")
            return "fp8", kv
        if algo:
            col.error(f"quant_algo {quote(algo)} is not a dtype the cost model has "
                      "(bf16, fp8, fp4)", field="quantization.quant_algo")
    qc = cfg.get("quantization_config")
    if isinstance(qc, Mapping):
        method = str(qc.get("quant_method", "")).lower()
        algo = str(qc.get("quant_algo", "") or "").upper()
        fmt = str(qc.get("format", "") or "").lower()
        if method == "fp8":
            block = qc.get("weight_block_size")
            notes.append("quantization_config: fp8 weights" + (
                f", block-scaled (weight_block_size {block}); priced at the FP8 peak and size"
                if block else ""))
            return "fp8", kv
        if method == "mxfp4":
            notes.append("quantization_config: mxfp4 (the MoE experts, most of the parameters; "
                         "attention and the LM head stay bf16): the whole model is priced at "
                         "fp4 — a lower bound on weight bytes")
            return "fp4", kv
        if method == "modelopt" or algo:
            if "FP4" in algo or "fp4" in fmt:
                notes.append(f"quantization_config: modelopt {algo or fmt} → fp4 weights")
                return "fp4", kv
            if "FP8" in algo:
                notes.append(f"quantization_config: modelopt {algo} → fp8 weights")
                return "fp8", kv
        if method == "compressed-tensors":
            if "fp4" in fmt or "nvfp4" in fmt:
                notes.append(f"quantization_config: compressed-tensors {fmt} → fp4 weights "
                             "(the quantized targets; ignored modules priced the same)")
                return "fp4", kv
            if "fp8" in fmt or "float-quantized" in fmt:
                notes.append(f"quantization_config: compressed-tensors {fmt} → fp8 weights")
                return "fp8", kv
        if method:
            notes.append(f"quantization_config: quant_method {method!r} is not read; weights "
                         "priced at bf16")
    return "bf16", kv


def _mixed_algo(layers: object, notes: list[str]) -> str:
    """The algorithm of a MIXED_PRECISION checkpoint's MLP / expert weights (most of the
    parameters), which the one weights dtype of a scenario prices for the whole model."""
    if not isinstance(layers, Mapping):
        return "MIXED_PRECISION"
    algos: dict[str, int] = {}
    mlp: dict[str, int] = {}
    for module, spec in layers.items():
        a = str(spec.get("quant_algo", "")).upper() if isinstance(spec, Mapping) else ""
        algos[a] = algos.get(a, 0) + 1
        if any(w in str(module) for w in ("mlp", "expert", "ffn")):
            mlp[a] = mlp.get(a, 0) + 1
    pick = max(mlp or algos, key=lambda a: (mlp or algos)[a]) if algos else "MIXED_PRECISION"
    counts = ", ".join(f"{n} {a}" for a, n in sorted(algos.items()))
    notes.append(f"hf_quant_config.json: mixed precision ({counts} modules): the MLP/experts' "
                 f"{pick} is priced for the whole model")
    return pick


def _count(layer_types: list[Any], *words: str) -> int:
    return sum(1 for t in layer_types if isinstance(t, str) and any(w in t for w in words))


def _model(text_cfg: Mapping[str, Any], top: Mapping[str, Any], arch: str, col: Collector,
           notes: list[str], *, slug: str, name: str, source: str,
           role: Literal["target", "draft", "both"]) -> ModelSpec | None:
    prefix = "text_config." if text_cfg is not top else ""
    mtype = str(text_cfg.get("model_type") or top.get("model_type") or "")
    # Hybrid / NAS models: their per-layer blocks become layer-group fields, and the uniform
    # fields the rest of this function reads are filled in from them.
    groups: dict[str, Any] = {}
    if "hybrid_override_pattern" in text_cfg or "layers_block_type" in text_cfg:
        text_cfg, groups = _hybrid(text_cfg, col, notes, prefix)
    elif "block_configs" in text_cfg:
        text_cfg, groups = _nas(text_cfg, col, notes, prefix)
    if col.has_errors:
        return None
    r = _Reader(text_cfg, col, prefix)
    layers = r.num("num_hidden_layers", "n_layers", "num_layers", lo=1, hi=MAX_LAYERS,
                   required=True)
    hidden = r.num("hidden_size", "dim", "d_model", lo=1, hi=MAX_HIDDEN, required=True)
    q_heads = r.num("num_attention_heads", "n_heads", lo=1, hi=MAX_HEADS, required=True)
    vocab = r.num("vocab_size", lo=1, hi=MAX_VOCAB, required=True)
    kv_heads = r.num("num_key_value_heads", "n_kv_heads", lo=1, hi=MAX_HEADS, default=q_heads)
    head_dim = r.num("head_dim", lo=1, hi=MAX_HEAD_DIM)
    if layers is None or hidden is None or q_heads is None or vocab is None or kv_heads is None:
        return None
    fields: dict[str, Any] = {}
    # --- attention ---------------------------------------------------------------------
    if r.has("kv_lora_rank"):  # MLA (DeepSeek-V2/V3, Kimi, GLM-5): the absorbed decode view
        kv_lora = r.num("kv_lora_rank", lo=1, hi=MAX_KV_LORA, required=True)
        rope = r.num("qk_rope_head_dim", lo=0, hi=MAX_HEAD_DIM, required=True)
        nope = r.num("qk_nope_head_dim", lo=0, hi=MAX_HEAD_DIM, required=True)
        v_dim = r.num("v_head_dim", lo=1, hi=MAX_HEAD_DIM, required=True)
        q_lora = r.num("q_lora_rank", lo=1, hi=MAX_HIDDEN, default=0)
        if kv_lora is None or rope is None or nope is None or v_dim is None or q_lora is None:
            return None
        fields.update(attention_kind="mla", kv_heads=1, head_dim=kv_lora + rope,
                      kv_lora_rank=kv_lora, qk_rope_dim=rope, qk_nope_dim=nope,
                      v_head_dim=v_dim, q_lora_rank=q_lora)
    else:
        if head_dim is None:
            if hidden % q_heads:
                col.error(f"head_dim is not given and hidden_size {hidden} is not a multiple of "
                          f"num_attention_heads {q_heads}", field=r.name("head_dim"))
                return None
            head_dim = hidden // q_heads
        if q_heads % kv_heads:
            col.error(f"num_attention_heads {q_heads} is not a multiple of num_key_value_heads "
                      f"{kv_heads} (G = q/kv heads must be whole)",
                      field=r.name("num_key_value_heads"))
            return None
        fields.update(kv_heads=kv_heads, head_dim=head_dim)
        v_dim = r.num("v_head_dim", lo=1, hi=MAX_HEAD_DIM)
        if v_dim is not None and v_dim != head_dim:
            notes.append(f"v_head_dim {v_dim} ≠ head_dim {head_dim}: V is priced at head_dim — "
                         "an upper bound on KV bytes")
        if "o_lora_rank" in text_cfg or "compress_ratios" in text_cfg:
            notes.append("DeepSeek-V4 attention (low-rank query/output, compressed KV by "
                         "compress_ratios, index top-k): priced as MQA with head_dim "
                         f"{head_dim} over the whole context and dense projections — an upper "
                         "bound")
    if r.has("index_topk") and fields.get("attention_kind") == "mla":
        notes.append(f"sparse attention (index_topk {text_cfg['index_topk']}): priced as dense "
                     "attention over the whole context — an upper bound beyond that many tokens; "
                     "the indexer is not priced")
    for key, what in (("global_head_dim", "head_dim"),
                      ("num_global_key_value_heads", "KV heads"),
                      ("swa_num_key_value_heads", "KV heads"), ("swa_head_dim", "head_dim")):
        if r.has(key):
            notes.append(f"{key} {text_cfg[key]}: the other layer kind's own {what} is priced "
                         "with the main ones (one shape per model)")
    # --- sliding windows, linear and chunked attention -----------------------------------
    layer_types = r.seq("layer_types") or []
    window = r.num("sliding_window", lo=1, hi=MAX_WINDOW)
    sliding = _count(layer_types, "sliding", "chunk")
    linear = _count(layer_types, "linear")
    if isinstance(text_cfg.get("hybrid_layer_pattern"), list):  # MiMo-V2: 1 = sliding window
        sliding = sum(1 for x in text_cfg["hybrid_layer_pattern"] if x == 1)
    if layer_types and len(layer_types) != layers:
        col.error(f"has {len(layer_types)} entries for {layers} layers",
                  field=r.name("layer_types"))
    pattern = r.num("sliding_window_pattern", lo=1, hi=MAX_LAYERS)
    if not layer_types and pattern and window:  # Gemma-3: every pattern-th layer is global
        sliding = layers - layers // pattern
    if not layer_types and not pattern and window and r.flag("use_sliding_window") is not False \
            and mtype in ("mistral", "mixtral"):
        sliding = layers
    chunk = r.num("attention_chunk_size", lo=1, hi=MAX_WINDOW)
    if mtype.startswith("llama4") and chunk:
        no_rope = r.seq("no_rope_layers") or []
        local = sum(1 for x in no_rope if x == 1) if no_rope else layers - layers // 4
        window, sliding = chunk, local
        notes.append(f"chunked local attention (attention_chunk_size {chunk}) on {local} of "
                     f"{layers} layers: priced as a sliding window of {chunk} tokens — an upper "
                     "bound (a chunk reads 1 to that many)")
    if sliding and window:
        fields.update(sliding_window=window, sliding_layers=min(sliding, layers))
    elif window and sliding == 0 and mtype not in ("mistral", "mixtral") and not layer_types:
        pass  # a window declared but switched off (Qwen: use_sliding_window false)
    linear_cfg = text_cfg.get("linear_attn_config")
    if isinstance(linear_cfg, Mapping) and isinstance(linear_cfg.get("kda_layers"), list):
        linear = len(linear_cfg["kda_layers"])
    gdn = _gated_deltanet(text_cfg, col, prefix, linear) if linear and not groups else None
    if gdn is not None:
        groups.update(gdn)
        notes.append(f"{linear} of {layers} layers are Gated DeltaNet (linear_num_value_heads "
                     f"{gdn['mamba']['heads']} × {gdn['mamba']['head_dim']}, key heads "
                     f"{gdn['mamba']['groups']} × {gdn['mamba']['d_state']}): only the "
                     f"{layers - linear} full-attention layers keep a KV cache; " + GDN_NOTE)
    elif linear:
        notes.append(f"{linear} of {layers} layers are linear attention (Gated DeltaNet / KDA, "
                     "a state constant in the context): priced as full attention — an upper "
                     "bound (with the model's attention shape)")
    sparse = text_cfg.get("sparse_attention_config")
    if isinstance(sparse, Mapping) and sparse.get("use_sparse_attention"):
        if mtype == "minimax_m3":  # MSA: the package measures the whole attention module
            fields["sparse_attention"] = "msa"
            notes.append("MiniMax sparse attention (MSA): the attention block priced from the "
                         "measured MSA module tables where the engine and GPU have them, else "
                         "as dense attention over the whole context — an upper bound")
        else:
            notes.append("block-sparse attention (sparse_attention_config): priced as dense "
                         "attention over the whole context — an upper bound")
    # --- MLP / MoE -------------------------------------------------------------------------
    experts = r.num("n_routed_experts", "num_experts", "num_local_experts", lo=0,
                    hi=MAX_EXPERTS, default=0) or 0
    ffn = r.num("dense_intermediate_size", "intermediate_size_mlp", "intermediate_size",
                "ffn_dim", lo=0, hi=MAX_FFN, default=0) or 0
    if experts:
        top_k = r.num("num_experts_per_tok", "experts_per_token", "num_experts_per_token",
                      "top_k_experts", "moe_topk", lo=1, hi=experts, required=True)
        width = r.num("moe_intermediate_size", "intermediate_size", lo=1, hi=MAX_FFN,
                      required=True)
        if top_k is None or width is None:
            return None
        shared = r.num("n_shared_experts", "num_shared_experts", lo=0, hi=MAX_EXPERTS,
                       default=0) or 0
        shared_width = r.num("shared_expert_intermediate_size", "shared_intermediate_size",
                             "share_expert_dim", "moe_shared_expert_intermediate_size",
                             lo=0, hi=MAX_FFN)
        if mtype.startswith("llama4"):
            shared = 1  # Llama-4's MoE layers always add one shared expert (its modeling code)
        if r.flag("enable_moe_block") and ffn and not shared:  # Gemma-4: a dense MLP beside
            shared = max(1, round(ffn / width))               # the experts in every layer
            notes.append(f"the dense MLP (intermediate_size {ffn}) beside the experts is priced "
                         f"as {shared} shared expert(s) of width {width}")
            ffn = 0
        if shared_width and not shared:
            shared = max(1, round(shared_width / width))
        if shared_width and shared and shared_width != shared * width \
                and shared_width % width == 0:  # the shared width is the one to price
            notes.append(f"shared expert width {shared_width} priced as "
                         f"{shared_width // width} × {width} (the routed experts' width)")
            shared = shared_width // width
        elif shared_width and shared and shared_width != shared * width:
            notes.append(f"shared expert width {shared_width} priced as {shared} × "
                         f"{width} (the routed experts' width)")
        dense_layers = (groups["first_dense_layers"] if "first_dense_layers" in groups
                        else _dense_layers(r, text_cfg, layers, mtype))
        if dense_layers and not ffn:
            col.error(f"{dense_layers} dense layers need intermediate_size",
                      field=r.name("intermediate_size"))
            return None
        if "routed_expert_hidden_size" in text_cfg:
            notes.append(f"latent MoE (routed_expert_hidden_size "
                         f"{text_cfg['routed_expert_hidden_size']}): experts priced at the full "
                         "hidden size — an upper bound")
        fields.update(n_routed_experts=experts, experts_per_tok=top_k, n_shared_experts=shared,
                      moe_intermediate=width, first_dense_layers=dense_layers,
                      ffn_intermediate=ffn if dense_layers else 0)
    else:
        if not ffn:
            col.error("missing: a dense model needs intermediate_size",
                      field=r.name("intermediate_size"))
            return None
        fields["ffn_intermediate"] = ffn
    # --- embeddings, MTP ---------------------------------------------------------------------
    tied = r.flag("tie_word_embeddings")
    if tied is None:
        tied = _Reader(top, col).flag("tie_word_embeddings")
    if tied is None:
        tied = False
        notes.append("tie_word_embeddings not given: untied (a separate LM head) assumed")
    mtp = r.num("num_nextn_predict_layers", "mtp_num_hidden_layers", lo=0, hi=64, default=0) or 0
    if r.has("num_nextn_predict_layers") or r.has("mtp_num_hidden_layers"):
        mtp_note = f"MTP: {mtp} module(s) in the checkpoint (num_nextn_predict_layers)"
        notes.append(mtp_note if mtp else "MTP: the config declares none")
    family = _family(mtype)
    tokenizer = _tokenizer(family, vocab, notes)
    groups.pop("first_dense_layers", None)
    fields.update(groups)
    try:
        spec = ModelSpec(
            slug=slug, name=name, role=role, layers=layers, hidden=hidden, q_heads=q_heads,
            vocab=vocab, tied_embeddings=tied, family=family, tokenizer=tokenizer,
            mtp_layers=mtp, source=source, assumptions="; ".join(notes), **fields,
        )
    except ValidationError as exc:
        col.error(f"not a valid model: {validation_message(exc)}")
        return None
    return spec


def _gated_deltanet(cfg: Mapping[str, Any], col: Collector, prefix: str,
                    linear: int) -> dict[str, Any] | None:
    """Qwen3-Next / Qwen3.5 Gated DeltaNet layers (`linear_num_value_heads`,
    `linear_num_key_heads`, `linear_key_head_dim`, `linear_value_head_dim`,
    `linear_conv_kernel_dim`, `mamba_ssm_dtype`) as the Mamba-2 layer group they price alike:
    one recurrent state of value heads × value dim × key dim per sequence (SGLang's
    `temporal_state_shape`), a causal conv over q, k and v (conv_dim = v heads·v dim + 2·key
    heads·key dim), in/out projections as GEMMs (q, k, v, z + the two per-head gates, within
    48 columns of Mamba-2's z, x, B, C, dt). None when the config does not give the shapes."""
    keys = ("linear_num_value_heads", "linear_num_key_heads", "linear_key_head_dim",
            "linear_value_head_dim")
    if not all(k in cfg for k in keys):
        return None
    r = _Reader(cfg, col, prefix)
    heads = r.num("linear_num_value_heads", lo=1, hi=MAX_HEADS * 4, required=True)
    key_heads = r.num("linear_num_key_heads", lo=1, hi=MAX_HEADS, required=True)
    d_state = r.num("linear_key_head_dim", lo=1, hi=MAX_HEAD_DIM, required=True)
    head_dim = r.num("linear_value_head_dim", lo=1, hi=MAX_HEAD_DIM, required=True)
    conv = r.num("linear_conv_kernel_dim", lo=1, hi=64, default=4)
    if heads is None or key_heads is None or d_state is None or head_dim is None or conv is None:
        return None
    state_bytes = 4 if str(cfg.get("mamba_ssm_dtype") or "") == "float32" else 2
    layers = json_int(cfg.get("num_hidden_layers")) or linear
    return {"attention_layers": layers - linear, "mlp_layers": layers, "mamba_layers": linear,
            "mamba": {"heads": heads, "head_dim": head_dim, "d_state": d_state,
                      "groups": key_heads, "conv_kernel": conv, "state_bytes": state_bytes}}


def _hybrid(cfg: Mapping[str, Any], col: Collector, notes: list[str],
            prefix: str) -> tuple[Mapping[str, Any], dict[str, Any]]:
    """Nemotron-H: `hybrid_override_pattern` (or `layers_block_type`) names one block per
    layer; attention, MLP/MoE and Mamba-2 layers are counted as groups."""
    raw = cfg.get("hybrid_override_pattern")
    key = "hybrid_override_pattern"
    kinds: list[str] = []
    if raw is None:
        key, raw = "layers_block_type", cfg.get("layers_block_type")
        if isinstance(raw, list) and all(isinstance(x, str) for x in raw):
            kinds = [str(x) for x in raw]
    elif isinstance(raw, str):
        kinds = [HYBRID_LETTERS.get(c, f"?{c}") for c in raw]
    bad = [k for k in kinds if k not in HYBRID_LETTERS.values()]
    if not kinds or bad or len(kinds) > MAX_LAYERS:
        col.error(f"expected one block per layer ({', '.join(HYBRID_LETTERS)} or their names)"
                  + (f"; {quote(bad[0].lstrip('?'))} is not one" if bad else ""),
                  field=prefix + key)
        return cfg, {}
    n = len(kinds)
    given = json_int(cfg.get("num_hidden_layers"))
    if cfg.get("num_hidden_layers") is not None and given != n:
        col.error(f"{key} has {n} blocks for {cfg['num_hidden_layers']} layers",
                  field=prefix + "num_hidden_layers")
        return cfg, {}
    r = _Reader(cfg, col, prefix)
    heads = r.num("mamba_num_heads", lo=1, hi=MAX_HEADS * 4, required=True)
    head_dim = r.num("mamba_head_dim", lo=1, hi=MAX_HEAD_DIM, required=True)
    d_state = r.num("ssm_state_size", lo=1, hi=MAX_HEAD_DIM, required=True)
    n_groups = r.num("n_groups", lo=1, hi=MAX_HEADS, default=1)
    conv = r.num("conv_kernel", lo=1, hi=64, default=4)
    latent = r.num("moe_latent_size", lo=1, hi=MAX_HIDDEN, default=0)
    if heads is None or head_dim is None or d_state is None or n_groups is None or conv is None:
        return cfg, {}
    ssm_dtype = str(cfg.get("mamba_ssm_cache_dtype") or "")
    state_bytes = 4 if ssm_dtype == "float32" else 2
    count = {k: kinds.count(k) for k in HYBRID_LETTERS.values()}
    out: dict[str, Any] = {
        "attention_layers": count["attention"], "mlp_layers": count["mlp"] + count["moe"],
        "mamba_layers": count["mamba"], "first_dense_layers": count["mlp"],
        "moe_latent": latent or 0,
        "mamba": {"heads": heads, "head_dim": head_dim, "d_state": d_state, "groups": n_groups,
                  "conv_kernel": conv, "state_bytes": state_bytes},
    }
    act = str(cfg.get("mlp_hidden_act") or cfg.get("hidden_act") or "")
    if act == "relu2":
        out["gated_mlp"] = False
    notes.append(f"hybrid: {count['mamba']} Mamba-2, {count['attention']} attention, "
                 f"{count['mlp']} MLP and {count['moe']} MoE layers ({key}); only the "
                 f"{count['attention']} attention layers keep a KV cache")
    notes.append(MAMBA_STATE_NOTE + f" (SSM state {ssm_dtype or 'bf16, the model dtype'}"
                 + ("" if ssm_dtype else ": mamba_ssm_cache_dtype not given") + ")")
    if act == "relu2":
        notes.append("relu² MLPs and experts (mlp_hidden_act): two matrices, not SwiGLU's three")
    if latent:
        notes.append(f"latent MoE (moe_latent_size {latent}): routed experts at {latent} wide, "
                     "with the down/up projections to it priced as GEMMs")
    norm: dict[str, Any] = {**cfg, "num_hidden_layers": n}
    if cfg.get("head_dim") is None and cfg.get("attention_head_dim") is not None:
        norm["head_dim"] = cfg["attention_head_dim"]
    return norm, out


def _decilm_width(mult: float, hidden: int) -> int:
    """A DeciLM block's FFN width from its ffn_mult: int(2·mult·hidden/3) rounded up to a
    multiple of 256 (DeciLM's _ffn_mult_to_intermediate_size, as llama.cpp's
    convert_hf_to_gguf.py DeciModel reads it)."""
    width = int(2 * mult * hidden / 3)
    return -(-width // 256) * 256


def _nas(cfg: Mapping[str, Any], col: Collector, notes: list[str],
         prefix: str) -> tuple[Mapping[str, Any], dict[str, Any]]:
    """DeciLM / Llama-Nemotron NAS: `block_configs` give each layer its own attention (GQA
    group, skipped or a linear) and FFN (multiplier, skipped or a linear)."""
    blocks = cfg.get("block_configs")
    hidden = json_int(cfg.get("hidden_size"))
    q_heads = json_int(cfg.get("num_attention_heads"))
    if not isinstance(blocks, list) or not blocks or len(blocks) > MAX_LAYERS:
        col.error("expected a list of per-layer blocks", field=prefix + "block_configs")
        return cfg, {}
    if hidden is None or q_heads is None or hidden < 1 or q_heads < 1:
        return cfg, {}  # the plain reads name hidden_size / num_attention_heads
    attn, linear, skipped_attn, skipped_ffn = 0, 0, 0, 0
    groups_kv: dict[int, int] = {}
    widths: dict[int, int] = {}
    for i, blk in enumerate(blocks):
        where = f"{prefix}block_configs[{i}]"
        a = blk.get("attention") if isinstance(blk, Mapping) else None
        f = blk.get("ffn") if isinstance(blk, Mapping) else None
        if not isinstance(a, Mapping) or not isinstance(f, Mapping):
            col.error("expected an object with attention and ffn", field=where)
            return cfg, {}
        if a.get("no_op"):
            skipped_attn += 1
        elif a.get("replace_with_linear"):
            linear += 1
        else:
            g = json_int(a.get("n_heads_in_group"))
            if g is None or g < 1 or q_heads % g:
                col.error(f"expected a whole divisor of the {q_heads} query heads, got "
                          f"{quote(json.dumps(a.get('n_heads_in_group')))}",
                          field=f"{where}.attention.n_heads_in_group")
                return cfg, {}
            attn += 1
            groups_kv[q_heads // g] = groups_kv.get(q_heads // g, 0) + 1
        if f.get("no_op"):
            skipped_ffn += 1
        elif f.get("replace_with_linear"):
            linear += 1
        else:
            mult = f.get("ffn_mult")
            if isinstance(mult, bool) or not isinstance(mult, int | float) or not 0 < mult <= 64:
                col.error(f"expected a number in (0, 64], got {quote(json.dumps(mult))}",
                          field=f"{where}.ffn.ffn_mult")
                return cfg, {}
            w = _decilm_width(float(mult), hidden)
            widths[w] = widths.get(w, 0) + 1
    ffn_groups = tuple(sorted(((c, w) for w, c in widths.items()), key=lambda x: -x[1]))
    kv = max(groups_kv, key=lambda k: groups_kv[k]) if groups_kv else q_heads
    notes.append(f"NAS blocks (block_configs): {attn} of {len(blocks)} layers with attention "
                 f"({skipped_attn} skipped), {sum(widths.values())} with an FFN "
                 f"({skipped_ffn} skipped) in {len(widths)} widths, {linear} block(s) replaced "
                 "by a linear; priced per layer group")
    if len(groups_kv) > 1:
        notes.append(f"per-layer KV heads {sorted(groups_kv)}: priced at the most common, {kv} "
                     "(one KV shape per model) — an approximation")
    norm = {**cfg, "num_hidden_layers": len(blocks), "num_key_value_heads": kv,
            "intermediate_size": max(widths, key=lambda w: widths[w]) if widths else 0}
    return norm, {"attention_layers": attn, "mlp_layers": sum(widths.values()),
                  "linear_blocks": linear, "ffn_groups": ffn_groups}


def _tokenizer(family: str, vocab: int, notes: list[str]) -> str:
    """A preset's tokenizer when a preset of the same family has the same vocabulary size (so
    the preset drafts that share it fit), else one of its own: a draft must share the
    target's vocabulary, and a config names no tokenizer."""
    for m in model_presets().values():
        # Only named tokenizers (the hand-sourced presets'): a config-made preset's
        # "family:vocab" is what this function would give anyway.
        if m.family == family and m.vocab == vocab and m.tokenizer and ":" not in m.tokenizer:
            notes.append(f"tokenizer: assumed {m.tokenizer} (same family and vocabulary size "
                         f"{vocab} as the {m.slug} preset)")
            return m.tokenizer
    return f"{family}:{vocab}"


def _dense_layers(r: _Reader, cfg: Mapping[str, Any], layers: int, mtype: str) -> int:
    """Layers with a dense MLP instead of experts (their placement does not change the cost)."""
    freq = cfg.get("moe_layer_freq")
    if isinstance(freq, list):
        return sum(1 for x in freq if x == 0)
    first = r.num("first_k_dense_replace", lo=0, hi=layers, default=0) or 0
    only = r.seq("mlp_only_layers") or []
    step = r.num("decoder_sparse_step", "interleave_moe_layer_step", lo=1, hi=layers, default=1)
    step = step or 1
    moe = sum(1 for i in range(first, layers) if i not in only and (i + 1) % step == 0)
    return layers - moe


def _family(mtype: str) -> str:
    for prefix, fam in (("qwen3_5", "qwen3.5"), ("qwen3", "qwen3"), ("qwen2", "qwen2"),
                        ("deepseek_v4", "deepseek-v4"), ("deepseek_ref", "deepseek-v4"),
                        ("deepseek", "deepseek-v3"), ("kimi", "kimi"), ("glm", "glm"),
                        ("gpt_oss", "gpt-oss"), ("gemma", "gemma"), ("mixtral", "mistral"),
                        ("mistral", "mistral"), ("minimax", "minimax"), ("llama4", "llama-4"),
                        ("llama", "llama-3"), ("step", "step"), ("mimo", "mimo"),
                        ("nemotron-nas", "llama-3"), ("nemotron_h", "nemotron-h")):
        if mtype.startswith(prefix):
            return fam
    return mtype or "unknown"


def _refusal(arch: str, mtype: str) -> str | None:
    if arch in REFUSED:
        return f"{arch} is not priced: {REFUSED[arch]}"
    known = mtype in KNOWN_TYPES or arch.endswith(("ForCausalLM", "ForConditionalGeneration"))
    if not known:
        return (f"unknown architecture {quote(arch or mtype or '(none)')}: expected a causal "
                "decoder (…ForCausalLM) of a known family")
    return None


def parse_config(text: str, *, name: str = "", quant_text: str | None = None,
                 role: Literal["target", "draft", "both"] = "target",
                 source: str = "") -> HfModelConfig:
    """Parse one config.json text (and optionally its hf_quant_config.json). Never raises."""
    col = Collector()
    notes: list[str] = []
    cfg = _load(text, col, "config.json")
    quant = _load(quant_text, col, QUANT_SUFFIX) if quant_text is not None else None
    if cfg is None or col.has_errors:
        return _refused(col)
    if "auto_map" in cfg or "trust_remote_code" in cfg:
        notes.append("auto_map / remote code ignored: only the config's numbers are read")
    arch = _architecture(cfg, col)
    mtype = str(cfg.get("model_type") or "")
    head = _head_kind(arch, cfg)
    label = name or str(cfg.get("_name_or_path") or "") or arch or mtype or "model"
    slug = config_slug(label, text + (quant_text or ""))
    src = source or f"uploaded config.json ({label})"
    if head is not None:
        drafter = _drafter(head, cfg, col, notes, label, src)
        if drafter is None or col.has_errors:
            return _refused(col)
        return HfModelConfig(summary=f"{label}: {head} drafter, {drafter.draft_layers} layer(s)",
                             drafter=drafter, notes=tuple(notes), problems=col.problems())
    refusal = _refusal(arch, mtype)
    if refusal:
        col.error(refusal, field="architectures" if arch else "model_type")
        return _refused(col)
    text_cfg = cfg.get("text_config")
    if text_cfg is not None and not isinstance(text_cfg, Mapping):
        col.error("expected an object", field="text_config")
        return _refused(col)
    inner: Mapping[str, Any] = text_cfg if isinstance(text_cfg, Mapping) else cfg
    if isinstance(text_cfg, Mapping):
        inner_arch = text_cfg.get("architectures")
        if isinstance(inner_arch, list) and inner_arch and inner_arch[0] in REFUSED:
            col.error(f"{inner_arch[0]} is not priced: {REFUSED[inner_arch[0]]}",
                      field="text_config.architectures")
            return _refused(col)
        notes.append("multimodal config: the text model (text_config) is priced; the vision "
                     "tower is not")
    weights, kv = _quant(inner if "quantization_config" in inner else cfg, quant, col, notes)
    model = _model(inner, cfg, arch, col, notes, slug=slug, name=label, source=src, role=role)
    if model is None or col.has_errors:
        return _refused(col)
    return HfModelConfig(
        summary=f"{label}: {model.layers} layers, {model.param_count() / 1e9:.1f}B parameters"
        + (f", {model.n_routed_experts} experts top-{model.experts_per_tok}" if model.is_moe
           else "")
        + (f" ({model.mamba_layers} Mamba-2, {model.n_attention_layers} attention)"
           if model.mamba_layers else "")
        + (f" ({model.n_attention_layers} with attention, {len(model.ffn_groups)} FFN widths)"
           if model.ffn_groups else ""),
        model=model, weights_dtype=weights, kv_dtype=kv, notes=tuple(notes),
        problems=col.problems())


def _drafter(kind: str, cfg: Mapping[str, Any],
             col: Collector, notes: list[str], label: str, source: str) -> DrafterSpec | None:
    r = _Reader(cfg, col)
    layers = r.num("num_hidden_layers", lo=1, hi=MAX_LAYERS, default=1)
    vocab = r.num("draft_vocab_size", lo=1, hi=MAX_VOCAB)
    block = r.num("block_size", lo=1, hi=1024)
    # The head's own shapes (each None where the config does not give it: the target's).
    dims = {"hidden": r.num("hidden_size", lo=1, hi=MAX_HIDDEN),
            "intermediate": r.num("intermediate_size", lo=1, hi=MAX_FFN),
            "q_heads": r.num("num_attention_heads", lo=1, hi=MAX_HEADS),
            "kv_heads": r.num("num_key_value_heads", lo=1, hi=MAX_HEADS),
            "head_dim": r.num("head_dim", lo=1, hi=MAX_HEAD_DIM)}
    if dims["q_heads"] and dims["kv_heads"] and dims["q_heads"] % dims["kv_heads"]:
        col.error(f"num_attention_heads {dims['q_heads']} is not a multiple of "
                  f"num_key_value_heads {dims['kv_heads']}", field="num_key_value_heads")
    if dims["head_dim"] is None and dims["hidden"] and dims["q_heads"] \
            and dims["hidden"] % dims["q_heads"] == 0:
        dims["head_dim"] = dims["hidden"] // dims["q_heads"]
    shape = ", ".join(f"{k} {v}" for k, v in dims.items() if v is not None)
    decl = mechanism_kind(kind)  # the head's declaration: does it carry its own vocabulary?
    own_vocab = decl is not None and decl.head_own_vocab
    if own_vocab and vocab is None:
        vocab = r.num("vocab_size", lo=1, hi=MAX_VOCAB)
    if not own_vocab:
        vocab = None  # block drafters share the target's LM head
        notes.append(f"{kind}: {layers} layer(s) at {shape or 'the target dims'} (the rest "
                     "the target's), the target's vocabulary"
                     + (f"; block_size {block} (D ≤ {block - 1} per round)" if block else ""))
    else:
        spec = mechanism_presets().get(kind)
        notes.append(f"{spec.name if spec else kind}: {layers} layer(s) at "
                     f"{shape or 'the target dims'} (the rest the target's), draft vocabulary "
                     f"{vocab}")
    if col.has_errors:
        return None
    try:
        return DrafterSpec(kind=kind, name=label, draft_layers=layers, draft_vocab=vocab,
                           block_size=block, source=source, notes=tuple(notes), **dims)
    except ValidationError as exc:
        col.error(f"not a valid drafter: {validation_message(exc)}")
        return None


def parse_drafter(text: str, *, name: str = "", quant_text: str | None = None,
                  source: str = "") -> HfModelConfig:
    """A drafter's config: an EAGLE-3 or DFlash/DSpark head, or (any model config) an external
    draft model. Never raises."""
    res = parse_config(text, name=name, quant_text=quant_text, role="draft", source=source)
    if res.model is None:
        return res
    drafter = DrafterSpec(kind=draft_model_mechanism(), name=res.model.name, model=res.model,
                          source=res.model.source, notes=res.notes)
    return res.model_copy(update={"drafter": drafter, "model": None,
                                  "summary": f"{res.summary} (external draft model)"})


def _load(text: str | None, col: Collector, what: str) -> dict[str, Any] | None:
    if text is None:
        return None
    if len(text) > MAX_FILE_BYTES:
        col.error(f"{what} is {len(text) / 2**20:.1f} MiB; the limit is "
                  f"{MAX_FILE_BYTES / 2**20:.0f} MiB (MAX_FILE_BYTES)")
        return None
    if not check_json_shape(text, col):
        return None
    had_errors = col.has_errors
    parsed = load_json(text, col)
    if col.has_errors and not had_errors:
        return None
    if not isinstance(parsed, dict):
        kind = "null" if parsed is None else type(parsed).__name__
        col.error(f"{what} must be a JSON object (a Hugging Face config), not {kind}")
        return None
    return parsed


def _refused(col: Collector) -> HfModelConfig:
    n = col.error_count()
    return HfModelConfig(summary=f"{FORMAT}: not loaded, {n} error{'s' if n != 1 else ''} to fix",
                         problems=col.problems())


def quant_path_for(path: Path) -> Path | None:
    """The hf_quant_config.json that goes with a config file: beside it (a checkpoint folder),
    or `<stem>_hf_quant_config.json` for `<stem>_config.json` (aiconfigurator-core's naming)."""
    candidates = [path.with_name(QUANT_SUFFIX)]
    if path.name.endswith("_config.json"):
        candidates.insert(0, path.with_name(path.name.removesuffix("config.json") + QUANT_SUFFIX))
    return next((c for c in candidates if c.is_file() and c != path), None)


def read_config_file(path: str | os.PathLike[str], *, drafter: bool = False,
                     name: str = "", source: str = "") -> HfModelConfig:
    """A config file from disk (with its hf_quant_config.json if one lies beside it): regular
    files only, at most MAX_FILE_BYTES. Never raises."""
    p = Path(path)
    col = Collector()
    try:
        st = p.stat()
    except OSError as exc:
        col.error(f"cannot read {quote(str(p))}: {exc.strerror or exc}")
        return _refused(col)
    if not stat.S_ISREG(st.st_mode):
        col.error(f"{quote(str(p))} is not a regular file")
        return _refused(col)
    if st.st_size > MAX_FILE_BYTES:
        col.error(f"the file is {st.st_size / 2**20:.1f} MiB; the limit is "
                  f"{MAX_FILE_BYTES / 2**20:.0f} MiB (MAX_FILE_BYTES)")
        return _refused(col)
    try:  # regular files only, never more than the cap (explorer/base/reading.py)
        text = read_file(p).decode("utf-8-sig")
        qp = quant_path_for(p)
        quant = read_file(qp).decode("utf-8-sig") if qp is not None else None
    except ValueError as exc:  # UnicodeDecodeError is one
        col.error(str(exc) if not isinstance(exc, UnicodeDecodeError)
                  else f"cannot read {quote(str(p))} as UTF-8 text: {exc}")
        return _refused(col)
    label = name or p.name.removesuffix(".json").removesuffix("_config").replace("--", "/")
    parse = parse_drafter if drafter else parse_config
    return parse(text, name=label, quant_text=quant, source=source or f"config file {p.name}")


# The Hugging Face configs the pinned aiconfigurator-core==0.12.0 ships (its model_configs/).
PACKAGE = "aiconfigurator-core==0.12.0"
PACKAGE_CONFIG_DIR = "aiconfigurator_core/model_configs"


def shipped_config_paths() -> tuple[Path, ...]:
    """Every `<org>--<name>_config.json` the package ships (hf_quant_config.json files are read
    with their config), sorted; empty when the package is not installed."""
    import importlib.util

    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is None or not spec.submodule_search_locations:
        return ()
    folder = Path(next(iter(spec.submodule_search_locations))) / "model_configs"
    return tuple(sorted(p for p in folder.glob("*_config.json")
                        if not p.name.endswith(QUANT_SUFFIX)))


def read_shipped(path: Path) -> HfModelConfig:
    """A shipped config, its source naming the package and path."""
    return read_config_file(path, source=f"{PACKAGE} {PACKAGE_CONFIG_DIR}/{path.name}")

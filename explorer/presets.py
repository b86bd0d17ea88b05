"""Presets as data: hardware, models, mechanisms and sample AL curves from data/*.csv."""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

from explorer.base.engines import SERVING_ENGINES
from explorer.specs.architecture import ModelSpec
from explorer.specs.engine import ENGINE_PARAMETERS, Engine, EngineProfile, engine_kind
from explorer.specs.hardware import AttentionRooflineFit, GemmRooflineFit, HardwareSpec
from explorer.specs.measured import AcceptanceCurve, Provenance
from explorer.specs.mechanism import MechanismSpec
from explorer.specs.settings import PresetTable

DATA_DIR = Path(__file__).resolve().parent.parent / "data"


def _rows(name: str) -> list[dict[str, str]]:
    with (DATA_DIR / name).open(newline="", encoding="utf-8") as fh:
        return [{k.strip(): (v or "").strip() for k, v in r.items()} for r in csv.DictReader(fh)]


def _num(text: str) -> float | None:
    if text == "":
        return None
    value = float(text)
    return None if math.isnan(value) else value


def _int(text: str) -> int | None:
    value = _num(text)
    return None if value is None else int(value)


@dataclass(frozen=True)
class RooflineRecord:
    """data/roofline_fit.csv: per (kind, dtype, engine) the cross-GPU roofline fit on that
    engine's tables, for all GPUs of a vendor ("all") or for the GPUs of one architecture (its
    `gpus`); `best` marks the engine with the lowest leave-one-GPU-out error per dtype."""

    scope: str
    gpus: tuple[str, ...]
    fit: GemmRooflineFit | AttentionRooflineFit


@lru_cache(maxsize=1)
def roofline_records() -> tuple[RooflineRecord, ...]:
    out: list[RooflineRecord] = []
    for r in _rows("roofline_fit.csv"):
        common: dict[str, Any] = {
            "vendor": r["vendor"], "engine": r["engine"], "best": r.get("best") == "true",
            "floor_s": float(r["floor_us"]) * 1e-6,
            "loo_mape": float(r["loo_mape"]), "loo_bias": float(r["loo_bias"]),
            "own_fit_mape": float(r["own_fit_mape"]), "gpus": r["gpus"],
            "source": f"{r['source']}; rule: {r['rule']}; form: {r['form']}"}
        fit: GemmRooflineFit | AttentionRooflineFit
        if r["kind"] == "gemm":
            fit = GemmRooflineFit(
                dtype=r["dtype"], eta_c=float(r["eta_c"]), eta_m=float(r["eta_m"]),
                p=float(r["p"]), act_quant=r["act_quant"] == "true",
                k0=float(r.get("k0") or 0.0), n_half=float(r.get("n_half") or 0.0),
                n_q=float(r.get("n_q") or 1.0),
                loo_mape_all=float(r["loo_mape_all"]), **common)
        else:
            fit = AttentionRooflineFit(
                kv_dtype=r["dtype"], size=cast(Any, "bytes" if r["form"] == "bytes" else "units"),
                eta_max=float(r["eta_m"]),
                half=float(r["half_bytes"]), q=float(r["q"]),
                per_row_s=float(r["per_row_ns"] or 0.0) * 1e-9,
                per_unit_s=float(r.get("per_unit_ns") or 0.0) * 1e-9, **common)
        out.append(RooflineRecord(r["scope"], tuple(r["gpus"].split()), fit))
    return tuple(out)


@dataclass(frozen=True)
class RooflineHeldOut:
    """data/roofline_loo.csv: one GPU's error when the recorded roofline form is fitted on the
    other GPUs (leave-one-GPU-out), per kind and dtype."""

    kind: str
    dtype: str
    engine: str
    gpu: str
    mape: float
    bias: float
    mape_serving: float
    bias_serving: float


@lru_cache(maxsize=1)
def roofline_held_out() -> tuple[RooflineHeldOut, ...]:
    return tuple(
        RooflineHeldOut(r["kind"], r["dtype"], r["engine"], r["gpu"], float(r["loo_mape"]),
                        float(r["loo_bias"]), float(r["loo_mape_serving"]),
                        float(r["loo_bias_serving"]))
        for r in _rows("roofline_loo.csv"))


def roofline_fits_for(architecture: str
                      ) -> tuple[tuple[GemmRooflineFit, ...], tuple[AttentionRooflineFit, ...]]:
    """The fits a hardware preset uses, one per (kind, dtype, engine): its architecture's where
    one was fitted on that architecture's GPUs, else the one fitted on all GPUs — what the
    leave-one-GPU-out rule `same architecture` does for a GPU without a sibling (train on all
    others). A GPU without tables (other vendors' included) gets it by its spec sheet."""
    chosen: dict[tuple[str, str, str], RooflineRecord] = {}
    for rec in roofline_records():
        dt = rec.fit.dtype if isinstance(rec.fit, GemmRooflineFit) else rec.fit.kv_dtype
        key = ("gemm" if isinstance(rec.fit, GemmRooflineFit) else "attention", dt,
               rec.fit.engine)
        mine = rec.scope != "all" and rec.scope == architecture
        if mine or (rec.scope == "all" and key not in chosen):
            chosen[key] = rec
    gemm = tuple(r.fit for r in chosen.values() if isinstance(r.fit, GemmRooflineFit))
    att = tuple(r.fit for r in chosen.values() if isinstance(r.fit, AttentionRooflineFit))
    return gemm, att


def _engines(text: str, slug: str) -> tuple[str, ...]:
    """data/hardware.csv `engines`: a space-separated list of serving engines."""
    names = tuple(text.split()) or SERVING_ENGINES
    unknown = [e for e in names if e not in SERVING_ENGINES]
    if unknown:
        raise ValueError(f"data/hardware.csv row {slug}: unknown engine(s) {', '.join(unknown)}; "
                         f"known: {', '.join(SERVING_ENGINES)}")
    return names


@lru_cache(maxsize=1)
def hardware_presets() -> dict[str, HardwareSpec]:
    out: dict[str, HardwareSpec] = {}
    for r in _rows("hardware.csv"):
        gemm_fits, attention_fits = roofline_fits_for(r.get("architecture", ""))
        fp8 = _num(r["fp8_dense_tflops"])
        fp4 = _num(r["fp4_dense_tflops"])
        fp6 = _num(r.get("fp6_dense_tflops", ""))
        out[r["slug"]] = HardwareSpec(
            slug=r["slug"],
            name=r["name"],
            vendor=r["vendor"],
            bf16_flops_per_s=float(r["bf16_dense_tflops"]) * 1e12,
            fp8_flops_per_s=fp8 * 1e12 if fp8 else None,
            fp4_flops_per_s=fp4 * 1e12 if fp4 else None,
            fp6_flops_per_s=fp6 * 1e12 if fp6 else None,
            hbm_bytes=float(r["hbm_gb"]) * 1e9,
            hbm_bw_bytes_per_s=float(r["hbm_tb_per_s"]) * 1e12,
            link_bw_bytes_per_s=float(r["link_gb_per_s"]) * 1e9,
            gemm_compute_efficiency=float(r["gemm_compute_efficiency"]),
            gemm_memory_efficiency=float(r["gemm_memory_efficiency"]),
            attention_compute_efficiency=float(r["attention_compute_efficiency"]),
            attention_memory_efficiency=float(r["attention_memory_efficiency"]),
            kernel_floor_s=float(r["kernel_floor_us"]) * 1e-6,
            launch_latency_s=float(r["launch_latency_us"]) * 1e-6,
            step_overhead_s=float(r["step_overhead_us"]) * 1e-6,
            allreduce_latency_s=float(r["allreduce_latency_us"]) * 1e-6,
            spec_source=r["spec_source"],
            fit_source=r["fit_source"],
            assumptions=r.get("assumptions", ""),
            architecture=r.get("architecture", ""),
            group=r.get("group", ""),
            engines=cast(Any, _engines(r.get("engines", ""), r["slug"])),
            engines_source=r.get("engines_source", ""),
            gemm_fits=gemm_fits,
            attention_fits=attention_fits,
        )
    return out


# Columns of data/hf_models.csv: presets read from the Hugging Face configs aiconfigurator-core
# ships (written by scripts/hf_presets.py), with the MLA shapes a config may set besides.
MLA_SHAPE_COLUMNS: tuple[str, ...] = ("q_lora_rank", "qk_nope_dim", "v_head_dim")
HF_MODEL_COLUMNS: tuple[str, ...] = (
    "slug", "name", "role", "layers", "hidden", "q_heads", "kv_heads", "head_dim",
    "ffn_intermediate", "n_routed_experts", "experts_per_tok", "n_shared_experts",
    "moe_intermediate", "first_dense_layers", "vocab", "tied_embeddings", "attention_kind",
    "kv_lora_rank", "qk_rope_dim", *MLA_SHAPE_COLUMNS, "sliding_window", "sliding_layers",
    "total_params_b", "active_params_b", "source", "assumptions", "family", "tokenizer",
    "mtp_layers", "mtp_params_b", "speculation_source", "layer_groups",
)
# ModelSpec's layer-group fields (hybrid and NAS models), one JSON object in the
# `layer_groups` column (empty: the uniform transformer).
LAYER_GROUP_FIELDS: tuple[str, ...] = (
    "attention_layers", "mlp_layers", "gated_mlp", "moe_latent", "ffn_groups", "linear_blocks",
    "mamba_layers", "mamba",
)


@lru_cache(maxsize=1)
def model_presets() -> dict[str, ModelSpec]:
    """data/models.csv (sourced by hand) then data/hf_models.csv (from shipped configs)."""
    out: dict[str, ModelSpec] = {}
    for r in _rows("models.csv") + _rows("hf_models.csv"):
        fields: dict[str, Any] = {
            "slug": r["slug"],
            "name": r["name"],
            "role": r["role"] or "target",
            "attention_kind": r["attention_kind"] or "gqa",
            "tied_embeddings": r["tied_embeddings"].lower() in ("true", "1", "yes"),
            "total_params_b": _num(r["total_params_b"]),
            "active_params_b": _num(r["active_params_b"]),
            "source": r["source"],
            "assumptions": r.get("assumptions", ""),
            "family": r.get("family", ""),
            "tokenizer": r.get("tokenizer", ""),
            "mtp_layers": _int(r.get("mtp_layers", "")) or 0,
            "mtp_params_b": _num(r.get("mtp_params_b", "")),
            "speculation_source": r.get("speculation_source", ""),
        }
        for key in (
            "layers", "hidden", "q_heads", "kv_heads", "head_dim", "ffn_intermediate",
            "n_routed_experts", "experts_per_tok", "n_shared_experts", "moe_intermediate",
            "first_dense_layers", "vocab", "kv_lora_rank", "qk_rope_dim", "sliding_window",
            "sliding_layers", *MLA_SHAPE_COLUMNS,
        ):
            value = _int(r.get(key, ""))
            if value is not None:
                fields[key] = value
        fields.setdefault("ffn_intermediate", 0)
        groups = json.loads(r.get("layer_groups") or "{}")
        fields.update({k: groups[k] for k in LAYER_GROUP_FIELDS if k in groups})
        out[r["slug"]] = ModelSpec(**fields)
    return out


@lru_cache(maxsize=1)
def mechanism_presets() -> dict[str, MechanismSpec]:
    out: dict[str, MechanismSpec] = {}
    for r in _rows("mechanisms.csv"):
        lookup_us = _num(r["lookup_time_us"])
        out[r["slug"]] = MechanismSpec(
            slug=r["slug"],
            name=r["name"],
            draft_style=r["draft_style"],
            default_draft_len=int(r["default_draft_len"]),
            max_draft_len=int(r["max_draft_len"]),
            draft_layers=_int(r["draft_layers"]),
            serial_head_layer_fraction=_num(r["serial_head_layer_fraction"]) or 0.0,
            draft_vocab=_int(r["draft_vocab"]),
            lookup_time_s=(lookup_us or 0.0) * 1e-6,
            draft_weights=r["draft_weights"],
            fused_target_layers=_int(r["fused_target_layers"]) or 0,
            draft_checkpoint=r["draft_checkpoint"],
            first_rate=float(r["first_rate"]),
            decay=float(r["decay"]),
            prior_source=r["prior_source"],
            training=r["training"],
            training_source=r.get("training_source", ""),
            extra_memory=r["extra_memory"],
            source=r["source"],
            assumptions=r.get("assumptions", ""),
        )
    return out


def parse_sizes(text: str) -> tuple[int, ...]:
    """'1,2,4,8:248:8' → 1, 2, 4, 8, 16, …, 248: comma items, each a size or start:stop:step
    (stop included), as the engines' own range() lists are written in data/engines.csv."""
    out: list[int] = []
    for item in text.split(","):
        parts = [int(p) for p in item.split(":")]
        if len(parts) == 1:
            out.append(parts[0])
        elif len(parts) == 3 and parts[2] > 0:
            out.extend(range(parts[0], parts[1] + 1, parts[2]))
        else:
            raise ValueError(f"cuda_graph_sizes: '{item}' is not N or start:stop:step")
    return tuple(sorted(set(out)))


STEP_COST_FIT_FILE = "step_cost_fit.csv"


@lru_cache(maxsize=1)
def step_cost_fit() -> dict[tuple[str, str], dict[str, str]]:
    """data/step_cost_fit.csv: per (engine, parameter) a whole-step term fitted on published step
    times (scripts/fit_step_costs.py) with its bounds, what it was fitted on and its
    leave-one-source-out error; {} when the file is absent (before the first fit)."""
    if not (DATA_DIR / STEP_COST_FIT_FILE).exists():
        return {}
    return {(r["engine"], r["parameter"]): r for r in _rows(STEP_COST_FIT_FILE)}


@lru_cache(maxsize=2)
def engine_profiles(fitted: bool = True) -> dict[str, EngineProfile]:
    """Serving-engine profiles from data/engines.csv (one row per engine and parameter); a
    value written `fit` is read from data/step_cost_fit.csv. `fitted=False` gives those terms
    as 0: the kernels-only step the fit starts from (explorer/calibration/step_costs.py)."""
    rows: dict[str, dict[str, dict[str, str]]] = {}
    for r in _rows("engines.csv"):
        rows.setdefault(r["engine"], {})[r["parameter"]] = r
    fit = step_cost_fit() if fitted else {}
    out: dict[str, EngineProfile] = {}
    for engine in SERVING_ENGINES:
        p = rows.get(engine, {})
        missing = [name for name in ENGINE_PARAMETERS if name not in p]
        if missing:
            raise ValueError(f"data/engines.csv: {engine} lacks {', '.join(missing)}")
        sources = {name: p[name]["source"] for name in ENGINE_PARAMETERS}
        fitted_notes: dict[str, str] = {}

        def val(name: str, _p: dict[str, dict[str, str]] = p, _engine: str = engine,
                _sources: dict[str, str] = sources, _notes: dict[str, str] = fitted_notes) -> str:
            value = _p[name]["value"]
            if value != "fit":
                return value
            if not fitted:
                return "0"
            row = fit.get((_engine, name))
            if row is None:
                raise ValueError(f"data/engines.csv: {_engine} {name} is 'fit' but "
                                 f"data/{STEP_COST_FIT_FILE} has no such row "
                                 "(run scripts/fit_step_costs.py --write)")
            _sources[name] = row["source"]
            _notes[name] = (f"fitted on {row['fitted_on']}; bounds [{row['lower']}, "
                            f"{row['upper']}] {row['unit']}; leave-one-source-out "
                            f"{row['loo_note']}")
            return row["value"]
        sizes = p["cuda_graph_sizes"]
        out[engine] = EngineProfile(
            engine=engine,
            step_overhead_s=float(val("step_overhead_us")) * 1e-6,
            per_sequence_s=float(val("per_sequence_us")) * 1e-6,
            compute_overlap_loss=float(val("compute_overlap_loss")),
            draft_forward_overhead_s=float(val("draft_forward_overhead_us")) * 1e-6,
            capture_sizes=parse_sizes(sizes["value"]),
            capture_unit=cast(Any, sizes["unit"]),
            pads_to_capture=val("cuda_graph_padding") == "1",
            eager_launch_s=float(val("eager_launch_us")) * 1e-6,
            sampler_bytes_per_logit=float(val("sampler_bytes_per_logit")),
            rejection_sampler_bytes_per_logit=float(val("rejection_sampler_bytes_per_logit")),
            draft_first_forward=cast(Any, val("draft_first_forward")),
            ngram_no_match=cast(Any, val("ngram_no_match")),
            recurrent_state_copies=float(val("recurrent_state_copies")),
            sources=sources,
            fitted=fitted_notes,
            assumptions=tuple(name for name in ENGINE_PARAMETERS
                              if p[name]["assumption"] == "yes"),
        )
    return out


@lru_cache(maxsize=8)
def serving_engine(slug: str) -> Engine:
    """The serving engine a scenario names, resolved once: its declaration (explorer/specs/
    engine.py) with its profile (data/engines.csv). KeyError for an unknown slug."""
    return Engine(engine_kind(slug), engine_profiles()[slug])


SAMPLE_CURVES_FILE = "data/al_curves.csv"
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _temperature(text: str) -> float | None:
    """The first number of a temperature note ('0 (greedy, per paper setup)' → 0)."""
    found = _NUMBER.search(text)
    return float(found.group()) if found else None


@lru_cache(maxsize=1)
def sample_curves() -> dict[str, AcceptanceCurve]:
    """Shipped AL curves keyed 'mechanism/model/dataset' (drafter and temperature added where
    two curves would share a key), each with its provenance."""
    grouped: dict[tuple[str, str, str, str, str], list[tuple[int, float, str]]] = {}
    for r in _rows("al_curves.csv"):
        key = (r["mechanism"], r["model"], r["drafter"], r["dataset"], r["temperature"])
        grouped.setdefault(key, []).append((int(float(r["D"])), float(r["AL"]), r["source"]))
    mechanisms = mechanism_presets()
    out: dict[str, AcceptanceCurve] = {}
    for group_key, pts in grouped.items():
        mech, model, drafter, dataset, temp = group_key
        by_d: dict[int, tuple[float, str]] = {}
        for d, al, src in pts:
            by_d.setdefault(d, (al, src))
        ds = sorted(by_d)
        name = f"{mech}/{model}/{dataset}"
        if name in out:
            name = f"{name}/{drafter}/{temp}"
        out[name] = AcceptanceCurve(
            label=f"{drafter} on {model}, {dataset}",
            mechanism=mech,  # validated by the model
            draft_style="block" if mechanisms[mech].is_block else "chain",
            draft_lens=tuple(ds),
            acceptance_lengths=tuple(by_d[d][0] for d in ds),
            provenance=Provenance(
                file=SAMPLE_CURVES_FILE, format="preset", source=by_d[ds[0]][1] or None,
                model=model or None, drafter=drafter or None, dataset=dataset or None,
                temperature=_temperature(temp),
            ),
        )
    return out


@dataclass(frozen=True)
class PublishedPoint:
    """One published AL(D) of data/al_curves.csv, with the preset its model is (`target`, blank
    when none is) and its model family, for choosing the evidence closest to a target."""

    mechanism: str
    model: str
    drafter: str
    dataset: str
    draft_len: int
    acceptance_length: float
    temperature: float | None  # None: not stated
    source: str
    primary: bool  # False for secondary transcriptions (approx / source say SECONDARY)
    target: str
    family: str
    # how it was obtained: "serving benchmark" (an independent suite or a third party on a
    # serving engine) or "own card/paper" (the drafter's authors on their chosen benchmarks)
    kind: str = "serving benchmark"
    workload: str = "mixed"  # chat, coding, math/reasoning, summarisation/RAG, mixed, other


@lru_cache(maxsize=1)
def published_al_points() -> tuple[PublishedPoint, ...]:
    out = []
    for r in _rows("al_curves.csv"):
        secondary = "secondary" in r["approx"].lower() or "SECONDARY" in r["source"]
        out.append(PublishedPoint(
            mechanism=r["mechanism"], model=r["model"], drafter=r["drafter"],
            dataset=r["dataset"], draft_len=int(float(r["D"])), acceptance_length=float(r["AL"]),
            temperature=_temperature(r["temperature"]), source=r["source"],
            primary=not secondary, target=r["target"], family=r["family"],
            kind=r.get("kind") or "serving benchmark", workload=r.get("workload") or "mixed",
        ))
    return tuple(out)


@dataclass(frozen=True)
class SpreadFit:
    """The calibration of the AL prior's σ (data/al_spread_fit.csv, written by
    `scripts/validate_acceptance.py --fit`): one factor on the log-σ of every prior, fitted so
    that leave-one-source-out 80 % intervals hold 80 % of the published AL points."""

    factor: float
    points: int  # published AL points it was fitted on
    publishers: int  # who published them (each left out of the evidence in turn)
    coverage_raw: float  # LOSO share inside the interval with factor 1
    coverage: float  # with the factor
    coverage_nested: float  # with the factor refitted without the scored point's source
    fitted_on: str


@lru_cache(maxsize=1)
def al_spread_fit() -> SpreadFit:
    r = _rows("al_spread_fit.csv")[0]
    return SpreadFit(factor=float(r["factor"]), points=int(r["points"]),
                     publishers=int(r["publishers"]), coverage_raw=float(r["coverage_raw"]),
                     coverage=float(r["coverage"]), coverage_nested=float(r["coverage_nested"]),
                     fitted_on=r["fitted_on"])


@dataclass(frozen=True)
class DraftHead:
    """A published drafter checkpoint for a target preset: one row of the drafter catalogue
    data/draft_heads.csv (adding a public drafter is adding a row, with its source)."""

    target: str
    mechanism: str
    checkpoint: str
    trained_for: str  # the model it was trained for
    same_weights: bool  # trained for the preset's model (or a revision of it), not a sibling
    source: str
    draft_len: str = ""  # the D or block size it was trained or published for ("3", "block 16")
    training_data: str = ""  # what it was trained on, as its card says ("not read" if unread)
    published_al: str = ""  # any AL published for it, with who measured it and how

    @property
    def summary(self) -> str:
        """One line: the checkpoint, what it was trained for, its D and published AL."""
        extra = "; ".join(x for x in (f"D/block {self.draft_len}" if self.draft_len else "",
                                      f"published AL: {self.published_al}"
                                      if self.published_al else "") if x)
        return f"{self.checkpoint} (for {self.trained_for}" + (f"; {extra}" if extra else "") + ")"


@lru_cache(maxsize=1)
def draft_heads() -> dict[tuple[str, str], tuple[DraftHead, ...]]:
    """Published drafter checkpoints by (target slug, mechanism slug)."""
    out: dict[tuple[str, str], list[DraftHead]] = {}
    for r in _rows("draft_heads.csv"):
        head = DraftHead(target=r["target"], mechanism=r["mechanism"], checkpoint=r["checkpoint"],
                         trained_for=r["trained_for"], same_weights=r["same_weights"] == "yes",
                         source=r["source"], draft_len=r.get("draft_len", ""),
                         training_data=r.get("training_data", ""),
                         published_al=r.get("published_al", ""))
        out.setdefault((head.target, head.mechanism), []).append(head)
    return {k: tuple(v) for k, v in out.items()}


DEFAULT_DRAFT_MODEL: dict[str, str] = {
    # Same tokenizer family as the target (a draft must share the vocabulary).
    "llama-3.1-8b": "llama-3.2-1b",
    "llama-3.1-70b": "llama-3.2-1b",
    "llama-3.1-405b": "llama-3.2-3b",
    "qwen3-32b": "qwen3-1.7b",
    "qwen3-30b-a3b": "qwen3-0.6b",
    "qwen3-235b-a22b": "qwen3-4b",
}


def preset_table(name: PresetTable) -> Mapping[str, Any]:
    """The preset table a setting takes its choices from (explorer/specs/settings.py)."""
    tables: dict[str, Callable[[], Mapping[str, Any]]] = {
        "hardware": hardware_presets, "model": model_presets,
        "mechanism": mechanism_presets, "sample_curve": sample_curves,
    }
    return tables[name]()

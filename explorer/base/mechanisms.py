"""The draft-mechanism registry: one declaration per mechanism (DESIGN.md §2.2).

A `MechanismKind` holds everything about a mechanism that is not a sourced number: its slug,
colour, the names files give it, what its drafter config.json is and how one is recognised, and
its name in each serving engine's configuration. Its numbers (draft style, depth, vocabulary,
acceptance prior, availability facts, sources) are its row in data/mechanisms.csv, read as a
`MechanismSpec` (explorer/specs/mechanism.py) by explorer.presets.mechanism_presets. Every other
module asks these objects; none compares a slug to a literal (tests/unit/test_registries.py
counts the files a slug is written in). Recipe for a new mechanism: README.md, Layout.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import AfterValidator, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

DrafterConfig = Literal["head", "model"]


@dataclass(frozen=True)
class VllmMethod:
    """vLLM: speculative_config["method"] (vllm/config/speculative.py SpeculativeMethod)."""

    method: str
    note: str = ""


@dataclass(frozen=True)
class SglangAlgorithm:
    """SGLang: --speculative-algorithm and the flags that set D ({d}: D, {w}: D + 1)."""

    algorithm: str
    draft_len_flags: tuple[str, ...]
    nvidia_only: str = ""  # why it runs on NVIDIA (CUDA) GPUs only; "" = any vendor

    def flags(self, draft_len: int) -> list[str]:
        return [f.format(d=draft_len, w=draft_len + 1) for f in self.draft_len_flags]


@dataclass(frozen=True)
class TrtllmDecoding:
    """TensorRT-LLM: speculative_config.decoding_type, and whether it takes draft_len_schedule."""

    decoding_type: str
    dynamic_draft_len: bool = True
    note: str = ""


@dataclass(frozen=True)
class MechanismKind:
    """One draft mechanism's declaration (its numbers are its data/mechanisms.csv row)."""

    slug: str
    colour: str  # its line and marker colour in every chart
    # Names engines, papers and measured files give it, as normalised (lower case, words
    # joined by "_"); the slug itself is always one.
    aliases: tuple[str, ...] = ()
    # What a drafter config.json of this kind is: a head on the target's hidden states, a
    # separate draft model, or none (no drafter config of this kind exists).
    drafter_config: DrafterConfig | None = None
    # Words that name a head of this kind in a config.json's architectures/model_type, and keys
    # whose presence alone says so (EAGLE-3's draft_vocab_size).
    head_words: tuple[str, ...] = ()
    head_keys: tuple[str, ...] = ()
    head_own_vocab: bool = False  # the head has its own (smaller) vocabulary
    # How published speed-up tables (../shared/reference/speedups.csv's `mechanism` column:
    # 'eagle3_dynamic_tree', 'mtp_chain', 'prompt_lookup_ngram') name the rows this mechanism
    # prices: a regular expression searched in the lower-case name; "" = none. Wider than the
    # aliases on purpose: a paper's variant names (a tree, a chain, a version) are the mechanism.
    published: str = ""
    vllm: VllmMethod | None = None
    sglang: SglangAlgorithm | None = None
    trtllm: TrtllmDecoding | None = None

    @property
    def is_head(self) -> bool:
        """A separately shaped drafter head whose depth a design may vary."""
        return self.drafter_config == "head"


_SGLANG_CHAIN = (  # a chain of D drafts: topk 1, num_draft_tokens = num_steps + 1 (docs @067ad4d)
    "--speculative-num-steps", "{d}", "--speculative-eagle-topk", "1",
    "--speculative-num-draft-tokens", "{w}")
_NGRAM_CUDA_ONLY = "docs: ngram speculative decoding only supports CUDA"

# The engines' names, checked against their source (export/engine_configs.py says where):
# vllm/config/speculative.py @002e77c SpeculativeMethod ("mtp" without "model" loads the
# target's own MTP layers); sglang server_args.py @001067f builtins (NEXTN, an alias of EAGLE,
# serves the target's MTP layers); TensorRT-LLM docs @04c8822 YAML names + llm_args.py @0004396
# DSparkDecodingConfig; interface.py @00b6d5a support_dynamic_draft_len (not DSpark; the NGram
# drafter takes draft_len_schedule on its own).
_BUILTIN: tuple[MechanismKind, ...] = (
    MechanismKind(
        "external", "#4C78A8",
        aliases=("external_draft", "draft", "draft_model", "draft_target", "standalone",
                 "small_model"),
        drafter_config="model",
        vllm=VllmMethod("draft_model"), sglang=SglangAlgorithm("STANDALONE", _SGLANG_CHAIN),
        trtllm=TrtllmDecoding(
            "DraftTarget", note="decoding_type DraftTarget is the YAML name in the docs; the "
            "class DraftTargetDecodingConfig spells its literal 'Draft_Target' at @0004396.")),
    MechanismKind(
        "mtp", "#F58518", aliases=("nextn", "deepseek_mtp"), published=r"^mtp",
        vllm=VllmMethod("mtp"), sglang=SglangAlgorithm("NEXTN", _SGLANG_CHAIN),
        trtllm=TrtllmDecoding("MTP")),
    MechanismKind(
        "eagle3", "#E45756", aliases=("eagle_3",), drafter_config="head",
        # an unversioned EAGLE chain or tree is EAGLE-3's head unless the row's drafter says
        # EAGLE-1 (explorer/calibration/published.py leaves those out)
        published=r"^(eagle3|eagle_chain|eagle_tree)",
        head_words=("eagle3",), head_keys=("draft_vocab_size", "eagle_config"),
        head_own_vocab=True,
        vllm=VllmMethod("eagle3"), sglang=SglangAlgorithm("EAGLE3", _SGLANG_CHAIN),
        trtllm=TrtllmDecoding("Eagle3")),
    MechanismKind(
        "dflash", "#72B7B2", drafter_config="head", head_words=("dflash",), published=r"^dflash",
        vllm=VllmMethod("dflash"),
        # server_args.py: DFLASH's block size is the verify window (D drafts + 1 bonus token);
        # --speculative-dflash-block-size is an alias of --speculative-num-draft-tokens.
        sglang=SglangAlgorithm("DFLASH", ("--speculative-num-draft-tokens", "{w}")),
        trtllm=TrtllmDecoding("DFlash")),
    MechanismKind(
        "dspark", "#54A24B", drafter_config="head", head_words=("dspark",), published=r"^dspark",
        vllm=VllmMethod("dspark"),
        # server_args.py: "--speculative-dspark-block-size: draft block size gamma (number of
        # proposed draft tokens) … sets --speculative-num-draft-tokens = gamma + 1".
        sglang=SglangAlgorithm("DSPARK", ("--speculative-dspark-block-size", "{d}")),
        trtllm=TrtllmDecoding("DSpark", dynamic_draft_len=False)),
    MechanismKind(
        "ngram", "#B279A2", aliases=("n_gram", "prompt_lookup", "suffix", "suffix_decoding"),
        published=r"ngram",  # prompt_lookup_ngram, ngram_suffix_automaton, …
        vllm=VllmMethod("ngram", note="vLLM sets prompt_lookup_min/max to 5 when both are unset."),
        # A chain, as the cost model assumes: BFS breadth 1; D drafts + the last verified token.
        sglang=SglangAlgorithm("NGRAM", ("--speculative-num-draft-tokens", "{w}",
                                         "--speculative-ngram-max-bfs-breadth", "1"),
                               nvidia_only=_NGRAM_CUDA_ONLY),
        trtllm=TrtllmDecoding("NGram")),
)
# Handles for code that means one mechanism by what it is (a reference measured with it), never
# by comparing a slug.
EXTERNAL, MTP, EAGLE3, DFLASH, DSPARK, NGRAM = _BUILTIN
# The mechanism a new scenario drafts with, and whose prior shapes a curve that names none.
DEFAULT_MECHANISM: str = "eagle3"
UNKNOWN_COLOUR = "#888"

MECHANISM_KINDS: dict[str, MechanismKind] = {k.slug: k for k in _BUILTIN}
BUILTIN_MECHANISMS: tuple[str, ...] = tuple(MECHANISM_KINDS)


def register_mechanism(kind: MechanismKind) -> None:
    """Add a mechanism (a plug-in or a test); its numbers still come from a mechanisms.csv row."""
    if kind.slug in MECHANISM_KINDS:
        raise ValueError(f"mechanism '{kind.slug}' is already registered")
    MECHANISM_KINDS[kind.slug] = kind


def unregister_mechanism(slug: str) -> None:
    """Remove a mechanism `register_mechanism` added (the built-in ones stay)."""
    if slug in BUILTIN_MECHANISMS:
        raise ValueError(f"mechanism '{slug}' is built in")
    MECHANISM_KINDS.pop(slug, None)


def mechanism_slugs() -> tuple[str, ...]:
    return tuple(MECHANISM_KINDS)


def mechanism_kind(slug: str) -> MechanismKind | None:
    return MECHANISM_KINDS.get(slug)


def mechanism_colour(slug: str | None) -> str:
    kind = MECHANISM_KINDS.get(slug or "")
    return kind.colour if kind is not None else UNKNOWN_COLOUR


def mechanism_of_alias(name: str) -> str | None:
    """The mechanism a normalised name (lower case, words joined by "_") stands for."""
    for kind in MECHANISM_KINDS.values():
        if name == kind.slug or name in kind.aliases:
            return kind.slug
    return None


def mechanism_of_published(name: str) -> str | None:
    """The mechanism a published table's mechanism name (any case) prices, by the declarations'
    `published` patterns; None: no preset prices it."""
    text = name.lower()
    for kind in MECHANISM_KINDS.values():
        if kind.published and re.search(kind.published, text):
            return kind.slug
    return None


def drafter_kinds() -> tuple[str, ...]:
    """Mechanisms a drafter config.json can be priced as: the heads, then the draft models."""
    return (*head_kinds(), *(k.slug for k in MECHANISM_KINDS.values()
                             if k.drafter_config == "model"))


def head_kinds() -> tuple[str, ...]:
    """Mechanisms whose drafter is a separately shaped head (its depth a design may vary)."""
    return tuple(k.slug for k in MECHANISM_KINDS.values() if k.is_head)


def draft_model_mechanism() -> str:
    """The mechanism whose drafter is a separate draft model (its config a whole model)."""
    return next(k.slug for k in MECHANISM_KINDS.values() if k.drafter_config == "model")


class _RegisteredEnum:
    """In a JSON schema, the slugs registered when the schema is generated (as a Literal's enum)."""

    def __init__(self, slugs: Callable[[], tuple[str, ...]]) -> None:
        self.slugs = slugs

    def __get_pydantic_json_schema__(self, core_schema: CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        schema = handler(core_schema)
        schema["enum"] = list(self.slugs())
        return schema


def _registered(what: str, slugs: Callable[[], tuple[str, ...]]) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value not in slugs():
            raise ValueError(f"unknown {what} {value!r}; known: {', '.join(slugs())}")
        return value
    return check


# A registered mechanism's slug, and one a drafter config.json can be priced as: validated
# against the registry (not a Literal), so a new mechanism is one declaration.
MechanismSlug = Annotated[str, AfterValidator(_registered("mechanism", mechanism_slugs)),
                          _RegisteredEnum(mechanism_slugs)]
DrafterKindSlug = Annotated[str, AfterValidator(_registered("drafter kind", drafter_kinds)),
                            _RegisteredEnum(drafter_kinds)]


def head_kind_of(arch_and_type: str, keys: frozenset[str]) -> str | None:
    """The head kind a drafter config names (by its architectures + model_type text, lower
    case), else the first whose marker keys it carries; None: not a head."""
    for kind in MECHANISM_KINDS.values():
        if kind.is_head and any(w in arch_and_type for w in kind.head_words):
            return kind.slug
    for kind in MECHANISM_KINDS.values():
        if kind.is_head and any(k in keys for k in kind.head_keys):
            return kind.slug
    return None

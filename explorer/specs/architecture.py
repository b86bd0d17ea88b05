"""Model architecture: the shapes the cost model needs (layers, heads, FFN/MoE, vocab)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# The bounds a config file's dimensions meet (explorer/base/limits.py): a spec holds them, so a
# packed spec in a link (`cm`, `cd`) is held to the same ones.
from explorer.base.limits import (
    MAX_EXPERTS,
    MAX_FFN,
    MAX_HEAD_DIM,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_KV_LORA,
    MAX_LAYERS,
    MAX_VOCAB,
    MAX_WINDOW,
)
from explorer.base.mechanisms import DrafterKindSlug, mechanism_kind

# Absorbed-MLA projection shapes (DeepSeek-V3 config_671B.json, reference/models.csv):
# q_lora_rank 1536, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128.
MLA_Q_LORA_RANK = 1536
MLA_QK_NOPE_DIM = 128
MLA_V_HEAD_DIM = 128


class MambaSpec(BaseModel):
    """A Mamba-2 mixer's shapes (Nemotron-H `mamba_*`, `ssm_state_size`, `n_groups`,
    `conv_kernel`, `mamba_ssm_cache_dtype`): what a layer reads and writes per sequence."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    heads: int = Field(ge=1, le=4 * MAX_HEADS)
    head_dim: int = Field(ge=1, le=MAX_HEAD_DIM)
    d_state: int = Field(ge=1, le=MAX_HEAD_DIM)
    groups: int = Field(ge=1, le=MAX_HEADS, description="B/C groups (n_groups)")
    conv_kernel: int = Field(default=4, ge=1, le=MAX_HEAD_DIM)
    state_bytes: int = Field(default=4, ge=1, le=8, description="SSM state element, bytes")

    @property
    def d_inner(self) -> int:
        return self.heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        """Channels of the causal conv (x, B, C)."""
        return self.d_inner + 2 * self.groups * self.d_state

    def in_proj_width(self) -> int:
        """in_proj outputs z, x, B, C and dt."""
        return 2 * self.d_inner + 2 * self.groups * self.d_state + self.heads

    def params_per_layer(self, hidden: int) -> float:
        return float(hidden * self.in_proj_width() + self.conv_dim * self.conv_kernel
                     + self.d_inner * hidden + 3 * self.heads + self.d_inner)

    def state_bytes_per_seq(self, act_bytes: float = 2.0) -> float:
        """One sequence's recurrent state in one layer: the SSM state (heads × head_dim ×
        d_state at the SSM dtype) and the conv window (conv_kernel − 1 inputs)."""
        return (self.heads * self.head_dim * self.d_state * self.state_bytes
                + (self.conv_kernel - 1) * self.conv_dim * act_bytes)


class ModelSpec(BaseModel):
    """A transformer's shapes. Counts are per model (not per TP rank).

    Hybrid and NAS models (Nemotron-H, DeciLM) are sums over layer groups: `attention_layers`
    of the `layers` carry attention (the KV cache), `mlp_layers` an MLP or MoE, `mamba_layers`
    a Mamba-2 mixer, `linear_blocks` a block replaced by one hidden×hidden linear, and
    `ffn_groups` (layers, width) give the dense MLP widths when they differ per layer. The
    defaults (None, 0, ()) are the uniform transformer: every layer attention + MLP.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    slug: str
    name: str
    role: Literal["target", "draft", "both"] = "target"
    layers: int = Field(ge=1, le=MAX_LAYERS)
    hidden: int = Field(ge=1, le=MAX_HIDDEN)
    q_heads: int = Field(ge=1, le=MAX_HEADS)
    kv_heads: int = Field(ge=1, le=MAX_HEADS)
    head_dim: int = Field(ge=1, le=MAX_KV_LORA + MAX_HEAD_DIM,
                          description="per-head dim; for MLA the latent KV dim (512+64)")
    ffn_intermediate: int = Field(ge=0, le=MAX_FFN,
                                  description="dense MLP width (0 when every layer is MoE)")
    n_routed_experts: int = Field(default=0, ge=0, le=MAX_EXPERTS)
    experts_per_tok: int = Field(default=0, ge=0, le=MAX_EXPERTS)
    n_shared_experts: int = Field(default=0, ge=0, le=MAX_FFN)
    moe_intermediate: int = Field(default=0, ge=0, le=MAX_FFN)
    first_dense_layers: int = Field(default=0, ge=0, le=MAX_LAYERS)
    vocab: int = Field(ge=1, le=MAX_VOCAB)
    tied_embeddings: bool = False
    attention_kind: Literal["gqa", "mla"] = "gqa"
    kv_lora_rank: int = Field(default=0, ge=0, le=MAX_KV_LORA)
    qk_rope_dim: int = Field(default=0, ge=0, le=MAX_HEAD_DIM)
    # MLA projection shapes (the constants above are DeepSeek-V3's, the default); a config's
    # own (GLM-5: q_lora_rank 2048, qk_nope 192, v 256) replace them. q_lora_rank 0: no
    # low-rank query (q projected from the hidden state directly).
    q_lora_rank: int = Field(default=MLA_Q_LORA_RANK, ge=0, le=MAX_HIDDEN)
    qk_nope_dim: int = Field(default=MLA_QK_NOPE_DIM, ge=0, le=MAX_HEAD_DIM)
    v_head_dim: int = Field(default=MLA_V_HEAD_DIM, ge=0, le=MAX_HEAD_DIM)
    # MiniMax Sparse Attention: the attention block (projections, block indexer, attention over
    # the selected blocks) priced from the package's measured MSA module tables where the
    # engine and GPU have them, else as dense attention (explorer/kernel_tables/msa.py).
    sparse_attention: Literal["msa"] | None = None
    sliding_window: int = Field(default=0, ge=0, le=MAX_WINDOW, description="tokens; 0 = none")
    sliding_layers: int = Field(default=0, ge=0, le=MAX_LAYERS)
    attention_layers: int | None = Field(default=None, ge=0, le=MAX_LAYERS,
                                         description="None: every layer")
    mlp_layers: int | None = Field(default=None, ge=0, le=MAX_LAYERS,
                                   description="None: every layer")
    gated_mlp: bool = Field(default=True, description="SwiGLU (3 matrices) or relu² (2)")
    moe_latent: int = Field(default=0, ge=0, le=MAX_HIDDEN,
                            description="latent MoE dim (0: the hidden size)")
    ffn_groups: tuple[tuple[int, int], ...] = Field(
        default=(), description="(layers, width) of the dense MLPs when widths differ per layer")
    linear_blocks: int = Field(default=0, ge=0, le=MAX_LAYERS)
    mamba_layers: int = Field(default=0, ge=0, le=MAX_LAYERS)
    mamba: MambaSpec | None = None
    total_params_b: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    active_params_b: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    family: str = Field(default="", description="model family (evidence closeness)")
    tokenizer: str = Field(default="", description="a draft must share the target's tokenizer")
    mtp_layers: int = Field(default=0, ge=0, le=MAX_LAYERS,
                            description="MTP modules shipped in the checkpoint")
    mtp_params_b: float | None = Field(default=None, gt=0, allow_inf_nan=False,
                                       description="unique parameters of the MTP modules (10⁹)")
    speculation_source: str = ""
    source: str = ""
    assumptions: str = ""

    @model_validator(mode="after")
    def _layer_groups_fit(self) -> ModelSpec:
        for name in ("attention_layers", "mlp_layers", "mamba_layers", "linear_blocks"):
            if (getattr(self, name) or 0) > self.layers:
                raise ValueError(f"{name}: more than the {self.layers} layers")
        if sum(c for c, _ in self.ffn_groups) > self.n_mlp_layers:
            raise ValueError("ffn_groups: more layers than the MLP layers")
        if any(not 0 <= w <= MAX_FFN or c < 0 for c, w in self.ffn_groups):
            raise ValueError(f"ffn_groups: widths lie in [0, {MAX_FFN}] (MAX_FFN) and layer "
                             "counts are not negative")
        if (self.mamba_layers > 0) != (self.mamba is not None):
            raise ValueError("mamba: Mamba layers need their shapes (and shapes their layers)")
        return self

    @property
    def n_attention_layers(self) -> int:
        return self.layers if self.attention_layers is None else self.attention_layers

    @property
    def n_mlp_layers(self) -> int:
        return self.layers if self.mlp_layers is None else self.mlp_layers

    @property
    def mlp_matrices(self) -> int:
        return 3 if self.gated_mlp else 2

    @property
    def expert_hidden(self) -> int:
        """The width the routed experts run at (a latent MoE projects down to it)."""
        return self.moe_latent or self.hidden

    def dense_ffn_groups(self) -> tuple[tuple[int, int], ...]:
        """(layers, width) of the dense MLP layers."""
        if self.ffn_groups:
            return self.ffn_groups
        dense = self.n_mlp_layers - self.moe_layers
        return ((dense, self.ffn_intermediate),) if dense and self.ffn_intermediate else ()

    @property
    def blocks_per_layer(self) -> float:
        """Blocks (attention, MLP/MoE, Mamba-2 mixer, linear) per layer over 2, the uniform
        transformer's count: a hybrid's layer is one block, a NAS layer may skip one. Each
        block ends in an all-reduce under TP and launches about half a layer's kernels."""
        blocks = (self.n_attention_layers + self.n_mlp_layers + self.mamba_layers
                  + self.linear_blocks)
        return blocks / (2.0 * self.layers)

    @property
    def has_layer_groups(self) -> bool:
        return (self.attention_layers is not None or self.mlp_layers is not None
                or bool(self.ffn_groups) or self.linear_blocks > 0 or self.mamba_layers > 0)

    def uniform_layers(self) -> ModelSpec:
        """This model with every layer attention + MLP at its main shapes: what a draft head at
        the target's dims is made of (a hybrid's MTP/EAGLE layer is an attention layer)."""
        if not self.has_layer_groups:
            return self
        return self.model_copy(update={
            "attention_layers": None, "mlp_layers": None, "ffn_groups": (), "linear_blocks": 0,
            "mamba_layers": 0, "mamba": None,
            "first_dense_layers": self.first_dense_layers if self.is_moe else 0})

    def with_layers(self, layers: int) -> dict[str, object]:
        """The layer-count fields of this model at `layers` layers, every group scaled."""
        f = layers / self.layers
        upd: dict[str, object] = {
            "layers": layers, "first_dense_layers": min(self.first_dense_layers, layers),
            "sliding_layers": round(self.sliding_layers * f),
            "mamba_layers": round(self.mamba_layers * f),
            "linear_blocks": round(self.linear_blocks * f),
            "ffn_groups": tuple((round(c * f), w) for c, w in self.ffn_groups),
        }
        for name in ("attention_layers", "mlp_layers"):
            v = getattr(self, name)
            upd[name] = None if v is None else round(v * f)
        return upd

    @property
    def group_size(self) -> float:
        """G = query heads per KV head."""
        return self.q_heads / self.kv_heads

    @property
    def is_moe(self) -> bool:
        return self.n_routed_experts > 0

    @property
    def moe_layers(self) -> int:
        return max(self.n_mlp_layers - self.first_dense_layers, 0) if self.is_moe else 0

    def attention_params_per_layer(self) -> float:
        if self.attention_kind == "mla":
            qk_dim = self.qk_nope_dim + self.qk_rope_dim
            q_proj = (self.hidden * self.q_lora_rank + self.q_lora_rank * self.q_heads * qk_dim
                      if self.q_lora_rank else self.hidden * self.q_heads * qk_dim)
            return float(
                q_proj
                + self.hidden * (self.kv_lora_rank + self.qk_rope_dim)
                + self.kv_lora_rank * self.q_heads * (self.qk_nope_dim + self.v_head_dim)
                + self.q_heads * self.v_head_dim * self.hidden
            )
        qkv = self.hidden * (self.q_heads + 2 * self.kv_heads) * self.head_dim
        return float(qkv + self.q_heads * self.head_dim * self.hidden)

    def routed_expert_param_count(self) -> float:
        """Parameters of the routed experts (SwiGLU gate, up, down per expert per MoE layer):
        the weights an MoE expert dtype stores; shared experts and the router are not."""
        return float(self.moe_layers * self.mlp_matrices * self.expert_hidden
                     * self.moe_intermediate * self.n_routed_experts)

    def embedding_param_count(self) -> float:
        """The embedding table and the lm_head (one matrix when tied): kept in BF16 by quantized
        checkpoints (explorer/base/dtypes.py LOGITS_DTYPE)."""
        return float(self.vocab * self.hidden * (1 if self.tied_embeddings else 2))

    def param_count(self) -> float:
        """Total parameters: the sourced figure when known, else computed from the shapes."""
        if self.total_params_b is not None:
            return self.total_params_b * 1e9
        mats = self.mlp_matrices
        dense = sum(c * mats * self.hidden * w for c, w in self.dense_ffn_groups())
        moe_mlp = (mats * self.moe_intermediate * (self.expert_hidden * self.n_routed_experts
                                                   + self.hidden * self.n_shared_experts)
                   + self.hidden * self.n_routed_experts + 2 * self.hidden * self.moe_latent)
        per_model = (
            self.n_attention_layers * self.attention_params_per_layer()
            + self.linear_blocks * self.hidden * self.hidden
            + dense
            + self.moe_layers * moe_mlp
            + (self.mamba_layers * self.mamba.params_per_layer(self.hidden) if self.mamba else 0)
        )
        return float(per_model + self.embedding_param_count())




# A mechanism a drafter config.json can be priced as (its declaration's drafter_config).
DrafterKind = DrafterKindSlug


class DrafterSpec(BaseModel):
    """A drafter read from its own config.json: a head that runs on the target's hidden states
    (EAGLE-3, DFlash/DSpark: `kind` is the mechanism it is priced as, with the config's layer
    count and vocabulary) or an external draft model (`model`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: DrafterKind
    name: str
    draft_layers: int | None = Field(default=None, ge=0, le=MAX_LAYERS)
    draft_vocab: int | None = Field(default=None, ge=1, le=MAX_VOCAB)
    block_size: int | None = Field(default=None, ge=1, le=1024)
    # A head's own shapes where its config gives them (None: the target's): T_draft follows
    # them (explorer/model/resolve.py head_model).
    hidden: int | None = Field(default=None, ge=1, le=MAX_HIDDEN)
    intermediate: int | None = Field(default=None, ge=1, le=MAX_FFN)
    q_heads: int | None = Field(default=None, ge=1, le=MAX_HEADS)
    kv_heads: int | None = Field(default=None, ge=1, le=MAX_HEADS)
    head_dim: int | None = Field(default=None, ge=1, le=MAX_HEAD_DIM)
    model: ModelSpec | None = None
    source: str = ""
    notes: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _model_iff_external(self) -> DrafterSpec:
        kind = mechanism_kind(self.kind)
        if (self.model is not None) != (kind is not None and kind.drafter_config == "model"):
            raise ValueError("model: an external draft model carries its ModelSpec, a head none")
        return self

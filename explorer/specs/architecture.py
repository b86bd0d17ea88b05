"""Model architecture: the shapes the cost model needs (layers, heads, FFN/MoE, vocab)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# Absorbed-MLA projection shapes (DeepSeek-V3 config_671B.json, reference/models.csv):
# q_lora_rank 1536, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128.
MLA_Q_LORA_RANK = 1536
MLA_QK_NOPE_DIM = 128
MLA_V_HEAD_DIM = 128


class ModelSpec(BaseModel):
    """A transformer's shapes. Counts are per model (not per TP rank)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    slug: str
    name: str
    role: Literal["target", "draft", "both"] = "target"
    layers: int = Field(ge=1, le=1000)
    hidden: int = Field(ge=1)
    q_heads: int = Field(ge=1)
    kv_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1, description="per-head dim; for MLA the latent KV dim (512+64)")
    ffn_intermediate: int = Field(ge=0, description="dense MLP width (0 when every layer is MoE)")
    n_routed_experts: int = Field(default=0, ge=0)
    experts_per_tok: int = Field(default=0, ge=0)
    n_shared_experts: int = Field(default=0, ge=0)
    moe_intermediate: int = Field(default=0, ge=0)
    first_dense_layers: int = Field(default=0, ge=0)
    vocab: int = Field(ge=1)
    tied_embeddings: bool = False
    attention_kind: Literal["gqa", "mla"] = "gqa"
    kv_lora_rank: int = Field(default=0, ge=0)
    qk_rope_dim: int = Field(default=0, ge=0)
    # MLA projection shapes (the constants above are DeepSeek-V3's, the default); a config's
    # own (GLM-5: q_lora_rank 2048, qk_nope 192, v 256) replace them. q_lora_rank 0: no
    # low-rank query (q projected from the hidden state directly).
    q_lora_rank: int = Field(default=MLA_Q_LORA_RANK, ge=0)
    qk_nope_dim: int = Field(default=MLA_QK_NOPE_DIM, ge=0)
    v_head_dim: int = Field(default=MLA_V_HEAD_DIM, ge=0)
    sliding_window: int = Field(default=0, ge=0, description="tokens; 0 = none")
    sliding_layers: int = Field(default=0, ge=0)
    total_params_b: float | None = Field(default=None, gt=0)
    active_params_b: float | None = Field(default=None, gt=0)
    family: str = Field(default="", description="model family (evidence closeness)")
    tokenizer: str = Field(default="", description="a draft must share the target's tokenizer")
    mtp_layers: int = Field(default=0, ge=0, description="MTP modules shipped in the checkpoint")
    mtp_params_b: float | None = Field(default=None, gt=0,
                                       description="unique parameters of the MTP modules (10⁹)")
    speculation_source: str = ""
    source: str = ""
    assumptions: str = ""

    @property
    def group_size(self) -> float:
        """G = query heads per KV head."""
        return self.q_heads / self.kv_heads

    @property
    def is_moe(self) -> bool:
        return self.n_routed_experts > 0

    @property
    def moe_layers(self) -> int:
        return self.layers - self.first_dense_layers if self.is_moe else 0

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
        return float(self.moe_layers * 3.0 * self.hidden * self.moe_intermediate
                     * self.n_routed_experts)

    def param_count(self) -> float:
        """Total parameters: the sourced figure when known, else computed from the shapes."""
        if self.total_params_b is not None:
            return self.total_params_b * 1e9
        dense_mlp = 3.0 * self.hidden * self.ffn_intermediate
        moe_mlp = 3.0 * self.hidden * self.moe_intermediate * (
            self.n_routed_experts + self.n_shared_experts
        ) + self.hidden * self.n_routed_experts
        dense_layers = self.layers - self.moe_layers
        per_model = (
            self.layers * self.attention_params_per_layer()
            + dense_layers * dense_mlp
            + self.moe_layers * moe_mlp
        )
        embeddings = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        return float(per_model + embeddings)


DrafterKind = Literal["eagle3", "dflash", "dspark", "external"]


class DrafterSpec(BaseModel):
    """A drafter read from its own config.json: a head that runs on the target's hidden states
    (EAGLE-3, DFlash/DSpark: `kind` is the mechanism it is priced as, with the config's layer
    count and vocabulary) or an external draft model (`model`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: DrafterKind
    name: str
    draft_layers: int | None = Field(default=None, ge=0, le=1000)
    draft_vocab: int | None = Field(default=None, ge=1)
    block_size: int | None = Field(default=None, ge=1, le=1024)
    model: ModelSpec | None = None
    source: str = ""
    notes: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _model_iff_external(self) -> DrafterSpec:
        if (self.model is not None) != (self.kind == "external"):
            raise ValueError("model: an external draft model carries its ModelSpec, a head none")
        return self
